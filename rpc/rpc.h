/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/rpc.h - the port protocol: a client (usually a GPU) and a server (usually a host thread)
 * take turns using per-port buffers in one shared region.  Header only, freestanding C11 (fixed-
 * width types, no libc, no allocation, no failure after *_init()); the same source compiles for
 * the host and, under clang, for nvptx64 and amdgcn (rpc_arch.h: every access to a shared word);
 * device code includes it inside `#pragma omp declare target`.  Streams of any length over a
 * port: rpc_stream.h.  Design and proof: docs/rpc-protocol.md.
 *
 * THE REGION (rpc_region_size(ports, lanes) bytes, 64-byte aligned, zeroed before either side
 * starts): the client outbox and the server outbox (a flag byte per port each), a struct
 * rpc_header per port, `lanes` 64-byte buffers per port.  Bit 0 of a flag is its side's outbox
 * bit; bit 1 of a client flag marks a short request.  Each side's locks are in its own private
 * memory (rpc_lock_size(ports) bytes, zeroed): the server's bitmap, the client's state words.
 *
 * INVARIANTS
 *   I1 Ownership.  For a port let c be the client's outbox bit and s the server's: c == s, the
 *      client owns the port's header and buffers; c != s, the server owns them.  A side touches
 *      them only while it owns them and hands them over by flipping its own bit.  So exactly one
 *      side owns a port at any time.
 *   I2 One holder per side.  Among the agents of one side (warps, threads) one caller at a time
 *      holds a port, through the side's private lock.
 *   I3 Heads (outside I1).  The server stores a head right after the flip of each of its sends:
 *      two words, each the call's tag (0x8000 | seq) in its low 16 bits and 48 bits of payload.
 *      The client zeroes the head before each of its fenced flips, the server at the open of a
 *      short request.  Both words carrying the call's tag mean the server's flip came first: the
 *      client owns the port, and the payload came with the same read.
 *   I4 Request words.  req[] is zero whenever the client owns the port: only a short request
 *      writes them (each tagged as a head word), and the server zeroes those it read before its
 *      flip hands the port back.  So any tagged word the server finds is this request's.
 *   I5 Client state word: protocol state only.  LOCK; OUT, the client's outbox bit at the last
 *      close (its own flag store may still be on its way); KNOWN, set by a close of a port the
 *      client still owns, which the server cannot flip before the client does, so the next
 *      opener takes OUT from the word and reads no flag; READ, buffers read since the last
 *      fenced flip; the seq of the port's last call.
 *
 * WHO WRITES WHICH WORD
 *   client flag, state word        the port's client holder
 *   server flag, its bitmap bit    the port's server holder
 *   header lane_mask, opcode, seq  client at its first fenced send; server from a short request
 *   header head[2]                 see I3
 *   header req[]                   see I4
 *   buffers                        the side that owns the port (I1)
 *
 * MEMORY ORDERING (each rule's instructions per target: rpc_arch.h, docs/rpc-protocol.md)
 *   W1 Waiting: relaxed loads of the other side's flag (a value that only says "maybe owned").
 *   W2 Once a load showed ownership: one acquire fence before the first header or buffer access,
 *      pairing with the other side's W3 (its writes seen by our reads, its reads done before our
 *      writes).
 *   W3 Handing over: a release store of this side's flag byte after the last buffer access (a
 *      store, not a read-modify-write: the byte has one writer, I2).
 *   H  Heads: the server's release stores after its W3; the client's relaxed zero stores before
 *      its W3; the client's acquire loads, which order the buffer reads after them.
 *   S  Short request: relaxed stores of the tagged req words, then the flag with no fence, or
 *      with W3's when buffers were read since the last fenced flip (READ: the fence completes
 *      those reads).  The server loads the words after W2, takes them only when every one
 *      carries the tag, and zeroes them before its W3.
 *   L1 Lock: an acquire RMW of the side's private lock.  Unlock: a release (server: fetch_and of
 *      its bit; client: one store of the next state word).  Every close is a release, so the next
 *      holder sees the previous holder's flips and may trust the state word.
 *   L2 Open re-checks ownership (W1 + W2) after L1: another agent of the same side may have
 *      served and closed the port between its scan and its lock.
 *   The host side of a pair with a GPU uses the host rules: x86 keeps stores in order after
 *   older loads and stores, so the GPU sees the host's flip and head after its buffer accesses.
 *
 * A CALL.  Client: open (lock a port with c == s; the call's seq is the last one plus one), send
 * (wait until owned; the first send writes the header; fill, zero the head, flip; or, first and
 * one lane only, a short request), recv (after a recv: zero the head, flip; wait for this call's
 * head; read the buffers, or not), close (unlock; the buffers stay with their owner).  Server:
 * open (lock a port with c != s; unpack a short request whose words all arrived, else leave it
 * for later; read the header), recv (after a recv: flip; wait until owned; read), send (wait
 * until owned; fill, flip, store the head), close (flip if it still owns the port; unlock).
 * Every send is matched by a recv on the other side; the client starts with a send, the server
 * with a recv.  A client may close right after a send (fire and forget): the port stays with
 * the server until the server's close hands it back.
 *
 * THREADS AND LANES.  Any number of agents of one side may open at once on one struct rpc_client
 * / rpc_server; an open port (rpc_port_t) belongs to its opener.  Ports never affect each other,
 * and no progress between callers is assumed.  A call uses the lanes of its lane mask.  On a
 * SIMT target all lanes of the mask make every call on the port together, each running per-lane
 * callbacks for itself with its own element [0] of per-lane arrays (`lanes` at least the warp
 * size), and open takes opcode and hint from the mask's first lane; on the host one thread acts
 * for every lane of the mask in ascending order.  The server functions are meant for the host.
 *
 * MISUSE (checked with NDEBUG undefined or RPC_DEBUG defined: assert on the host, else a trap):
 * a handle not made by an open of this process object, use after close, a recv before the
 * client's first send, a send before the server's first recv, another operation between
 * recv_n_size and recv_n_data (rpc_stream.h), a lane mask outside the lane count.
 */
#ifndef TETHER_RPC_H
#define TETHER_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc_arch.h"
#include "tether/status.h"

/* Checks: on with NDEBUG undefined or RPC_DEBUG defined.  A program may define RPC_ASSERT(cond)
 * before including this header (e.g. to report a failing check from a GPU before trapping). */
#if !defined(NDEBUG) || defined(RPC_DEBUG)
#define RPC_CHECKS 1
#if !defined(RPC_ASSERT)
#if defined(RPC_ARCH_HOST) && !defined(NDEBUG)
#include <assert.h>
#define RPC_ASSERT(cond) assert(cond)
#else
#define RPC_ASSERT(cond) ((cond) ? (void)0 : __builtin_trap())
#endif
#endif
#else
#define RPC_CHECKS 0
#undef RPC_ASSERT
#define RPC_ASSERT(cond) ((void)0)
#endif

/* ---- limits and layout ------------------------------------------------------------------- */

#define RPC_PORTS_MAX (1u << 20)                /* ports per region */
#define RPC_LANES_MAX 64u                       /* lanes per port (bits of a lane mask) */
#define RPC_BUFFER_SIZE 64u                     /* bytes per lane buffer */
#define RPC_ALIGN 64u                           /* alignment of the region and its parts */
#define RPC_STREAM_FIRST (RPC_BUFFER_SIZE - 8u) /* data bytes of a stream's first packet */
#define RPC_SHORT_DATA 11u            /* data words of a short request, six packet bytes each */
#define RPC_SHORT_MAX RPC_BUFFER_SIZE /* bytes a short request carries: a whole packet */
#define RPC_FLAG_SHORT 0x2u           /* bit 1 of a client flag: the flip sends a short request */
#define RPC_HEAD_BITS 48u             /* payload bits of a head word (the low 16 hold the tag) */

struct rpc_buffer {
    uint64_t data[RPC_BUFFER_SIZE / 8];
};

/* A port's header (WHO WRITES WHAT, above).  req[0], the meta word of a short request: its tag
 * (bits 0..15), opcode (16..47), lane (48..53) and number n of data words (54..57); req[1..n]:
 * the tag and six packet bytes each. */
struct rpc_header {
    uint64_t lane_mask;
    uint32_t opcode;
    uint32_t seq;
    rpc_head_word_t head[2];
    rpc_head_word_t req[RPC_SHORT_WORDS];
};

_Static_assert(RPC_SHORT_WORDS == 1u + RPC_SHORT_DATA, "short request words");
_Static_assert(RPC_SHORT_WORDS % 2 == 0, "request words go in pairs");
_Static_assert(sizeof(struct rpc_buffer) == RPC_BUFFER_SIZE, "rpc_buffer layout");
_Static_assert(sizeof(struct rpc_header) == 128, "rpc_header layout");
_Static_assert(sizeof(rpc_word_t) == 4 && sizeof(rpc_state_t) == 8, "lock and state words");
_Static_assert(RPC_PORTS_MAX % 32 == 0, "bitmap words");

static inline uint64_t rpc_align_(uint64_t n)
{
    return (n + RPC_ALIGN - 1) & ~(uint64_t)(RPC_ALIGN - 1);
}

/* True when a region may have `ports` ports of `lanes` lanes. */
static inline bool rpc_config_valid(uint32_t ports, uint32_t lanes)
{
    return ports >= 1 && ports <= RPC_PORTS_MAX && lanes >= 1 && lanes <= RPC_LANES_MAX;
}

/* Number of 32-bit words of the server's lock bitmap. */
static inline uint32_t rpc_bitmap_words(uint32_t ports)
{
    return (ports + 31) / 32;
}

/* Offsets of the region's parts (valid configurations only).  An outbox is rounded up to 64
 * bytes, so that 32 flags are read as whole 8- or 16-byte words. */
static inline uint64_t rpc_client_outbox_offset(uint32_t ports)
{
    (void)ports;
    return 0;
}

static inline uint64_t rpc_server_outbox_offset(uint32_t ports)
{
    return rpc_align_(ports);
}

static inline uint64_t rpc_header_offset(uint32_t ports)
{
    return 2 * rpc_align_(ports);
}

static inline uint64_t rpc_buffer_offset(uint32_t ports)
{
    return rpc_header_offset(ports) + rpc_align_((uint64_t)ports * sizeof(struct rpc_header));
}

/* Bytes of the shared region for `ports` x `lanes`; 0 for an invalid configuration. */
static inline uint64_t rpc_region_size(uint32_t ports, uint32_t lanes)
{
    if (!rpc_config_valid(ports, lanes))
        return 0;
    return rpc_buffer_offset(ports) + (uint64_t)ports * lanes * RPC_BUFFER_SIZE;
}

/* Bytes of one side's private memory (8-byte aligned, zeroed): a 64-bit word per port; 0 when
 * `ports` is not valid.  The server uses the first rpc_bitmap_words(ports) 32-bit words as its
 * lock bitmap, the client the words as the ports' state words (I5). */
static inline uint64_t rpc_lock_size(uint32_t ports)
{
    if (ports < 1 || ports > RPC_PORTS_MAX)
        return 0;
    return (uint64_t)ports * sizeof(rpc_state_t);
}

/* Bits of a client port's state word (I5). */
#define RPC_CS_LOCK 0x1u    /* held by a client caller */
#define RPC_CS_KNOWN 0x2u   /* client-owned since its last close */
#define RPC_CS_OUT 0x4u     /* the client's outbox bit at the last close */
#define RPC_CS_READ 0x8u    /* with KNOWN: buffers were read since the last fenced flip */
#define RPC_CS_SEQ_SHIFT 8u /* bits 8..15: seq of the port's last call */

/* ---- process objects and handles --------------------------------------------------------- */

/* One side's view of a region: pointers and sizes only, with one layout in host and device
 * compiles, so a host can build a client with device addresses and copy it to the device. */
struct rpc_process {
    rpc_flag_t *cflags;         /* client outbox */
    rpc_flag_t *sflags;         /* server outbox */
    struct rpc_header *headers; /* ports entries */
    struct rpc_buffer *buffers; /* ports x lanes entries */
    rpc_word_t *locks;          /* private memory: server lock bitmap / client state words */
    uint32_t ports;
    uint32_t lanes;
    uint32_t words;  /* rpc_bitmap_words(ports) */
    uint32_t server; /* 0: client, 1: server */
    rpc_word_t next; /* server: where the next sweep starts */
    uint32_t reserved;
};

_Static_assert(sizeof(struct rpc_process) == 64, "rpc_process layout is shared host/device");

struct rpc_client {
    struct rpc_process process;
};

struct rpc_server {
    struct rpc_process process;
};

/* An open port, made only by an open function and passed by pointer to the operations; its
 * fields are private.  In checked builds key_ ties it to its process object and index. */
typedef struct rpc_port {
    uint64_t lane_mask_;
    uint64_t head_[2]; /* server: payload of the next send's head; client: of the last recv's */
    uint32_t index_;
    uint32_t opcode_;
    uint32_t state_;
    uint32_t key_;
    uint32_t seq_; /* the call's seq */
} rpc_port_t;

_Static_assert(sizeof(rpc_port_t) == 48, "rpc_port layout");

/* Per-lane callback of send/recv: `buffer` is lane `lane`'s 64 bytes, the caller's for the
 * duration of the callback. */
typedef void (*rpc_lane_fn)(struct rpc_buffer *buffer, uint32_t lane, void *arg);

/* ---- private helpers --------------------------------------------------------------------- */

enum {
    RPC_PS_OPEN = 1u << 0,     /* made by open, not closed yet */
    RPC_PS_SERVER = 1u << 1,   /* server-side handle */
    RPC_PS_OWNED = 1u << 2,    /* this side owns the buffers now */
    RPC_PS_RECEIVED = 1u << 3, /* the last operation was a recv */
    RPC_PS_FIRST = 1u << 4,    /* no send or recv since open */
    RPC_PS_STREAM = 1u << 5,   /* between recv_n_size and recv_n_data */
    RPC_PS_OUT = 1u << 6,      /* this side's outbox bit */
    RPC_PS_READ = 1u << 7,     /* client: buffers read since the last fenced flip */
};

static inline uint32_t rpc_port_key_(const struct rpc_process *process, uint32_t index)
{
    uint64_t p = (uint64_t)(uintptr_t)process;
    return (uint32_t)(p ^ (p >> 32)) ^ (index * 0x9e3779b9u) ^ 0x7e7e5a17u;
}

static inline rpc_state_t *rpc_state_(const struct rpc_process *process, uint32_t index)
{
    return (rpc_state_t *)(void *)process->locks + index;
}

static inline uint64_t rpc_lanes_mask_(const struct rpc_process *process)
{
    return process->lanes >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << process->lanes) - 1);
}

