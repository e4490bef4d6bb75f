/*
 * test/rpc/rpc_test_protocol.c - the port state machine stepped by hand from
 * one thread with the non-blocking calls, so every "not yet" answer is
 * asserted at a known point; the layout arithmetic; server scan order;
 * short requests (round trips of every size on first and last lanes, words
 * arriving after the flag or carrying another call's tag, short and fenced
 * calls mixed on one port past wraps of the seq, the client's "buffers read"
 * state, broken meta words).  Built twice: rpc_test_protocol_checked has every
 * protocol assertion on.
 */
#if defined(RPC_TEST_CHECKED)
#undef NDEBUG /* the checked variant: every protocol assertion on */
#endif
#include <stdatomic.h>

#include "rpc_test_util.h"

struct pair {
    void *region;
    uint64_t size;
    void *client_locks, *server_locks;
    struct rpc_client client;
    struct rpc_server server;
    uint32_t ports, lanes;
};

static void pair_init(struct pair *p, uint32_t ports, uint32_t lanes)
{
    p->ports = ports;
    p->lanes = lanes;
    p->size = rpc_region_size(ports, lanes);
    CHECK(p->size != 0);
    p->region = test_map(p->size, 0);
    p->client_locks = calloc(1, rpc_lock_size(ports));
    p->server_locks = calloc(1, rpc_lock_size(ports));
    CHECK(p->client_locks && p->server_locks);
    CHECK(rpc_client_init(&p->client, p->region, ports, lanes, p->client_locks) == TETHER_OK);
    CHECK(rpc_server_init(&p->server, p->region, ports, lanes, p->server_locks) == TETHER_OK);
}

static void pair_fini(struct pair *p)
{
    test_unmap(p->region, p->size);
    free(p->client_locks);
    free(p->server_locks);
}

/* Mailbox bits of port `index` as (client, server). */
static void mailbox(struct pair *p, uint32_t index, uint32_t *c, uint32_t *s)
{
    char *base = p->region;
    *c = atomic_load((rpc_flag_t *)(base + rpc_client_outbox_offset(p->ports)) + index) & 1u;
    *s = atomic_load((rpc_flag_t *)(base + rpc_server_outbox_offset(p->ports)) + index) & 1u;
}

static void put(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    b->data[0] = *(uint64_t *)arg + lane;
}

static void get(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    ((uint64_t *)arg)[lane] = b->data[0];
}

/* The end of a call stepped by hand: the server answers on sp (fill/arg into the buffers, the
 * head as set) and closes, the client receives on cp and must read heads h0 and h1, closes, and
 * the pair is freed. */
static void answer_and_finish(struct pair *p, rpc_port_t *sp, rpc_port_t *cp, rpc_lane_fn fill,
                              void *arg, uint64_t h0, uint64_t h1)
{
    CHECK(rpc_server_try_send(&p->server, sp, fill, arg));
    rpc_server_close(&p->server, sp);
    CHECK(rpc_client_try_recv(&p->client, cp, NULL, NULL));
    CHECK(rpc_port_head(cp, 0) == h0 && rpc_port_head(cp, 1) == h1);
    rpc_client_close(&p->client, cp);
    pair_fini(p);
}

static void test_layout(void)
{
    /* 1 port, 1 lane: 64 (client flag bytes) + 64 (server's) + 64 (32-byte header) + 64. */
    CHECK(rpc_region_size(1, 1) == 320);
    CHECK(rpc_region_size(32, 1) == 64 + 64 + 4096 + 32 * 64);
    CHECK(rpc_region_size(33, 2) == 64 + 64 + 4224 + 33 * 2 * 64);
    CHECK(rpc_region_size(65536, 1) == 2 * 65536 + 8388608 + 4194304ull);
    CHECK(rpc_region_size(4096, 64) == 2 * 4096 + 524288 + 4096ull * 64 * 64);
    CHECK(rpc_region_size(0, 1) == 0 && rpc_region_size(1, 0) == 0);
    CHECK(rpc_region_size(1, 65) == 0 && rpc_region_size(RPC_PORTS_MAX + 1, 1) == 0);
    CHECK(rpc_region_size(RPC_PORTS_MAX, 64) == 2 * 1048576 + 134217728ull + (1ull << 32));
    /* One state word per port. */
    CHECK(rpc_lock_size(1) == 8 && rpc_lock_size(33) == 264 && rpc_lock_size(65536) == 524288);
    CHECK(rpc_lock_size(65536) >= 4ull * rpc_bitmap_words(65536)); /* the server's bitmap fits */
    CHECK(rpc_lock_size(0) == 0);
    uint32_t ports[] = {1, 31, 32, 33, 64, 1000, 4096, 65536};
    for (unsigned i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
        uint32_t n = ports[i];
        CHECK(rpc_server_outbox_offset(n) % RPC_ALIGN == 0);
        CHECK(rpc_header_offset(n) % RPC_ALIGN == 0);
        CHECK(rpc_buffer_offset(n) % RPC_ALIGN == 0);
        CHECK(rpc_server_outbox_offset(n) >= 32ull * rpc_bitmap_words(n)); /* whole flag words */
        CHECK(rpc_header_offset(n) - rpc_server_outbox_offset(n) >= 32ull * rpc_bitmap_words(n));
        CHECK(rpc_buffer_offset(n) - rpc_header_offset(n) >= n * sizeof(struct rpc_header));
    }

    /* init rejects what it cannot use and writes nothing then. */
    static _Alignas(64) char region[320];
    uint64_t locks[1];
    struct rpc_client c;
    CHECK(rpc_client_init(&c, NULL, 1, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 1, NULL) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region + 8, 1, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 0, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 65, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(NULL, region, 1, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 1, (char *)locks + 4) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 1, locks) == TETHER_OK);
    CHECK((char *)c.process.buffers == region + 256);
}

/* One call stepped by hand: send, send (server recv, recv), recv. */
static void test_steps(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 10, got[1] = {0};
    uint32_t c, s;
    rpc_port_t cp, sp;

    CHECK(!rpc_server_try_open(&p.server, &sp)); /* nothing to serve */
    CHECK(rpc_client_try_open(&p.client, 77, 1, 0, &cp));
    CHECK(!rpc_client_try_open(&p.client, 77, 1, 0, &cp)); /* the only port is locked */
    CHECK(!rpc_server_try_open(&p.server, &sp));           /* opened, nothing sent yet */
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    mailbox(&p, 0, &c, &s);
    CHECK(c == 1 && s == 0);
    v = 20;
    CHECK(!rpc_client_try_send(&p.client, &cp, put, &v)); /* server's turn */
    CHECK(!rpc_client_try_recv(&p.client, &cp, get, got));

    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(rpc_port_opcode(&sp) == 77 && rpc_port_lane_mask(&sp) == 1 && rpc_port_index(&sp) == 0);
    CHECK(!rpc_server_try_open(&p.server, &sp)); /* locked by the first open */
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 10);
    CHECK(!rpc_server_try_recv(&p.server, &sp, get, got)); /* hands back, waits */
    mailbox(&p, 0, &c, &s);
    CHECK(c == 1 && s == 1);
    CHECK(!rpc_server_try_recv(&p.server, &sp, get, got)); /* still waiting, no second flip */
    mailbox(&p, 0, &c, &s);
    CHECK(c == 1 && s == 1);

    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 20);
    v = 30;
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    CHECK(!rpc_server_try_send(&p.server, &sp, put, &v)); /* client's turn */
    CHECK(rpc_client_try_recv(&p.client, &cp, get, got) && got[0] == 30);
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&p.client, &cp);
    mailbox(&p, 0, &c, &s);
    CHECK(c == 0 && s == 0); /* idle: client owns */
    CHECK(!rpc_server_try_open(&p.server, &sp));
    pair_fini(&p);
}

