/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
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
 * Modelled: NPORTS (1 to 3) ports, NCLIENTS client agents making CALLS calls each with
 * a nondeterministic shape (ECHO: send, recv / FIRE: send, close / MULTI:
 * send, send, recv / LEAVE: send, close, and the server answers anyway),
 * NSERVERS server agents.  Per port: the client and the server outbox bit, the
 * client's state word (its lock bit, KNOWN and OUT: rpc.h I5) and the server's
 * lock bit (each side's private memory), the header opcode and seq, the
 * client's seq counter (private), and the answer head: 0 when cleared, else
 * seq + 1 of the call it answers.  A client opens by a sweep from its hint
 * (rpc_client_try_open), or with -DHOME only its home port, id % NPORTS
 * (rpc_client_try_open_port, as the device library does), waiting while it is
 * busy.  Either way the lock RMW returns the state word: a KNOWN port opens
 * with no look at the mailbox (its OUT is the client's bit now), any other
 * one after the re-check (L2) of the server's flag against OUT.  A close is
 * one store of the state word: KNOWN when the client still owns the port
 * (its last step was a recv), OUT its outbox bit, the lock clear.  The
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
 *   MUTANT_KNOWN_AFTER_SEND  a close after a send (FIRE, LEAVE) marks the port
 *                       KNOWN too: the next opener trusts a port the server
 *                       owns
 *   MUTANT_NO_OUT       a close does not record OUT: the next opener's
 *                       re-check compares the server's flag with a stale bit
 *
 * SHORT REQUESTS (-DSHORT: the client chooses for each call whether its
 * first send is fenced or short; -DSHORT_ONLY: always short).
 *   State per port: the short bit of the client's flag byte (stored with the
 *   flip, one flag store), the meta word req[0] and ONE data word req[1]
 *   (standing for req[1..n]).  Each is 0 or a tagged word WORD(tag, value):
 *   the tag is the call's seq + 1, as in a head; the meta's value is the
 *   opcode (the call shape), the data word's the number of the call on the
 *   port, so that the server can assert that it took this call's data (the
 *   meta carries the number too, as a ghost).  In SHORT mode the client's seq
 *   counter counts calls without wrapping (seq = count % SEQMOD).
 *   Client: the stores of the two words go in flight (fly0/fly1) and the flag
 *   flips with the short bit, in one step (the server reads the words only
 *   after the flag, so words landing before the flag or right after it cannot
 *   be told apart).  The `wire` (init, once it has started everybody) lands
 *   each store at any later moment, in either order, before or after
 *   anything else the client does next; weak fairness makes it land
 *   eventually.  The flag is modelled as landing with the flip: nothing the
 *   client does later depends on it having landed.  A short send does not
 *   clear the head; the wait for the answer, recv and close are as for a
 *   fenced call.
 *   Server: at the open of a port whose flag has the short bit it reads
 *   req[0], then req[1], each its own step; unless req[0] is tagged and
 *   req[1] carries the same tag it unlocks and goes on with its sweep; else
 *   it writes the header and the buffer from the words (an access of the
 *   port: enter/leave) and, in the step that leaves, zeroes req[0], req[1]
 *   and the head; the call then goes on as a fenced one.  An open that finds
 *   a word missing changes nothing, so the server's polling loop waits
 *   (blocking guard, SERVER_READY) until some port has a call it can take.
 *   Reads before the flag: rd[p] is the client's RPC_CS_READ/RPC_PS_READ bit
 *   and, as a ghost, "a client read of the buffers may still be outstanding":
 *   set by a recv that reads the buffers, cleared by every fenced flip (the
 *   fence completes the reads).  A short flag is fenced when rd is set.  The
 *   server asserts !rd whenever it enters the buffers.
 *   SEQMOD is 3 in SHORT mode: a client waiting after a short send can find
 *   the head of the call before the previous one (a LEAVE call's head stored
 *   late, after the next call - a fenced FIRE - cleared the head; no one
 *   clears it again before the short call's server opens), so two seqs are
 *   too few (-DSEQMOD=2 shows it); rpc.h's 8-bit seq has 256.
 *   Checked besides the above: the req words are zero and none is in flight
 *   whenever the client owns the port (at its open, and when its answer's
 *   head arrived; -DNO_REQ_INVARIANT leaves this out); the words the server
 *   takes are the current call's; and, in every mode, a head the client
 *   takes finds the port handed back to it (c == s).
 *
 * Mutants of the short path (with -DSHORT; each must make spin report an
 * error):
 *   MUTANT_SHORT_NO_ZERO          server does not zero the req words: at the
 *                                 port's next short call they still hold the
 *                                 previous request (with -DNO_REQ_INVARIANT:
 *                                 the server takes those stale words)
 *   MUTANT_SHORT_NO_TAGCHECK      server takes the words without checking tags
 *                                 (the flag arrived before them)
 *   MUTANT_SHORT_NO_DATA_TAGCHECK server checks req[0]'s tag only
 *   MUTANT_SHORT_CLIENT_CLEAR     the client clears the head at a short send,
 *                                 with an unfenced store that lands late: it
 *                                 erases the answer (deadlock)
 *   MUTANT_SHORT_NO_HEAD_ZERO     server does not zero the head at the open of
 *                                 a short request: a head of an earlier call
 *                                 whose seq came round again is taken
 *                                 (-DNPORTS=1, so that four calls share a port)
 *   MUTANT_SHORT_NO_READ_FENCE    the short flag is never fenced: a client
 *                                 read of the previous answer is still
 *                                 outstanding when the server writes the buffer
 */

#ifdef SHORT_ONLY
#ifndef SHORT
#define SHORT
#endif
#endif

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
#ifdef SHORT
#define SEQMOD 3
#else
#define SEQMOD 2
#endif
#endif
#if defined(SHORT) && (SEQMOD > 3 || NCLIENTS * CALLS > 7)
#error "tagged words hold a tag below 4 and a call number below 8"
#endif

#define ECHO 1
#define FIRE 2
#define MULTI 3
#define LEAVE 4

bit cout[NPORTS];      /* client outbox bit of each port */
bit sout[NPORTS];      /* server outbox bit */
bit clk[NPORTS];       /* client state word: the lock bit (client's private memory) */
bit known[NPORTS];     /* client state word: KNOWN, client-owned since the last close */
bit kout[NPORTS];      /* client state word: OUT, the client's outbox bit at the last close */
bit slk[NPORTS];       /* server-side lock bit (server's private memory) */
byte opcode[NPORTS];   /* header */
byte hseq[NPORTS];     /* header: the call's seq */
byte cseq[NPORTS];     /* client's seq counter of the port (client's private memory);
                        * SHORT: the port's call count, seq = count % SEQMOD */
byte head[NPORTS];     /* answer head: 0 cleared, else seq + 1 */
#ifdef SHORT
bit cshort[NPORTS];    /* bit 1 of the client flag byte: the last flip sent a short request */
byte req0[NPORTS];     /* header req[0], the meta word: 0, or WORD(tag, op + 8 * count) */
byte req1[NPORTS];     /* header req[1], the data word: 0, or WORD(tag, count) */
byte fly0[NPORTS];     /* the client's store of req[0] in flight (0: none) */
byte fly1[NPORTS];     /* the client's store of req[1] in flight (0: none) */
bit rd[NPORTS];        /* client: buffers read since the last fenced flip (RPC_CS_READ) */
#ifdef MUTANT_SHORT_CLIENT_CLEAR
bit flyh[NPORTS];      /* the client's clear of the head in flight */
#endif
#endif
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

#ifdef SHORT
/* A server access: no client read of the buffers may still be outstanding. */
inline senter(p) {
    atomic { assert(inside[p] == 0 && rd[p] == 0); inside[p]++ }
}
#define SEQ(p) (cseq[p] % SEQMOD)
/* A tagged request word: tag 1..3 in the low two bits, value above. */
#define WORD(tag, val) ((tag) + 4 * (val))
#define WTAG(w) ((w) % 4)
#define WVAL(w) ((w) / 4)
#ifndef NO_REQ_INVARIANT
#define REQ_ZERO(p) (req0[p] == 0 && req1[p] == 0 && fly0[p] == 0 && fly1[p] == 0)
#else
#define REQ_ZERO(p) true
#endif
#else
#define senter(p) enter(p)
#define SEQ(p) cseq[p]
#endif

/* Client ownership: c == s.  Server ownership: c != s. */
#define CLIENT_OWNS(p) (cout[p] == sout[p])
#define SERVER_OWNS(p) (cout[p] != sout[p])
#define CLIENT_FREE(p) (clk[p] == 0 && CLIENT_OWNS(p))

/* Guards of the waiting loops: "something the waiter looks for exists". */
#ifdef SHORT
/* The server's checks of a short request's words (rpc_server_unpack_short_). */
#ifndef MUTANT_SHORT_NO_TAGCHECK
#define META_TAGGED(m) (WTAG(m) != 0)
#else
#define META_TAGGED(m) true
#endif
#if !defined(MUTANT_SHORT_NO_TAGCHECK) && !defined(MUTANT_SHORT_NO_DATA_TAGCHECK)
#define SAME_TAG(d, m) (WTAG(d) == WTAG(m))
#else
#define SAME_TAG(d, m) true
#endif
/* A call the server can take: a fenced one, or a short one whose words pass
 * the checks.  An open that finds a word missing unlocks and changes nothing:
 * the server's polling while no call can be taken is the blocking guard. */
#define SERVER_READY(p) (SERVER_OWNS(p) && \
                         (!cshort[p] || (META_TAGGED(req0[p]) && SAME_TAG(req1[p], req0[p]))))
