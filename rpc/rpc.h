/*
 * rpc/rpc.h - the port protocol: mutually exclusive use of shared buffers by
 * a client (usually a GPU) and a server (usually the host), header only.
 *
 * ROLE
 *   A client and a server share one zero-initialised region of memory (pinned
 *   host memory for a GPU, a MAP_SHARED mapping for two processes, plain
 *   memory for two threads).  The region holds `ports` independent ports; a
 *   port is a mailbox pair (one flag byte per side), a header (opcode, lane
 *   mask, call seq, answer head) and one 64-byte buffer per lane.  A call
 *   takes one port: the client opens it with an opcode, then client and
 *   server alternate send and recv on its buffers, then both close it.
 *   Once the region exists there are no failure modes: nothing here returns
 *   an error after *_init().
 *
 *   The same source compiles for the host (C11 atomics) and, under clang, for
 *   nvptx64 and amdgcn (see rpc_arch.h); include it inside
 *   `#pragma omp declare target` for device code.  Freestanding: fixed-width
 *   types, no libc, no allocation.  docs/rpc-protocol.md explains the design.
 *
 * LAYOUT of the region (rpc_region_size(ports, lanes) bytes, 64-byte aligned;
 * every part starts on a 64-byte boundary):
 *     [client outbox: ports x u8, 0 or 1]  written by the client only
 *     [server outbox: ports x u8, 0 or 1]  written by the server only
 *     [header x ports: {u64 lane_mask; u32 opcode; u32 seq; u64 head[2]}]
 *     [buffer x ports x lanes: 64 bytes]  port p, lane l at p * lanes + l
 *   Each side's outbox is the other side's inbox.  A flag byte has one
 *   writer: the agent of its side that holds the port.
 *
 * OWNERSHIP (the whole protocol)
 *   For port p let c = client outbox bit, s = server outbox bit.
 *     c == s : the client owns the port's header and buffers;
 *     c != s : the server owns them.
 *   A side touches a port's header or buffers only while it owns them, and
 *   gives them away by flipping its own outbox bit (never the other side's).
 *   So each flip hands a token across; at any moment exactly one side owns.
 *   Among the agents of one side (warps of a GPU, threads of a host), a port
 *   is held by one caller at a time through a lock in that side's own memory
 *   (never in the shared region): the server's lock bitmap, the client's
 *   state word per port.
 *
 *   client: open   lock a port with c == s (the call's seq: the port's call
 *                  count, kept in the client's private state word)
 *           send   [wait until owned] (first send: write the header with the
 *                  seq) fill buffers, clear the head, flip c; or, as the
 *                  first send of a one-lane port, a short request (below)
 *           recv   [if the previous op was a recv: clear the head, flip c]
 *                  wait for the head of this call, read buffers (or not)
 *           close  unlock (buffers stay with whoever owns them)
 *   server: open   lock a port with c != s (a call is waiting), read header
 *           recv   [if the previous op was a recv: flip s] wait until owned,
 *                  read buffers (the first recv after open does not wait)
 *           send   [wait until owned] fill buffers, flip s, store the head
 *           close  if the server still owns the port, flip s; unlock
 *   Every send is matched by a recv on the other side.  The client's first
 *   operation is a send, the server's first is a recv.  A client may close
 *   right after a send (fire and forget): the port then stays with the
 *   server (c != s), so client open skips it until the server's close hands
 *   it back.  Client open re-checks c == s after taking the lock.
 *
 * ANSWER HEADS
 *   A client waiting for an answer does not poll the mailbox: it polls the
 *   port's head, two 64-bit words each holding a 16-bit tag and 48 bits of
 *   payload (rpc_port_set_head / rpc_port_head).  The server stores the head
 *   right after the flip of each send, tagged with the call's seq from the
 *   header; the client clears it (zero: no tag) before each of its fenced flips.
 *   When both words carry the tag of its call, the server's flip is already
 *   done (it came first), so the client owns the port, and the payload came
 *   with the same read: on a GPU one 16-byte load of host memory tells that
 *   the answer arrived and can hold all of it.  A head stored late, after
 *   the next call's client cleared it (a server answering a client that had
 *   left), carries the previous call's seq and is not taken; clearing makes a
 *   head from any earlier call invisible however the 8-bit seq wraps.  Each
 *   word is tagged because a reader may see one word new and the other old.
 *   The head is outside the ownership rule above: only the server stores a
 *   tag, only the client clears.
 *
 * SHORT REQUESTS
 *   A call's first packet, from a port of one lane, may travel as a short request instead
 *   (rpc_client_send_short): the header's req words carry it, each word with the call's tag
 *   (as heads) in its low 16 bits and 48 bits of payload.  req[0], the meta word, holds the
 *   opcode (bits 16..47), the lane (48..53) and the number n of data words (54..57); req[1..n]
 *   hold the packet's bytes six at a time.  The client stores the words and then its flag
 *   byte with bit 1 (RPC_FLAG_SHORT) set, with no fence between them: on a GPU that fence is
 *   the costliest step of a call.  The words may thus reach the server after the flag.  The
 *   server, opening a port whose flag says short, checks that req[0] carries a tag and that
 *   req[1..n] carry the same one; until they all do it leaves the port and comes back.  Then
 *   it writes the header and the lane's buffer from the words, exactly as a fenced request
 *   would have left them, zeroes req[0..n] and the head, and the call goes on as any other.
 *   Why a word with the tag is a word of this request: the req words are zero whenever the
 *   client owns the port (the server zeroes what it read before its flip hands the port
 *   back), so only this request can have put a tag there.  The head: the client does not
 *   clear it (an unfenced clear could land after the answer); the server zeroes it at the
 *   open, before it can store this call's head.
 *   The fence also ordered the client's earlier buffer reads before the flag (no write of the
 *   server may be seen by them).  A client port's state records whether buffers were read
 *   since the last fenced flip (RPC_CS_READ, RPC_PS_READ); if so the short request's flag is
 *   fenced after all.  Reads of the head are acquire loads, so they need no such care.
 *
 * MEMORY ORDERING (what each step needs, and why)
 *   Shared words are accessed only through rpc_arch.h:
 *   W1 Waiting for ownership: relaxed loads of the other side's flag (and
 *      this side's) in a loop.  Relaxed is enough because no data is
 *      read through the value; it only says "maybe owned".
 *   W2 Once a load shows ownership: one ACQUIRE fence before the first
 *      access to the header or buffers.  It pairs with the other side's
 *      release flip (W3) and makes its buffer writes visible to our reads,
 *      and its buffer reads complete before our writes (no write of ours can
 *      be seen by a read it made before handing over).
 *   W3 Handing over: a RELEASE store of this side's outbox flag byte, after
 *      the last buffer access.  A store, not a read-modify-write: the byte
 *      belongs to this port alone and only the port's holder on this side
 *      writes it.  (Over PCIe a GPU's store is posted; an RMW on host memory
 *      is a round trip.)
 *   H  Heads: the server's release stores after its flip; the client's
 *      relaxed zero stores before its flip (whose release orders them); the
 *      client's acquire loads, which order the buffer reads that follow.
 *   S  Short requests: relaxed stores of the tagged req words, then the flag byte with no
 *      fence (fenced if buffers were read since the last fenced flip); the server's relaxed
 *      loads of the words after W2, its relaxed zero stores before its flip.
 *   L1 Lock: RMW fetch_or with acquire on the side's lock word (server: a
 *      bitmap; client: the port's state word); unlock: fetch_and (server) or
 *      a store of the next state (client) with release.  A new
 *      holder thereby sees the previous holder's flips and so computes the
 *      port's outbox bit correctly.
 *   L2 Open re-checks ownership (W1 + W2) after L1: another agent of the same
 *      side may have served and closed the port between scan and lock.
 *   Host threads (C11): W1 memory_order_relaxed loads, W2
 *   atomic_thread_fence(memory_order_acquire), W3 atomic_store_explicit(
 *   memory_order_release), L1 fetch_or acquire / fetch_and or store release.
 *   (Under ThreadSanitizer W2 becomes an acquire re-load of the same flag,
 *   which TSan models; the fence it does not.)
 *   GPU and host over PCIe (system scope): W1 ld.volatile (nvptx, =
 *   ld.relaxed.sys) / relaxed system-scope atomic load (amdgcn); W2
 *   fence.acq_rel.sys / fence acquire system; W3 every lane fences
 *   (fence.acq_rel.sys / fence release system), the warp synchronises, one
 *   lane stores the byte; heads: one ld.acquire.sys.v2.u64.  The GPU-side
 *   locks are device-scope (atom.acquire.gpu / st.release.gpu).  The host
 *   side of a PCIe pair uses the host rules: x86 stores are not reordered
 *   with older loads or stores, so the host's flip and head are ordered
 *   after its buffer accesses as the GPU observes them.
 *
 * THREAD SAFETY
 *   Any number of agents of one side may call open concurrently on one
 *   struct rpc_client / rpc_server; an open port (rpc_port_t) belongs to the
 *   caller that opened it and must not be used by two callers at once.
 *   Distinct ports never affect each other; no forward progress between
 *   callers is assumed (a caller stalled on its port blocks only that port).
 *   On a SIMT target all lanes of the port's lane mask make every call on the
 *   port together (convergently); on the host one thread acts for all lanes.
 *   Lanes may reach one call with different arguments (merged or
 *   reconverged branches): open takes the opcode and hint of the mask's
 *   first lane, the per-lane data stays per lane.
 *
 * LANES
 *   A port has `lanes` 64-byte buffers; a call uses the lanes in its lane
 *   mask.  Per-lane callbacks (rpc_lane_fn) run once per active lane: on a
 *   SIMT target each lane runs it for itself, on the host the calling thread
 *   runs it for every lane of the mask in ascending order.  Per-lane arrays
 *   (send_n/recv_n) are indexed by lane on the host and are the lane's own
 *   element ([0]) on a SIMT target.  On a SIMT target `lanes` must be at
 *   least the warp size.  The server functions are meant for the host; on a
 *   SIMT target they compile but act as one lane.
 *
 * MISUSE
 *   With NDEBUG undefined (host: assert) or RPC_DEBUG defined (trap where
 *   assert is off) misuse stops the program: a port handle
 *   not made by an open of this process object, use after close, a recv
 *   before the client's first send, a send before the server's first recv,
 *   another operation between recv_n_size and recv_n_data, a lane mask
 *   outside the lane count.
 */