/* Fire and forget: the port stays with the server until it closes. */
static void test_fire_and_forget(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 5, got[1];
    uint32_t c, s;
    rpc_port_t cp, sp, cp2;

    CHECK(rpc_client_try_open(&p.client, 1, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    CHECK(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2)); /* unlocked but server-owned */
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 5);
    CHECK(!rpc_client_try_open(&p.client, 2, 1, 0, &cp2)); /* server still reading */
    rpc_server_close(&p.server, &sp);
    mailbox(&p, 0, &c, &s);
    CHECK(c == 1 && s == 1);
    CHECK(rpc_client_try_open(&p.client, 2, 1, 0, &cp2));
    rpc_client_close(&p.client, &cp2); /* open + close with no send: nothing flips */
    mailbox(&p, 0, &c, &s);
    CHECK(c == 1 && s == 1);
    CHECK(!rpc_server_try_open(&p.server, &sp));

    /* A server that closes without reading (unknown opcode) hands back too. */
    CHECK(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    CHECK(rpc_server_try_open(&p.server, &sp));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* The head of port 0 as its two raw words. */
static void head_words(struct pair *p, uint64_t w[2])
{
    struct rpc_header *h = (struct rpc_header *)((char *)p->region + rpc_header_offset(p->ports));
    w[0] = atomic_load(&h[0].head[0]);
    w[1] = atomic_load(&h[0].head[1]);
}

/* Answer heads: the payload travels with the head, the buffers stay readable through peek, a
 * client's flip clears the head, and a head of an earlier call (stored late by a server that
 * answered a client that had left) is not taken for the answer of the next call. */
static void test_heads(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t v = 7, got[1] = {0}, w[2], stale[2];
    rpc_port_t cp, sp;

    CHECK(rpc_client_try_open(&p.client, 1, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    head_words(&p, w);
    CHECK(w[0] == 0 && w[1] == 0); /* cleared by the client's flip */
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 7);
    v = 8;
    rpc_port_set_head(&sp, 0x123456789abcull, (1ull << RPC_HEAD_BITS) - 1);
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* nothing sent yet */
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_port_head(&cp, 0) == 0x123456789abcull);
    CHECK(rpc_port_head(&cp, 1) == (1ull << RPC_HEAD_BITS) - 1);
    got[0] = 0;
    rpc_client_peek(&p.client, &cp, get, got);
    CHECK(got[0] == 8);
    rpc_client_close(&p.client, &cp);
    head_words(&p, stale); /* the head of that call */

    /* A call whose client leaves after its send; the server answers anyway. */
    CHECK(rpc_client_try_open(&p.client, 2, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 99, 99);
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    head_words(&p, w);
    /* The next call: its client flips, and then the departed call's head lands late. */
    CHECK(rpc_client_try_open(&p.client, 3, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    struct rpc_header *h = (struct rpc_header *)((char *)p.region + rpc_header_offset(p.ports));
    atomic_store(&h[0].head[0], w[0]);
    atomic_store(&h[0].head[1], w[1]);
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* another call's seq */
    atomic_store(&h[0].head[0], stale[0]);
    atomic_store(&h[0].head[1], stale[1]);
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    /* One word of the right call and one of another: not yet. */
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 5, 6);
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    head_words(&p, w);
    atomic_store(&h[0].head[1], stale[1]);
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    atomic_store(&h[0].head[1], w[1]);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_port_head(&cp, 0) == 5 && rpc_port_head(&cp, 1) == 6);
    rpc_client_close(&p.client, &cp);
    rpc_server_close(&p.server, &sp);

    /* 255 fire-and-forget calls later the seq byte has wrapped to the seq of the head still in
     * the slot from call 3; the client's flip has cleared it. */
    for (int i = 0; i < 255; i++) {
        CHECK(rpc_client_try_open(&p.client, 4, 1, 0, &cp));
        CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
        rpc_client_close(&p.client, &cp);
        CHECK(rpc_server_try_open(&p.server, &sp));
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }
    CHECK(rpc_client_try_open(&p.client, 5, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
    answer_and_finish(&p, &sp, &cp, put, &v, 0, 0);
}

/* The server opens one given port: only when a call waits there, and not twice. */
static void test_server_open_port(void)
{
    struct pair p;
    pair_init(&p, 40, 1);
    uint64_t v = 3, got[1] = {0};
    rpc_port_t cp, sp, sp2;
    CHECK(!rpc_server_waiting(&p.server, 33) && !rpc_server_try_open_port(&p.server, 33, &sp));
    CHECK(rpc_client_try_open_port(&p.client, 9, 1, 33, &cp) && rpc_port_index(&cp) == 33);
    CHECK(!rpc_server_waiting(&p.server, 33)); /* opened, nothing sent yet */
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    CHECK(rpc_server_waiting(&p.server, 33) && !rpc_server_waiting(&p.server, 32));
    CHECK(!rpc_server_waiting(&p.server, 40)); /* out of range */
    CHECK(!rpc_server_try_open_port(&p.server, 32, &sp));
    CHECK(!rpc_server_try_open_port(&p.server, 40, &sp));
    CHECK(rpc_server_try_open_port(&p.server, 33, &sp) && rpc_port_opcode(&sp) == 9);
    CHECK(!rpc_server_try_open_port(&p.server, 33, &sp2)); /* held by this server thread */
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 3);
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    CHECK(!rpc_server_waiting(&p.server, 33));
    CHECK(rpc_client_try_recv(&p.client, &cp, get, got) && got[0] == 3);
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* Client open starts at the hint and wraps; server open rotates. */
static void test_scan_order(uint32_t ports)
{
    struct pair p;
    pair_init(&p, ports, 1);
    uint64_t v = 1, got[1];
    rpc_port_t cp[4], sp;
    uint32_t want[4] = {3 % ports, (ports / 2 + 7) % ports, ports - 1, 0};
    uint32_t n = ports >= 4 ? 4 : ports;

    for (uint32_t i = 0; i < n; i++) {
        CHECK(rpc_client_try_open(&p.client, 100 + i, 1, want[i], &cp[i]));
        CHECK(rpc_port_index(&cp[i]) == want[i]);
        CHECK(rpc_client_try_send(&p.client, &cp[i], put, &v));
        rpc_client_close(&p.client, &cp[i]);
    }
    /* A hint on a busy port moves to the next free one, wrapping. */
    if (ports >= 4) {
        rpc_port_t extra;
        CHECK(rpc_client_try_open(&p.client, 9, 1, ports - 1, &extra));
        CHECK(rpc_port_index(&extra) == 1); /* ports-1 and 0 are the server's */
        rpc_client_close(&p.client, &extra);
    }
    /* The server finds them in index order from 0 (its start), then starts
     * after the last one it served. */
    uint32_t order[4], k = 0;
    while (rpc_server_try_open(&p.server, &sp)) {
        CHECK(k < n);
        order[k++] = rpc_port_index(&sp);
        CHECK(rpc_port_opcode(&sp) >= 100);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }
    CHECK(k == n);
    for (uint32_t i = 1; i < k; i++)
        CHECK(order[i] > order[i - 1]);

    if (ports >= 4) {
        /* Round robin: after serving port a, a new call on a waits behind a
         * call on b > a. */
        uint32_t a = 5 % ports, b = (ports - 2);
        rpc_port_t x;
        CHECK(rpc_client_try_open(&p.client, 1, 1, a, &x) && rpc_port_index(&x) == a);
        CHECK(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == a);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        CHECK(rpc_client_try_open(&p.client, 1, 1, a, &x) && rpc_port_index(&x) == a);
        CHECK(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        CHECK(rpc_client_try_open(&p.client, 1, 1, b, &x) && rpc_port_index(&x) == b);
        CHECK(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == b);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == a);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }

    if (ports >= 4) {
        /* One given port: taken only when free and client-owned, never another one. */
        uint32_t h = ports - 3;
        rpc_port_t x, y;
        CHECK(rpc_client_try_open_port(&p.client, 4, 1, h, &x) && rpc_port_index(&x) == h);
        CHECK(!rpc_client_try_open_port(&p.client, 4, 1, h, &y)); /* locked */
        CHECK(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        CHECK(!rpc_client_try_open_port(&p.client, 4, 1, h, &y)); /* the server's turn */
        CHECK(rpc_client_try_open_port(&p.client, 4, 1, h + 1, &y) && rpc_port_index(&y) == h + 1);
        rpc_client_close(&p.client, &y);
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == h);
        CHECK(rpc_port_opcode(&sp) == 4);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        CHECK(rpc_client_try_open_port(&p.client, 4, 1, h, &x) && rpc_port_index(&x) == h);
        rpc_client_close(&p.client, &x);
    }

    /* Every port taken: open fails, and succeeds again after one close. */
    rpc_port_t *all = calloc(ports, sizeof(*all));
    CHECK(all);
    for (uint32_t i = 0; i < ports; i++)
        CHECK(rpc_client_try_open(&p.client, 1, 1, i * 7, &all[i]));
    rpc_port_t more;
    CHECK(!rpc_client_try_open(&p.client, 1, 1, 0, &more));
    rpc_client_close(&p.client, &all[ports / 2]);
    CHECK(rpc_client_try_open(&p.client, 1, 1, 0, &more));
    CHECK(rpc_port_index(&more) == rpc_port_index(&all[ports / 2]));
    all[ports / 2] = more;
    for (uint32_t i = 0; i < ports; i++)
        rpc_client_close(&p.client, &all[i]);
    free(all);
    pair_fini(&p);
}

/* Bounded sweeps (rpc_server_try_open_n): each looks only at its `slice` words from where the
 * last one stopped, finds the waiting calls in ring order, and a sweep that finds nothing moves
 * on by exactly `slice` words, so every port is visited within one ring's worth of sweeps. */
static void test_sweep_slices(uint32_t ports, uint32_t slice)
{
    struct pair p;
    pair_init(&p, ports, 1);
    uint64_t v = 1, got[1];
    rpc_port_t cp, sp;
    uint32_t want[4] = {1, ports / 3, ports / 3 + 1, ports - 1}, words = rpc_bitmap_words(ports);
    for (uint32_t i = 0; i < 4; i++) {
        CHECK(rpc_client_try_open_port(&p.client, 50 + i, 1, want[i], &cp));
        CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
        rpc_client_close(&p.client, &cp);
    }
    uint32_t found = 0, rounds = 0;
    bool bounded = slice != 0 && slice < words;
    while (found < 4) {
        CHECK(rounds++ <= words / (slice ? slice : 1) + 5);
        uint32_t from = p.server.process.next % ports;
        if (rpc_server_try_open_n(&p.server, slice, &sp)) {
            uint32_t index = rpc_port_index(&sp);
            CHECK(index == want[found]);
            if (bounded) /* inside this sweep's words */
                CHECK((index / 32 + words - from / 32) % words < slice);
            CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 1);
            rpc_server_close(&p.server, &sp);
            found++;
        } else {
            CHECK(bounded); /* a full sweep misses no call */
            CHECK(p.server.process.next == (from / 32 + slice) % words * 32);
        }
    }
    CHECK(!rpc_server_try_open(&p.server, &sp));
    CHECK(!rpc_server_try_open_n(&p.server, 1, &sp));
    pair_fini(&p);
}

/* Lanes: only the lanes of the mask are visited; a header mask with bits
 * beyond the lane count (a broken device) is clipped by the server. */
static void test_lanes(uint32_t lanes)
{
    struct pair p;
    pair_init(&p, 2, lanes);
    uint64_t full = lanes == 64 ? ~0ull : (1ull << lanes) - 1;
    uint64_t masks[] = {1, full, full & 0x5555555555555555ull, 1ull << (lanes - 1)};
    for (unsigned i = 0; i < 4; i++) {
        uint64_t v = 1000 * (i + 1), got[64] = {0}, reply[64] = {0};
        rpc_port_t cp, sp;
        CHECK(rpc_client_try_open(&p.client, 5, masks[i], 0, &cp));
        CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_lane_mask(&sp) == masks[i]);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        for (uint32_t l = 0; l < 64; l++)
            CHECK(got[l] == (((masks[i] >> l) & 1) ? v + l : 0));
        v += 7;
        CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
        CHECK(rpc_client_try_recv(&p.client, &cp, get, reply));
        for (uint32_t l = 0; l < 64; l++)
            CHECK(reply[l] == (((masks[i] >> l) & 1) ? v + l : 0));
        rpc_server_close(&p.server, &sp);
        rpc_client_close(&p.client, &cp);
    }
    if (lanes < 64) {
        uint64_t v = 1, got[64] = {0};
        rpc_port_t cp, sp;
        CHECK(rpc_client_try_open(&p.client, 5, 1, 1, &cp));
        CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
        p.client.process.headers[rpc_port_index(&cp)].lane_mask = ~0ull; /* corrupt */
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_lane_mask(&sp) == full);
        CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        rpc_client_close(&p.client, &cp);
    }
    pair_fini(&p);
}

/* ---- short requests (rpc.h, I4 and rule S) -------------------------------------------------- */

static struct rpc_header *header_of(struct pair *p, uint32_t index)
{
    return &p->client.process.headers[index];
}

static uint32_t client_flag(struct pair *p, uint32_t index)
{
    return atomic_load(&p->client.process.cflags[index]);
}

static uint64_t client_state(struct pair *p, uint32_t index)
{
    return atomic_load(&((rpc_state_t *)p->client_locks)[index]);
}

static bool server_locked(struct pair *p, uint32_t index)
{
    return (atomic_load(&((rpc_word_t *)p->server_locks)[index / 32]) >> (index % 32)) & 1u;
}

static bool req_all_zero(struct pair *p, uint32_t index)
{
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
        if (atomic_load(&header_of(p, index)->req[k]) != 0)
            return false;
    return true;
}

static struct rpc_buffer *lane_buffer(struct pair *p, uint32_t index, uint32_t lane)
{
    return &p->client.process.buffers[(uint64_t)index * p->lanes + lane];
}

/* A 64-byte packet of distinct non-zero bytes, different for each seed. */
static void make_packet(uint64_t pkt[8], uint32_t seed)
{
    unsigned char *b = (unsigned char *)pkt;
    for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
        b[i] = (unsigned char)(1 + (seed * 7 + i) % 255);
}

/* Bytes [0, nbytes) of pkt, zeros after. */
static bool short_bytes_ok(const struct rpc_buffer *b, const uint64_t pkt[8], uint32_t nbytes)
{
    const unsigned char *got = (const unsigned char *)b->data, *want = (const unsigned char *)pkt;
    for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
        if (got[i] != (i < nbytes ? want[i] : 0)) {
            fprintf(stderr, "byte %u of %u: %#x, want %#x\n", i, nbytes, got[i],
                    i < nbytes ? want[i] : 0);
            return false;
        }
    return true;
}

/* Per-lane copies of the buffers a recv saw. */
struct grabbed {
    uint64_t seen;
    struct rpc_buffer buf[RPC_LANES_MAX];
};

static void grab(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct grabbed *g = arg;
    CHECK(lane < RPC_LANES_MAX && !((g->seen >> lane) & 1));
    g->seen |= 1ull << lane;
    g->buf[lane] = *b;
}

static void fill_pattern(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    for (uint32_t k = 0; k < 8; k++)
        b->data[k] = test_mix(*(uint64_t *)arg + lane * 8 + k);
}

static void check_pattern(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    for (uint32_t k = 0; k < 8; k++)
        CHECK(b->data[k] == test_mix(*(uint64_t *)arg + lane * 8 + k));
}

static const uint64_t head_mask48 = (1ull << RPC_HEAD_BITS) - 1;

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

    CHECK(rpc_client_try_open_port(&p->client, opcode, mask, index, &cp));
    CHECK(req_all_zero(p, index));
    mailbox(p, index, &c0, &s0);
    CHECK(c0 == s0);
    rpc_client_send_short(&p->client, &cp, pkt, nbytes);
    mailbox(p, index, &c, &s);
    CHECK(c == (c0 ^ 1) && s == s0);
    CHECK(client_flag(p, index) == (c | RPC_FLAG_SHORT));
    uint64_t meta = atomic_load(&header_of(p, index)->req[0]);
    uint32_t n = (nbytes + 5) / 6;
    /* The meta word as documented: tag, opcode (16..47), lane (48..53), n (54..57). */
    CHECK((meta & 0x8000u) != 0);
    CHECK((uint32_t)(meta >> 16) == opcode && ((meta >> 48) & 0x3f) == lane);
    CHECK(((meta >> 54) & 0xf) == n && (meta >> 58) == 0);
    for (uint32_t k = 1; k < RPC_SHORT_WORDS; k++) {
        uint64_t word = atomic_load(&header_of(p, index)->req[k]);
        CHECK(k <= n ? (word & 0xffffu) == (meta & 0xffffu) : word == 0);
    }
    CHECK(rpc_server_waiting(&p->server, index));
    CHECK(!rpc_client_try_recv(&p->client, &cp, NULL, NULL)); /* no answer yet */
    CHECK(!rpc_client_try_open_port(&p->client, opcode, mask, index, &other));

    CHECK(rpc_server_try_open(&p->server, &sp));
    CHECK(rpc_port_index(&sp) == index && rpc_port_opcode(&sp) == opcode);
    CHECK(rpc_port_lane_mask(&sp) == mask);
    CHECK(req_all_zero(p, index));
    w[0] = atomic_load(&header_of(p, index)->head[0]);
    w[1] = atomic_load(&header_of(p, index)->head[1]);
    CHECK(w[0] == 0 && w[1] == 0); /* the server cleared the head at the open */
    struct grabbed g;
    g.seen = 0;
    CHECK(rpc_server_try_recv(&p->server, &sp, grab, &g));
    CHECK(g.seen == mask);
    CHECK(short_bytes_ok(&g.buf[lane], pkt, nbytes));
    for (uint32_t l = 0; l < p->lanes; l++) { /* the other lanes' buffers are untouched */
        if (l == lane)
            continue;
        const unsigned char *b = (const unsigned char *)lane_buffer(p, index, l);
        for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
            CHECK(b[i] == 0xa5);
    }
    uint64_t h0 = test_mix(seed) & head_mask48, h1 = (nbytes * 0x10001ull + opcode) & head_mask48;
    rpc_port_set_head(&sp, h0, h1);
    uint64_t answer = seed * 1000003ull;
    CHECK(rpc_server_try_send(&p->server, &sp, fill_pattern, &answer));
    CHECK(rpc_client_try_recv(&p->client, &cp, NULL, NULL));
    CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
    rpc_client_peek(&p->client, &cp, check_pattern, &answer);
    rpc_server_close(&p->server, &sp);
    rpc_client_close(&p->client, &cp);
    mailbox(p, index, &c, &s);
    CHECK(c == s && c == (c0 ^ 1));
    CHECK(req_all_zero(p, index));
    CHECK(client_flag(p, index) & RPC_FLAG_SHORT);

    /* A fenced call on the same port: the flag byte loses bit 1. */
    uint64_t v = seed;
    CHECK(rpc_client_try_open_port(&p->client, opcode + 1, mask, index, &cp));
    CHECK(rpc_client_try_send(&p->client, &cp, put, &v));
    CHECK(client_flag(p, index) == (c ^ 1));
    CHECK(req_all_zero(p, index));
    CHECK(rpc_server_try_open(&p->server, &sp));
    CHECK(rpc_port_opcode(&sp) == opcode + 1 && rpc_port_lane_mask(&sp) == mask);
    uint64_t got[RPC_LANES_MAX] = {0};
    CHECK(rpc_server_try_recv(&p->server, &sp, get, got) && got[lane] == v + lane);
    CHECK(rpc_server_try_send(&p->server, &sp, put, &v));
    CHECK(rpc_client_try_recv(&p->client, &cp, get, got) && got[lane] == v + lane);
    rpc_client_close(&p->client, &cp);
    rpc_server_close(&p->server, &sp);
    mailbox(p, index, &c, &s);
    CHECK(c == s && c == c0);
}

/* 1a: short calls of every size class on first, middle and last lanes and ports. */
static void test_short_round_trip(uint32_t ports, uint32_t lanes)
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
    CHECK(rpc_client_try_open_port(&p->client, opcode, 1ull << lane, 0, cp));
    rpc_client_send_short(&p->client, cp, pkt, nbytes);
}