static inline struct rpc_buffer *rpc_slot_(const struct rpc_process *process,
                                           const rpc_port_t *port)
{
    return process->buffers + (uint64_t)port->index_ * process->lanes;
}

/* Checked builds: the handle was made by an open of this process object, is still open, and its
 * lock is still held. */
static inline void rpc_port_check_(struct rpc_process *process, const rpc_port_t *port)
{
#if RPC_CHECKS
    RPC_ASSERT(port->state_ & RPC_PS_OPEN);
    RPC_ASSERT(port->index_ < process->ports);
    RPC_ASSERT(port->key_ == rpc_port_key_(process, port->index_));
    RPC_ASSERT(((port->state_ & RPC_PS_SERVER) != 0) == (process->server != 0));
    if (process->server)
        RPC_ASSERT(rpc_arch_load(port->lane_mask_, &process->locks[port->index_ / 32]) &
                   (1u << (port->index_ % 32)));
    else
        RPC_ASSERT(rpc_arch_load_state(port->lane_mask_, rpc_state_(process, port->index_)) &
                   RPC_CS_LOCK);
#else
    (void)process;
    (void)port;
#endif
}

/* The other side's flag of port `index` (the inbox), and this side's. */
static inline rpc_flag_t *rpc_in_flag_(struct rpc_process *process, uint32_t index)
{
    return process->server ? &process->cflags[index] : &process->sflags[index];
}

