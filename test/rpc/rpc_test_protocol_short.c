/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol_short.c - rpc_test_protocol's short requests (rpc.h, I4 and rule S):
 * round trips of every size, words arriving late or carrying another call's tag, seq wraps, the
 * read bit of the state word, broken meta words.
 */
#include "rpc_test_protocol.h"

/* One short call on port `index`, lane `lane`, stepped by hand; then one fenced call. */
static void short_round_trip(struct pair *p, uint32_t index, uint32_t lane, uint32_t nbytes,
                             uint32_t opcode, uint32_t seed)
{
    uint64_t pkt[8], mask = 1ull << lane, w[2];
    uint32_t c0, s0, c, s;
    rpc_port_t cp, sp, other;
    make_packet(pkt, seed);
    /* Leftovers of earlier calls in every lane buffer of the port. */
    for (uint32_t l = 0; l < p->lanes; l++)
        memset(lane_buffer(p, index, l), 0xa5, RPC_BUFFER_SIZE);

    REQUIRE(rpc_client_try_open_port(&p->client, opcode, mask, index, &cp));
    REQUIRE(req_all_zero(p, index));
    mailbox(p, index, &c0, &s0);
    REQUIRE(c0 == s0);
    rpc_client_send_short(&p->client, &cp, pkt, nbytes);
    mailbox(p, index, &c, &s);
    REQUIRE(c == (c0 ^ 1) && s == s0);
    REQUIRE(client_flag(p, index) == (c | RPC_FLAG_SHORT));
    uint64_t meta = atomic_load(&header_of(p, index)->req[0]);
    uint32_t n = (nbytes + 5) / 6;
    /* The meta word as documented: tag, opcode (16..47), lane (48..53), n (54..57). */
    REQUIRE((meta & 0x8000u) != 0);
    REQUIRE((uint32_t)(meta >> 16) == opcode && ((meta >> 48) & 0x3f) == lane);
    REQUIRE(((meta >> 54) & 0xf) == n && (meta >> 58) == 0);
    for (uint32_t k = 1; k < RPC_SHORT_WORDS; k++) {
        uint64_t word = atomic_load(&header_of(p, index)->req[k]);
        REQUIRE(k <= n ? (word & 0xffffu) == (meta & 0xffffu) : word == 0);
    }
    REQUIRE(rpc_server_waiting(&p->server, index));
    REQUIRE(!rpc_client_try_recv(&p->client, &cp, NULL, NULL)); /* no answer yet */
    REQUIRE(!rpc_client_try_open_port(&p->client, opcode, mask, index, &other));

    REQUIRE(rpc_server_try_open(&p->server, &sp));
    REQUIRE(rpc_port_index(&sp) == index && rpc_port_opcode(&sp) == opcode);
    REQUIRE(rpc_port_lane_mask(&sp) == mask);
    REQUIRE(req_all_zero(p, index));
    w[0] = atomic_load(&header_of(p, index)->head[0]);
    w[1] = atomic_load(&header_of(p, index)->head[1]);
    REQUIRE(w[0] == 0 && w[1] == 0); /* the server cleared the head at the open */
    struct grabbed g;
    g.seen = 0;
    REQUIRE(rpc_server_try_recv(&p->server, &sp, grab, &g));
    REQUIRE(g.seen == mask);
    REQUIRE(short_bytes_ok(&g.buf[lane], pkt, nbytes));
    for (uint32_t l = 0; l < p->lanes; l++) { /* the other lanes' buffers are untouched */
        if (l == lane)
            continue;
        const unsigned char *b = (const unsigned char *)lane_buffer(p, index, l);
        for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
            REQUIRE(b[i] == 0xa5);
    }
    uint64_t h0 = test_mix(seed) & head_mask48, h1 = (nbytes * 0x10001ull + opcode) & head_mask48;
    rpc_port_set_head(&sp, h0, h1);
    uint64_t answer = seed * 1000003ull;
    REQUIRE(rpc_server_try_send(&p->server, &sp, fill_pattern, &answer));
    REQUIRE(rpc_client_try_recv(&p->client, &cp, NULL, NULL));
    REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
    rpc_client_peek(&p->client, &cp, check_pattern, &answer);
    rpc_server_close(&p->server, &sp);
    rpc_client_close(&p->client, &cp);
    mailbox(p, index, &c, &s);
    REQUIRE(c == s && c == (c0 ^ 1));
    REQUIRE(req_all_zero(p, index));
    REQUIRE(client_flag(p, index) & RPC_FLAG_SHORT);

    /* A fenced call on the same port: the flag byte loses bit 1. */
    uint64_t v = seed;
    REQUIRE(rpc_client_try_open_port(&p->client, opcode + 1, mask, index, &cp));
    REQUIRE(rpc_client_try_send(&p->client, &cp, put, &v));
    REQUIRE(client_flag(p, index) == (c ^ 1));
    REQUIRE(req_all_zero(p, index));
    REQUIRE(rpc_server_try_open(&p->server, &sp));
    REQUIRE(rpc_port_opcode(&sp) == opcode + 1 && rpc_port_lane_mask(&sp) == mask);
    uint64_t got[RPC_LANES_MAX] = {0};
    REQUIRE(rpc_server_try_recv(&p->server, &sp, get, got) && got[lane] == v + lane);
    REQUIRE(rpc_server_try_send(&p->server, &sp, put, &v));
    REQUIRE(rpc_client_try_recv(&p->client, &cp, get, got) && got[lane] == v + lane);
    rpc_client_close(&p->client, &cp);
    rpc_server_close(&p->server, &sp);
    mailbox(p, index, &c, &s);
    REQUIRE(c == s && c == c0);
}