#ifndef TETHER_RPC_H
#define TETHER_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "rpc_arch.h"
#include "tether/status.h"

/* Checks: on with NDEBUG undefined or RPC_DEBUG defined.  A program may
 * define RPC_ASSERT(cond) itself before including this header (e.g. to
 * report a failing check from a GPU before trapping). */
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

/* ---- limits and layout ------------------------------------------------- */

#define RPC_PORTS_MAX (1u << 20) /* ports per region */
#define RPC_LANES_MAX 64u        /* lanes per port (bits of a lane mask) */
#define RPC_BUFFER_SIZE 64u      /* bytes per lane buffer */
#define RPC_ALIGN 64u            /* alignment of the region and its parts */

/* Bytes of a stream's first packet that carry data (the first 8 hold the
 * lane's total length); later packets carry RPC_BUFFER_SIZE bytes. */
#define RPC_STREAM_FIRST (RPC_BUFFER_SIZE - 8u)

/* One lane's buffer. */
struct rpc_buffer {
    uint64_t data[RPC_BUFFER_SIZE / 8];
};

/* Words of a short request (SHORT REQUESTS above): a meta word and RPC_SHORT_DATA words of six
 * packet bytes each, enough for a whole 64-byte packet. */
#define RPC_SHORT_DATA 11u
_Static_assert(RPC_SHORT_WORDS == 1u + RPC_SHORT_DATA, "short request words");

/* Bit 1 of a client flag byte: this flip sends a short request (bit 0 is the outbox bit). */
#define RPC_FLAG_SHORT 0x2u

