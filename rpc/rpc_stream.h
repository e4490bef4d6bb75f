/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/rpc_stream.h - streams over a port of rpc/rpc.h: a byte string of any length (0 included)
 * per active lane, cut into the port's 64-byte packets, one send/recv hand-over each.  The first
 * packet of a lane holds its length (u64) and RPC_STREAM_FIRST bytes, each later one
 * RPC_BUFFER_SIZE bytes; the number of packets is set by the longest string (host: the largest
 * size over the mask; SIMT: a vote).  The receiver never allocates: recv_n_size receives the
 * first packet and reports each lane's length, the first packet stays in the buffers (the
 * receiver still owns them), and recv_n_data copies it and receives the rest into caller-given
 * room; a longer stream is received whole (the protocol stays in step), only `cap` bytes are
 * stored.  A length from the other side is trusted only for how many packets to receive.
 * Per-lane arrays are indexed by lane on the host and hold the calling lane's own value at [0]
 * on a SIMT target (rpc.h, THREADS AND LANES).  Header only, as rpc.h.
 */
#ifndef TETHER_RPC_STREAM_H
#define TETHER_RPC_STREAM_H

#include "rpc.h"

/* The element of a per-lane array that belongs to `lane`. */
static inline uint32_t rpc_lane_index_(uint32_t lane)
{
    return RPC_ARCH_SIMT ? 0 : lane;
}

static inline void rpc_copy_(void *dst, const void *src, uint64_t n)
{
    if (n)
        __builtin_memcpy(dst, src, (size_t)n);
}

struct rpc_stream_ {
    const void *const *src; /* send: per-lane sources */
    void *const *dst;       /* recv: per-lane destinations */
    const uint64_t *size;   /* per-lane sizes */
    const uint64_t *cap;    /* recv: per-lane capacities */
    uint64_t offset;        /* stream offset of this packet's data */
    uint64_t max;           /* host: largest size over the lanes */
};

/* The packet at s->offset: the first holds the lane's length, then RPC_STREAM_FIRST bytes; the
 * others RPC_BUFFER_SIZE bytes. */
static inline void rpc_stream_fill_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = s->size[rpc_lane_index_(lane)], room = RPC_BUFFER_SIZE;
    char *to = (char *)buffer->data;
    if (s->offset == 0) {
        buffer->data[0] = size;
        to += 8;
        room = RPC_STREAM_FIRST;
        s->max = size > s->max ? size : s->max;
    }
    if (s->offset < size)
        rpc_copy_(to, (const char *)s->src[rpc_lane_index_(lane)] + s->offset,
                  size - s->offset < room ? size - s->offset : room);
}

static inline void rpc_stream_size_use_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    ((uint64_t *)arg)[rpc_lane_index_(lane)] = buffer->data[0];
}

/* The packet at s->offset into the lane's destination, clipped to its capacity. */
static inline void rpc_stream_use_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = s->size[rpc_lane_index_(lane)], room = RPC_BUFFER_SIZE;
    uint64_t cap = s->cap[rpc_lane_index_(lane)];
    const char *from = (const char *)buffer->data;
    if (s->offset == 0) {
        from += 8;
        room = RPC_STREAM_FIRST;
        s->max = size > s->max ? size : s->max;
    }
    uint64_t n = s->offset < size ? size - s->offset : 0;
    n = n < room ? n : room;
    if (s->offset < cap)
        rpc_copy_((char *)s->dst[rpc_lane_index_(lane)] + s->offset, from,
                  n < cap - s->offset ? n : cap - s->offset);
}

/* Does any lane still have bytes at or after `offset`?  Host: the running maximum; SIMT: a vote
 * over the warp. */
static inline bool rpc_stream_more_(const rpc_port_t *port, const struct rpc_stream_ *s,
                                    uint64_t lane_size)
{
#if RPC_ARCH_SIMT
    return rpc_arch_any(port->lane_mask_, s->offset < lane_size);
#else
    (void)port;
    (void)lane_size;
    return s->offset < s->max;
#endif
}

static inline void rpc_send_n_(struct rpc_process *process, rpc_port_t *port,
                               const void *const *src, const uint64_t *size)
{
    struct rpc_stream_ s = {src, NULL, size, NULL, 0, 0};
    uint64_t own = RPC_ARCH_SIMT ? size[0] : 0;
    rpc_send_(process, port, rpc_stream_fill_, &s);
    for (s.offset = RPC_STREAM_FIRST; rpc_stream_more_(port, &s, own); s.offset += RPC_BUFFER_SIZE)
        rpc_send_(process, port, rpc_stream_fill_, &s);
}