/* 1a: short calls of every size class on first, middle and last lanes and ports. */
void test_short_round_trip(uint32_t ports, uint32_t lanes)
{
    struct pair p;
    pair_init(&p, ports, lanes);
    const uint32_t sizes[] = {0, 1, 5, 6, 7, 12, 13, 48, 55, 56, 57, 60, 61, 63, 64};
    const uint32_t opcodes[] = {0, 1, 0x8000, 0xffffu, 0x10000u, 0x7fffffffu, 0xffffffffu};
    uint32_t lane_list[] = {0, lanes / 2, lanes - 1};
    uint32_t port_list[] = {0, ports / 2, ports - 1};
    uint32_t seed = 1;
    for (uint32_t pi = 0; pi < 3; pi++)
        for (uint32_t li = 0; li < 3; li++)
            for (uint32_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++, seed++)
                short_round_trip(&p, port_list[pi], lane_list[li], sizes[si],
                                 opcodes[seed % (sizeof(opcodes) / sizeof(opcodes[0]))], seed);
    pair_fini(&p);
}

/* Client side of a short call on port 0 of `p`: open, send bytes [0, nbytes) of pkt. */
static void short_send(struct pair *p, rpc_port_t *cp, uint32_t opcode, uint32_t lane,
                       const uint64_t pkt[8], uint32_t nbytes)
{
    REQUIRE(rpc_client_try_open_port(&p->client, opcode, 1ull << lane, 0, cp));
    rpc_client_send_short(&p->client, cp, pkt, nbytes);
}

/* Server side of a short call on port 0: open (must succeed), check the request, answer with a
 * head, then the client takes the answer; both close. */
static void short_serve(struct pair *p, rpc_port_t *cp, uint32_t opcode, uint32_t lane,
                        const uint64_t pkt[8], uint32_t nbytes)
{
    rpc_port_t sp;
    REQUIRE(rpc_server_try_open(&p->server, &sp));
    REQUIRE(rpc_port_index(&sp) == 0 && rpc_port_opcode(&sp) == opcode);
    REQUIRE(rpc_port_lane_mask(&sp) == 1ull << lane);
    REQUIRE(req_all_zero(p, 0));
    struct grabbed g;
    g.seen = 0;
    REQUIRE(rpc_server_try_recv(&p->server, &sp, grab, &g) && g.seen == 1ull << lane);
    REQUIRE(short_bytes_ok(&g.buf[lane], pkt, nbytes));
    rpc_port_set_head(&sp, nbytes, opcode);
    REQUIRE(rpc_server_try_send(&p->server, &sp, NULL, NULL));
    rpc_server_close(&p->server, &sp);
    REQUIRE(rpc_client_try_recv(&p->client, cp, NULL, NULL));
    REQUIRE(rpc_port_head(cp, 0) == nbytes && rpc_port_head(cp, 1) == opcode);
    rpc_client_close(&p->client, cp);
    REQUIRE(req_all_zero(p, 0));
}

