/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol_steps.c - rpc_test_protocol's layout arithmetic and init checks, one
 * call stepped by hand, fire and forget, answer heads, and the state word every client close
 * leaves.
 */
#include "rpc_test_protocol.h"

void test_layout(void)
{
    /* 1 port, 1 lane: 64 (client flag bytes) + 64 (server's) + 64 (32-byte header) + 64. */
    REQUIRE(rpc_region_size(1, 1) == 320);
    REQUIRE(rpc_region_size(32, 1) == 64 + 64 + 4096 + 32 * 64);
    REQUIRE(rpc_region_size(33, 2) == 64 + 64 + 4224 + 33 * 2 * 64);
    REQUIRE(rpc_region_size(65536, 1) == 2 * 65536 + 8388608 + 4194304ull);
    REQUIRE(rpc_region_size(4096, 64) == 2 * 4096 + 524288 + 4096ull * 64 * 64);
    REQUIRE(rpc_region_size(0, 1) == 0 && rpc_region_size(1, 0) == 0);
    REQUIRE(rpc_region_size(1, 65) == 0 && rpc_region_size(RPC_PORTS_MAX + 1, 1) == 0);
    REQUIRE(rpc_region_size(RPC_PORTS_MAX, 64) == 2 * 1048576 + 134217728ull + (1ull << 32));
    /* One state word per port. */
    REQUIRE(rpc_lock_size(1) == 8 && rpc_lock_size(33) == 264 && rpc_lock_size(65536) == 524288);
    REQUIRE(rpc_lock_size(65536) >= 4ull * rpc_bitmap_words(65536)); /* the server's bitmap fits */
    REQUIRE(rpc_lock_size(0) == 0);
    uint32_t ports[] = {1, 31, 32, 33, 64, 1000, 4096, 65536};
    for (unsigned i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
        uint32_t n = ports[i];
        REQUIRE(rpc_server_outbox_offset(n) % RPC_ALIGN == 0);
        REQUIRE(rpc_header_offset(n) % RPC_ALIGN == 0);
        REQUIRE(rpc_buffer_offset(n) % RPC_ALIGN == 0);
        REQUIRE(rpc_server_outbox_offset(n) >= 32ull * rpc_bitmap_words(n)); /* whole flag words */
        REQUIRE(rpc_header_offset(n) - rpc_server_outbox_offset(n) >= 32ull * rpc_bitmap_words(n));
        REQUIRE(rpc_buffer_offset(n) - rpc_header_offset(n) >= n * sizeof(struct rpc_header));
    }

    /* init rejects what it cannot use and writes nothing then. */
    static _Alignas(64) char region[320];
    uint64_t locks[1];
    struct rpc_client c;
    REQUIRE(rpc_client_init(&c, NULL, 1, 1, locks) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region, 1, 1, NULL) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region + 8, 1, 1, locks) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region, 0, 1, locks) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region, 1, 65, locks) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(NULL, region, 1, 1, locks) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region, 1, 1, (char *)locks + 4) == TETHER_ERR_INVALID);
    REQUIRE(rpc_client_init(&c, region, 1, 1, locks) == TETHER_OK);
    REQUIRE((char *)c.process.buffers == region + 256);
}

/* One call stepped by hand: send, send (server recv, recv), recv. */
void test_steps(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 10, got[1] = {0};
    uint32_t c, s;
    rpc_port_t cp, sp;

    REQUIRE(!rpc_server_try_open(&p.server, &sp)); /* nothing to serve */
    REQUIRE(rpc_client_try_open(&p.client, 77, 1, 0, &cp));
    REQUIRE(!rpc_client_try_open(&p.client, 77, 1, 0, &cp)); /* the only port is locked */
    REQUIRE(!rpc_server_try_open(&p.server, &sp));           /* opened, nothing sent yet */
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 1 && s == 0);
    v = 20;
    REQUIRE(!rpc_client_try_send(&p.client, &cp, put, &v)); /* server's turn */
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, get, got));

    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(rpc_port_opcode(&sp) == 77 && rpc_port_lane_mask(&sp) == 1 && rpc_port_index(&sp) == 0);
    REQUIRE(!rpc_server_try_open(&p.server, &sp)); /* locked by the first open */
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 10);
    REQUIRE(!rpc_server_try_recv(&p.server, &sp, get, got)); /* hands back, waits */
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 1 && s == 1);
    REQUIRE(!rpc_server_try_recv(&p.server, &sp, get, got)); /* still waiting, no second flip */
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 1 && s == 1);

    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 20);
    v = 30;
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    REQUIRE(!rpc_server_try_send(&p.server, &sp, put, &v)); /* client's turn */
    REQUIRE(rpc_client_try_recv(&p.client, &cp, get, got) && got[0] == 30);
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&p.client, &cp);
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 0 && s == 0); /* idle: client owns */
    REQUIRE(!rpc_server_try_open(&p.server, &sp));
    pair_fini(&p);
}

