/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_stream.c - send_n / recv_n with byte strings of 0 bytes
 * to 1 MiB, between a client thread and a server thread.
 *
 *   rpc_test_stream --lanes L --max BYTES
 *
 * Per round the client streams one string per active lane (lane sizes
 * differ, 0 included), the server learns the sizes with recv_n_size,
 * allocates, takes the data with recv_n_data, checks every byte and streams
 * it back transformed; the client receives the reply once with room for all
 * of it and once more (second round trip on the same port) into a buffer
 * that is too small, which must hold the prefix and report the full size.
 */
#include <pthread.h>

#include "rpc_test_util.h"

enum { OP_STREAM = 0x201, OP_DONE = 0x202 };

static uint64_t opt_lanes = 1, opt_max = 1 << 20;
static struct rpc_client client;
static struct rpc_server server;

static uint8_t byte_at(uint64_t round, uint32_t lane, uint64_t i)
{
    return (uint8_t)(test_mix(round * 64 + lane + (i / 8) * 4096) >> ((i % 8) * 8));
}

/* Sizes that sit on every packet boundary, then a sweep up to opt_max. */
static uint64_t size_for(uint64_t round, uint32_t lane)
{
    static const uint64_t edges[] = {0,   1,   7,    8,    55,   56,    57,    63,
                                     64,  65,  119,  120,  121,  183,   184,   185,
                                     248, 249, 1000, 4095, 4096, 65535, 65536, 65537};
    const uint64_t n = sizeof(edges) / sizeof(edges[0]);
    uint64_t k = round + lane * 5;
    uint64_t s = k < n ? edges[k] : edges[k % n] * (1 + (k / n) % 16) + lane;
    if (lane == 0 && round == n)
        s = opt_max; /* the largest string travels once, in lane 0 */
    return s > opt_max ? opt_max : s;
}

static uint64_t rounds(void)
{
    return 24 + 4;
}

static void put_round(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    b->data[0] = *(uint64_t *)arg + lane;
}

static void take_round(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    uint64_t *round = arg;
    if (lane == 0) /* every mask has lane 0, visited first */
        *round = b->data[0];
    REQUIRE(b->data[0] == *round + lane);
}

static void *server_main(void *arg)
{
    (void)arg;
    for (;;) {
        rpc_port_t port = rpc_server_open(&server);
        if (rpc_port_opcode(&port) == OP_DONE) {
            uint64_t ignore[64];
            rpc_server_recv_n(&server, &port, NULL, (uint64_t[64]){0}, ignore);
            rpc_server_close(&server, &port);
            return NULL;
        }
        REQUIRE(rpc_port_opcode(&port) == OP_STREAM);
        uint64_t mask = rpc_port_lane_mask(&port);
        uint64_t size[64] = {0}, cap[64] = {0};
        void *dst[64] = {0};
        uint64_t round = 0;
        rpc_server_recv(&server, &port, take_round, &round);
        REQUIRE(round < rounds());
        rpc_server_recv_n_size(&server, &port, size);
        for (uint32_t l = 0; l < 64; l++) {
            if (!((mask >> l) & 1))
                continue;
            REQUIRE(size[l] == size_for(round, l));
            dst[l] = malloc(size[l] + 1);
            REQUIRE(dst[l]);
            cap[l] = size[l];
        }
        rpc_server_recv_n_data(&server, &port, dst, cap);
        for (uint32_t l = 0; l < 64; l++) {
            if (!((mask >> l) & 1))
                continue;
            uint8_t *b = dst[l];
            for (uint64_t i = 0; i < size[l]; i++) {
                REQUIREF(b[i] == byte_at(round, l, i), "round %llu lane %u byte %llu",
                         (unsigned long long)round, l, (unsigned long long)i);
                b[i] ^= 0x5a;
            }
        }
        const void *src[64];
        for (uint32_t l = 0; l < 64; l++)
            src[l] = dst[l];
        rpc_server_send_n(&server, &port, src, size);
        rpc_server_send_n(&server, &port, src, size);
        rpc_server_close(&server, &port);
        for (uint32_t l = 0; l < 64; l++)
            free(dst[l]);
    }
}

