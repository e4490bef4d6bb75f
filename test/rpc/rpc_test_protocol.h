/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol.h - what the files of rpc_test_protocol share: a client and a
 * server on one region (struct pair), readers of the raw words of the shared region, packet
 * patterns, and one entry point per group of checks.  Include it first: the checked build
 * turns every protocol assertion of rpc.h on here.
 *
 * rpc_test_protocol.c        the pair, the readers, the patterns, main
 * rpc_test_protocol_steps.c  layout, one call stepped by hand, fire and forget, answer heads,
 *                            the state word every close leaves
 * rpc_test_protocol_ports.c  the server opening one port, scan order, bounded sweeps, lanes
 * rpc_test_protocol_short.c  short requests: round trips, late words, seq wraps, the read bit,
 *                            broken meta words
 * rpc_test_protocol_mix.c    short and fenced calls mixed on one port
 */
#ifndef TETHER_RPC_TEST_PROTOCOL_H
#define TETHER_RPC_TEST_PROTOCOL_H

#if defined(RPC_TEST_CHECKED)
#undef NDEBUG /* the checked variant: every protocol assertion on */
#endif
#include <stdatomic.h>
#include <stdbool.h>

#include "rpc_test_util.h"

struct pair {
    void *region;
    uint64_t size;
    void *client_locks, *server_locks;
    struct rpc_client client;
    struct rpc_server server;
    uint32_t ports, lanes;
};

void pair_init(struct pair *p, uint32_t ports, uint32_t lanes);
void pair_fini(struct pair *p);
/* Mailbox bits of port `index` as (client, server). */
void mailbox(struct pair *p, uint32_t index, uint32_t *c, uint32_t *s);
/* Lane functions: put writes *(uint64_t *)arg + lane into word 0, get reads word 0 of each lane
 * into ((uint64_t *)arg)[lane]. */
void put(struct rpc_buffer *b, uint32_t lane, void *arg);
void get(struct rpc_buffer *b, uint32_t lane, void *arg);
/* The end of a call stepped by hand: the server answers on sp (fill/arg into the buffers, the
 * head as set) and closes, the client receives on cp and must read heads h0 and h1, closes, and
 * the pair is freed. */
void answer_and_finish(struct pair *p, rpc_port_t *sp, rpc_port_t *cp, rpc_lane_fn fill, void *arg,
                       uint64_t h0, uint64_t h1);
/* The head of port 0 as its two raw words. */
void head_words(struct pair *p, uint64_t w[2]);

/* Raw words of port `index` as the client sees them. */
struct rpc_header *header_of(struct pair *p, uint32_t index);
uint32_t client_flag(struct pair *p, uint32_t index);
uint64_t client_state(struct pair *p, uint32_t index);
bool server_locked(struct pair *p, uint32_t index);
bool req_all_zero(struct pair *p, uint32_t index);
struct rpc_buffer *lane_buffer(struct pair *p, uint32_t index, uint32_t lane);
/* A 64-byte packet of distinct non-zero bytes, different for each seed. */
void make_packet(uint64_t pkt[8], uint32_t seed);
/* Bytes [0, nbytes) of pkt, zeros after. */
bool short_bytes_ok(const struct rpc_buffer *b, const uint64_t pkt[8], uint32_t nbytes);

/* Per-lane copies of the buffers a recv saw. */
struct grabbed {
    uint64_t seen;
    struct rpc_buffer buf[RPC_LANES_MAX];
};

/* Lane functions: grab copies each lane's buffer into a struct grabbed (once per lane);
 * fill_pattern / check_pattern write and check a pattern seeded by *(uint64_t *)arg. */
void grab(struct rpc_buffer *b, uint32_t lane, void *arg);
void fill_pattern(struct rpc_buffer *b, uint32_t lane, void *arg);
void check_pattern(struct rpc_buffer *b, uint32_t lane, void *arg);

static const uint64_t head_mask48 = (1ull << RPC_HEAD_BITS) - 1;

void test_layout(void);
void test_steps(void);
void test_fire_and_forget(void);
void test_heads(void);
void test_close_state(void);
void test_server_open_port(void);
void test_scan_order(uint32_t ports);
void test_sweep_slices(uint32_t ports, uint32_t slice);
void test_lanes(uint32_t lanes);
void test_short_round_trip(uint32_t ports, uint32_t lanes);
void test_short_late_words(uint32_t lanes);
void test_short_late_other(void);
void test_short_seq_wrap(void);
void test_short_read_state(void);
void test_short_broken_meta(uint32_t lanes);
void test_short_mix(uint32_t lanes, uint32_t calls, uint64_t seed);

#endif /* TETHER_RPC_TEST_PROTOCOL_H */
