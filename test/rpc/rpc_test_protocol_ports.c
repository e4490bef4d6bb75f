/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol_ports.c - rpc_test_protocol's opening of ports: the server opening one
 * given port, client hint and server round-robin order, bounded sweeps, lane masks.
 */
#include "rpc_test_protocol.h"

/* The server opens one given port: only when a call waits there, and not twice. */
void test_server_open_port(void)
{
    struct pair p;
    pair_init(&p, 40, 1);
    uint64_t v = 3, got[1] = {0};
    rpc_port_t cp, sp, sp2;
    REQUIRE(!rpc_server_waiting(&p.server, 33) && !rpc_server_try_open_port(&p.server, 33, &sp));
    REQUIRE(rpc_client_try_open_port(&p.client, 9, 1, 33, &cp) && rpc_port_index(&cp) == 33);
    REQUIRE(!rpc_server_waiting(&p.server, 33)); /* opened, nothing sent yet */
    REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
    REQUIRE(rpc_server_waiting(&p.server, 33) && !rpc_server_waiting(&p.server, 32));
    REQUIRE(!rpc_server_waiting(&p.server, 40)); /* out of range */
    REQUIRE(!rpc_server_try_open_port(&p.server, 32, &sp));
    REQUIRE(!rpc_server_try_open_port(&p.server, 40, &sp));
    REQUIRE(rpc_server_try_open_port(&p.server, 33, &sp) && rpc_port_opcode(&sp) == 9);
    REQUIRE(!rpc_server_try_open_port(&p.server, 33, &sp2)); /* held by this server thread */
    REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 3);
    REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
    rpc_server_close(&p.server, &sp);
    REQUIRE(!rpc_server_waiting(&p.server, 33));
    REQUIRE(rpc_client_try_recv(&p.client, &cp, get, got) && got[0] == 3);
    rpc_client_close(&p.client, &cp);
    pair_fini(&p);
}

/* Client open starts at the hint and wraps; server open rotates. */
void test_scan_order(uint32_t ports)
{
    struct pair p;
    pair_init(&p, ports, 1);
    uint64_t v = 1, got[1];
    rpc_port_t cp[4], sp;
    uint32_t want[4] = {3 % ports, (ports / 2 + 7) % ports, ports - 1, 0};
    uint32_t n = ports >= 4 ? 4 : ports;

    for (uint32_t i = 0; i < n; i++) {
        REQUIRE(rpc_client_try_open(&p.client, 100 + i, 1, want[i], &cp[i]));
        REQUIRE(rpc_port_index(&cp[i]) == want[i]);
        REQUIRE(rpc_client_try_send(&p.client, &cp[i], put, &v));
        rpc_client_close(&p.client, &cp[i]);
    }
    /* A hint on a busy port moves to the next free one, wrapping. */
    if (ports >= 4) {
        rpc_port_t extra;
        REQUIRE(rpc_client_try_open(&p.client, 9, 1, ports - 1, &extra));
        REQUIRE(rpc_port_index(&extra) == 1); /* ports-1 and 0 are the server's */
        rpc_client_close(&p.client, &extra);
    }
    /* The server finds them in index order from 0 (its start), then starts
     * after the last one it served. */
    uint32_t order[4], k = 0;
    while (rpc_server_try_open(&p.server, &sp)) {
        REQUIRE(k < n);
        order[k++] = rpc_port_index(&sp);
        REQUIRE(rpc_port_opcode(&sp) >= 100);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }
    REQUIRE(k == n);
    for (uint32_t i = 1; i < k; i++)
        REQUIRE(order[i] > order[i - 1]);

    if (ports >= 4) {
        /* Round robin: after serving port a, a new call on a waits behind a
         * call on b > a. */
        uint32_t a = 5 % ports, b = (ports - 2);
        rpc_port_t x;
        REQUIRE(rpc_client_try_open(&p.client, 1, 1, a, &x) && rpc_port_index(&x) == a);
        REQUIRE(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == a);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        REQUIRE(rpc_client_try_open(&p.client, 1, 1, a, &x) && rpc_port_index(&x) == a);
        REQUIRE(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        REQUIRE(rpc_client_try_open(&p.client, 1, 1, b, &x) && rpc_port_index(&x) == b);
        REQUIRE(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == b);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == a);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
    }

    if (ports >= 4) {
        /* One given port: taken only when free and client-owned, never another one. */
        uint32_t h = ports - 3;
        rpc_port_t x, y;
        REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, h, &x) && rpc_port_index(&x) == h);
        REQUIRE(!rpc_client_try_open_port(&p.client, 4, 1, h, &y)); /* locked */
        REQUIRE(rpc_client_try_send(&p.client, &x, put, &v));
        rpc_client_close(&p.client, &x);
        REQUIRE(!rpc_client_try_open_port(&p.client, 4, 1, h, &y)); /* the server's turn */
        REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, h + 1, &y) &&
                rpc_port_index(&y) == h + 1);
        rpc_client_close(&p.client, &y);
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_index(&sp) == h);
        REQUIRE(rpc_port_opcode(&sp) == 4);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        REQUIRE(rpc_client_try_open_port(&p.client, 4, 1, h, &x) && rpc_port_index(&x) == h);
        rpc_client_close(&p.client, &x);
    }

    /* Every port taken: open fails, and succeeds again after one close. */
    rpc_port_t *all = calloc(ports, sizeof(*all));
    REQUIRE(all);
    for (uint32_t i = 0; i < ports; i++)
        REQUIRE(rpc_client_try_open(&p.client, 1, 1, i * 7, &all[i]));
    rpc_port_t more;
    REQUIRE(!rpc_client_try_open(&p.client, 1, 1, 0, &more));
    rpc_client_close(&p.client, &all[ports / 2]);
    REQUIRE(rpc_client_try_open(&p.client, 1, 1, 0, &more));
    REQUIRE(rpc_port_index(&more) == rpc_port_index(&all[ports / 2]));
    all[ports / 2] = more;
    for (uint32_t i = 0; i < ports; i++)
        rpc_client_close(&p.client, &all[i]);
    free(all);
    pair_fini(&p);
}

