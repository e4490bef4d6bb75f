/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_client.c - the device global `__tether_rpc_client` and the call layer: a
 * call's request and answer are messages cut into 64-byte packets over an rpc/rpc.h port
 * (framing: tether/rpc_opcodes.h, MESSAGES), and tether_rpc_call() for user opcodes.
 *
 * A call, on every target (dev_call_port): the lanes calling together (device_arch.h,
 * dev_call_lanes) with one opcode open the caller's home port, send the request (one packet of
 * one lane as a short request), and for an answer wait for the port's head, which holds a short
 * answer whole (inline answers), else read the answer's packets; then close.  SIMT targets:
 * every lane of the group runs this code with its own message.  Host-like targets (x86_64
 * offload): one thread per call, spread over all lanes of its port ("wide"), and a doorbell
 * that wakes the server at once.  What NVIDIA does its own way is in device_nvptx.h.
 */
#include "device_internal.h"

#if defined(RPC_ARCH_HOST)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

DEV_BEGIN

/* Filled in by the host (tether_rpc_server_client_bytes) before the first
 * kernel; zero (no server) until then. */
struct tether_rpc_device_client __tether_rpc_client;

/* The profiling build's hooks (device_internal.h): the library's own do nothing, a program that
 * times the call path defines them. */
#if defined(TETHER_RPC_PROFILE)
__attribute__((weak)) void tether_rpc_profile_mark(int phase)
{
    (void)phase;
}

__attribute__((weak)) void tether_rpc_profile_delay(uint64_t cycles)
{
    (void)cycles;
}

__attribute__((weak)) void tether_rpc_profile_poll(void)
{
}
#define DEV_PROF_(phase) tether_rpc_profile_mark(phase)
#else
#define DEV_PROF_(phase) ((void)0)
#endif

/* What a target may do its own way (NVIDIA: device_nvptx.h, where each is explained).  The
 * defaults: the client's fixed part read from the global itself, the first poll for an answer
 * at once. */
#if defined(RPC_ARCH_NVPTX)
#include "device_nvptx.h"
#else
static void dev_client_fixed(struct tether_rpc_device_const *cfg)
{
    __builtin_memcpy(cfg, &__tether_rpc_client, sizeof *cfg);
}

static DEV_INLINE void dev_keep_in_registers(uint64_t w[RPC_BUFFER_SIZE / 8])
{
    (void)w;
}

struct dev_poll {
    uint32_t unused;
};

static DEV_INLINE struct dev_poll dev_poll_begin(uint32_t home)
{
    (void)home;
    struct dev_poll poll = {0};
    return poll;
}

static DEV_INLINE void dev_poll_answer(struct rpc_client *client, rpc_port_t *port,
                                       struct dev_poll *poll)
{
    (void)poll;
    rpc_client_recv(client, port, NULL, (void *)0);
}

static DEV_INLINE void dev_poll_end(const struct dev_poll *poll, uint32_t home)
{
    (void)poll;
    (void)home;
}
#endif

bool tether_device_config(struct tether_rpc_device_const *cfg)
{
    dev_client_fixed(cfg);
    return cfg->magic == TETHER_RPC_CLIENT_MAGIC && cfg->version == TETHER_RPC_CLIENT_VERSION;
}

bool tether_device_attached(void)
{
    struct tether_rpc_device_const cfg;
    return tether_device_config(&cfg);
}

static void dev_copy(void *dst, const void *src, uint64_t n)
{
    if (n != 0)
        __builtin_memcpy(dst, src, n);
}

/* ---- packets ------------------------------------------------------------------------------ */

/* A lane buffer lives in host memory, a link round trip away from a GPU: move a packet with
 * four 16-byte accesses issued together.  Buffers are 64-byte aligned (RPC_ALIGN). */
#if RPC_ARCH_SIMT
typedef unsigned long long dev_v2u64 __attribute__((ext_vector_type(2)));
#endif

static void dev_packet_store(struct rpc_buffer *buffer, const uint64_t *pkt)
{
#if RPC_ARCH_SIMT
    dev_v2u64 *dst = (dev_v2u64 *)buffer->data;
    const dev_v2u64 *src = (const dev_v2u64 *)pkt;
    for (int i = 0; i < 4; i++)
        dst[i] = src[i];
#else
    __builtin_memcpy(buffer->data, pkt, RPC_BUFFER_SIZE);
#endif
}