/* Per-port header.  {lane_mask, opcode, seq}: written by the client with its first (fenced) send,
 * read by the server; for a short request the server writes them itself from req[0].  head: the
 * answer notice (ANSWER HEADS above): the server stores it right after each send's flip, the
 * client clears it before each of its fenced flips, the server at the open of a short request.
 * req: the tagged words of a short request, written by the client, read and zeroed by the
 * server (zero whenever the client owns the port). */
struct rpc_header {
    uint64_t lane_mask;
    uint32_t opcode;
    uint32_t seq;
    rpc_head_word_t head[2];
    rpc_head_word_t req[RPC_SHORT_WORDS];
};

/* Bits of payload in each head word (the low 16 bits hold the tag). */
#define RPC_HEAD_BITS 48u

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

/* Number of 32-bit words of one bitmap. */
static inline uint32_t rpc_bitmap_words(uint32_t ports)
{
    return (ports + 31) / 32;
}

/* Offsets of the parts of the region (see LAYOUT); valid configs only.  The outboxes: one flag
 * byte per port each (rounded up to 64 bytes, so that 32 flags are read as whole 8- or 16-byte
 * words). */
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

/* Size in bytes of the shared region for `ports` x `lanes`; 0 when the
 * configuration is not valid.  The region must be 64-byte aligned and zeroed
 * before either side is initialised. */
static inline uint64_t rpc_region_size(uint32_t ports, uint32_t lanes)
{
    if (!rpc_config_valid(ports, lanes))
        return 0;
    return rpc_buffer_offset(ports) + (uint64_t)ports * lanes * RPC_BUFFER_SIZE;
}

/* Size in bytes of one side's private memory (its own, zeroed, 8-byte aligned, never shared
 * with the other side): one 64-bit word per port; 0 when ports is not valid.  The server uses
 * the first ceil(ports / 32) 32-bit words as its lock bitmap.  The client keeps a state word per
 * port (RPC_CS_*): its lock bit; "known", set by a client that closed a port it owned (its last
 * step was a receive, so the server cannot flip that port before the client does), with the
 * client's outbox bit at that close; and the port's call count (the seq of ANSWER HEADS).  One
 * atomic takes the lock and reads all of
 * it; a client opening a known port reads no mailbox (on a GPU two round trips over the link
 * saved), and one store at close writes it back and unlocks. */
static inline uint64_t rpc_lock_size(uint32_t ports)
{
    if (ports < 1 || ports > RPC_PORTS_MAX)
        return 0;
    return (uint64_t)ports * sizeof(rpc_state_t);
}

/* Bits of a client port's state word. */
#define RPC_CS_LOCK 0x1u    /* held by a client caller */
#define RPC_CS_KNOWN 0x2u   /* client-owned since its last close */
#define RPC_CS_OUT 0x4u     /* the client's outbox bit at the last close */
#define RPC_CS_READ 0x8u    /* with KNOWN: buffers were read since the last fenced flip */
#define RPC_CS_SEQ_SHIFT 8u /* bits 8..15: seq of the port's last call */

/* ---- process objects ---------------------------------------------------- */

/* One side's view of a region.  Holds only pointers and sizes, so a host can
 * build a client for a GPU (with device addresses) and copy it into device
 * memory bit for bit: the layout is the same for host and device compiles. */
struct rpc_process {
    rpc_flag_t *cflags;         /* client outbox: a flag byte per port */
    rpc_flag_t *sflags;         /* server outbox: a flag byte per port */
    struct rpc_header *headers; /* ports entries */
    struct rpc_buffer *buffers; /* ports x lanes entries */
    rpc_word_t *locks;          /* private memory: server lock bitmap / client rpc_state_t */
    uint32_t ports;
    uint32_t lanes;
    uint32_t words;  /* rpc_bitmap_words(ports) */
    uint32_t server; /* 0: client, 1: server */
    rpc_word_t next; /* server: where the next scan starts (rotating) */
    uint32_t reserved;
};

_Static_assert(sizeof(struct rpc_process) == 64, "rpc_process layout is shared host/device");

struct rpc_client {
    struct rpc_process process;
};

struct rpc_server {
    struct rpc_process process;
};

/* An open port.  Obtained only from an open function and passed by pointer
 * to the operations; the fields are private (trailing underscore).  In
 * checked builds `key_` ties the handle to its process object and index. */
typedef struct rpc_port {
    uint64_t lane_mask_;
    uint64_t head_[2]; /* server: payload of the next send's head; client: of the last recv's */
    uint32_t index_;
    uint32_t opcode_;
    uint32_t state_;
    uint32_t key_;
    uint32_t seq_; /* the call's seq (header) */
} rpc_port_t;

_Static_assert(sizeof(rpc_port_t) == 48, "rpc_port layout");

/* Per-lane callback of send/recv: `buffer` is lane `lane`'s 64 bytes, owned by
 * the caller for the duration of the call. */
typedef void (*rpc_lane_fn)(struct rpc_buffer *buffer, uint32_t lane, void *arg);

/* ---- private helpers ---------------------------------------------------- */

enum {
    RPC_PS_OPEN = 1u << 0,     /* obtained from open, not closed yet */
    RPC_PS_SERVER = 1u << 1,   /* server-side handle */
    RPC_PS_OWNED = 1u << 2,    /* this side owns the buffers now */
    RPC_PS_RECEIVED = 1u << 3, /* the last operation was a recv */
    RPC_PS_FIRST = 1u << 4,    /* no send/recv yet since open */
    RPC_PS_STREAM = 1u << 5,   /* between recv_n_size and recv_n_data */
    RPC_PS_OUT = 1u << 6,      /* value of this side's outbox bit */
    RPC_PS_READ = 1u << 7,     /* client: buffers read since the last fence (SHORT REQUESTS) */
};

static inline uint32_t rpc_port_key_(const struct rpc_process *process, uint32_t index)
{
    uint64_t p = (uint64_t)(uintptr_t)process;
    return (uint32_t)(p ^ (p >> 32)) ^ (index * 0x9e3779b9u) ^ 0x7e7e5a17u;
}

/* The client's state word of port `index`. */
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

/* Checked builds: the handle was made by open on this process object, is
 * still open, and its lock bit is still held. */
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