/* Server side of a short call on port 0: open (must succeed), check the request, answer with a
 * head, then the client takes the answer; both close. */
static void short_serve(struct pair *p, rpc_port_t *cp, uint32_t opcode, uint32_t lane,
                        const uint64_t pkt[8], uint32_t nbytes)
{
    rpc_port_t sp;
    CHECK(rpc_server_try_open(&p->server, &sp));
    CHECK(rpc_port_index(&sp) == 0 && rpc_port_opcode(&sp) == opcode);
    CHECK(rpc_port_lane_mask(&sp) == 1ull << lane);
    CHECK(req_all_zero(p, 0));
    struct grabbed g;
    g.seen = 0;
    CHECK(rpc_server_try_recv(&p->server, &sp, grab, &g) && g.seen == 1ull << lane);
    CHECK(short_bytes_ok(&g.buf[lane], pkt, nbytes));
    rpc_port_set_head(&sp, nbytes, opcode);
    CHECK(rpc_server_try_send(&p->server, &sp, NULL, NULL));
    rpc_server_close(&p->server, &sp);
    CHECK(rpc_client_try_recv(&p->client, cp, NULL, NULL));
    CHECK(rpc_port_head(cp, 0) == nbytes && rpc_port_head(cp, 1) == opcode);
    rpc_client_close(&p->client, cp);
    CHECK(req_all_zero(p, 0));
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
    CHECK(!rpc_server_try_open(&p->server, &sp));
    CHECK(!rpc_server_try_open_port(&p->server, 0, &sp));
    CHECK(!rpc_server_try_open(&p->server, &sp)); /* and again: nothing was consumed */
    CHECK(rpc_server_waiting(&p->server, 0));
    CHECK(!server_locked(p, 0));
    mailbox(p, 0, &c2, &s2);
    CHECK(c2 == c && s2 == s);
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
        CHECK(atomic_load(&header_of(p, 0)->req[k]) == before[k]);
    uint64_t w2[2];
    head_words(p, w2);
    CHECK(w2[0] == w[0] && w2[1] == w[1]);
    CHECK(header_of(p, 0)->lane_mask == lane_mask && header_of(p, 0)->opcode == opcode &&
          header_of(p, 0)->seq == seq);
    CHECK(!rpc_client_try_recv(&p->client, cp, NULL, NULL));
}