static inline rpc_flag_t *rpc_out_flag_(struct rpc_process *process, uint32_t index)
{
    return process->server ? &process->sflags[index] : &process->cflags[index];
}

/* W1 + W2 for an operation that needs the buffers: false while the other side has them. */
static inline bool rpc_acquire_(struct rpc_process *process, rpc_port_t *port)
{
    if (port->state_ & RPC_PS_OWNED)
        return true;
    uint32_t in = rpc_arch_flag_load(port->lane_mask_, rpc_in_flag_(process, port->index_)) & 1u;
    uint32_t out = (port->state_ & RPC_PS_OUT) ? 1u : 0u;
    if ((in ^ out) != process->server)
        return false;
    rpc_arch_acquire_flag(port->lane_mask_, rpc_in_flag_(process, port->index_));
    port->state_ |= RPC_PS_OWNED;
    return true;
}

/* The tag of call `seq`'s heads and request words: never 0, the value of a cleared word. */
static inline uint64_t rpc_head_tag_(uint32_t seq)
{
    return 0x8000u | (seq & 0xffu);
}

/* W3: hand the buffers over.  The client zeroes the head first (I3). */
static inline void rpc_release_(struct rpc_process *process, rpc_port_t *port)
{
    RPC_ASSERT(port->state_ & RPC_PS_OWNED);
    if (!process->server)
        rpc_arch_head_clear(port->lane_mask_, process->headers[port->index_].head);
    rpc_arch_flag_store(port->lane_mask_, rpc_out_flag_(process, port->index_),
                        (port->state_ & RPC_PS_OUT) ? 0u : 1u);
    port->state_ ^= RPC_PS_OUT;
    port->state_ &= ~(uint32_t)(RPC_PS_OWNED | RPC_PS_READ); /* the flip fenced every read */
}

