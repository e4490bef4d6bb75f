/*
 * test/rpc/rpc_port.pml - Promela model of the port protocol of rpc/rpc.h.
 *
 * Checked by spin (test/rpc/rpc_spin.sh):
 *   safety  assertions: one agent at a time in a port's header/buffers
 *           (ghost counter `inside`), every call the server serves was sent
 *           by a client and is served once; no invalid end state (deadlock).
 *   live0/1 every call a client opens completes:  [](open_c -> <> !open_c),
 *           under weak fairness.
 *
 * Modelled: NPORTS ports, NCLIENTS client agents making CALLS calls each with
 * a nondeterministic shape (ECHO: send, recv / FIRE: send, close / MULTI:
 * send, send, recv / LEAVE: send, close, and the server answers anyway),
 * NSERVERS server agents.  Per port: the client and the server outbox bit, a
 * client lock bit and a server lock bit (each side's private lock bitmap),
 * the header opcode and seq, the client's seq counter (private), and the
 * answer head: 0 when cleared, else seq + 1 of the call it answers.  The
 * client clears the head before each flip and its recv waits for the head
 * of its own call; the server stores the head after its send's flip, as a
 * separate step (a server may stall between the two).  Seqs count modulo
 * SEQMOD (2 by default, so that they wrap within a run).  -DNO_LEAVE drops
 * the LEAVE shape (the liveness runs: a third of the states).  Flips and lock RMWs are atomic
 * statements; every other read is its own step, so scans race with opens
 * and closes as in the C code.  Waiting loops are modelled as blocking
 * guards (a spin that changes nothing).  Spin's interleaving is sequentially
 * consistent: the ordering rules of rpc.h (acquire after seeing ownership,
 * release flip after the last buffer access) appear as program order, and
 * the mutants below break them as such.
 *
 * Mutants (compile with -D<name>; each must make spin report an error):
 *   MUTANT_NO_RECHECK   client open skips the ownership re-check after it
 *                       takes the lock (L2 in rpc.h)
 *   MUTANT_EARLY_FLIP   server flips its outbox before its last buffer
 *                       access has finished (W3's release order)
 *   MUTANT_NO_HANDBACK  server close does not hand back a port it still owns
 *                       (breaks fire-and-forget)
 *   MUTANT_NO_WAIT      client recv reads the buffer without waiting for
 *                       ownership (W1/W2)
 *   MUTANT_LOST_FLIP    the client's first send never flips its outbox: a
 *                       deadlock (safety: invalid end state) and an opened
 *                       call that never completes (live0)
 *   MUTANT_NO_SERVER_RECHECK  server open skips the re-check after its lock
 *                       (needs NSERVERS=2: another server thread served and
 *                       closed the port between scan and lock)
 *   MUTANT_NO_CLEAR     the client does not clear the head before its flips:
 *                       a head left from a call whose seq has come round
 *                       again is taken for the answer
 *   MUTANT_NO_SEQ       the client takes any stored head for its answer: a
 *                       server answering a LEAVE call stores its head after
 *                       the next call's client cleared it
 */

#ifndef NPORTS
#define NPORTS 2
#endif
#ifndef NCLIENTS
#define NCLIENTS 2
#endif
#ifndef NSERVERS
#define NSERVERS 1
#endif
#ifndef CALLS
#define CALLS 2
#endif
#ifndef SEQMOD
#define SEQMOD 2
#endif

#define ECHO 1
#define FIRE 2
#define MULTI 3
#define LEAVE 4

bit cout[NPORTS];      /* client outbox bit of each port */
bit sout[NPORTS];      /* server outbox bit */
bit clk[NPORTS];       /* client-side lock bit (client's private memory) */
bit slk[NPORTS];       /* server-side lock bit (server's private memory) */
byte opcode[NPORTS];   /* header */
byte hseq[NPORTS];     /* header: the call's seq */
byte cseq[NPORTS];     /* client's seq counter of the port (client's private memory) */
byte head[NPORTS];     /* answer head: 0 cleared, else seq + 1 */
byte inside[NPORTS];   /* ghost: agents using the port's header/buffers */
bool open_[NCLIENTS];  /* ghost: client c has an opened call not yet closed */
byte sent;             /* ghost: calls whose first packet was sent */
byte served;           /* ghost: calls the server has opened */

/* One access to the buffers of port p: enter, leave (two steps, so another
 * agent may interleave while this one is inside). */
inline enter(p) {
    atomic { assert(inside[p] == 0); inside[p]++ }
}
inline leave(p) {
    inside[p]--
}

/* Client ownership: c == s.  Server ownership: c != s. */
#define CLIENT_OWNS(p) (cout[p] == sout[p])
#define SERVER_OWNS(p) (cout[p] != sout[p])
#define CLIENT_FREE(p) (clk[p] == 0 && CLIENT_OWNS(p))

/* Guards of the waiting loops: "something the waiter looks for exists". */
#if NPORTS == 2
#define ANY_READY (SERVER_OWNS(0) || SERVER_OWNS(1))
#define ANY_FREE (CLIENT_FREE(0) || CLIENT_FREE(1))
#elif NPORTS == 3
#define ANY_READY (SERVER_OWNS(0) || SERVER_OWNS(1) || SERVER_OWNS(2))
#define ANY_FREE (CLIENT_FREE(0) || CLIENT_FREE(1) || CLIENT_FREE(2))
#else
#error "the model is written for 2 or 3 ports"
#endif

