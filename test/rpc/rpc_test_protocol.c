/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol.c - the port state machine stepped by hand from
 * one thread with the non-blocking calls, so every "not yet" answer is
 * asserted at a known point; the layout arithmetic; server scan order;
 * short requests (round trips of every size on first and last lanes, words
 * arriving after the flag or carrying another call's tag, short and fenced
 * calls mixed on one port past wraps of the seq, the client's "buffers read"
 * state, broken meta words).  Built twice: rpc_test_protocol_checked has every
 * protocol assertion on.  This file holds the shared harness and main; the checks are in
 * rpc_test_protocol_{steps,ports,short,mix}.c (rpc_test_protocol.h lists them).
 */
#include "rpc_test_protocol.h"

void pair_init(struct pair *p, uint32_t ports, uint32_t lanes)
{
    p->ports = ports;
    p->lanes = lanes;
    p->size = rpc_region_size(ports, lanes);
    REQUIRE(p->size != 0);
    p->region = test_map(p->size, 0);
    p->client_locks = calloc(1, rpc_lock_size(ports));
    p->server_locks = calloc(1, rpc_lock_size(ports));
    REQUIRE(p->client_locks && p->server_locks);
    REQUIRE(rpc_client_init(&p->client, p->region, ports, lanes, p->client_locks) == TETHER_OK);
    REQUIRE(rpc_server_init(&p->server, p->region, ports, lanes, p->server_locks) == TETHER_OK);
}

void pair_fini(struct pair *p)
{
    test_unmap(p->region, p->size);
    free(p->client_locks);
    free(p->server_locks);
}

/* Mailbox bits of port `index` as (client, server). */
void mailbox(struct pair *p, uint32_t index, uint32_t *c, uint32_t *s)
{
    char *base = p->region;
    *c = atomic_load((rpc_flag_t *)(base + rpc_client_outbox_offset(p->ports)) + index) & 1u;
    *s = atomic_load((rpc_flag_t *)(base + rpc_server_outbox_offset(p->ports)) + index) & 1u;
}

void put(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    b->data[0] = *(uint64_t *)arg + lane;
}

void get(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    ((uint64_t *)arg)[lane] = b->data[0];
}

/* The end of a call stepped by hand: the server answers on sp (fill/arg into the buffers, the
 * head as set) and closes, the client receives on cp and must read heads h0 and h1, closes, and
 * the pair is freed. */
void answer_and_finish(struct pair *p, rpc_port_t *sp, rpc_port_t *cp, rpc_lane_fn fill, void *arg,
                       uint64_t h0, uint64_t h1)
{
    REQUIRE(rpc_server_try_send(&p->server, sp, fill, arg));
    rpc_server_close(&p->server, sp);
    REQUIRE(rpc_client_try_recv(&p->client, cp, NULL, NULL));
    REQUIRE(rpc_port_head(cp, 0) == h0 && rpc_port_head(cp, 1) == h1);
    rpc_client_close(&p->client, cp);
    pair_fini(p);
}

/* The head of port 0 as its two raw words. */
void head_words(struct pair *p, uint64_t w[2])
{
    struct rpc_header *h = (struct rpc_header *)((char *)p->region + rpc_header_offset(p->ports));
    w[0] = atomic_load(&h[0].head[0]);
    w[1] = atomic_load(&h[0].head[1]);
}

/* ---- short requests (rpc.h, I4 and rule S) -------------------------------------------------- */

struct rpc_header *header_of(struct pair *p, uint32_t index)
{
    return &p->client.process.headers[index];
}

uint32_t client_flag(struct pair *p, uint32_t index)
{
    return atomic_load(&p->client.process.cflags[index]);
}

uint64_t client_state(struct pair *p, uint32_t index)
{
    return atomic_load(&((rpc_state_t *)p->client_locks)[index]);
}

bool server_locked(struct pair *p, uint32_t index)
{
    return (atomic_load(&((rpc_word_t *)p->server_locks)[index / 32]) >> (index % 32)) & 1u;
}

bool req_all_zero(struct pair *p, uint32_t index)
{
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
        if (atomic_load(&header_of(p, index)->req[k]) != 0)
            return false;
    return true;
}

struct rpc_buffer *lane_buffer(struct pair *p, uint32_t index, uint32_t lane)
{
    return &p->client.process.buffers[(uint64_t)index * p->lanes + lane];
}

/* A 64-byte packet of distinct non-zero bytes, different for each seed. */
void make_packet(uint64_t pkt[8], uint32_t seed)
{
    unsigned char *b = (unsigned char *)pkt;
    for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
        b[i] = (unsigned char)(1 + (seed * 7 + i) % 255);
}

/* Bytes [0, nbytes) of pkt, zeros after. */
bool short_bytes_ok(const struct rpc_buffer *b, const uint64_t pkt[8], uint32_t nbytes)
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

void grab(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct grabbed *g = arg;
    REQUIRE(lane < RPC_LANES_MAX && !((g->seen >> lane) & 1));
    g->seen |= 1ull << lane;
    g->buf[lane] = *b;
}

void fill_pattern(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    for (uint32_t k = 0; k < 8; k++)
        b->data[k] = test_mix(*(uint64_t *)arg + lane * 8 + k);
}

void check_pattern(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    for (uint32_t k = 0; k < 8; k++)
        REQUIRE(b->data[k] == test_mix(*(uint64_t *)arg + lane * 8 + k));
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
    return tcheck_exit("rpc_test_protocol");
}