/* The other side's outbox flag of this port (relaxed). */
static inline rpc_flag_t *rpc_in_flag_(struct rpc_process *process, uint32_t index)
{
    return process->server ? &process->cflags[index] : &process->sflags[index];
}

/* This side's outbox flag of this port. */
static inline rpc_flag_t *rpc_out_flag_(struct rpc_process *process, uint32_t index)
{
    return process->server ? &process->sflags[index] : &process->cflags[index];
}

static inline uint32_t rpc_in_bit_(struct rpc_process *process, uint64_t mask, uint32_t index)
{
    return rpc_arch_flag_load(mask, rpc_in_flag_(process, index)) & 1u;
}

/* W2 after rpc_in_bit_ showed ownership. */
static inline void rpc_acquire_in_(struct rpc_process *process, uint64_t mask, uint32_t index)
{
    rpc_arch_acquire_flag(mask, rpc_in_flag_(process, index));
}

/* W1: does this side own the port now?  (Relaxed load of the other side's outbox.) */
static inline bool rpc_owned_(struct rpc_process *process, const rpc_port_t *port)
{
    uint32_t in_bit = rpc_in_bit_(process, port->lane_mask_, port->index_);
    uint32_t out_bit = (port->state_ & RPC_PS_OUT) ? 1u : 0u;
    return (in_bit ^ out_bit) == process->server;
}

/* W1 + W2 for an operation that needs the buffers: false if the other side
 * still has them. */
static inline bool rpc_acquire_(struct rpc_process *process, rpc_port_t *port)
{
    if (port->state_ & RPC_PS_OWNED)
        return true;
    if (!rpc_owned_(process, port))
        return false;
    rpc_acquire_in_(process, port->lane_mask_, port->index_);
    port->state_ |= RPC_PS_OWNED;
    return true;
}

/* The tag of the heads of call `seq`: never 0, the value of a cleared head word. */
static inline uint64_t rpc_head_tag_(uint32_t seq)
{
    return 0x8000u | (seq & 0xffu);
}

/* W3: hand the buffers to the other side.  The client first clears the head (it owns the port,
 * and a head it would wait for can only be stored after this flip); the server stores the
 * head of its send right after the flip (ANSWER HEADS). */
static inline void rpc_release_(struct rpc_process *process, rpc_port_t *port)
{
    RPC_ASSERT(port->state_ & RPC_PS_OWNED);
    if (!process->server)
        rpc_arch_head_clear(port->lane_mask_, process->headers[port->index_].head);
    /* A flag byte has one writer, the port's holder on its side: a release store. */
    rpc_arch_flag_store(port->lane_mask_, rpc_out_flag_(process, port->index_),
                        (port->state_ & RPC_PS_OUT) ? 0u : 1u);
    port->state_ ^= RPC_PS_OUT;
    port->state_ &= ~(uint32_t)(RPC_PS_OWNED | RPC_PS_READ); /* the flip fenced every read */
}

/* Client: has the head of the server's answer arrived?  Then the client owns the port (the
 * server stores the head after its flip), and the head's payload is in the handle. */
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

/* Runs fn once per active lane (SIMT: for the calling lane). */
static inline void rpc_invoke_(const struct rpc_process *process, const rpc_port_t *port,
                               rpc_lane_fn fn, void *arg)
{
    struct rpc_buffer *slot = rpc_slot_(process, port);
#if RPC_ARCH_SIMT
    uint32_t lane = rpc_arch_lane_id();
    RPC_ASSERT(lane < process->lanes);
    fn(&slot[lane], lane, arg);
#else
    for (uint64_t mask = port->lane_mask_; mask; mask &= mask - 1) {
        uint32_t lane = (uint32_t)__builtin_ctzll(mask);
        fn(&slot[lane], lane, arg);
    }
#endif
}

static inline void rpc_process_init_(struct rpc_process *process, void *region, uint32_t ports,
                                     uint32_t lanes, void *locks, uint32_t server)
{
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
}

static inline tether_status_t rpc_process_check_args_(const void *process, const void *region,
                                                      uint32_t ports, uint32_t lanes,
                                                      const void *locks)
{
    if (!process || !region || !locks || !rpc_config_valid(ports, lanes))
        return TETHER_ERR_INVALID;
    if (((uintptr_t)region % RPC_ALIGN) != 0 || ((uintptr_t)locks % sizeof(rpc_state_t)) != 0)
        return TETHER_ERR_INVALID;
    return TETHER_OK;
}

/* Server, a short request waiting on port `index` (SHORT REQUESTS): if every word it announces
 * has arrived, writes the header and the lane's buffer from them as a fenced request would have,
 * zeroes the words and the head, and returns true; false (nothing changed) while some word is
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

/* Tries to lock port `index` and checks (L2) that this side may start or serve a call on it.  On
 * success returns true with W2 done, this side's outbox bit in *out_p, (client) the new call's
 * seq in *seq_p and whether buffers were read since the last fence (RPC_PS_READ or 0) in *read_p.
 */
static inline bool rpc_try_take_(struct rpc_process *process, uint64_t mask, uint32_t index,
                                 uint32_t *out_p, uint32_t *seq_p, uint32_t *read_p)
{
    uint32_t w = index / 32, bit = 1u << (index % 32);
    uint64_t old = 0;
    if (process->server ? !rpc_arch_try_lock(mask, &process->locks[w], bit)
                        : !rpc_arch_lock_state(mask, rpc_state_(process, index), RPC_CS_LOCK, &old))
        return false;
    *seq_p = (uint32_t)((old >> RPC_CS_SEQ_SHIFT) + 1u) & 0xffu;
    *read_p = 0;
    /* Known client-owned since its last close: the outbox bit then is the one now. */
    if (old & RPC_CS_KNOWN) {
        *out_p = (old & RPC_CS_OUT) ? 1u : 0u;
        *read_p = (old & RPC_CS_READ) ? RPC_PS_READ : 0u;
        return true;
    }
    /* The client's own outbox bit is in its state word (every close records it): a GPU's flag
     * store may still be on its way to host memory when the next holder opens. */
    uint32_t in_flag = rpc_arch_flag_load(mask, rpc_in_flag_(process, index)), in = in_flag & 1u;
    uint32_t out = process->server ? rpc_arch_flag_load(mask, rpc_out_flag_(process, index)) & 1u
                                   : ((old & RPC_CS_OUT) ? 1u : 0u);
    if ((in != out) != (process->server != 0))
        goto busy;
    rpc_acquire_in_(process, mask, index);
    if (process->server && (in_flag & RPC_FLAG_SHORT) && !rpc_server_unpack_short_(process, index))
        goto busy;
    *out_p = out;
    return true;
busy:
    if (process->server)
        rpc_arch_unlock(mask, &process->locks[w], bit);
    else /* as it was */
        rpc_arch_unlock_state(mask, rpc_state_(process, index), old);
    return false;
}