static void client_round(uint64_t round)
{
    uint64_t lanes_mask = opt_lanes >= 64 ? ~0ull : (1ull << opt_lanes) - 1;
    uint64_t mask = opt_lanes == 1 ? 1 : (test_mix(round) | 1) & lanes_mask;
    uint64_t size[64] = {0}, got[64] = {0}, cap[64] = {0}, small_cap[64] = {0};
    const void *src[64] = {0};
    void *back[64] = {0}, *small[64] = {0};
    for (uint32_t l = 0; l < 64; l++) {
        if (!((mask >> l) & 1))
            continue;
        size[l] = size_for(round, l);
        uint8_t *b = malloc(size[l] + 1);
        REQUIRE(b);
        for (uint64_t i = 0; i < size[l]; i++)
            b[i] = byte_at(round, l, i);
        src[l] = b;
        back[l] = malloc(size[l] + 1);
        cap[l] = size[l];
        small_cap[l] = size[l] / 3;
        small[l] = malloc(small_cap[l] + 1);
        REQUIRE(back[l] && small[l]);
        ((uint8_t *)small[l])[small_cap[l]] = 0xee; /* guard byte */
    }
    rpc_port_t port = rpc_client_open(&client, OP_STREAM, mask, (uint32_t)round);
    rpc_client_send(&client, &port, put_round, &round);
    rpc_client_send_n(&client, &port, src, size);
    rpc_client_recv_n(&client, &port, back, cap, got);
    for (uint32_t l = 0; l < 64; l++) {
        if (!((mask >> l) & 1))
            continue;
        REQUIRE(got[l] == size[l]);
        for (uint64_t i = 0; i < size[l]; i++)
            REQUIRE(((uint8_t *)back[l])[i] == (uint8_t)(byte_at(round, l, i) ^ 0x5a));
    }
    memset(got, 0, sizeof(got));
    rpc_client_recv_n(&client, &port, small, small_cap, got);
    for (uint32_t l = 0; l < 64; l++) {
        if (!((mask >> l) & 1))
            continue;
        REQUIRE(got[l] == size[l]); /* full size reported */
        for (uint64_t i = 0; i < small_cap[l]; i++)
            REQUIRE(((uint8_t *)small[l])[i] == (uint8_t)(byte_at(round, l, i) ^ 0x5a));
        REQUIRE(((uint8_t *)small[l])[small_cap[l]] == 0xee); /* nothing past cap */
    }
    rpc_client_close(&client, &port);
    for (uint32_t l = 0; l < 64; l++) {
        free((void *)src[l]);
        free(back[l]);
        free(small[l]);
    }
}

int main(int argc, char **argv)
{
    const struct test_opt opts[] = {{"--lanes", &opt_lanes}, {"--max", &opt_max}};
    test_parse(argc, argv, opts, 2);
    REQUIRE(rpc_config_valid(4, (uint32_t)opt_lanes));
    uint64_t size = rpc_region_size(4, (uint32_t)opt_lanes);
    void *region = test_map(size, 0);
    void *client_locks = calloc(1, rpc_lock_size(4)), *server_locks = calloc(1, rpc_lock_size(4));
    REQUIRE(rpc_client_init(&client, region, 4, (uint32_t)opt_lanes, client_locks) == TETHER_OK);
    REQUIRE(rpc_server_init(&server, region, 4, (uint32_t)opt_lanes, server_locks) == TETHER_OK);

    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, server_main, NULL) == 0);
    double t0 = test_now();
    for (uint64_t r = 0; r < rounds(); r++) {
        client_round(r);
    }
    /* An empty stream ends the server. */
    rpc_port_t port = rpc_client_open(&client, OP_DONE, 1, 0);
    uint64_t zero[64] = {0};
    const void *none[64] = {0};
    rpc_client_send_n(&client, &port, none, zero);
    rpc_client_close(&client, &port);
    REQUIRE(pthread_join(thread, NULL) == 0);
    double dt = test_now() - t0;
    printf("rpc_test_stream: %llu rounds, %llu lanes, sizes 0..%llu bytes: ok in %.2f s\n",
           (unsigned long long)rounds(), (unsigned long long)opt_lanes, (unsigned long long)opt_max,
           dt);
    test_unmap(region, size);
    free(client_locks);
    free(server_locks);
    return tcheck_exit("rpc_test_stream");
}