static void dev_packet_load(uint64_t *pkt, const struct rpc_buffer *buffer)
{
#if RPC_ARCH_SIMT
    /* Plain loads, issued together (one round trip); the acquire fence after the flag read
     * keeps them from seeing an older packet. */
    const dev_v2u64 *src = (const dev_v2u64 *)buffer->data;
    dev_v2u64 *dst = (dev_v2u64 *)pkt;
    for (int i = 0; i < 4; i++)
        dst[i] = src[i];
#else
    __builtin_memcpy(pkt, buffer->data, RPC_BUFFER_SIZE);
#endif
}

/* ---- sending ------------------------------------------------------------------------------ */

/* Sender state of one message: the stream [u64 length][iov pieces]. */
struct dev_tx {
    const struct dev_iov *iov;
    uint32_t niov;
    uint32_t i;    /* current piece */
    uint64_t off;  /* offset in the current piece */
    uint64_t len;  /* payload bytes */
    uint64_t sent; /* stream bytes handed over so far */
};

/* A message that is one packet: [u64 length][bytes], the rest zero. */
static bool tx_one_packet(const struct dev_tx *tx)
{
    return tx->sent == 0 && tx->niov == 1 && tx->len <= RPC_STREAM_FIRST;
}

/* Builds that packet in registers (the loop is unrolled, so the packet words have constant
 * indices): no trip through local memory. */
static DEV_INLINE void tx_packet(const struct dev_tx *tx, uint64_t *w)
{
    const unsigned char *src = (const unsigned char *)tx->iov[0].base;
    w[0] = tx->len;
    for (uint32_t i = 1; i < RPC_BUFFER_SIZE / 8; i++)
        w[i] = 0;
#if defined(__clang__)
#pragma unroll
#endif
    for (uint32_t k = 0; k < RPC_STREAM_FIRST; k++) {
        if (k >= tx->len)
            break;
        w[1 + k / 8] |= (uint64_t)src[k] << (8 * (k % 8));
    }
}

/* Fills the next 64 bytes of the stream (called once per lane buffer, in
 * ascending lane order for wide calls).  With `strs`, a piece may be printf's %s records
 * (DEV_IOV_PRINTF_STRS), made by a call into device_stdio.c: only printf calls with strings
 * take that path (tx_fill_strs), so no other call pays for the call's registers. */
static DEV_INLINE void tx_fill_pieces(struct rpc_buffer *buffer, uint32_t lane, void *arg,
                                      bool strs)
{
    struct dev_tx *tx = (struct dev_tx *)arg;
    if (!strs && tx_one_packet(tx)) { /* printf's calls with strings have four pieces */
        _Alignas(16) uint64_t w[RPC_BUFFER_SIZE / 8];
        tx_packet(tx, w);
        dev_packet_store(buffer, w);
        tx->sent = RPC_BUFFER_SIZE;
        (void)lane;
        return;
    }
    _Alignas(16) uint64_t pkt[RPC_BUFFER_SIZE / 8] = {0};
    unsigned char *dst = (unsigned char *)pkt;
    uint64_t n = 0;
    (void)lane;
    if (tx->sent >= 8 + tx->len)
        return;
    if (tx->sent == 0) {
        dev_copy(dst, &tx->len, 8);
        n = 8;
    }
    while (n < RPC_BUFFER_SIZE && tx->i < tx->niov) {
        const struct dev_iov *v = &tx->iov[tx->i];
        uint64_t len = strs ? v->len & ~DEV_IOV_PRINTF_STRS : v->len;
        uint64_t k = len - tx->off;
        if (k > RPC_BUFFER_SIZE - n)
            k = RPC_BUFFER_SIZE - n;
        if (strs && (v->len & DEV_IOV_PRINTF_STRS))
            tether_device_printf_strs((void *)(uintptr_t)v->base, dst + n, k);
        else
            dev_copy(dst + n, (const unsigned char *)v->base + tx->off, k);
        n += k;
        tx->off += k;
        if (tx->off == len) {
            tx->i++;
            tx->off = 0;
        }
    }
    dev_packet_store(buffer, pkt);
    tx->sent += RPC_BUFFER_SIZE;
}

DEV_OUT_OF_LINE static void tx_fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    tx_fill_pieces(buffer, lane, arg, false);
}

DEV_OUT_OF_LINE static void tx_fill_strs(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    tx_fill_pieces(buffer, lane, arg, true);
}

/* ---- receiving ---------------------------------------------------------------------------- */

