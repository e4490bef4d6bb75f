/*
 * test/rpc/rpc_test_protocol.c - the port state machine stepped by hand from
 * one thread with the non-blocking calls, so every "not yet" answer is
 * asserted at a known point; the layout arithmetic; server scan order.
 */
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
    CHECK(rpc_lock_size(1) == 4 && rpc_lock_size(33) == 132 && rpc_lock_size(65536) == 262144);
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
    uint32_t locks[1];
    struct rpc_client c;
    CHECK(rpc_client_init(&c, NULL, 1, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 1, NULL) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region + 8, 1, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 0, 1, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(&c, region, 1, 65, locks) == TETHER_ERR_INVALID);
    CHECK(rpc_client_init(NULL, region, 1, 1, locks) == TETHER_ERR_INVALID);
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
    CHECK(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    CHECK(rpc_client_try_recv(&p.client, &cp, NULL, NULL));
    CHECK(rpc_port_head(&cp, 0) == 0 && rpc_port_head(&cp, 1) == 0);
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
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
    test_lanes(1);
    test_lanes(32);
    test_lanes(64);
    test_lanes(7);
    printf("rpc_test_protocol: ok\n");
    return 0;
}