/* The server finds the short call on port 0 not ready: it leaves it waiting, unlocked, with its
 * words as they were. */
static void short_not_ready(struct pair *p, rpc_port_t *cp)
{
    uint64_t before[RPC_SHORT_WORDS], w[2];
    uint32_t c, s, c2, s2;
    rpc_port_t sp;
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
        before[k] = atomic_load(&header_of(p, 0)->req[k]);
    mailbox(p, 0, &c, &s);
    head_words(p, w);
    uint64_t lane_mask = header_of(p, 0)->lane_mask;
    uint32_t opcode = header_of(p, 0)->opcode, seq = header_of(p, 0)->seq;
    REQUIRE(!rpc_server_try_open(&p->server, &sp));
    REQUIRE(!rpc_server_try_open_port(&p->server, 0, &sp));
    REQUIRE(!rpc_server_try_open(&p->server, &sp)); /* and again: nothing was consumed */
    REQUIRE(rpc_server_waiting(&p->server, 0));
    REQUIRE(!server_locked(p, 0));
    mailbox(p, 0, &c2, &s2);
    REQUIRE(c2 == c && s2 == s);
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
        REQUIRE(atomic_load(&header_of(p, 0)->req[k]) == before[k]);
    uint64_t w2[2];
    head_words(p, w2);
    REQUIRE(w2[0] == w[0] && w2[1] == w[1]);
    REQUIRE(header_of(p, 0)->lane_mask == lane_mask && header_of(p, 0)->opcode == opcode &&
            header_of(p, 0)->seq == seq);
    REQUIRE(!rpc_client_try_recv(&p->client, cp, NULL, NULL));
}

/* 1b: words of a short request arriving after the flag. */
void test_short_late_words(uint32_t lanes)
{
    struct pair p;
    pair_init(&p, 1, lanes);
    const uint32_t sizes[] = {0, 1, 7, 12, 56, 63, 64};
    uint32_t seed = 100, lane = lanes - 1;
    for (uint32_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        uint32_t nbytes = sizes[si], n = (nbytes + 5) / 6;
        rpc_head_word_t *req = header_of(&p, 0)->req;
        for (uint32_t k = 0; k <= n; k++) {
            /* Word k alone is late. */
            uint64_t pkt[8];
            rpc_port_t cp;
            make_packet(pkt, ++seed);
            short_send(&p, &cp, 40 + k, lane, pkt, nbytes);
            uint64_t saved = atomic_load(&req[k]);
            atomic_store(&req[k], 0);
            short_not_ready(&p, &cp);
            /* A word of another call (the previous seq, or the next) is not taken either (a
             * meta word alone, n == 0, has nothing to be compared with). */
            if (n > 0) {
                atomic_store(&req[k], (saved & ~0xffull) | ((saved - 1) & 0xff));
                short_not_ready(&p, &cp);
                atomic_store(&req[k], (saved & ~0xffull) | ((saved + 1) & 0xff));
                short_not_ready(&p, &cp);
            }
            /* A tag without its top bit (payload only: not a tag). */
            atomic_store(&req[k], saved & ~0x8000ull);
            short_not_ready(&p, &cp);
            atomic_store(&req[k], saved);
            short_serve(&p, &cp, 40 + k, lane, pkt, nbytes);
        }
        if (n >= 2) {
            /* Every word but the meta word late, then all but the last, then all. */
            uint64_t pkt[8], saved[RPC_SHORT_WORDS];
            rpc_port_t cp;
            make_packet(pkt, ++seed);
            short_send(&p, &cp, 99, lane, pkt, nbytes);
            for (uint32_t k = 0; k <= n; k++)
                saved[k] = atomic_load(&req[k]);
            for (uint32_t k = 1; k <= n; k++)
                atomic_store(&req[k], 0);
            short_not_ready(&p, &cp);
            atomic_store(&req[0], 0); /* nothing at all yet */
            short_not_ready(&p, &cp);
            for (uint32_t k = 1; k <= n; k++)
                atomic_store(&req[k], saved[k]); /* the data, and still no meta */
            short_not_ready(&p, &cp);
            atomic_store(&req[n], 0);
            atomic_store(&req[0], saved[0]);
            short_not_ready(&p, &cp);
            atomic_store(&req[n], saved[n]);
            short_serve(&p, &cp, 99, lane, pkt, nbytes);
        }
    }
    pair_fini(&p);
}