/* Receiver state of one answer: [u64 length][struct tether_rpc_answer][bytes]. */
struct dev_rx {
    unsigned char *dst;
    uint64_t cap;
    uint64_t len; /* answer length (header included), known after packet 0 */
    uint64_t got; /* stream bytes received */
    unsigned char head[16];
};

static void rx_use(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct dev_rx *rx = (struct dev_rx *)arg;
    (void)lane;
    if (rx->got > 0 && rx->got >= 8 + rx->len)
        return;
    _Alignas(16) uint64_t pkt[RPC_BUFFER_SIZE / 8];
    dev_packet_load(pkt, buffer);
    const unsigned char *src = (const unsigned char *)pkt;
    for (uint64_t k = 0; k < RPC_BUFFER_SIZE; k++) {
        uint64_t s = rx->got + k; /* stream offset */
        if (s < 16) {
            rx->head[s] = src[k];
            if (s == 7)
                dev_copy(&rx->len, rx->head, 8);
        } else if (s - 8 < rx->len) {
            uint64_t d = s - 16;
            if (d < rx->cap)
                rx->dst[d] = src[k];
        } else {
            break;
        }
    }
    rx->got += RPC_BUFFER_SIZE;
}

/* ---- doorbell ----------------------------------------------------------------------------- */

/* After a call's first packet: a host client (wide) bumps the server's doorbell and wakes the
 * thread if it sleeps; a device client, which cannot wake a thread, sets the doorbell word the
 * sleeping thread looks at (device_client.h). */
static void dev_ring(const struct tether_rpc_device_const *c, uint64_t mask)
{
    if (c->doorbell == 0)
        return;
#if defined(RPC_ARCH_HOST)
    if (c->flags & TETHER_RPC_CLIENT_WIDE) {
        struct tether_rpc_doorbell *bell = (struct tether_rpc_doorbell *)(uintptr_t)c->doorbell;
        __atomic_fetch_add(&bell->seq, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&bell->sleepers, __ATOMIC_SEQ_CST) != 0)
            syscall(SYS_futex, &bell->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        return;
    }
#endif
    rpc_arch_store(mask, (rpc_word_t *)(uintptr_t)c->doorbell, 1);
}

#if defined(RPC_ARCH_HOST)
/* How long a host client polls for its answer before it sleeps (TETHER_RPC_CLIENT_WAKES). */
#define DEV_HOST_POLL_NS 20000u

static uint64_t dev_host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A host client's wait for its answer's head where the server wakes sleepers: polls for
 * DEV_HOST_POLL_NS, then sleeps on the low half of the port's head[0] while it is clear (the
 * client cleared the head before its flip; the server stores it, then wakes the word if a client
 * counts itself in the doorbell's `waiters`: device_client.h). */