/* Client: has this call's head arrived (I3)?  Then the client owns the port, and the head's
 * payload is in the handle. */
static inline bool rpc_head_arrived_(struct rpc_process *process, rpc_port_t *port)
{
    uint64_t w0, w1, tag = rpc_head_tag_(port->seq_);
    rpc_arch_head_load(port->lane_mask_, process->headers[port->index_].head, &w0, &w1);
    if ((w0 & 0xffffu) != tag || (w1 & 0xffffu) != tag)
        return false;
    port->head_[0] = w0 >> 16;
    port->head_[1] = w1 >> 16;
    port->state_ |= RPC_PS_OWNED;
    return true;
}

/* Runs fn once per active lane (SIMT: for the calling lane; a call of one lane uses the buffer
 * its mask names, whichever lane makes it). */
static inline void rpc_invoke_(const struct rpc_process *process, const rpc_port_t *port,
                               rpc_lane_fn fn, void *arg)
{
    struct rpc_buffer *slot = rpc_slot_(process, port);
#if RPC_ARCH_SIMT
    uint64_t mask = port->lane_mask_;
    uint32_t lane = (mask & (mask - 1)) == 0 ? (uint32_t)__builtin_ctzll(mask) : rpc_arch_lane_id();
    RPC_ASSERT(lane < process->lanes);
    fn(&slot[lane], lane, arg);
#else
    for (uint64_t mask = port->lane_mask_; mask; mask &= mask - 1) {
        uint32_t lane = (uint32_t)__builtin_ctzll(mask);
        fn(&slot[lane], lane, arg);
    }
#endif
}

static inline tether_status_t rpc_process_init_(struct rpc_process *process, void *region,
                                                uint32_t ports, uint32_t lanes, void *locks,
                                                uint32_t server)
{
    if (!process || !region || !locks || !rpc_config_valid(ports, lanes) ||
        ((uintptr_t)region % RPC_ALIGN) != 0 || ((uintptr_t)locks % sizeof(rpc_state_t)) != 0)
        return TETHER_ERR_INVALID;
    char *base = (char *)region;
    process->cflags = (rpc_flag_t *)(base + rpc_client_outbox_offset(ports));
    process->sflags = (rpc_flag_t *)(base + rpc_server_outbox_offset(ports));
    process->headers = (struct rpc_header *)(base + rpc_header_offset(ports));
    process->buffers = (struct rpc_buffer *)(base + rpc_buffer_offset(ports));
    process->locks = (rpc_word_t *)locks;
    process->ports = ports;
    process->lanes = lanes;
    process->words = rpc_bitmap_words(ports);
    process->server = server;
    rpc_arch_init(&process->next, 0);
    process->reserved = 0;
    return TETHER_OK;
}

/* Server, a short request waiting on port `index`: if every word it announces carries its tag,
 * writes the header and the lane's buffer from the words as a fenced request would have left
 * them, zeroes the words and the head, and returns true; false (nothing changed) while a word is
 * still on its way.  A meta word out of range (a broken client) opens a call with no lanes. */
static inline bool rpc_server_unpack_short_(struct rpc_process *p, uint32_t index)
{
    struct rpc_header *header = &p->headers[index];
    uint64_t meta = rpc_arch_req_load(&header->req[0]);
    uint64_t tag = meta & 0xffffu;
    if ((tag & 0x8000u) == 0)
        return false;
    uint32_t n = (uint32_t)(meta >> 54) & 0xfu, lane = (uint32_t)(meta >> 48) & 0x3fu;
    if (n > RPC_SHORT_DATA)
        n = RPC_SHORT_DATA;
    uint64_t pkt[RPC_BUFFER_SIZE / 8] = {0};
    unsigned char *bytes = (unsigned char *)pkt;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t w = rpc_arch_req_load(&header->req[1 + k]);
        if ((w & 0xffffu) != tag)
            return false;
        for (uint32_t b = 0; b < 6 && 6 * k + b < RPC_BUFFER_SIZE; b++)
            bytes[6 * k + b] = (unsigned char)(w >> (16 + 8 * b));
    }
    uint64_t lane_mask = lane < 64 ? ((uint64_t)1 << lane) & rpc_lanes_mask_(p) : 0;
    header->lane_mask = lane_mask;
    header->opcode = (uint32_t)(meta >> 16);
    header->seq = (uint32_t)(tag & 0xffu);
    if (lane_mask != 0)
        __builtin_memcpy(p->buffers[(uint64_t)index * p->lanes + lane].data, pkt, RPC_BUFFER_SIZE);
    for (uint32_t k = 0; k <= n; k++)
        rpc_arch_req_clear(&header->req[k]);
    rpc_arch_head_clear(1, header->head);
    return true;
}