/* Bounded sweeps (rpc_server_try_open_n): each looks only at its `slice` words from where the
 * last one stopped, finds the waiting calls in ring order, and a sweep that finds nothing moves
 * on by exactly `slice` words, so every port is visited within one ring's worth of sweeps. */
void test_sweep_slices(uint32_t ports, uint32_t slice)
{
    struct pair p;
    pair_init(&p, ports, 1);
    uint64_t v = 1, got[1];
    rpc_port_t cp, sp;
    uint32_t want[4] = {1, ports / 3, ports / 3 + 1, ports - 1}, words = rpc_bitmap_words(ports);
    for (uint32_t i = 0; i < 4; i++) {
        REQUIRE(rpc_client_try_open_port(&p.client, 50 + i, 1, want[i], &cp));
        REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
        rpc_client_close(&p.client, &cp);
    }
    uint32_t found = 0, rounds = 0;
    bool bounded = slice != 0 && slice < words;
    while (found < 4) {
        REQUIRE(rounds++ <= words / (slice ? slice : 1) + 5);
        uint32_t from = p.server.process.next % ports;
        if (rpc_server_try_open_n(&p.server, slice, &sp)) {
            uint32_t index = rpc_port_index(&sp);
            REQUIRE(index == want[found]);
            if (bounded) /* inside this sweep's words */
                REQUIRE((index / 32 + words - from / 32) % words < slice);
            REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got) && got[0] == 1);
            rpc_server_close(&p.server, &sp);
            found++;
        } else {
            REQUIRE(bounded); /* a full sweep misses no call */
            REQUIRE(p.server.process.next == (from / 32 + slice) % words * 32);
        }
    }
    REQUIRE(!rpc_server_try_open(&p.server, &sp));
    REQUIRE(!rpc_server_try_open_n(&p.server, 1, &sp));
    pair_fini(&p);
}

/* Lanes: only the lanes of the mask are visited; a header mask with bits
 * beyond the lane count (a broken device) is clipped by the server. */
void test_lanes(uint32_t lanes)
{
    struct pair p;
    pair_init(&p, 2, lanes);
    uint64_t full = lanes == 64 ? ~0ull : (1ull << lanes) - 1;
    uint64_t masks[] = {1, full, full & 0x5555555555555555ull, 1ull << (lanes - 1)};
    for (unsigned i = 0; i < 4; i++) {
        uint64_t v = 1000 * (i + 1), got[64] = {0}, reply[64] = {0};
        rpc_port_t cp, sp;
        REQUIRE(rpc_client_try_open(&p.client, 5, masks[i], 0, &cp));
        REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_lane_mask(&sp) == masks[i]);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        for (uint32_t l = 0; l < 64; l++)
            REQUIRE(got[l] == (((masks[i] >> l) & 1) ? v + l : 0));
        v += 7;
        REQUIRE(rpc_server_try_send(&p.server, &sp, put, &v));
        REQUIRE(rpc_client_try_recv(&p.client, &cp, get, reply));
        for (uint32_t l = 0; l < 64; l++)
            REQUIRE(reply[l] == (((masks[i] >> l) & 1) ? v + l : 0));
        rpc_server_close(&p.server, &sp);
        rpc_client_close(&p.client, &cp);
    }
    if (lanes < 64) {
        uint64_t v = 1, got[64] = {0};
        rpc_port_t cp, sp;
        REQUIRE(rpc_client_try_open(&p.client, 5, 1, 1, &cp));
        REQUIRE(rpc_client_try_send(&p.client, &cp, put, &v));
        p.client.process.headers[rpc_port_index(&cp)].lane_mask = ~0ull; /* corrupt */
        REQUIRE(rpc_server_try_open(&p.server, &sp) && rpc_port_lane_mask(&sp) == full);
        REQUIRE(rpc_server_try_recv(&p.server, &sp, get, got));
        rpc_server_close(&p.server, &sp);
        rpc_client_close(&p.client, &cp);
    }
    pair_fini(&p);
}