/* 1b: a short request still on its way does not hold up calls on other ports, and a head
 * that lands late (an earlier call's, on a port whose next call is short) is not taken. */
void test_short_late_other(void)
{
    struct pair p;
    pair_init(&p, 3, 1);
    uint64_t pkt[8], v = 4, got[1], saved;
    rpc_port_t a, b, sp;
    make_packet(pkt, 3);
    REQUIRE(rpc_client_try_open_port(&p.client, 7, 1, 0, &a));
    rpc_client_send_short(&p.client, &a, pkt, 20);
    saved = atomic_load(&header_of(&p, 0)->req[2]);
    atomic_store(&header_of(&p, 0)->req[2], 0);
    REQUIRE(rpc_client_try_open_port(&p.client, 8, 1, 2, &b));
    REQUIRE(rpc_client_try_send(&p.client, &b, put, &v));
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == 2); /* 0 is not ready */
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 4);
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_recv(&p.client, &b, get, got) && got[0] == 4);
    rpc_client_close(&p.client, &b);
    REQUIRE(!rpc_server_try_open(&p.server, &sp));
    atomic_store(&header_of(&p, 0)->req[2], saved);
    short_serve(&p, &a, 7, 0, pkt, 20); /* found on the next sweep (wraps round to 0) */

    /* Call k: a fenced fire-and-forget call that the server answers anyway. */
    uint64_t late[2], w[2];
    REQUIRE(rpc_client_try_open_port(&p.client, 9, 1, 0, &a));
    REQUIRE(rpc_client_try_send(&p.client, &a, put, &v));
    rpc_client_close(&p.client, &a);
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == 0);
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 1, 2);
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    head_words(&p, late);
    REQUIRE(late[0] != 0 && late[1] != 0);
    /* Call k + 1, short: the client does not clear the head, and does not take call k's. */
    make_packet(pkt, 4);
    REQUIRE(rpc_client_try_open_port(&p.client, 10, 1, 0, &a));
    rpc_client_send_short(&p.client, &a, pkt, 9);
    head_words(&p, w);
    REQUIRE(w[0] == late[0] && w[1] == late[1]);
    REQUIRE(!rpc_client_try_recv(&p.client, &a, NULL, NULL));
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 10);
    head_words(&p, w);
    REQUIRE(w[0] == 0 && w[1] == 0);
    /* Call k's head lands after the open (a server thread that stalled after its flip). */
    struct rpc_header *h = header_of(&p, 0);
    atomic_store(&h->head[0], late[0]);
    atomic_store(&h->head[1], late[1]);
    REQUIRE(!rpc_client_try_recv(&p.client, &a, NULL, NULL));
    struct grabbed g;
    g.seen = 0;
    REQUIRE(rpc_server_try_recv(&p.server, &sp, grab, &g) && short_bytes_ok(&g.buf[0], pkt, 9));
    rpc_port_set_head(&sp, 11, 12);
    answer_and_finish(&p, &sp, &a, NULL, NULL, 11, 12);
}

/* 1c: a head left in the slot by an answered call, then 255 short fire-and-forget calls (no
 * client clears the head, none is answered): the 256th call's seq is that head's again, and
 * only the server's clear at the open keeps the client from taking it before the answer. */