static inline void rpc_recv_n_size_(struct rpc_process *process, rpc_port_t *port, uint64_t *size_p)
{
    rpc_recv_(process, port, rpc_stream_size_use_, size_p);
    port->state_ |= RPC_PS_STREAM;
}

/* The first packet is still in the buffers (this side owns them): the per-lane sizes and the
 * first data come from it, then the rest is received. */
static inline void rpc_recv_n_data_(struct rpc_process *process, rpc_port_t *port, void *const *dst,
                                    const uint64_t *cap)
{
    RPC_ASSERT((port->state_ & (RPC_PS_STREAM | RPC_PS_OWNED)) == (RPC_PS_STREAM | RPC_PS_OWNED));
    port->state_ &= ~(uint32_t)RPC_PS_STREAM;
    rpc_port_check_(process, port);
    const struct rpc_buffer *slot = rpc_slot_(process, port);
    uint64_t sizes[RPC_ARCH_SIMT ? 1 : RPC_LANES_MAX];
    uint64_t own = 0;
#if RPC_ARCH_SIMT
    own = slot[rpc_arch_lane_id()].data[0];
    sizes[0] = own;
#else
    for (uint64_t mask = port->lane_mask_; mask; mask &= mask - 1) {
        uint32_t lane = (uint32_t)__builtin_ctzll(mask);
        sizes[lane] = slot[lane].data[0];
    }
#endif
    struct rpc_stream_ s = {NULL, dst, sizes, cap, 0, 0};
    rpc_invoke_(process, port, rpc_stream_use_, &s);
    if (!process->server)
        port->state_ |= RPC_PS_READ;
    for (s.offset = RPC_STREAM_FIRST; rpc_stream_more_(port, &s, own); s.offset += RPC_BUFFER_SIZE)
        rpc_recv_(process, port, rpc_stream_use_, &s);
}

/* ---- client ------------------------------------------------------------------------------ */

/* Streams each active lane's src[lane] of size[lane] bytes (SIMT: src[0], size[0]), any length:
 * a packet per 64 bytes, the first carrying the length and 56 bytes. */
static inline void rpc_client_send_n(struct rpc_client *client, rpc_port_t *port,
                                     const void *const *src, const uint64_t *size)
{
    rpc_send_n_(&client->process, port, src, size);
}

/* Receives a stream's first packet: each active lane's total length in size_p[lane] (SIMT:
 * size_p[0]).  The next operation on the port must be rpc_client_recv_n_data. */
static inline void rpc_client_recv_n_size(struct rpc_client *client, rpc_port_t *port,
                                          uint64_t *size_p)
{
    rpc_recv_n_size_(&client->process, port, size_p);
}

/* Receives the rest of the stream into dst[lane], at most cap[lane] bytes (the rest of a longer
 * stream is received and dropped). */
static inline void rpc_client_recv_n_data(struct rpc_client *client, rpc_port_t *port,
                                          void *const *dst, const uint64_t *cap)
{
    rpc_recv_n_data_(&client->process, port, dst, cap);
}

static inline void rpc_client_recv_n(struct rpc_client *client, rpc_port_t *port, void *const *dst,
                                     const uint64_t *cap, uint64_t *size_p)
{
    rpc_recv_n_size_(&client->process, port, size_p);
    rpc_recv_n_data_(&client->process, port, dst, cap);
}

/* ---- server ------------------------------------------------------------------------------ */

/* As the client's. */
static inline void rpc_server_send_n(struct rpc_server *server, rpc_port_t *port,
                                     const void *const *src, const uint64_t *size)
{
    rpc_send_n_(&server->process, port, src, size);
}

static inline void rpc_server_recv_n_size(struct rpc_server *server, rpc_port_t *port,
                                          uint64_t *size_p)
{
    rpc_recv_n_size_(&server->process, port, size_p);
}

static inline void rpc_server_recv_n_data(struct rpc_server *server, rpc_port_t *port,
                                          void *const *dst, const uint64_t *cap)
{
    rpc_recv_n_data_(&server->process, port, dst, cap);
}

static inline void rpc_server_recv_n(struct rpc_server *server, rpc_port_t *port, void *const *dst,
                                     const uint64_t *cap, uint64_t *size_p)
{
    rpc_recv_n_size_(&server->process, port, size_p);
    rpc_recv_n_data_(&server->process, port, dst, cap);
}

#endif /* TETHER_RPC_STREAM_H */