static inline rpc_port_t rpc_port_make_(const struct rpc_process *process, uint32_t index,
                                        uint64_t mask, uint32_t opcode, uint32_t out, uint32_t seq,
                                        uint32_t read)
{
    rpc_port_t port;
    port.lane_mask_ = mask;
    port.head_[0] = 0;
    port.head_[1] = 0;
    port.seq_ = seq;
    port.index_ = index;
    port.opcode_ = opcode;
    port.state_ = RPC_PS_OPEN | RPC_PS_OWNED | RPC_PS_FIRST | (out ? RPC_PS_OUT : 0u) |
                  (process->server ? RPC_PS_SERVER : 0u) | read;
    port.key_ = rpc_port_key_(process, index);
    return port;
}

/* The client's first send of a call writes {lane_mask, opcode, seq} into the header (a short
 * request carries them in its meta word instead).  Host: lane mask and opcode are written only
 * when they change.  A GPU always writes: its stores to host memory are posted, a read is a
 * round trip over the link. */
static inline void rpc_header_write_(struct rpc_process *p, const rpc_port_t *port)
{
    struct rpc_header *header = &p->headers[port->index_];
    if (rpc_arch_is_first_lane(port->lane_mask_)) {
        if (RPC_ARCH_SIMT || header->lane_mask != port->lane_mask_ ||
            header->opcode != port->opcode_) {
            header->lane_mask = port->lane_mask_;
            header->opcode = port->opcode_;
        }
        header->seq = port->seq_;
    }
}

/* Operations shared by both sides.  Return false: still the other side's
 * turn, nothing done (a recv after a recv has handed the buffers back, once). */
static inline bool rpc_try_send_(struct rpc_process *process, rpc_port_t *port, rpc_lane_fn fill,
                                 void *arg)
{
    rpc_port_check_(process, port);
    RPC_ASSERT(!(port->state_ & RPC_PS_STREAM));
    /* The server must receive the client's first packet before sending. */
    RPC_ASSERT(!(process->server && (port->state_ & RPC_PS_FIRST)));
    if (!rpc_acquire_(process, port))
        return false;
    if (!process->server && (port->state_ & RPC_PS_FIRST))
        rpc_header_write_(process, port);
    if (fill != NULL)
        rpc_invoke_(process, port, fill, arg);
    rpc_release_(process, port);
    if (process->server) {
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
    /* The client must send before it can receive anything. */
    RPC_ASSERT(process->server || !(port->state_ & RPC_PS_FIRST));
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

/* Client close (L1): one release store of the port's next state word, lock bit clear.  Still
 * owned (nothing sent since the last receive, or since the open): the next opener may skip the
 * mailbox reads (known).  After a send the server owns it: unknown.  The outbox bit is recorded
 * either way. */
static inline void rpc_close_(struct rpc_process *process, rpc_port_t *port)
{
    rpc_port_check_(process, port);
    RPC_ASSERT(!(port->state_ & RPC_PS_STREAM));
    if (process->server) {
        /* The server hands a port it still owns back to the client (after a fire-and-forget
         * call, or a call whose last step was a recv). */
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

/* ---- streaming ----------------------------------------------------------- */

/* Per-lane element of a per-lane array (see LANES). */
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
    const uint64_t *size;   /* send: per-lane sizes */
    const uint64_t *cap;    /* recv: per-lane capacities */
    uint64_t *size_p;       /* recv_n_size: per-lane sizes out */
    uint64_t offset;        /* byte offset of this packet's data */
    uint64_t max;           /* host: largest size over the lanes */
};

static inline void rpc_stream_first_fill_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = s->size[rpc_lane_index_(lane)];
    const char *src = (const char *)s->src[rpc_lane_index_(lane)];
    buffer->data[0] = size;
    rpc_copy_(&buffer->data[1], src, size < RPC_STREAM_FIRST ? size : RPC_STREAM_FIRST);
    if (size > s->max)
        s->max = size;
}

static inline void rpc_stream_fill_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = s->size[rpc_lane_index_(lane)];
    const char *src = (const char *)s->src[rpc_lane_index_(lane)];
    if (s->offset < size) {
        uint64_t n = size - s->offset;
        rpc_copy_(buffer->data, src + s->offset, n < RPC_BUFFER_SIZE ? n : RPC_BUFFER_SIZE);
    }
}

static inline void rpc_stream_size_use_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = buffer->data[0];
    s->size_p[rpc_lane_index_(lane)] = size;
}

/* Copies bytes [offset, offset + len) of a lane's stream, clipped to its
 * capacity, from the packet at `from`. */
static inline void rpc_stream_put_(struct rpc_stream_ *s, uint32_t lane, const void *from,
                                   uint64_t len)
{
    uint64_t cap = s->cap[rpc_lane_index_(lane)];
    if (s->offset >= cap)
        return;
    char *dst = (char *)s->dst[rpc_lane_index_(lane)];
    if (len > cap - s->offset)
        len = cap - s->offset;
    rpc_copy_(dst + s->offset, from, len);
}

static inline void rpc_stream_first_use_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = buffer->data[0];
    rpc_stream_put_(s, lane, &buffer->data[1], size < RPC_STREAM_FIRST ? size : RPC_STREAM_FIRST);
    if (size > s->max)
        s->max = size;
}