/* Fire and forget: the port stays with the server until it closes. */
void test_fire_and_forget(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 5, got[1];
    uint32_t c, s;
    rpc_port_t cp, sp, cp2;

    REQUIRE(rpc_client_try_open(&p.client, 1, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    REQUIRE(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2)); /* unlocked but server-owned */
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 5);
    REQUIRE(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2)); /* server still reading */
    rpc_server_close(&p.server, &sp);
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 1 && s == 1);
    REQUIRE(rpc_client_try_open(&p.client, 2, 1, 0, &cp2));
    rpc_client_close(&p.client, &cp2); /* open + close with no send: nothing flips */
    mailbox(&p, 0, &c, &s);
    REQUIRE(c == 1 && s == 1);
    REQUIRE(!rpc_server_try_open(&p.server, &sp));

    /* A server that closes without reading (unknown opcode) hands back too. */
    REQUIRE(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* Answer heads: the payload travels with the head, the buffers stay readable through peek, a
 * client's flip clears the head, and a head of an earlier call (stored late by a server that
 * answered a client that had left) is not taken for the answer of the next call. */
void test_heads(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 7, got[1] = {0}, w[2], stale[2];
    rpc_port_t cp, sp;

    REQUIRE(rpc_client_try_open(&p.client, 1, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    head_words(&p, w);
    REQUIRE(w[0] == 0 && w[1] == 0); /* cleared by the client's flip */
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 7);
    v = 8;
    rpc_port_set_head(&sp, 0x123456789abcull, (1ull << RPC_HEAD_BITS) - 1);
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* nothing sent yet */
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE(rpc_port_head(&cp, 0) == 0x123456789abcull);
    REQUIRE(rpc_port_head(&cp, 1) == (1ull << RPC_HEAD_BITS) - 1);
    got[0] = 0;
    rpc_client_peek(&p.client, &cp, get, got);
    REQUIRE(got[0] == 8);
    rpc_client_close(&p.client, &cp);
    head_words(&p, stale); /* the head of that call */

    /* A call whose client leaves after its send; the server answers anyway. */
    REQUIRE(rpc_client_try_open(&p.client, 2, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 99, 99);
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    head_words(&p, w);
    /* The next call: its client flips, and then the departed call's head lands late. */
    REQUIRE(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    struct rpc_header *h = (struct rpc_header *)((char *)p.region + rpc_header_offset(p.ports));
    atomic_store(&h[0].head[0], w[0]);
    atomic_store(&h[0].head[1], w[1]);
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* another call's seq */
    atomic_store(&h[0].head[0], stale[0]);
    atomic_store(&h[0].head[1], stale[1]);
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    /* One word of the right call and one of another: not yet. */
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 5, 6);
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    head_words(&p, w);
    atomic_store(&h[0].head[1], stale[1]);
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    atomic_store(&h[0].head[1], w[1]);
    REQUIRE(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE(rpc_port_head(&cp, 0) == 5 && rpc_port_head(&cp, 1) == 6);
    rpc_client_close(&p.client, &cp);
    rpc_server_close(&p.server, &sp);

    /* 255 fire-and-forget calls later the seq byte has wrapped to the seq of the head still in
     * the slot from call 3; the client's flip has cleared it. */
    for (int i = 0; i < 255; i++) {
        REQUIRE(rpc_client_try_open(&p.client, 4, 1, 0, &cp));
        REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
        rpc_client_close(&p.client, &cp);
        REQUIRE(rpc_server_try_open(&p.server, &sp));
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }
    REQUIRE(rpc_client_try_open(&p.client, 5, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    REQUIRE(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    REQUIRE(rpc_server_try_open(&p.server, &sp));
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
    answer_and_finish(&p, &sp, &cp, put, &v, 0, 0);
}

/* Every client close is a release store of a state word that holds protocol state only (lock,
 * known, read, outbox bit, seq: nothing above the seq's bits), so every caller may trust it.
 * Seen from outside by a server flag set by hand to say "the server has it": after a call
 * answered through its head alone or through its buffers, the next home-port open opens the port
 * without reading the mailbox, and the word is then as before but for the next seq.  A
 * fire-and-forget close leaves the port unknown: every caller reads the mailbox. */
static void head_only_call(struct pair *p, bool read, uint64_t v)
{
    rpc_port_t cp, sp;
    uint64_t got[1] = {0};
    REQUIRE(rpc_client_try_open_port(&p->client, 3, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p->client, &cp, put, &v));
    REQUIRE(rpc_server_try_open(&p->server, &sp) && rpc_server_try_recv(&p->server, &sp, get, got));
    REQUIRE(got[0] == v);
    rpc_port_set_head(&sp, v, v + 1);
    REQUIRE(rpc_server_try_send(&p->server, &sp, put, &v));
    rpc_server_close(&p->server, &sp);
    got[0] = 0;
    REQUIRE(rpc_client_try_recv(&p->client, &cp, read ? get : NULL, got));
    REQUIRE(rpc_port_head(&cp, 0) == v && rpc_port_head(&cp, 1) == v + 1 &&
            got[0] == (read ? v : 0));
    rpc_client_close(&p->client, &cp);
}

static void set_server_flag(struct pair *p, uint32_t value)
{
    atomic_store(&p->server.process.sflags[0], (uint8_t)value);
}

void test_close_state(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    rpc_port_t cp, other;
    uint32_t c, s;
    const uint64_t protocol_bits =
        RPC_CS_LOCK | RPC_CS_KNOWN | RPC_CS_OUT | RPC_CS_READ | 0xffull << RPC_CS_SEQ_SHIFT;

    for (int read = 0; read <= 1; read++) {
        head_only_call(&p, read != 0, 11 + (uint64_t)read);
        uint64_t st = client_state(&p, 0);
        REQUIRE((st & ~protocol_bits) == 0);
        REQUIRE((st & (RPC_CS_LOCK | RPC_CS_KNOWN | RPC_CS_READ)) ==
                (RPC_CS_KNOWN | (read ? RPC_CS_READ : 0u)));
        mailbox(&p, 0, &c, &s);
        REQUIRE(c == s);
        set_server_flag(&p, s ^ 1u); /* the mailbox now says "the server's turn" */
        REQUIRE(rpc_client_try_open_port(&p.client, 3, 1, 0, &cp));     /* no mailbox read */
        REQUIRE(!rpc_client_try_open_port(&p.client, 3, 1, 0, &other)); /* locked */
        rpc_client_close(&p.client, &cp);
        set_server_flag(&p, s);
        uint64_t seq_bits = 0xffull << RPC_CS_SEQ_SHIFT, now = client_state(&p, 0);
        REQUIRE((now & ~seq_bits) == (st & ~seq_bits)); /* still known; the next seq */
        REQUIRE(((now ^ (st + (1ull << RPC_CS_SEQ_SHIFT))) & seq_bits) == 0);
    }

    /* Fire and forget: not known (the server has the port), so every caller reads the mailbox. */
    uint64_t v = 15, got[1];
    rpc_port_t sp;
    REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    uint64_t st = client_state(&p, 0);
    REQUIRE((st & ~protocol_bits) == 0 && (st & (RPC_CS_LOCK | RPC_CS_KNOWN)) == 0);
    REQUIRE(!rpc_client_try_open_port(&p.client, 4, 1, 0, &cp)); /* the server's turn */
    REQUIRE(client_state(&p, 0) == st);                          /* left as it was */
    REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    REQUIRE(got[0] == 15);
    rpc_server_close(&p.server, &sp);
    REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}