/* 1b: words of a short request arriving after the flag. */
static void test_short_late_words(uint32_t lanes)
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
static void test_short_late_other(void)
{
    struct pair p;
    pair_init(&p, 3, 1);
    uint64_t pkt[8], v = 4, got[1], saved;
    rpc_port_t a, b, sp;
    make_packet(pkt, 3);
    CHECK(rpc_client_try_open_port(&p.client, 7, 1, 0, &a));
    rpc_client_send_short(&p.client, &a, pkt, 20);
    saved = atomic_load(&header_of(&p, 0)->req[2]);
    atomic_store(&header_of(&p, 0)->req[2], 0);
    CHECK(rpc_client_try_open_port(&p.client, 8, 1, 2, &b));
    CHECK(rpc_client_try_send(&p.client, &b, put, &v));
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == 2); /* 0 is not ready */
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 4);
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &b, get, got) && got[0] == 4);
    rpc_client_close(&p.client, &b);
    CHECK(!rpc_server_try_open(&p.server, &sp));
    atomic_store(&header_of(&p, 0)->req[2], saved);
    short_serve(&p, &a, 7, 0, pkt, 20); /* found on the next sweep (wraps round to 0) */

    /* Call k: a fenced fire-and-forget call that the server answers anyway. */
    uint64_t late[2], w[2];
    CHECK(rpc_client_try_open_port(&p.client, 9, 1, 0, &a));
    CHECK(rpc_client_try_send(&p.client, &a, put, &v));
    rpc_client_close(&p.client, &a);
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == 0);
    CHECK(rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_port_set_head(&sp, 1, 2);
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    head_words(&p, late);
    CHECK(late[0] != 0 && late[1] != 0);
    /* Call k + 1, short: the client does not clear the head, and does not take call k's. */
    make_packet(pkt, 4);
    CHECK(rpc_client_try_open_port(&p.client, 10, 1, 0, &a));
    rpc_client_send_short(&p.client, &a, pkt, 9);
    head_words(&p, w);
    CHECK(w[0] == late[0] && w[1] == late[1]);
    CHECK(!rpc_client_try_recv(&p.client, &a, NULL, NULL));
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 10);
    head_words(&p, w);
    CHECK(w[0] == 0 && w[1] == 0);
    /* Call k's head lands after the open (a server thread that stalled after its flip). */
    struct rpc_header *h = header_of(&p, 0);
    atomic_store(&h->head[0], late[0]);
    atomic_store(&h->head[1], late[1]);
    CHECK(!rpc_client_try_recv(&p.client, &a, NULL, NULL));
    struct grabbed g;
    g.seen = 0;
    CHECK(rpc_server_try_recv(&p.server, &sp, grab, &g) && short_bytes_ok(&g.buf[0], pkt, 9));
    rpc_port_set_head(&sp, 11, 12);
    answer_and_finish(&p, &sp, &a, NULL, NULL, 11, 12);
}