static inline void rpc_stream_use_(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct rpc_stream_ *s = (struct rpc_stream_ *)arg;
    uint64_t size = s->size[rpc_lane_index_(lane)];
    if (s->offset < size) {
        uint64_t n = size - s->offset;
        rpc_stream_put_(s, lane, buffer->data, n < RPC_BUFFER_SIZE ? n : RPC_BUFFER_SIZE);
    }
}

/* Does any lane still have bytes at or after `offset`?  Host: the running
 * maximum; SIMT: a vote over the warp. */
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
    struct rpc_stream_ s = {src, NULL, size, NULL, NULL, 0, 0};
    uint64_t own = RPC_ARCH_SIMT ? size[0] : 0;
    rpc_send_(process, port, rpc_stream_first_fill_, &s);
    for (s.offset = RPC_STREAM_FIRST; rpc_stream_more_(port, &s, own); s.offset += RPC_BUFFER_SIZE)
        rpc_send_(process, port, rpc_stream_fill_, &s);
}

static inline void rpc_recv_n_size_(struct rpc_process *process, rpc_port_t *port, uint64_t *size_p)
{
    struct rpc_stream_ s = {NULL, NULL, NULL, NULL, size_p, 0, 0};
    rpc_recv_(process, port, rpc_stream_size_use_, &s);
    port->state_ |= RPC_PS_STREAM;
}

static inline void rpc_recv_n_data_(struct rpc_process *process, rpc_port_t *port, void *const *dst,
                                    const uint64_t *cap)
{
    RPC_ASSERT(port->state_ & RPC_PS_STREAM);
    RPC_ASSERT(port->state_ & RPC_PS_OWNED);
    port->state_ &= ~(uint32_t)RPC_PS_STREAM;
    rpc_port_check_(process, port);
    /* The first packet is still in the buffers (this side owns them): take
     * the per-lane sizes from it, then its data. */
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
    struct rpc_stream_ s = {NULL, dst, sizes, cap, NULL, 0, 0};
    rpc_invoke_(process, port, rpc_stream_first_use_, &s);
    if (!process->server)
        port->state_ |= RPC_PS_READ;
    for (s.offset = RPC_STREAM_FIRST; rpc_stream_more_(port, &s, own); s.offset += RPC_BUFFER_SIZE)
        rpc_recv_(process, port, rpc_stream_use_, &s);
}

/* ---- client -------------------------------------------------------------- */

/* Makes `client` the client side of `region` (rpc_region_size(ports, lanes)
 * bytes, 64-byte aligned, zeroed before either side starts) with lock bitmap
 * `locks` (rpc_lock_size(ports) bytes, zeroed, private to the client side).
 * Touches neither region nor locks, so it may be run by the host for a GPU
 * with device addresses.  Returns TETHER_ERR_INVALID for NULL pointers,
 * misalignment or !rpc_config_valid(ports, lanes); nothing to clean up. */
static inline tether_status_t rpc_client_init(struct rpc_client *client, void *region,
                                              uint32_t ports, uint32_t lanes, void *locks)
{
    tether_status_t status = rpc_process_check_args_(client, region, ports, lanes, locks);
    if (status != TETHER_OK)
        return status;
    rpc_process_init_(&client->process, region, ports, lanes, locks, 0);
    return TETHER_OK;
}

/* One sweep over all ports starting at port `hint % ports` (spread callers,
 * e.g. SM id or thread id): locks the first free port the client owns
 * (the first send writes {lane_mask, opcode, seq} into its header) and returns true with *port_p
 * set; false (nothing changed) if every port is busy.  Per 32 ports it loads
 * the lock word and both mailbox words once.  `lane_mask`: the lanes making
 * the call, non-zero, below bit `lanes`, the same on every lane (on a SIMT
 * target: the lanes executing this call together, e.g. the active mask);
 * `opcode` and `hint` are taken from the mask's first lane. */
static inline bool rpc_client_try_open(struct rpc_client *client, uint32_t opcode,
                                       uint64_t lane_mask, uint32_t hint, rpc_port_t *port_p)
{
    struct rpc_process *p = &client->process;
    RPC_ASSERT(lane_mask != 0 && (lane_mask & ~rpc_lanes_mask_(p)) == 0);
    /* SIMT: the first lane's opcode and hint count for the whole call, so
     * lanes that reached one call with different arguments (a compiler may
     * merge the calls of two divergent branches into one) still agree. */
    opcode = rpc_arch_broadcast(lane_mask, opcode);
    hint = rpc_arch_broadcast(lane_mask, hint);
    uint32_t start = hint % p->ports;
    uint32_t w = start / 32;
    for (uint32_t i = 0; i <= p->words; i++, w = (w + 1 == p->words) ? 0 : w + 1) {
        /* Candidates: client-owned (c == s); their state words say which are unlocked. */
        uint32_t free = ~rpc_arch_diff32(lane_mask, &p->cflags[32 * w], &p->sflags[32 * w]);
        if (w == p->words - 1 && p->ports % 32)
            free &= (1u << (p->ports % 32)) - 1;
        if (i == 0)
            free &= ~0u << (start % 32); /* first visit: ports >= start */
        else if (i == p->words)
            free &= ~(~0u << (start % 32)); /* wrapped around: ports < start */
        while (free) {
            uint32_t bit = (uint32_t)__builtin_ctz(free);
            uint32_t index = w * 32 + bit, out, seq, read;
            free &= free - 1;
            if (!rpc_try_take_(p, lane_mask, index, &out, &seq, &read))
                continue;
            *port_p = rpc_port_make_(p, index, lane_mask, opcode, out, seq, read);
            return true;
        }
    }
    return false;
}

/* As rpc_client_try_open for port `index % ports` only (a caller's home port): no sweep, so on
 * a GPU two fewer reads of host memory per call.  false: the port is busy or the server still
 * has it (nothing changed). */