/* Open, after the sweep: locks port `index` (L1) and checks (L2) that this side may start or
 * serve a call on it.  On success W2 is done, and the handle is in *port_p: the client's with
 * `opcode` and the next seq, the server's from the header (its lane mask clipped to the region's
 * lanes, so that a corrupt header cannot index past the port).  false: nothing changed. */
static inline bool rpc_try_take_(struct rpc_process *process, uint64_t mask, uint32_t index,
                                 uint32_t opcode, rpc_port_t *port_p)
{
    uint32_t w = index / 32, bit = 1u << (index % 32), out, read = 0;
    uint64_t old = 0;
    if (process->server ? !rpc_arch_try_lock(mask, &process->locks[w], bit)
                        : !rpc_arch_lock_state(mask, rpc_state_(process, index), RPC_CS_LOCK, &old))
        return false;
    if (old & RPC_CS_KNOWN) { /* client-owned since the last close: OUT is the bit now (I5) */
        out = (old & RPC_CS_OUT) ? 1u : 0u;
        read = (old & RPC_CS_READ) ? RPC_PS_READ : 0u;
    } else {
        uint32_t in_flag = rpc_arch_flag_load(mask, rpc_in_flag_(process, index));
        out = process->server ? rpc_arch_flag_load(mask, rpc_out_flag_(process, index)) & 1u
                              : ((old & RPC_CS_OUT) ? 1u : 0u);
        bool owned = ((in_flag & 1u) != out) == (process->server != 0);
        if (owned)
            rpc_arch_acquire_flag(mask, rpc_in_flag_(process, index));
        if (!owned || (process->server && (in_flag & RPC_FLAG_SHORT) &&
                       !rpc_server_unpack_short_(process, index))) {
            if (process->server)
                rpc_arch_unlock(mask, &process->locks[w], bit);
            else
                rpc_arch_unlock_state(mask, rpc_state_(process, index), old); /* as it was */
            return false;
        }
    }
    rpc_port_t port;
    port.lane_mask_ = mask;
    port.head_[0] = port.head_[1] = 0;
    port.index_ = index;
    port.opcode_ = opcode;
    port.seq_ = (uint32_t)((old >> RPC_CS_SEQ_SHIFT) + 1u) & 0xffu;
    if (process->server) {
        const struct rpc_header *header = &process->headers[index];
        port.lane_mask_ = header->lane_mask & rpc_lanes_mask_(process);
        port.opcode_ = header->opcode;
        port.seq_ = header->seq;
    }
    port.state_ = RPC_PS_OPEN | RPC_PS_OWNED | RPC_PS_FIRST | (out ? RPC_PS_OUT : 0u) |
                  (process->server ? RPC_PS_SERVER : 0u) | read;
    port.key_ = rpc_port_key_(process, index);
    *port_p = port;
    return true;
}

/* ---- operations of both sides ------------------------------------------------------------ */

/* false: still the other side's turn, nothing done (except the one hand-back of a recv after a
 * recv, which happens once, not on every retry). */
static inline bool rpc_try_send_(struct rpc_process *process, rpc_port_t *port, rpc_lane_fn fill,
                                 void *arg)
{
    rpc_port_check_(process, port);
    RPC_ASSERT(!(port->state_ & RPC_PS_STREAM));
    RPC_ASSERT(!(process->server && (port->state_ & RPC_PS_FIRST))); /* server: recv first */
    if (!rpc_acquire_(process, port))
        return false;
    if (!process->server && (port->state_ & RPC_PS_FIRST) &&
        rpc_arch_is_first_lane(port->lane_mask_)) {
        struct rpc_header *header = &process->headers[port->index_];
        header->lane_mask = port->lane_mask_;
        header->opcode = port->opcode_;
        header->seq = port->seq_;
    }
    if (fill != NULL)
        rpc_invoke_(process, port, fill, arg);
    rpc_release_(process, port);
    if (process->server) { /* the head, after the flip (I3) */
        uint64_t tag = rpc_head_tag_(port->seq_), mask48 = ((uint64_t)1 << RPC_HEAD_BITS) - 1;
        rpc_arch_head_store(port->lane_mask_, process->headers[port->index_].head,
                            tag | (port->head_[0] & mask48) << 16,
                            tag | (port->head_[1] & mask48) << 16);
        port->head_[0] = port->head_[1] = 0;
    }
    port->state_ &= ~(uint32_t)(RPC_PS_RECEIVED | RPC_PS_FIRST);
    return true;
}

static inline bool rpc_try_recv_(struct rpc_process *process, rpc_port_t *port, rpc_lane_fn use,
                                 void *arg)
{
    rpc_port_check_(process, port);
    RPC_ASSERT(!(port->state_ & RPC_PS_STREAM));
    RPC_ASSERT(process->server || !(port->state_ & RPC_PS_FIRST)); /* client: send first */
    if ((port->state_ & (RPC_PS_OWNED | RPC_PS_RECEIVED)) == (RPC_PS_OWNED | RPC_PS_RECEIVED))
        rpc_release_(process, port); /* give back the packet already read */
    if (process->server ? !rpc_acquire_(process, port)
                        : !(port->state_ & RPC_PS_OWNED) && !rpc_head_arrived_(process, port))
        return false;
    if (use != NULL) {
        rpc_invoke_(process, port, use, arg);
        if (!process->server)
            port->state_ |= RPC_PS_READ;
    }
    port->state_ |= RPC_PS_RECEIVED;
    port->state_ &= ~(uint32_t)RPC_PS_FIRST;
    return true;
}