static void dev_host_await(const struct tether_rpc_device_const *c, struct rpc_client *client,
                           rpc_port_t *port)
{
    uint64_t until = 0;
    for (uint32_t k = 1;; k++) {
        if (rpc_client_try_recv(client, port, NULL, (void *)0))
            return;
        rpc_arch_pause();
        if (k % 64 == 0) {
            uint64_t now = dev_host_now_ns();
            if (until == 0)
                until = now + DEV_HOST_POLL_NS;
            else if (now >= until)
                break;
        }
    }
    struct tether_rpc_doorbell *bell = (struct tether_rpc_doorbell *)(uintptr_t)c->doorbell;
    rpc_head_word_t *head = &client->process.headers[rpc_port_index(port)].head[0];
    uint32_t *low = (uint32_t *)(void *)head + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    for (;;) {
        __atomic_fetch_add(&bell->waiters, 1, __ATOMIC_ACQ_REL);
        bool clear = (uint32_t)atomic_load_explicit(head, memory_order_acquire) == 0;
        bool done = rpc_client_try_recv(client, port, NULL, (void *)0);
        if (!done && clear)
            syscall(SYS_futex, low, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        else if (!done)
            sched_yield(); /* the head is being stored */
        __atomic_fetch_sub(&bell->waiters, 1, __ATOMIC_RELEASE);
        if (done || rpc_client_try_recv(client, port, NULL, (void *)0))
            return;
    }
}
#endif

/* ---- calls -------------------------------------------------------------------------------- */

/*
 * One call on the caller's home port (dev_caller_id() % ports), waiting while the port is busy.
 * One caller's calls thus share one port, and a port carries one call at a time: a call starts
 * only after the server finished (and printed) the previous one, so the output of
 * fire-and-forget calls keeps the caller's order.  Opening the home port directly, without a
 * sweep, saves a GPU two reads of host memory per call.  Returns what tether_rpc_call returns:
 * the answer's length, or -status when the server answered with an error (0 for a call without
 * answer).
 */
static DEV_INLINE int64_t dev_call_port(uint32_t opcode, uint64_t mask, const struct dev_iov *iov,
                                        uint32_t niov, bool answer, void *dst, uint64_t cap,
                                        bool strs, bool short_only)
{
    struct tether_rpc_device_const cfg;
    const struct tether_rpc_device_const *c = &cfg;
    dev_client_fixed(&cfg);
    struct dev_tx tx = {iov, niov, 0, 0, 0, 0};
    for (uint32_t k = 0; k < niov; k++)
        tx.len += strs ? iov[k].len & ~DEV_IOV_PRINTF_STRS : iov[k].len;

    /* The client object (pointers and sizes, 64 bytes) in registers for the whole call.  Its
     * `server` field is 0; said here as a constant, it lets the compiler drop every server-side
     * branch of rpc.h from the call's code. */
    struct rpc_client client = c->client;
    client.process.server = 0;
    uint32_t ports = client.process.ports;
    uint32_t id = dev_broadcast(mask, dev_caller_id());
    uint32_t home = id < ports ? id : id % ports; /* a division only where it is needed */

    /* One lane, one packet: a short request (rpc.h: tagged words, no fence before the flag),
     * its words built before the port's lock. */
    bool one = short_only || ((mask & (mask - 1)) == 0 && tx_one_packet(&tx));
    _Alignas(16) uint64_t w[RPC_BUFFER_SIZE / 8];
    if (one) {
        tx_packet(&tx, w);
        dev_keep_in_registers(w);
    }
    struct dev_poll poll = dev_poll_begin(home);
    DEV_PROF_(0);
    uint32_t spins = 0;
    rpc_port_t port;
    while (!rpc_client_try_open_port(&client, opcode, mask, home, &port))
        rpc_arch_backoff(&spins);
    DEV_PROF_(1);
    if (one) {
        rpc_client_send_short(&client, &port, w, (uint32_t)(8 + tx.len));
        tx.sent = RPC_BUFFER_SIZE;
    } else {
        rpc_client_send(&client, &port, strs ? tx_fill_strs : tx_fill, &tx);
    }
    dev_ring(c, mask);
    while (!one && rpc_arch_any(mask, tx.sent < 8 + tx.len)) /* a short request is all sent */
        rpc_client_send(&client, &port, strs ? tx_fill_strs : tx_fill, &tx);
    DEV_PROF_(2);
    if (!answer) {
        rpc_client_close(&client, &port);
        DEV_PROF_(4);
        return 0;
    }

    /* The head tells that the answer came and, for a short one, holds all of it. */
#if defined(RPC_ARCH_HOST)
    if (c->flags & TETHER_RPC_CLIENT_WAKES)
        dev_host_await(c, &client, &port);
    else
#endif
        dev_poll_answer(&client, &port, &poll);
    DEV_PROF_(5);
    uint64_t head[2] = {rpc_port_head(&port, 0), rpc_port_head(&port, 1)};
    if (tether_rpc_inline_is(head)) {
        /* All of it in the head: unlock first, so that the unlock's release has no store of the
         * answer to wait for. */
        rpc_client_close(&client, &port);
        DEV_PROF_(4);
        uint32_t status = TETHER_RPC_CALL_ERROR;
        uint64_t len = 0;
        tether_rpc_inline_unpack(head, &status, &len, (unsigned char *)dst, cap);
        DEV_PROF_(3);
        dev_poll_end(&poll, home);
        return status == TETHER_RPC_CALL_OK ? (int64_t)len : -(int64_t)status;
    }
    struct dev_rx rx;
    rx.dst = (unsigned char *)dst;
    rx.cap = cap;
    rx.len = 0;
    rx.got = 0;
    rpc_client_peek(&client, &port, rx_use, &rx);
    while (rpc_arch_any(mask, rx.got < 8 + rx.len))
        rpc_client_recv(&client, &port, rx_use, &rx);
    struct tether_rpc_answer ans = {TETHER_RPC_CALL_ERROR, 0};
    if (rx.len >= sizeof ans)
        dev_copy(&ans, rx.head + 8, sizeof ans);
    DEV_PROF_(3);
    rpc_client_close(&client, &port);
    DEV_PROF_(4);
    dev_poll_end(&poll, home);
    return ans.status == TETHER_RPC_CALL_OK ? (int64_t)(rx.len - sizeof ans) : -(int64_t)ans.status;
}

/* The lanes that make a call together (device_arch.h), and on the host a wide call: the one
 * caller's message runs through all lanes' buffers. */
static DEV_INLINE uint64_t dev_call_mask(const struct tether_rpc_device_const *c, uint32_t *opcode)
{
#if RPC_ARCH_SIMT
    (void)c;
    (void)opcode;
    return dev_call_lanes();
#else
    if (!(c->flags & TETHER_RPC_CLIENT_WIDE))
        return 1;
    uint32_t lanes = c->client.process.lanes;
    *opcode |= TETHER_RPC_WIDE;
    return lanes >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << lanes) - 1);