static inline bool rpc_client_try_open_port(struct rpc_client *client, uint32_t opcode,
                                            uint64_t lane_mask, uint32_t index, rpc_port_t *port_p)
{
    struct rpc_process *p = &client->process;
    RPC_ASSERT(lane_mask != 0 && (lane_mask & ~rpc_lanes_mask_(p)) == 0);
    opcode = rpc_arch_broadcast(lane_mask, opcode);
    index = rpc_arch_broadcast(lane_mask, index);
    if (index >= p->ports) /* a division only when needed (a GPU's home port is in range) */
        index %= p->ports;
    uint32_t out, seq, read;
    if (!rpc_try_take_(p, lane_mask, index, &out, &seq, &read))
        return false;
    *port_p = rpc_port_make_(p, index, lane_mask, opcode, out, seq, read);
    return true;
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

/* Waits until the client owns the buffers, runs fill for each active lane,
 * hands the buffers to the server. */
static inline void rpc_client_send(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn fill,
                                   void *arg)
{
    rpc_send_(&client->process, port, fill, arg);
}

/* Largest packet prefix a short request carries (all of a packet). */
#define RPC_SHORT_MAX RPC_BUFFER_SIZE

/* Request words 0 .. count - 1 (`w` has RPC_SHORT_WORDS entries; count is rounded up to pairs,
 * the words past it being zero) by the mask's first lane, a pair per store (one posted 16-byte
 * store on a GPU).  The loop is unrolled so that on a GPU `w` stays in registers. */
_Static_assert(RPC_SHORT_WORDS % 2 == 0, "request words go in pairs");
static inline void rpc_req_store_(uint64_t mask, rpc_head_word_t *req, const uint64_t *w,
                                  uint32_t count)
{
    if (!rpc_arch_is_first_lane(mask))
        return;
#if defined(__clang__)
#pragma unroll
#endif
    for (uint32_t k = 0; k < RPC_SHORT_WORDS; k += 2)
        if (k < count)
            rpc_arch_req_store2(req + k, w[k], w[k + 1]);
}

/* The meta word of a short request: tag, opcode, lane and number of data words. */
static inline uint64_t rpc_short_meta_(uint64_t tag, uint32_t opcode, uint32_t lane, uint32_t n)
{
    return tag | (uint64_t)opcode << 16 | (uint64_t)(lane & 0x3fu) << 48 | (uint64_t)n << 54;
}

/* Sends the call's first packet as a short request (SHORT REQUESTS): bytes [0, nbytes) of the
 * 64-byte packet `pkt` (the server sees zeros after them), with no fence before the flag unless
 * buffers were read since the last one.  Only as the first operation after open, on a port of
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
    uint32_t n = (nbytes + 5) / 6;
    uint64_t tag = rpc_head_tag_(port->seq_);
    /* Every index below is a constant once the loop is unrolled, so that on a GPU `w` stays in
     * registers: a trip through local memory after the port lock's acquire (which empties L1)
     * would be a read of L2. */
    uint64_t w[RPC_SHORT_WORDS];
    w[0] = rpc_short_meta_(tag, port->opcode_, (uint32_t)__builtin_ctzll(port->lane_mask_), n);
#if defined(__clang__)
#pragma unroll
#endif
    for (uint32_t k = 0; k < RPC_SHORT_DATA; k++) {
        /* Data word k: packet bytes [6k, 6k + 6), those from nbytes on as zeros.  Words past n
         * are stored only to round up to pairs (the GPU stores 16 bytes at a time): zero, which
         * they are already. */
        uint32_t bit = 48 * k, i = bit / 64, sh = bit % 64;
        uint64_t v = i < 8 ? pkt[i] >> sh : 0;
        if (sh > 16 && i + 1 < 8)
            v |= pkt[i + 1] << (64 - sh);
        uint32_t keep = nbytes > 6 * k ? nbytes - 6 * k : 0;
        v &= keep >= 6 ? 0xffffffffffffull : ((uint64_t)1 << (8 * keep)) - 1;
        w[1 + k] = k < n ? tag | v << 16 : 0;
    }
    rpc_req_store_(port->lane_mask_, p->headers[port->index_].req, w, n + 1);
    uint32_t flag = ((port->state_ & RPC_PS_OUT) ? 0u : 1u) | RPC_FLAG_SHORT;
    if (port->state_ & RPC_PS_READ)
        rpc_arch_flag_store(port->lane_mask_, rpc_out_flag_(p, port->index_), flag);
    else
        rpc_arch_flag_store_posted(port->lane_mask_, rpc_out_flag_(p, port->index_), flag);
    port->state_ ^= RPC_PS_OUT;
    port->state_ &= ~(uint32_t)(RPC_PS_OWNED | RPC_PS_READ | RPC_PS_RECEIVED | RPC_PS_FIRST);
}

/* Waits until the server has answered (its head arrived), runs use for each active lane (use
 * may be NULL: the buffers are not read, and rpc_port_head() has the head's payload). */
static inline void rpc_client_recv(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn use,
                                   void *arg)
{
    rpc_recv_(&client->process, port, use, arg);
}

/* Runs use for each active lane on the buffers of the last recv (no waiting, no hand-over):
 * for a caller that received with use == NULL and learnt from the head that it needs them. */
static inline void rpc_client_peek(struct rpc_client *client, rpc_port_t *port, rpc_lane_fn use,
                                   void *arg)
{
    rpc_port_check_(&client->process, port);
    RPC_ASSERT((port->state_ & (RPC_PS_OWNED | RPC_PS_RECEIVED | RPC_PS_STREAM)) ==
               (RPC_PS_OWNED | RPC_PS_RECEIVED));
    rpc_invoke_(&client->process, port, use, arg);
    port->state_ |= RPC_PS_READ;
}

/* Non-blocking send/recv: false means "still the server's turn", nothing was
 * done (retry later with the same port). */
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

/* Streams each active lane's byte string src[lane] of size[lane] bytes (SIMT:
 * src[0], size[0] of the calling lane); any length, 0 included.  One packet
 * per 64 bytes (the first carries the length and 56 bytes). */
static inline void rpc_client_send_n(struct rpc_client *client, rpc_port_t *port,
                                     const void *const *src, const uint64_t *size)
{
    rpc_send_n_(&client->process, port, src, size);
}

/* Receives a stream's first packet and writes each active lane's total length
 * to size_p[lane] (SIMT: size_p[0]).  The next call on the port must be
 * rpc_client_recv_n_data. */