void test_short_seq_wrap(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t pkt[8], a = 1;
    rpc_port_t cp, sp;
    make_packet(pkt, 5);
    short_send(&p, &cp, 1, 0, pkt, 10);
    short_serve(&p, &cp, 1, 0, pkt, 10); /* answered: its head stays in the slot */
    for (uint32_t i = 0; i < 255; i++) {
        short_send(&p, &cp, 2, 0, pkt, i % 65);
        rpc_client_close(&p.client, &cp);
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 2);
        struct grabbed g;
        g.seen = 0;
        REQUIRE(rpc_server_try_recv(&p.server, &sp, grab, &g) && g.seen == 1);
        REQUIRE(short_bytes_ok(&g.buf[0], pkt, i % 65));
        rpc_server_close(&p.server, &sp);
    }
    short_send(&p, &cp, 3, 0, pkt, 64);
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* opened, not answered */
    REQUIRE(rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    rpc_port_set_head(&sp, 6, 7);
    REQUIRE(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    REQUIRE(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    REQUIRE(rpc_port_head(&cp, 0) == 6 && rpc_port_head(&cp, 1) == 7);
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* test_short_read_state: a short call on port 0 (nothing read since the last fenced flip) that
 * the server answers with fill_pattern(a) and closes; the client has yet to receive it. */
static void short_call_answered(struct pair *p, rpc_port_t *cp, rpc_port_t *sp, uint32_t opcode,
                                const uint64_t *pkt, uint64_t *a)
{
    REQUIRE(rpc_client_try_open_port(&p->client, opcode, 1, 0, cp));
    REQUIRE((cp->state_ & RPC_PS_READ) == 0);
    rpc_client_send_short(&p->client, cp, pkt, 8);
    REQUIRE(rpc_server_try_open(&p->server, sp) && rpc_server_try_recv(&p->server, sp, NULL, NULL));
    REQUIRE(rpc_server_try_send(&p->server, sp, fill_pattern, a));
    rpc_server_close(&p->server, sp);
}

/* 1c: the read bit of the state word, step by step: a short call fences its flag exactly when
 * buffers were read since the client's last fenced flip, whichever client caller read them. */
void test_short_read_state(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t pkt[8], a = 5, got[1];
    rpc_port_t cp, sp;
    make_packet(pkt, 77);
    /* A fresh port: nothing read. */
    short_call_answered(&p, &cp, &sp, 1, pkt, &a);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* head only: no read */
    REQUIRE((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp);
    REQUIRE((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == RPC_CS_KNOWN);
    /* A call that reads its answer: the state word says so after the close ... */
    short_call_answered(&p, &cp, &sp, 2, pkt, &a);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    REQUIRE(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    REQUIRE((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == (RPC_CS_KNOWN | RPC_CS_READ));
    /* ... through an open and close with nothing sent ... */
    REQUIRE(rpc_client_try_open_port(&p.client, 3, 1, 0, &cp));
    REQUIRE(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    REQUIRE(client_state(&p, 0) & RPC_CS_READ);
    /* ... to the next short call, whose flip (fenced) clears it. */
    REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    REQUIRE(cp.state_ & RPC_PS_READ);
    rpc_client_send_short(&p.client, &cp, pkt, 8);
    REQUIRE((cp.state_ & RPC_PS_READ) == 0);
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    REQUIRE(rpc_server_try_send(&p.server, &sp, NULL, NULL));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    rpc_client_close(&p.client, &cp);
    REQUIRE((client_state(&p, 0) & RPC_CS_READ) == 0);
    /* peek and a fenced call's read count too; a fenced flip clears. */
    REQUIRE(rpc_client_try_open_port(&p.client, 5, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &a));
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    REQUIRE(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_peek(&p.client, &cp, check_pattern, &a);
    REQUIRE(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    REQUIRE(client_state(&p, 0) & RPC_CS_READ);
    REQUIRE(rpc_client_try_open_port(&p.client, 6, 1, 0, &cp));
    REQUIRE(cp.state_ & RPC_PS_READ);
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &a));
    REQUIRE((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp); /* fire and forget: not known, nothing read */
    REQUIRE((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == 0);
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_open_port(&p.client, 7, 1, 0, &cp));
    REQUIRE((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp);
    /* A second client object over the same state words (another caller of the client side):
     * it sees the read bit that the first one left. */
    struct rpc_client second;
    REQUIRE(rpc_client_init(&second, p.region, 1, 1, p.client_locks) == TETHER_OK);
    REQUIRE(rpc_client_try_open_port(&p.client, 8, 1, 0, &cp));
    rpc_client_send_short(&p.client, &cp, pkt, 64);
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    REQUIRE(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    rpc_client_close(&p.client, &cp);
    REQUIRE(rpc_client_try_open_port(&second, 9, 1, 0, &cp));
    REQUIRE(cp.state_ & RPC_PS_READ);
    rpc_client_send_short(&second, &cp, pkt, 3);
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 9);
    struct grabbed g;
    g.seen = 0;
    REQUIRE(rpc_server_try_recv(&p.server, &sp, grab, &g) && short_bytes_ok(&g.buf[0], pkt, 3));
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&second, &cp);
    pair_fini(&p);
}

/* 1d: a broken meta word (a lane outside the port, more than 11 data words) opens a call with
 * no lanes or a clipped request, does not crash, and the port comes back with the server's
 * close; a meta word announcing words that never come leaves the port waiting. */
void test_short_broken_meta(uint32_t lanes)
{
    struct pair p;
    pair_init(&p, 2, lanes);
    struct {
        uint32_t lane, n;
    } bad[] = {{lanes, 11}, {63, 11}, {lanes - 1, 12}, {0, 15}, {63, 15}, {lanes + 5, 13}};
    for (uint32_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint32_t lane = bad[i].lane & 0x3f;
        uint64_t want = lane < lanes ? 1ull << lane : 0, pkt[8];
        bool wait = i % 2 == 0;
        uint32_t c, s;
        rpc_port_t cp, sp;
        make_packet(pkt, 200 + i);
        for (uint32_t l = 0; l < lanes; l++)
            memset(lane_buffer(&p, 1, l), 0xa5, RPC_BUFFER_SIZE);
        REQUIRE(rpc_client_try_open_port(&p.client, 300 + i, 1, 1, &cp));
        rpc_client_send_short(&p.client, &cp, pkt, 64);
        rpc_head_word_t *req = header_of(&p, 1)->req;
        uint64_t meta = atomic_load(&req[0]);
        meta &= ~(0x3full << 48 | 0xfull << 54);
        atomic_store(&req[0], meta | (uint64_t)lane << 48 | (uint64_t)bad[i].n << 54);
        if (!wait)
            rpc_client_close(&p.client, &cp);
        REQUIRE(rpc_server_try_open(&p.server, &sp));
        REQUIRE(rpc_port_index(&sp) == 1 && rpc_port_opcode(&sp) == 300 + i);
        REQUIREF(rpc_port_lane_mask(&sp) == want, "case %u: mask %llx", i,
                 (unsigned long long)rpc_port_lane_mask(&sp));
        REQUIRE(req_all_zero(&p, 1));
        struct grabbed g;
        g.seen = 0;
        REQUIRE(rpc_server_try_recv(&p.server, &sp, grab, &g) && g.seen == want);
        if (want)
            REQUIRE(short_bytes_ok(&g.buf[lane], pkt, 64)); /* 11 words: the whole packet */
        for (uint32_t l = 0; l < lanes; l++) {
            if (l == lane)
                continue;
            const unsigned char *b = (const unsigned char *)lane_buffer(&p, 1, l);
            for (uint32_t k = 0; k < RPC_BUFFER_SIZE; k++)
                REQUIRE(b[k] == 0xa5);
        }
        if (wait) {
            rpc_port_set_head(&sp, i, 1);
            REQUIRE(rpc_server_try_send(&p.server, &sp, NULL, NULL));
            REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
            REQUIRE(rpc_port_head(&cp, 0) == i && rpc_port_head(&cp, 1) == 1);
            rpc_client_close(&p.client, &cp);
        }
        rpc_server_close(&p.server, &sp);
        mailbox(&p, 1, &c, &s);
        REQUIRE(c == s);
        REQUIRE(!rpc_server_try_open(&p.server, &sp));
        /* The port serves short and fenced calls as before. */
        short_round_trip(&p, 1, lanes - 1, 13, 400 + i, 500 + i);
        short_round_trip(&p, 1, 0, 64, 400 + i, 600 + i);
    }
    /* More data words announced than sent: never ready, until the meta word is right. */
    uint64_t pkt[8];
    rpc_port_t cp;
    make_packet(pkt, 9);
    short_send(&p, &cp, 5, 0, pkt, 12);
    rpc_head_word_t *req = header_of(&p, 0)->req;
    uint64_t meta = atomic_load(&req[0]);
    atomic_store(&req[0], (meta & ~(0xfull << 54)) | 5ull << 54);
    short_not_ready(&p, &cp);
    atomic_store(&req[0], meta);
    short_serve(&p, &cp, 5, 0, pkt, 12);
    pair_fini(&p);
}