#else
#define SERVER_READY(p) SERVER_OWNS(p)
#endif
#if NPORTS == 1
#define ANY_READY SERVER_READY(0)
#define ANY_FREE CLIENT_FREE(0)
#elif NPORTS == 2
#define ANY_READY (SERVER_READY(0) || SERVER_READY(1))
#define ANY_FREE (CLIENT_FREE(0) || CLIENT_FREE(1))
#elif NPORTS == 3
#define ANY_READY (SERVER_READY(0) || SERVER_READY(1) || SERVER_READY(2))
#define ANY_FREE (CLIENT_FREE(0) || CLIENT_FREE(1) || CLIENT_FREE(2))
#else
#error "the model is written for 1 to 3 ports"
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
#ifdef SHORT
    atomic { cout[p] = 1 - cout[p]; cshort[p] = 0; rd[p] = 0 }
#else
    cout[p] = 1 - cout[p]               /* release flip (W3), one RMW */
#endif
}

/* The first send of a call also counts the call (ghost). */
inline client_send_first(p) {
    CLIENT_OWNS(p);
    enter(p);
    leave(p);
    clear_head(p);
#if defined(SHORT) && !defined(MUTANT_LOST_FLIP)
    atomic { cout[p] = 1 - cout[p]; cshort[p] = 0; rd[p] = 0; sent++ }
#elif !defined(MUTANT_LOST_FLIP)
    atomic { cout[p] = 1 - cout[p]; sent++ }
#else
    sent++
#endif
}