static inline void rpc_client_recv_n_size(struct rpc_client *client, rpc_port_t *port,
                                          uint64_t *size_p)
{
    rpc_recv_n_size_(&client->process, port, size_p);
}

/* Receives the rest of the stream into dst[lane], writing at most cap[lane]
 * bytes (the rest of a longer stream is drained and dropped). */
static inline void rpc_client_recv_n_data(struct rpc_client *client, rpc_port_t *port,
                                          void *const *dst, const uint64_t *cap)
{
    rpc_recv_n_data_(&client->process, port, dst, cap);
}

/* rpc_client_recv_n_size then rpc_client_recv_n_data. */
static inline void rpc_client_recv_n(struct rpc_client *client, rpc_port_t *port, void *const *dst,
                                     const uint64_t *cap, uint64_t *size_p)
{
    rpc_recv_n_size_(&client->process, port, size_p);
    rpc_recv_n_data_(&client->process, port, dst, cap);
}

/* Releases the port for other client callers.  Right after a send this is a
 * fire-and-forget call: the port becomes usable again once the server has
 * closed its side. */
static inline void rpc_client_close(struct rpc_client *client, rpc_port_t *port)
{
    rpc_close_(&client->process, port);
}

/* ---- server -------------------------------------------------------------- */

/* As rpc_client_init, for the server side (its own lock bitmap). */
static inline tether_status_t rpc_server_init(struct rpc_server *server, void *region,
                                              uint32_t ports, uint32_t lanes, void *locks)
{
    tether_status_t status = rpc_process_check_args_(server, region, ports, lanes, locks);
    if (status != TETHER_OK)
        return status;
    rpc_process_init_(&server->process, region, ports, lanes, locks, 1);
    return TETHER_OK;
}

/* A port the server just took: the handle, from the header.  The header comes from the other
 * side: the lane mask is clipped to this region's lanes so a bad mask cannot index past the
 * port. */
static inline rpc_port_t rpc_server_opened_(struct rpc_process *p, uint32_t index, uint32_t out)
{
    const struct rpc_header *header = &p->headers[index];
    return rpc_port_make_(p, index, header->lane_mask & rpc_lanes_mask_(p), header->opcode, out,
                          header->seq, 0);
}

/* A hint, without locking: does a call wait on port `index` (c != s)?  Two relaxed loads. */
static inline bool rpc_server_waiting(struct rpc_server *server, uint32_t index)
{
    struct rpc_process *p = &server->process;
    return index < p->ports &&
           ((rpc_arch_flag_load(1, &p->cflags[index]) ^ rpc_arch_flag_load(1, &p->sflags[index])) &
            1u) != 0;
}

/* A sweep over at most `words` bitmap words (32 ports each; 0 or more than the ring: all of
 * it) for a port with a call waiting (c != s), starting where the previous sweep left off:
 * after a successful open, the port after it; after a bounded sweep that found nothing, the
 * word after the last one it looked at.  Round robin: consecutive sweeps visit every port in
 * turn, so every waiting port is found and none starves.  Per 32 ports one xor of the two
 * mailbox words and a load of the lock word; an idle full sweep costs 3 x ceil(ports/32)
 * relaxed loads.  On success locks the port, reads its header into the handle and returns true
 * with *port_p set; false if no call is waiting there.  The server must recv before it sends. */
static inline bool rpc_server_try_open_n(struct rpc_server *server, uint32_t words,
                                         rpc_port_t *port_p)
{
    struct rpc_process *p = &server->process;
    const uint64_t mask = 1; /* the server is a host thread or one lane */
    uint32_t start = rpc_arch_load(mask, &p->next);
    if (start >= p->ports)
        start = 0;
    bool all = words == 0 || words >= p->words;
    /* A full sweep looks at the first word twice: its ports from `start` on first, the ones
     * before `start` last. */
    uint32_t w = start / 32, count = all ? p->words + 1 : words;
    for (uint32_t i = 0; i < count; i++, w = (w + 1 == p->words) ? 0 : w + 1) {
        uint32_t ready = rpc_arch_diff32(mask, &p->cflags[32 * w], &p->sflags[32 * w]);
        if (ready != 0)
            ready &= ~rpc_arch_load(mask, &p->locks[w]);
        if (i == 0)
            ready &= ~0u << (start % 32);
        else if (i == p->words)
            ready &= ~(~0u << (start % 32));
        while (ready) {
            uint32_t bit = (uint32_t)__builtin_ctz(ready);
            uint32_t index = w * 32 + bit, out, seq, read;
            ready &= ready - 1;
            if (!rpc_try_take_(p, mask, index, &out, &seq, &read))
                continue;
            rpc_arch_store(mask, &p->next, index + 1 == p->ports ? 0 : index + 1);
            *port_p = rpc_server_opened_(p, index, out);
            return true;
        }
    }
    if (!all) /* w: the word after the last one looked at */
        rpc_arch_store(mask, &p->next, w * 32);
    return false;
}

/* A full sweep: rpc_server_try_open_n over the whole ring. */
static inline bool rpc_server_try_open(struct rpc_server *server, rpc_port_t *port_p)
{
    return rpc_server_try_open_n(server, 0, port_p);
}

/* As rpc_server_try_open for port `index` only: false when no call waits there (or another
 * server thread has it). */
static inline bool rpc_server_try_open_port(struct rpc_server *server, uint32_t index,
                                            rpc_port_t *port_p)
{
    struct rpc_process *p = &server->process;
    const uint64_t mask = 1;
    uint32_t out, seq, read;
    if (index >= p->ports || !rpc_server_waiting(server, index) ||
        !rpc_try_take_(p, mask, index, &out, &seq, &read))
        return false;
    *port_p = rpc_server_opened_(p, index, out);
    return true;
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

/* Ends the server's part of the call; hands the buffers back if it still
 * owns them. */
static inline void rpc_server_close(struct rpc_server *server, rpc_port_t *port)
{
    rpc_close_(&server->process, port);
}

/* ---- port accessors ------------------------------------------------------ */

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

/* Server: the payload (RPC_HEAD_BITS bits each) of the head that the next send stores. */
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