static inline void rpc_send_(struct rpc_process *process, rpc_port_t *port, rpc_lane_fn fill,
                             void *arg)
{
    uint32_t spins = 0;
    while (!rpc_try_send_(process, port, fill, arg))
        rpc_arch_backoff(&spins);
}

static inline void rpc_recv_(struct rpc_process *process, rpc_port_t *port, rpc_lane_fn use,
                             void *arg)
{
    uint32_t spins = 0;
    while (!rpc_try_recv_(process, port, use, arg))
        rpc_arch_backoff(&spins);
}

/* Server: hand back a port it still owns (after a fire-and-forget call, or a last step that was
 * a recv), unlock.  Client: one release store of the next state word (I5, L1). */
static inline void rpc_close_(struct rpc_process *process, rpc_port_t *port)
{
    rpc_port_check_(process, port);
    RPC_ASSERT(!(port->state_ & RPC_PS_STREAM));
    if (process->server) {
        if (port->state_ & RPC_PS_OWNED)
            rpc_release_(process, port);
        rpc_arch_unlock(port->lane_mask_, &process->locks[port->index_ / 32],
                        1u << (port->index_ % 32));
    } else {
        uint64_t next = (uint64_t)port->seq_ << RPC_CS_SEQ_SHIFT |
                        ((port->state_ & RPC_PS_OUT) ? RPC_CS_OUT : 0u);
        if (port->state_ & RPC_PS_OWNED)
            next |= RPC_CS_KNOWN | ((port->state_ & RPC_PS_READ) ? RPC_CS_READ : 0u);
        rpc_arch_unlock_state(port->lane_mask_, rpc_state_(process, port->index_), next);
    }
    port->state_ = 0;
}

/* ---- client ------------------------------------------------------------------------------ */

/* Makes `client` the client side of `region` (rpc_region_size(ports, lanes) bytes) with private
 * memory `locks` (rpc_lock_size(ports) bytes).  Touches neither, so a host may run it for a GPU
 * with device addresses.  TETHER_ERR_INVALID: a NULL pointer, misalignment or
 * !rpc_config_valid(ports, lanes); nothing to clean up. */
static inline tether_status_t rpc_client_init(struct rpc_client *client, void *region,
                                              uint32_t ports, uint32_t lanes, void *locks)
{
    return rpc_process_init_(client ? &client->process : NULL, region, ports, lanes, locks, 0);
}

/* One sweep over all ports from port `hint % ports`: locks the first free port the client owns
 * and returns true with *port_p set; false (nothing changed) if every port is busy.  Per 32
 * ports it loads both outboxes' flags once.  `lane_mask`: the lanes making the call, non-zero,
 * below bit `lanes`, the same on every lane (SIMT: the lanes executing this call together);
 * `opcode` and `hint` count from the mask's first lane. */
static inline bool rpc_client_try_open(struct rpc_client *client, uint32_t opcode,
                                       uint64_t lane_mask, uint32_t hint, rpc_port_t *port_p)
{
    struct rpc_process *p = &client->process;
    RPC_ASSERT(lane_mask != 0 && (lane_mask & ~rpc_lanes_mask_(p)) == 0);
    opcode = rpc_arch_broadcast(lane_mask, opcode);
    hint = rpc_arch_broadcast(lane_mask, hint);
    uint32_t start = hint % p->ports;
    uint32_t w = start / 32;
    for (uint32_t i = 0; i <= p->words; i++, w = (w + 1 == p->words) ? 0 : w + 1) {
        /* Candidates: client-owned (c == s); the state words say which are unlocked. */
        uint32_t free = ~rpc_arch_diff32(lane_mask, &p->cflags[32 * w], &p->sflags[32 * w]);
        if (w == p->words - 1 && p->ports % 32)
            free &= (1u << (p->ports % 32)) - 1;
        if (i == 0)
            free &= ~0u << (start % 32); /* first visit: ports >= start */
        else if (i == p->words)
            free &= ~(~0u << (start % 32)); /* wrapped around: ports < start */
        for (; free; free &= free - 1)
            if (rpc_try_take_(p, lane_mask, w * 32 + (uint32_t)__builtin_ctz(free), opcode, port_p))
                return true;
    }
    return false;
}

/* As rpc_client_try_open for port `index % ports` only (the caller's home port), without a
 * sweep.  false: the port is busy or the server still has it (nothing changed). */
static inline bool rpc_client_try_open_port(struct rpc_client *client, uint32_t opcode,
                                            uint64_t lane_mask, uint32_t index, rpc_port_t *port_p)
{
    struct rpc_process *p = &client->process;
    RPC_ASSERT(lane_mask != 0 && (lane_mask & ~rpc_lanes_mask_(p)) == 0);
    opcode = rpc_arch_broadcast(lane_mask, opcode);
    index = rpc_arch_broadcast(lane_mask, index);
    return rpc_try_take_(p, lane_mask, index < p->ports ? index : index % p->ports, opcode, port_p);
}