/* Before each client flip: clear the head (the client owns the port). */
inline clear_head(p) {
#ifndef MUTANT_NO_CLEAR
    head[p] = 0
#else
    skip
#endif
}

inline client_send(p) {
    CLIENT_OWNS(p);                     /* wait until owned (W1), acquire (W2) */
    enter(p);
    leave(p);
    clear_head(p);
    cout[p] = 1 - cout[p]               /* release flip (W3), one RMW */
}

/* The first send of a call also counts the call (ghost). */
inline client_send_first(p) {
    CLIENT_OWNS(p);
    enter(p);
    leave(p);
    clear_head(p);
#ifndef MUTANT_LOST_FLIP
    atomic { cout[p] = 1 - cout[p]; sent++ }
#else
    sent++
#endif
}

/* Wait for the head of this call (acquire load), then read the buffers. */
inline client_recv(p, tag) {
#ifndef MUTANT_NO_WAIT
#ifndef MUTANT_NO_SEQ
    head[p] == tag;
#else
    head[p] != 0;
#endif
#endif
    enter(p);
    leave(p)
}

proctype client(byte id) {
    byte p, i, op, tag, calls = 0;
    bit cin, cme, locked;

    do
    :: calls < CALLS ->
        if
        :: op = ECHO
        :: op = FIRE
        :: op = MULTI
#ifndef NO_LEAVE
        :: op = LEAVE
#endif
        fi;
retry:
        /* open: one sweep from the hint (id), as rpc_client_try_open */
        i = 0;
        do
        :: i < NPORTS ->
            p = (id + i) % NPORTS;
            /* scan: lock word and mailbox words are separate loads */
            if
            :: clk[p] == 0 ->
                cme = cout[p];
                cin = sout[p];
                if
                :: cin == cme ->
                    atomic { locked = (clk[p] == 0); clk[p] = 1 };  /* fetch_or (L1) */
                    if
                    :: locked ->
#ifndef MUTANT_NO_RECHECK
                        if
                        :: CLIENT_OWNS(p) -> goto opened    /* re-check (L2) */
                        :: else -> clk[p] = 0               /* server still has it */
                        fi
#else
                        goto opened
#endif
                    :: else -> skip
                    fi
                :: else -> skip
                fi
            :: else -> skip
            fi;
            i++
        :: else -> break
        od;
        /* nothing free in this sweep: back off until a port looks free */
        ANY_FREE;
        goto retry;
opened:
        open_[id] = true;
        cseq[p] = (cseq[p] + 1) % SEQMOD; /* count the call (under the lock) */
        tag = cseq[p] + 1;
        enter(p);                        /* write the header */
        opcode[p] = op;
        hseq[p] = cseq[p];
        leave(p);
        client_send_first(p);
        if
        :: op == ECHO -> client_recv(p, tag)
        :: op == FIRE || op == LEAVE -> skip /* close without waiting */
        :: op == MULTI -> client_send(p); client_recv(p, tag)
        fi;
        clk[p] = 0;                      /* close: unlock (release) */
        open_[id] = false;
        calls++
    :: else -> break
    od
}

proctype server() {
    byte p, i, op, seq, start = 0;
    bit locked, owned;

end_idle:
    do
    :: /* wait until some port has a call waiting (the polling loop) */
        ANY_READY ->
        i = 0;
        do
        :: i < NPORTS ->
            p = (start + i) % NPORTS;
            if
            :: slk[p] == 0 && SERVER_OWNS(p) ->
                atomic { locked = (slk[p] == 0); slk[p] = 1 };
                if
                :: locked ->
#ifndef MUTANT_NO_SERVER_RECHECK
                    if
                    :: SERVER_OWNS(p) -> goto serve   /* re-check (L2) */
                    :: else -> slk[p] = 0
                    fi
#else
                    goto serve
#endif
                :: else -> skip
                fi
            :: else -> skip
            fi;
            i++
        :: else -> break
        od;
        goto next;
serve:
        atomic { assert(served < sent); served++ };   /* no phantom call */
        start = (p + 1) % NPORTS;
        owned = 1;
        enter(p);                        /* read header, first recv */
        op = opcode[p];
        seq = hseq[p];
        leave(p);
        if
        :: op == MULTI ->
            sout[p] = 1 - sout[p];       /* recv after recv: hand back */
            SERVER_OWNS(p);              /* wait for the second packet */
            enter(p);
            leave(p)
        :: else -> skip
        fi;
        if
        :: op != FIRE ->                 /* send the reply */
#ifdef MUTANT_EARLY_FLIP
            enter(p);
            sout[p] = 1 - sout[p];
            leave(p);
#else
            enter(p);
            leave(p);
            sout[p] = 1 - sout[p];
#endif
            head[p] = seq + 1;           /* the head, after the flip */
            owned = 0
        :: else -> skip
        fi;
        /* close: hand back a port the server still owns, unlock */
#ifndef MUTANT_NO_HANDBACK
        if
        :: owned -> sout[p] = 1 - sout[p]
        :: else -> skip
        fi;
#endif
        slk[p] = 0;
next:
        skip
    od
}

init {
    byte c = 0;
    atomic {
        do
        :: c < NCLIENTS -> run client(c); c++
        :: else -> break
        od;
        c = 0;
        do
        :: c < NSERVERS -> run server(); c++
        :: else -> break
        od
    }
}

/* Every opened call completes. */
ltl live0 { [] (open_[0] -> <> !open_[0]) }
ltl live1 { [] (open_[1] -> <> !open_[1]) }