/* Wait for the head of this call (acquire load), then read the buffers.  The
 * head found, the port must be the client's (the server stores the head
 * after its flip). */
inline client_recv(p, tag) {
#ifndef MUTANT_NO_WAIT
#ifndef MUTANT_NO_SEQ
    atomic { head[p] == tag;
#else
    atomic { head[p] != 0;
#endif
        assert(CLIENT_OWNS(p));
#ifdef SHORT
        assert(REQ_ZERO(p))
#endif
    };
#endif
    enter(p);
#ifdef SHORT
    atomic { leave(p); rd[p] = 1 }      /* an unfenced read, until the next fence */
#else
    leave(p)
#endif
}

#ifdef SHORT
/* The first packet as a short request (rpc_client_send_short): the tagged
 * words go in flight, then the flag byte with the short bit, flipped.  One
 * step: the server reads the words only after the flag, so the words landing
 * before it or right after it cannot be told apart.  The flag is fenced when
 * buffers were read since the last fence (that completes the reads); rd is 0
 * after it either way. */
inline client_send_short(p, tag, op) {
    atomic {
        fly0[p] = WORD(tag, op + 8 * cseq[p]);
        fly1[p] = WORD(tag, cseq[p]);
#ifdef MUTANT_SHORT_CLIENT_CLEAR
        flyh[p] = 1;
#endif
#ifndef MUTANT_SHORT_NO_READ_FENCE
        rd[p] = 0;
#endif
        cshort[p] = 1;
        cout[p] = 1 - cout[p];
        sent++
    }
}
#endif

proctype client(byte id) {
    byte p, i, op, tag, calls = 0;
    bit cin, cme, locked, wasknown;

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
#ifdef HOME
        /* open: the home port only, as rpc_client_try_open_port */
        p = id % NPORTS;
        atomic { locked = (clk[p] == 0); clk[p] = 1; wasknown = known[p] };  /* fetch_or (L1) */
        if
        :: locked && wasknown -> goto opened            /* KNOWN: no mailbox read (I5) */
        :: locked && !wasknown ->
#ifndef MUTANT_NO_RECHECK
            if
            :: sout[p] == kout[p] -> goto opened         /* re-check (L2) against OUT */
            :: else -> clk[p] = 0                       /* server still has it */
            fi
#else
            goto opened
#endif
        :: else -> skip
        fi;
        /* busy: back off until the port looks free */
        CLIENT_FREE(p);
        goto retry;
#else
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
                    /* fetch_or (L1): returns the whole state word */
                    atomic { locked = (clk[p] == 0); clk[p] = 1; wasknown = known[p] };
                    if
                    :: locked && wasknown -> goto opened    /* KNOWN: no re-check (I5) */
                    :: locked && !wasknown ->
#ifndef MUTANT_NO_RECHECK
                        if
                        :: sout[p] == kout[p] -> goto opened /* re-check (L2) against OUT */
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
#endif
opened:
        open_[id] = true;
#ifdef SHORT
        atomic {
            cseq[p]++;                   /* count the call (under the lock) */
            assert(REQ_ZERO(p))          /* the client owns: no request word */
        };
#else
        cseq[p] = (cseq[p] + 1) % SEQMOD; /* count the call (under the lock) */
#endif
        tag = SEQ(p) + 1;
#ifdef SHORT
        if
        :: client_send_short(p, tag, op)
#ifndef SHORT_ONLY
        :: enter(p);                     /* write the header */
            opcode[p] = op;
            hseq[p] = SEQ(p);
            leave(p);
            client_send_first(p)
#endif
        fi;
#else
        enter(p);                        /* write the header */
        opcode[p] = op;
        hseq[p] = cseq[p];
        leave(p);
        client_send_first(p);
#endif
        if
        :: op == ECHO -> client_recv(p, tag)
        :: op == FIRE || op == LEAVE -> skip /* close without waiting */
        :: op == MULTI -> client_send(p); client_recv(p, tag)
        fi;
        /* close: one release store of the state word, the lock bit clear (L1, I5) */
        atomic {
#ifndef MUTANT_KNOWN_AFTER_SEND
            known[p] = (op == ECHO || op == MULTI);     /* the last step was a recv */
#else
            known[p] = 1;
#endif
#ifndef MUTANT_NO_OUT
            kout[p] = cout[p];
#endif
            clk[p] = 0
        };
        open_[id] = false;
        calls++
    :: else -> break
    od
}

proctype server() {
    byte p, i, op, seq, start = 0;
    bit locked, owned;
#ifdef SHORT
    byte m, d;                           /* the request words read at a short open */
#endif

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
#ifdef SHORT
                    :: SERVER_OWNS(p) && !cshort[p] -> goto serve  /* re-check (L2) */
                    :: SERVER_OWNS(p) && cshort[p] ->
                        /* a short request (rpc_server_unpack_short_): every
                         * word must carry its tag, else unlock, come back */
                        m = req0[p];
                        if
                        :: META_TAGGED(m) ->
                            d = req1[p];
                            if
                            :: SAME_TAG(d, m) -> goto serve_short
                            :: else -> atomic { slk[p] = 0; m = 0; d = 0 }
                            fi
                        :: else -> atomic { slk[p] = 0; m = 0 }
                        fi
#else
                    :: SERVER_OWNS(p) -> goto serve   /* re-check (L2) */
#endif
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
#ifdef SHORT
serve_short:
        atomic {
            assert(served < sent); served++;   /* no phantom call */
            /* the words taken are this call's (ghost: the port's call count) */
            assert(WVAL(m) / 8 == cseq[p] && WVAL(d) == cseq[p]);
            start = (p + 1) % NPORTS;
            owned = 1;
            op = WVAL(m) % 8;
            seq = WTAG(m) - 1
        };
        senter(p);                       /* header and buffer from the words */
        atomic {
#ifndef MUTANT_SHORT_NO_ZERO
            req0[p] = 0;                 /* zeroed before the flip hands the port back */
            req1[p] = 0;
#endif
#ifndef MUTANT_SHORT_NO_HEAD_ZERO
            head[p] = 0;                 /* before this call's head can be stored */
#endif
            m = 0;
            d = 0;
            leave(p)
        };
        goto body;
#endif
serve:
        atomic { assert(served < sent); served++ };   /* no phantom call */
        start = (p + 1) % NPORTS;
        owned = 1;
        senter(p);                       /* read header, first recv */
        op = opcode[p];
        seq = hseq[p];
        leave(p);
body:
        if
        :: op == MULTI ->
            sout[p] = 1 - sout[p];       /* recv after recv: hand back */
            SERVER_OWNS(p);              /* wait for the second packet */
            senter(p);
            leave(p)
        :: else -> skip
        fi;
        if
        :: op != FIRE ->                 /* send the reply */
#ifdef MUTANT_EARLY_FLIP
            senter(p);
            sout[p] = 1 - sout[p];
            leave(p);
#else
            senter(p);
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

#ifdef SHORT
/* The wire: the client's stores in flight, each landing at some later
 * moment, in any order (under weak fairness: eventually). */
#ifdef MUTANT_SHORT_CLIENT_CLEAR
#define LAND_HEAD(q) :: atomic { flyh[q] -> head[q] = 0; flyh[q] = 0 }
#else
#define LAND_HEAD(q)
#endif
#define LAND(q) \
    :: atomic { fly0[q] != 0 -> req0[q] = fly0[q]; fly0[q] = 0 } \
    :: atomic { fly1[q] != 0 -> req1[q] = fly1[q]; fly1[q] = 0 } \
    LAND_HEAD(q)
#endif

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
    };
#ifdef SHORT
    /* init goes on as the wire (one process fewer) */
end_wire:
    do
    LAND(0)
#if NPORTS > 1
    LAND(1)
#endif
#if NPORTS > 2
    LAND(2)
#endif
    od
#endif
}

/* Every opened call completes. */
ltl live0 { [] (open_[0] -> <> !open_[0]) }
ltl live1 { [] (open_[1] -> <> !open_[1]) }