/* Blocking open: retries rpc_client_try_open until a port is free. */
static inline rpc_port_t rpc_client_open(struct rpc_client *client, uint32_t opcode,
                                         uint64_t lane_mask, uint32_t hint)
{
    rpc_port_t port;
    uint32_t spins = 0;
    while (!rpc_client_try_open(client, opcode, lane_mask, hint, &port))
        rpc_arch_backoff(&spins);
    return port;
}

/* Waits until the client owns the buffers, runs fill for each active lane, hands them over. */
static inline void rpc_client_send(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn fill,
                                   void *arg)
{
    rpc_send_(&client->process, port, fill, arg);
}

/* Sends the call's first packet as a short request (S): bytes [0, nbytes) of the 64-byte packet
 * `pkt` (the server sees zeros after them).  Only as the first operation after open, by a call of
 * one lane; never waits (open leaves the port with the client). */
static inline void rpc_client_send_short(struct rpc_client *client, rpc_port_t *port,
                                         const uint64_t *pkt, uint32_t nbytes)
{
    struct rpc_process *p = &client->process;
    rpc_port_check_(p, port);
    RPC_ASSERT((port->state_ & (RPC_PS_FIRST | RPC_PS_OWNED)) == (RPC_PS_FIRST | RPC_PS_OWNED));
    RPC_ASSERT((port->lane_mask_ & (port->lane_mask_ - 1)) == 0);
    RPC_ASSERT(nbytes <= RPC_SHORT_MAX);
    if (nbytes > RPC_SHORT_MAX)
        nbytes = RPC_SHORT_MAX; /* misuse with checks off: never past req[] */
    uint32_t n = (nbytes + 5) / 6, lane = (uint32_t)__builtin_ctzll(port->lane_mask_);
    uint64_t tag = rpc_head_tag_(port->seq_);
    /* The words in registers: every index below is a constant once the loops are unrolled. */
    uint64_t w[RPC_SHORT_WORDS];
    w[0] = tag | (uint64_t)port->opcode_ << 16 | (uint64_t)(lane & 0x3fu) << 48 | (uint64_t)n << 54;
#if defined(__clang__)
#pragma unroll
#endif
    for (uint32_t k = 0; k < RPC_SHORT_DATA; k++) {
        /* Data word k: packet bytes [6k, 6k + 6), those from nbytes on as zeros; words past n
         * are zero (stored only to fill the last pair). */
        uint32_t bit = 48 * k, i = bit / 64, sh = bit % 64;
        uint64_t v = i < 8 ? pkt[i] >> sh : 0;
        if (sh > 16 && i + 1 < 8)
            v |= pkt[i + 1] << (64 - sh);
        uint32_t keep = nbytes > 6 * k ? nbytes - 6 * k : 0;
        v &= keep >= 6 ? 0xffffffffffffull : ((uint64_t)1 << (8 * keep)) - 1;
        w[1 + k] = k < n ? tag | v << 16 : 0;
    }
    if (rpc_arch_is_first_lane(port->lane_mask_)) {
        rpc_head_word_t *req = p->headers[port->index_].req;
#if defined(__clang__)
#pragma unroll
#endif
        for (uint32_t k = 0; k < RPC_SHORT_WORDS; k += 2)
            if (k < n + 1)
                rpc_arch_req_store2(req + k, w[k], w[k + 1]);
    }
    uint32_t flag = ((port->state_ & RPC_PS_OUT) ? 0u : 1u) | RPC_FLAG_SHORT;
    if (port->state_ & RPC_PS_READ) /* buffers read since the last fenced flip: fence (S) */
        rpc_arch_flag_store(port->lane_mask_, rpc_out_flag_(p, port->index_), flag);
    else
        rpc_arch_flag_store_posted(port->lane_mask_, rpc_out_flag_(p, port->index_), flag);
    port->state_ ^= RPC_PS_OUT;
    port->state_ &= ~(uint32_t)(RPC_PS_OWNED | RPC_PS_READ | RPC_PS_RECEIVED | RPC_PS_FIRST);
}

/* Waits until the server has answered (this call's head arrived) and runs use for each active
 * lane; use NULL: the buffers are not read, rpc_port_head() has the head's payload. */
static inline void rpc_client_recv(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn use,
                                   void *arg)
{
    rpc_recv_(&client->process, port, use, arg);
}

/* Runs use for each active lane on the buffers of the last recv, which read only the head. */
static inline void rpc_client_peek(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn use,
                                   void *arg)
{
    rpc_port_check_(&client->process, port);
    RPC_ASSERT((port->state_ & (RPC_PS_OWNED | RPC_PS_RECEIVED | RPC_PS_STREAM)) ==
               (RPC_PS_OWNED | RPC_PS_RECEIVED));
    rpc_invoke_(&client->process, port, use, arg);
    port->state_ |= RPC_PS_READ;
}

/* Non-blocking send/recv: false means "still the server's turn", nothing done. */
static inline bool rpc_client_try_send(struct rpc_client *client, rpc_port_t *port,
                                       rpc_lane_fn fill, void *arg)
{
    return rpc_try_send_(&client->process, port, fill, arg);
}

static inline bool rpc_client_try_recv(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn use,
                                       void *arg)
{
    return rpc_try_recv_(&client->process, port, use, arg);
}

/* Releases the port for other client callers.  Right after a send, a fire-and-forget call: the
 * port is usable again once the server has closed its side. */
static inline void rpc_client_close(struct rpc_client *client, rpc_port_t *port)
{
    rpc_close_(&client->process, port);
}

/* ---- server ------------------------------------------------------------------------------ */