/* 1c: a head left in the slot by an answered call, then 255 short fire-and-forget calls (no
 * client clears the head, none is answered): the 256th call's seq is that head's again, and
 * only the server's clear at the open keeps the client from taking it before the answer. */
static void test_short_seq_wrap(void)
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
        CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 2);
        struct grabbed g;
        g.seen = 0;
        CHECK(rpc_server_try_recv(&p.server, &sp, grab, &g) && g.seen == 1);
        CHECK(short_bytes_ok(&g.buf[0], pkt, i % 65));
        rpc_server_close(&p.server, &sp);
    }
    short_send(&p, &cp, 3, 0, pkt, 64);
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_server_try_open(&p.server, &sp));
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* opened, not answered */
    CHECK(rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    CHECK(!rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    rpc_port_set_head(&sp, 6, 7);
    CHECK(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    CHECK(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    CHECK(rpc_port_head(&cp, 0) == 6 && rpc_port_head(&cp, 1) == 7);
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* 1c: short and fenced calls mixed on one port, in every shape, past several wraps of the
 * 8-bit seq.  `read` models the client's "buffers read since the last fenced flip" (RPC_PS_READ
 * in the handle, RPC_CS_READ in the state word while the port is closed and client-owned). */
struct mix {
    struct pair p;
    uint64_t rng;
    uint32_t calls; /* calls opened on port 0 so far (the seq of the last is calls & 0xff) */
    bool read;
};

static uint64_t mix_rand(struct mix *m, uint64_t below)
{
    m->rng = test_mix(m->rng);
    return m->rng % below;
}

static void mix_open(struct mix *m, rpc_port_t *cp, uint32_t opcode, uint64_t mask)
{
    uint32_t c, s;
    mailbox(&m->p, 0, &c, &s);
    CHECK(c == s);
    CHECK(req_all_zero(&m->p, 0));
    CHECK(rpc_client_try_open_port(&m->p.client, opcode, mask, 0, cp));
    m->calls++;
    CHECKF(((cp->state_ & RPC_PS_READ) != 0) == m->read, "call %u: read state", m->calls);
}

static void mix_close(struct mix *m, rpc_port_t *cp)
{
    bool owned = (cp->state_ & RPC_PS_OWNED) != 0;
    rpc_client_close(&m->p.client, cp);
    if (!owned)
        m->read = false; /* the server has the port: not known, nothing to fence */
    uint64_t st = client_state(&m->p, 0);
    CHECK((st & RPC_CS_LOCK) == 0);
    CHECK(((st & RPC_CS_KNOWN) != 0) == owned);
    CHECKF(((st & RPC_CS_READ) != 0) == m->read, "call %u: state word %#llx", m->calls,
           (unsigned long long)st);
    CHECK(((st >> RPC_CS_SEQ_SHIFT) & 0xff) == (m->calls & 0xff));
}

static void mix_short(struct mix *m, rpc_port_t *cp, const uint64_t pkt[8], uint32_t nbytes)
{
    rpc_client_send_short(&m->p.client, cp, pkt, nbytes);
    m->read = false;
    CHECK(client_flag(&m->p, 0) & RPC_FLAG_SHORT);
    CHECK((atomic_load(&header_of(&m->p, 0)->req[0]) & 0xffffu) == (0x8000u | (m->calls & 0xff)));
    CHECK(!rpc_client_try_recv(&m->p.client, cp, NULL, NULL)); /* whatever the head slot holds */
}

static void mix_fenced_send(struct mix *m, rpc_port_t *cp, uint64_t seed)
{
    CHECK(rpc_client_try_send(&m->p.client, cp, fill_pattern, &seed));
    m->read = false;
    CHECK((client_flag(&m->p, 0) & RPC_FLAG_SHORT) == 0);
    CHECK(req_all_zero(&m->p, 0));
}

static void mix_server_open(struct mix *m, rpc_port_t *sp, uint32_t opcode, uint64_t mask)
{
    CHECK(rpc_server_try_open(&m->p.server, sp));
    CHECK(rpc_port_index(sp) == 0 && rpc_port_opcode(sp) == opcode);
    CHECK(rpc_port_lane_mask(sp) == mask);
    CHECK(req_all_zero(&m->p, 0));
}

static void mix_server_recv_short(struct mix *m, rpc_port_t *sp, uint32_t lane,
                                  const uint64_t pkt[8], uint32_t nbytes)
{
    struct grabbed g;
    g.seen = 0;
    CHECK(rpc_server_try_recv(&m->p.server, sp, grab, &g) && g.seen == 1ull << lane);
    CHECKF(short_bytes_ok(&g.buf[lane], pkt, nbytes), "call %u", m->calls);
}

static void test_short_mix(uint32_t lanes, uint32_t calls, uint64_t seed)
{
    struct mix m;
    memset(&m, 0, sizeof(m));
    pair_init(&m.p, 1, lanes);
    m.rng = seed;
    uint64_t all = lanes == 64 ? ~0ull : (1ull << lanes) - 1;
    uint32_t shapes[10] = {0};
    for (uint32_t i = 0; i < calls; i++) {
        uint32_t shape = (uint32_t)mix_rand(&m, 10), lane = (uint32_t)mix_rand(&m, lanes);
        uint32_t nbytes = (uint32_t)mix_rand(&m, RPC_SHORT_MAX + 1);
        uint32_t opcode = (uint32_t)test_mix(i + seed);
        uint64_t mask = 1ull << lane, pkt[8], a = test_mix(i) ^ seed, b = a + 1;
        uint64_t h0 = a & head_mask48, h1 = test_mix(a) & head_mask48;
        rpc_port_t cp, sp, other;
        make_packet(pkt, i);
        shapes[shape]++;
        switch (shape) {
        case 0: /* short, answer by head (buffers maybe read through peek) */
        case 1: /* short, answer read from the buffers */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            rpc_port_set_head(&sp, h0, h1);
            CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            rpc_server_close(&m.p.server, &sp);
            if (shape == 0) {
                CHECK(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
                if (mix_rand(&m, 2)) {
                    rpc_client_peek(&m.p.client, &cp, check_pattern, &a);
                    m.read = true;
                }
            } else {
                CHECK(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
                m.read = true;
            }
            CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            break;
        case 2: /* short, fire and forget (answered by the server anyway, or not) */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_close(&m, &cp);
            CHECK(!rpc_client_try_open_port(&m.p.client, opcode, mask, 0, &other));
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            if (mix_rand(&m, 2)) {
                rpc_port_set_head(&sp, h0, h1);
                CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            }
            rpc_server_close(&m.p.server, &sp);
            break;
        case 3: /* short, then a fenced second packet */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            CHECK(!rpc_client_try_send(&m.p.client, &cp, fill_pattern, &b)); /* server's turn */
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            CHECK(!rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b)); /* hands back */
            mix_fenced_send(&m, &cp, b);
            CHECK(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_port_set_head(&sp, h0, h1);
            CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            CHECK(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
            m.read = true;
            CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            rpc_server_close(&m.p.server, &sp);
            mix_close(&m, &cp);
            break;
        case 4: /* fenced, any lanes, answer read from the buffers or by head */
            mask = mix_rand(&m, 2) ? mask : (test_mix(a) & all) | mask;
            mix_open(&m, &cp, opcode, mask);
            mix_fenced_send(&m, &cp, b);
            mix_server_open(&m, &sp, opcode, mask);
            CHECK(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_port_set_head(&sp, h0, h1);
            CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            if (mix_rand(&m, 2)) {
                CHECK(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
                m.read = true;
            } else {
                CHECK(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            }
            CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            rpc_server_close(&m.p.server, &sp);
            break;
        case 5: /* fenced fire and forget */
            mix_open(&m, &cp, opcode, mask);
            mix_fenced_send(&m, &cp, b);
            mix_close(&m, &cp);
            mix_server_open(&m, &sp, opcode, mask);
            CHECK(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_server_close(&m.p.server, &sp);
            break;
        case 6: { /* one-packet streams both ways */
            const void *src[RPC_LANES_MAX];
            void *dst[RPC_LANES_MAX];
            uint64_t size[RPC_LANES_MAX], cap[RPC_LANES_MAX], got_size[RPC_LANES_MAX];
            unsigned char back[RPC_STREAM_FIRST], into[RPC_STREAM_FIRST];
            size[lane] = nbytes % (RPC_STREAM_FIRST + 1);
            src[lane] = pkt;
            cap[lane] = sizeof(into);
            dst[lane] = into;
            mix_open(&m, &cp, opcode, mask);
            rpc_client_send_n(&m.p.client, &cp, src, size);
            m.read = false;
            CHECK((client_flag(&m.p, 0) & RPC_FLAG_SHORT) == 0);
            mix_server_open(&m, &sp, opcode, mask);
            memset(into, 0, sizeof(into));
            rpc_server_recv_n(&m.p.server, &sp, dst, cap, got_size);
            CHECK(got_size[lane] == size[lane] && memcmp(into, pkt, size[lane]) == 0);
            for (uint32_t k = 0; k < sizeof(back); k++)
                back[k] = (unsigned char)(a + k);
            src[lane] = back;
            size[lane] = a % (RPC_STREAM_FIRST + 1);
            rpc_server_send_n(&m.p.server, &sp, src, size);
            rpc_server_close(&m.p.server, &sp);
            memset(into, 0, sizeof(into));
            rpc_client_recv_n(&m.p.client, &cp, dst, cap, got_size);
            m.read = true;
            CHECK(got_size[lane] == size[lane] && memcmp(into, back, size[lane]) == 0);
            mix_close(&m, &cp);
            break;
        }
        case 7: /* short, two packets answered (read, then by head) */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            CHECK(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
            m.read = true;
            CHECK(!rpc_server_try_send(&m.p.server, &sp, fill_pattern, &b)); /* client's turn */
            CHECK(!rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));       /* hands back */
            m.read = false;
            rpc_port_set_head(&sp, h0, h1);
            CHECK(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &b));
            CHECK(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            rpc_server_close(&m.p.server, &sp);
            mix_close(&m, &cp);
            break;
        case 8: /* open and close with no send: the state word keeps its read bit */
            mix_open(&m, &cp, opcode, mask);
            mix_close(&m, &cp);
            CHECK(!rpc_server_try_open(&m.p.server, &sp));
            break;
        case 9: /* a short call whose words are late, then arrive */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            {
                uint32_t n = (nbytes + 5) / 6, k = (uint32_t)mix_rand(&m, n + 1);
                rpc_head_word_t *req = header_of(&m.p, 0)->req;
                uint64_t saved = atomic_load(&req[k]);
                atomic_store(&req[k], 0);
                CHECK(!rpc_server_try_open(&m.p.server, &sp) && !server_locked(&m.p, 0));
                atomic_store(&req[k], saved);
            }
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            rpc_port_set_head(&sp, h0, h1);
            CHECK(rpc_server_try_send(&m.p.server, &sp, NULL, NULL));
            rpc_server_close(&m.p.server, &sp);
            CHECK(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            CHECK(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            break;
        }
        uint32_t c, s;
        mailbox(&m.p, 0, &c, &s);
        CHECKF(c == s, "call %u shape %u", m.calls, shape);
        CHECK(req_all_zero(&m.p, 0));
        CHECK(!server_locked(&m.p, 0));
    }
    for (uint32_t k = 0; k < 10; k++)
        CHECKF(shapes[k] > 0, "shape %u never ran", k);
    CHECK(m.calls >= 600);
    pair_fini(&m.p);
}

/* test_short_read_state: a short call on port 0 (nothing read since the last fenced flip) that
 * the server answers with fill_pattern(a) and closes; the client has yet to receive it. */
static void short_call_answered(struct pair *p, rpc_port_t *cp, rpc_port_t *sp, uint32_t opcode,
                                const uint64_t *pkt, uint64_t *a)
{
    CHECK(rpc_client_try_open_port(&p->client, opcode, 1, 0, cp));
    CHECK((cp->state_ & RPC_PS_READ) == 0);
    rpc_client_send_short(&p->client, cp, pkt, 8);
    CHECK(rpc_server_try_open(&p->server, sp) && rpc_server_try_recv(&p->server, sp, NULL, NULL));
    CHECK(rpc_server_try_send(&p->server, sp, fill_pattern, a));
    rpc_server_close(&p->server, sp);
}

/* 1c: the read bit of the state word, step by step: a short call fences its flag exactly when
 * buffers were read since the client's last fenced flip, whichever client caller read them. */
static void test_short_read_state(void)
{
    struct pair p;
    pair_init(&p, 1, 1);
    uint64_t pkt[8], a = 5, got[1];
    rpc_port_t cp, sp;
    make_packet(pkt, 77);
    /* A fresh port: nothing read. */
    short_call_answered(&p, &cp, &sp, 1, pkt, &a);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL)); /* head only: no read */
    CHECK((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp);
    CHECK((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == RPC_CS_KNOWN);
    /* A call that reads its answer: the state word says so after the close ... */
    short_call_answered(&p, &cp, &sp, 2, pkt, &a);
    CHECK(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    CHECK(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    CHECK((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == (RPC_CS_KNOWN | RPC_CS_READ));
    /* ... through an open and close with nothing sent ... */
    CHECK(rpc_client_try_open_port(&p.client, 3, 1, 0, &cp));
    CHECK(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    CHECK(client_state(&p, 0) & RPC_CS_READ);
    /* ... to the next short call, whose flip (fenced) clears it. */
    CHECK(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    CHECK(cp.state_ & RPC_PS_READ);
    rpc_client_send_short(&p.client, &cp, pkt, 8);
    CHECK((cp.state_ & RPC_PS_READ) == 0);
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    CHECK(rpc_server_try_send(&p.server, &sp, NULL, NULL));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    rpc_client_close(&p.client, &cp);
    CHECK((client_state(&p, 0) & RPC_CS_READ) == 0);
    /* peek and a fenced call's read count too; a fenced flip clears. */
    CHECK(rpc_client_try_open_port(&p.client, 5, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &a));
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    CHECK(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_peek(&p.client, &cp, check_pattern, &a);
    CHECK(cp.state_ & RPC_PS_READ);
    rpc_client_close(&p.client, &cp);
    CHECK(client_state(&p, 0) & RPC_CS_READ);
    CHECK(rpc_client_try_open_port(&p.client, 6, 1, 0, &cp));
    CHECK(cp.state_ & RPC_PS_READ);
    CHECK(rpc_client_try_send(&p.client, &cp, put, &a));
    CHECK((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp); /* fire and forget: not known, nothing read */
    CHECK((client_state(&p, 0) & (RPC_CS_KNOWN | RPC_CS_READ)) == 0);
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_open_port(&p.client, 7, 1, 0, &cp));
    CHECK((cp.state_ & RPC_PS_READ) == 0);
    rpc_client_close(&p.client, &cp);
    /* A second client object over the same state words (another caller of the client side):
     * it sees the read bit that the first one left. */
    struct rpc_client second;
    CHECK(rpc_client_init(&second, p.region, 1, 1, p.client_locks) == TETHER_OK);
    CHECK(rpc_client_try_open_port(&p.client, 8, 1, 0, &cp));
    rpc_client_send_short(&p.client, &cp, pkt, 64);
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, NULL, NULL));
    CHECK(rpc_server_try_send(&p.server, &sp, fill_pattern, &a));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &cp, check_pattern, &a));
    rpc_client_close(&p.client, &cp);
    CHECK(rpc_client_try_open_port(&second, 9, 1, 0, &cp));
    CHECK(cp.state_ & RPC_PS_READ);
    rpc_client_send_short(&second, &cp, pkt, 3);
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_port_opcode(&sp) == 9);
    struct grabbed g;
    g.seen = 0;
    CHECK(rpc_server_try_recv(&p.server, &sp, grab, &g) && short_bytes_ok(&g.buf[0], pkt, 3));
    rpc_server_close(&p.server, &sp);
    rpc_client_close(&second, &cp);
    pair_fini(&p);
}

/* 1d: a broken meta word (a lane outside the port, more than 11 data words) opens a call with
 * no lanes or a clipped request, does not crash, and the port comes back with the server's
 * close; a meta word announcing words that never come leaves the port waiting. */
static void test_short_broken_meta(uint32_t lanes)
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
        CHECK(rpc_client_try_open_port(&p.client, 300 + i, 1, 1, &cp));
        rpc_client_send_short(&p.client, &cp, pkt, 64);
        rpc_head_word_t *req = header_of(&p, 1)->req;
        uint64_t meta = atomic_load(&req[0]);
        meta &= ~(0x3full << 48 | 0xfull << 54);
        atomic_store(&req[0], meta | (uint64_t)lane << 48 | (uint64_t)bad[i].n << 54);
        if (!wait)
            rpc_client_close(&p.client, &cp);
        CHECK(rpc_server_try_open(&p.server, &sp));
        CHECK(rpc_port_index(&sp) == 1 && rpc_port_opcode(&sp) == 300 + i);
        CHECKF(rpc_port_lane_mask(&sp) == want, "case %u: mask %llx", i,
               (unsigned long long)rpc_port_lane_mask(&sp));
        CHECK(req_all_zero(&p, 1));
        struct grabbed g;
        g.seen = 0;
        CHECK(rpc_server_try_recv(&p.server, &sp, grab, &g) && g.seen == want);
        if (want)
            CHECK(short_bytes_ok(&g.buf[lane], pkt, 64)); /* 11 words: the whole packet */
        for (uint32_t l = 0; l < lanes; l++) {
            if (l == lane)
                continue;
            const unsigned char *b = (const unsigned char *)lane_buffer(&p, 1, l);
            for (uint32_t k = 0; k < RPC_BUFFER_SIZE; k++)
                CHECK(b[k] == 0xa5);
        }
        if (wait) {
            rpc_port_set_head(&sp, i, 1);
            CHECK(rpc_server_try_send(&p.server, &sp, NULL, NULL));
            CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
            CHECK(rpc_port_head(&cp, 0) == i && rpc_port_head(&cp, 1) == 1);
            rpc_client_close(&p.client, &cp);
        }
        rpc_server_close(&p.server, &sp);
        mailbox(&p, 1, &c, &s);
        CHECK(c == s);
        CHECK(!rpc_server_try_open(&p.server, &sp));
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
    CHECK(rpc_client_try_open_port(&p->client, 3, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p->client, &cp, put, &v));
    CHECK(rpc_server_try_open(&p->server, &sp) && rpc_server_try_recv(&p->server, &sp, get, got));
    CHECK(got[0] == v);
    rpc_port_set_head(&sp, v, v + 1);
    CHECK(rpc_server_try_send(&p->server, &sp, put, &v));
    rpc_server_close(&p->server, &sp);
    got[0] = 0;
    CHECK(rpc_client_try_recv(&p->client, &cp, read ? get : NULL, got));
    CHECK(rpc_port_head(&cp, 0) == v && rpc_port_head(&cp, 1) == v + 1 && got[0] == (read ? v : 0));
    rpc_client_close(&p->client, &cp);
}

static void set_server_flag(struct pair *p, uint32_t value)
{
    atomic_store(&p->server.process.sflags[0], (uint8_t)value);
}

static void test_close_state(void)
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
        CHECK((st & ~protocol_bits) == 0);
        CHECK((st & (RPC_CS_LOCK | RPC_CS_KNOWN | RPC_CS_READ)) ==
              (RPC_CS_KNOWN | (read ? RPC_CS_READ : 0u)));
        mailbox(&p, 0, &c, &s);
        CHECK(c == s);
        set_server_flag(&p, s ^ 1u); /* the mailbox now says "the server's turn" */
        CHECK(rpc_client_try_open_port(&p.client, 3, 1, 0, &cp));     /* no mailbox read */
        CHECK(!rpc_client_try_open_port(&p.client, 3, 1, 0, &other)); /* locked */
        rpc_client_close(&p.client, &cp);
        set_server_flag(&p, s);
        uint64_t seq_bits = 0xffull << RPC_CS_SEQ_SHIFT, now = client_state(&p, 0);
        CHECK((now & ~seq_bits) == (st & ~seq_bits)); /* still known; the next seq */
        CHECK(((now ^ (st + (1ull << RPC_CS_SEQ_SHIFT))) & seq_bits) == 0);
    }

    /* Fire and forget: not known (the server has the port), so every caller reads the mailbox. */
    uint64_t v = 15, got[1];
    rpc_port_t sp;
    CHECK(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    CHECK(rpc_client_try_send(&p.client, &cp, put, &v));
    rpc_client_close(&p.client, &cp);
    uint64_t st = client_state(&p, 0);
    CHECK((st & ~protocol_bits) == 0 && (st & (RPC_CS_LOCK | RPC_CS_KNOWN)) == 0);
    CHECK(!rpc_client_try_open_port(&p.client, 4, 1, 0, &cp)); /* the server's turn */
    CHECK(client_state(&p, 0) == st);                          /* left as it was */
    CHECK(rpc_server_try_open(&p.server, &sp) && rpc_server_try_recv(&p.server, &sp, get, got));
    CHECK(got[0] == 15);
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_open_port(&p.client, 4, 1, 0, &cp));
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

int main(void)
{
    test_layout();
    test_steps();
    test_fire_and_forget();
    test_heads();
    test_server_open_port();
    uint32_t ports[] = {1, 2, 31, 32, 33, 64, 4096, 65536};
    for (unsigned i = 0; i < sizeof(ports) / sizeof(ports[0]); i++)
        test_scan_order(ports[i]);
    const uint32_t slice_ports[] = {40, 100, 4096}, slices[] = {0, 1, 3, 32};
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < 4; j++)
            test_sweep_slices(slice_ports[i], slices[j]);
    test_lanes(1);
    test_lanes(32);
    test_lanes(64);
    test_lanes(7);
    const uint32_t short_lanes[] = {1, 2, 7, 32, 64};
    for (unsigned i = 0; i < sizeof(short_lanes) / sizeof(short_lanes[0]); i++) {
        test_short_round_trip(i % 2 ? 5 : 40, short_lanes[i]);
        test_short_late_words(short_lanes[i]);
        test_short_broken_meta(short_lanes[i]);
    }
    test_short_late_other();
    test_short_read_state();
    test_close_state();
    test_short_seq_wrap();
    test_short_mix(1, 2000, 1);
    test_short_mix(3, 2000, 2);
    test_short_mix(64, 1000, 3);
    printf("rpc_test_protocol: ok\n");
    return 0;
}