#endif
}

/* The lanes of `mask` that call with the same opcode as this one: lanes calling together with
 * different opcodes take one port per opcode.  A call of one lane (NVIDIA's, known to the
 * compiler) is its own group. */
static DEV_INLINE uint64_t dev_opcode_group(uint64_t mask, uint32_t opcode)
{
    if ((mask & (mask - 1)) == 0)
        return mask;
    for (;;) {
        uint32_t lead = dev_broadcast(mask, opcode);
        uint64_t group = dev_ballot(mask, opcode == lead);
        if (opcode == lead)
            return group;
        mask &= ~group;
    }
}

/*
 * The two shapes of a call, each a function of its own on GPUs (DEV_OUT_OF_LINE) that reads the
 * client itself (dev_client_fixed): a kernel that may call gets the registers of the larger of
 * the two, not of both inlined into one.  A call whose request is one packet of one lane (most
 * calls) calls no function: after the port's lock, whose acquire empties L1 on NVIDIA, every
 * read of memory is a trip to L2, the stack's too, and a function that has called another
 * reloads registers from the stack before it returns.
 */
DEV_OUT_OF_LINE static int64_t dev_call_short(uint32_t opcode, uint64_t mask,
                                              const struct dev_iov *iov, bool answer, void *dst,
                                              uint64_t cap)
{
    return dev_call_port(opcode, mask, iov, 1, answer, dst, cap, false, true);
}

DEV_OUT_OF_LINE static int64_t dev_call_long(uint32_t opcode, uint64_t mask,
                                             const struct dev_iov *iov, uint32_t niov, bool answer,
                                             void *dst, uint64_t cap, bool strs)
{
    return dev_call_port(opcode, mask, iov, niov, answer, dst, cap, strs, false);
}

int64_t tether_device_call(uint32_t opcode, const struct dev_iov *iov, uint32_t niov, bool answer,
                           void *dst, uint64_t cap)
{
    struct tether_rpc_device_const cfg;
    if (!tether_device_config(&cfg))
        return -(int64_t)TETHER_RPC_CALL_NO_SERVER;
    DEV_PROF_(8);
    uint64_t mask = dev_opcode_group(dev_call_mask(&cfg, &opcode), opcode);
    if ((mask & (mask - 1)) == 0 && niov == 1 && iov[0].len <= RPC_STREAM_FIRST)
        return dev_call_short(opcode, mask, iov, answer, dst, cap);
    return dev_call_long(opcode, mask, iov, niov, answer, dst, cap, false);
}

/* tether_device_call for PRINTF with a DEV_IOV_PRINTF_STRS piece (every lane here prints: one
 * opcode): the call into device_stdio.c that makes the %s records stays out of the other
 * calls' code. */
bool tether_device_call_printf(const struct dev_iov *iov, uint32_t niov)
{
    struct tether_rpc_device_const cfg;
    if (!tether_device_config(&cfg))
        return false;
    uint32_t opcode = TETHER_RPC_OP_PRINTF;
    uint64_t mask = dev_call_mask(&cfg, &opcode);
    dev_call_long(opcode, mask, iov, niov, false, (void *)0, 0, true);
    return true;
}

int tether_rpc_attached(void)
{
    return tether_device_attached();
}

int64_t tether_rpc_call(uint32_t opcode, const void *in, uint64_t in_size, void *out,
                        uint64_t out_size)
{
    if (opcode < TETHER_RPC_OP_USER_FIRST || opcode > TETHER_RPC_OP_USER_LAST)
        return -(int64_t)TETHER_RPC_CALL_UNHANDLED;
    struct dev_iov iov = {in, in == (const void *)0 ? 0 : in_size};
    return tether_device_call(opcode, &iov, 1, true, out, out == (void *)0 ? 0 : out_size);
}

DEV_END