/* As rpc_client_init, for the server side. */
static inline tether_status_t rpc_server_init(struct rpc_server *server, void *region,
                                              uint32_t ports, uint32_t lanes, void *locks)
{
    return rpc_process_init_(server ? &server->process : NULL, region, ports, lanes, locks, 1);
}

/* A hint, without locking: does a call wait on port `index` (c != s)? */
static inline bool rpc_server_waiting(struct rpc_server *server, uint32_t index)
{
    struct rpc_process *p = &server->process;
    return index < p->ports &&
           ((rpc_arch_flag_load(1, &p->cflags[index]) ^ rpc_arch_flag_load(1, &p->sflags[index])) &
            1u) != 0;
}

/* A sweep over at most `words` bitmap words (32 ports each; 0 or more than there are: all) for
 * a port with a call waiting, from where the last sweep stopped (the port after the last one
 * opened; after a bounded sweep that found nothing, the word after the last one it looked at),
 * so consecutive sweeps visit every port in turn and none starves.  On success locks the port
 * and returns true with the handle, made from the header, in *port_p; false if no call waits
 * there.  The server must recv before it sends. */
static inline bool rpc_server_try_open_n(struct rpc_server *server, uint32_t words,
                                         rpc_port_t *port_p)
{
    struct rpc_process *p = &server->process;
    const uint64_t mask = 1; /* the server is a host thread or one lane */
    uint32_t start = rpc_arch_load(mask, &p->next);
    if (start >= p->ports)
        start = 0;
    bool all = words == 0 || words >= p->words;
    /* A full sweep looks at the first word twice: at its ports from `start` on first, at the
     * ones before `start` last. */
    uint32_t w = start / 32, count = all ? p->words + 1 : words;
    for (uint32_t i = 0; i < count; i++, w = (w + 1 == p->words) ? 0 : w + 1) {
        uint32_t ready = rpc_arch_diff32(mask, &p->cflags[32 * w], &p->sflags[32 * w]);
        if (ready != 0)
            ready &= ~rpc_arch_load(mask, &p->locks[w]);
        if (i == 0)
            ready &= ~0u << (start % 32);
        else if (i == p->words)
            ready &= ~(~0u << (start % 32));
        for (; ready; ready &= ready - 1) {
            uint32_t index = w * 32 + (uint32_t)__builtin_ctz(ready);
            if (!rpc_try_take_(p, mask, index, 0, port_p))
                continue;
            rpc_arch_store(mask, &p->next, index + 1 == p->ports ? 0 : index + 1);
            return true;
        }
    }
    if (!all) /* w: the word after the last one looked at */
        rpc_arch_store(mask, &p->next, w * 32);
    return false;
}

/* rpc_server_try_open_n over every port. */
static inline bool rpc_server_try_open(struct rpc_server *server, rpc_port_t *port_p)
{
    return rpc_server_try_open_n(server, 0, port_p);
}

/* As rpc_server_try_open for port `index` only: false when no call waits there (or another
 * server thread has it). */
static inline bool rpc_server_try_open_port(struct rpc_server *server, uint32_t index,
                                            rpc_port_t *port_p)
{
    return rpc_server_waiting(server, index) &&
           rpc_try_take_(&server->process, 1, index, 0, port_p);
}

/* Blocking open: waits for a call. */
static inline rpc_port_t rpc_server_open(struct rpc_server *server)
{
    rpc_port_t port;
    uint32_t spins = 0;
    while (!rpc_server_try_open(server, &port))
        rpc_arch_backoff(&spins);
    return port;
}

/* As the client's operations of the same names. */
static inline void rpc_server_recv(struct rpc_server *server, rpc_port_t *port, rpc_lane_fn use,
                                   void *arg)
{
    rpc_recv_(&server->process, port, use, arg);
}

static inline void rpc_server_send(struct rpc_server *server, rpc_port_t *port, rpc_lane_fn fill,
                                   void *arg)
{
    rpc_send_(&server->process, port, fill, arg);
}

static inline bool rpc_server_try_recv(struct rpc_server *server, rpc_port_t *port, rpc_lane_fn use,
                                       void *arg)
{
    return rpc_try_recv_(&server->process, port, use, arg);
}

static inline bool rpc_server_try_send(struct rpc_server *server, rpc_port_t *port,
                                       rpc_lane_fn fill, void *arg)
{
    return rpc_try_send_(&server->process, port, fill, arg);
}

/* Ends the server's part of the call, handing the buffers back if it still owns them. */
static inline void rpc_server_close(struct rpc_server *server, rpc_port_t *port)
{
    rpc_close_(&server->process, port);
}

/* ---- port accessors ---------------------------------------------------------------------- */

static inline uint32_t rpc_port_opcode(const rpc_port_t *port)
{
    return port->opcode_;
}

static inline uint64_t rpc_port_lane_mask(const rpc_port_t *port)
{
    return port->lane_mask_;
}

static inline uint32_t rpc_port_index(const rpc_port_t *port)
{
    return port->index_;
}

/* Server: the payload (RPC_HEAD_BITS bits each) of the head the next send stores. */
static inline void rpc_port_set_head(rpc_port_t *port, uint64_t a, uint64_t b)
{
    port->head_[0] = a;
    port->head_[1] = b;
}

/* Client: payload word i (0 or 1) of the head of the last recv. */
static inline uint64_t rpc_port_head(const rpc_port_t *port, uint32_t i)
{
    return port->head_[i & 1];
}

/* The call's seq on its port (8 bits): one more with each call on the port. */
static inline uint32_t rpc_port_seq(const rpc_port_t *port)
{
    return port->seq_;
}

#endif /* TETHER_RPC_H */
