/*
 * rpc/device/device_client.c - the device global `__tether_rpc_client` and
 * the call layer: messages cut into 64-byte packets over rpc/rpc.h ports
 * (framing: tether/rpc_opcodes.h, MESSAGES), and tether_rpc_call() for user
 * opcodes.
 *
 * SIMT targets: every lane of the calling group runs this code with its own
 * message; lanes that call with different opcodes at the same time are split
 * into one port per opcode.  Host-like targets (x86_64 offload, host tests):
 * one thread per call, spread over all lanes of its port ("wide"), and a
 * doorbell that wakes the server at once.
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

#if defined(RPC_ARCH_NVPTX)
/* Its first bytes again, in constant memory (struct tether_rpc_device_const). */
__attribute__((address_space(4))) struct tether_rpc_device_const __tether_rpc_client_const;
#endif

bool tether_device_config(struct tether_rpc_device_const *cfg)
{
#if defined(RPC_ARCH_NVPTX)
    *cfg = *(const __attribute__((
        address_space(4))) struct tether_rpc_device_const *)&__tether_rpc_client_const;
#else
    __builtin_memcpy(cfg, &__tether_rpc_client, sizeof *cfg);
#endif
    return cfg->magic == TETHER_RPC_CLIENT_MAGIC && cfg->version == TETHER_RPC_CLIENT_VERSION;
}

bool tether_device_attached(void)
{
#if defined(RPC_ARCH_NVPTX)
    const __attribute__((address_space(4))) struct tether_rpc_device_const *c =
        &__tether_rpc_client_const;
#else
    const struct tether_rpc_device_client *c = &__tether_rpc_client;
#endif
    return c->magic == TETHER_RPC_CLIENT_MAGIC && c->version == TETHER_RPC_CLIENT_VERSION;
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
    if (tx_one_packet(tx)) {
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

static void tx_fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    tx_fill_pieces(buffer, lane, arg, false);
}

static void tx_fill_strs(struct rpc_buffer *buffer, uint32_t lane, void *arg)
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

/* Phase marks for test/cuda/probe/rpc_phases.c, which compiles this library into itself with
 * TETHER_DEVICE_PROFILE and defines the hook; nothing in normal builds. */
#if defined(TETHER_DEVICE_PROFILE)
void tether_device_profile_mark(int phase);
void tether_device_profile_delay(uint64_t cycles);
#define DEV_PROF_(phase) tether_device_profile_mark(phase)
#else
#define DEV_PROF_(phase) ((void)0)
#endif

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

static void dev_ring(const struct tether_rpc_device_const *c)
{
#if defined(RPC_ARCH_HOST)
    if (c->doorbell == 0)
        return;
    struct tether_rpc_doorbell *bell = (struct tether_rpc_doorbell *)(uintptr_t)c->doorbell;
    __atomic_fetch_add(&bell->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&bell->sleepers, __ATOMIC_SEQ_CST) != 0)
        syscall(SYS_futex, &bell->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)c;
#endif
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
 * Opens the caller's home port, waiting while it is busy.  One caller's calls
 * thus share one port, and a port carries one call at a time: a call starts
 * only after the server finished (and printed) the previous one, so the
 * output of fire-and-forget calls keeps the caller's order.
 *
 * NVIDIA: in a grid of at most `ports` threads, every thread is alone on its home port, so it
 * names itself to rpc.h with its grid's launch number (%gridid, low 32 bits; 0 gives no key), and
 * its calls that read no buffers close without a fence (rpc.h, L3: ~0.24 us less per call).  A
 * thread of another grid that opens the port next reads the mailbox instead of trusting the
 * state word.  Two threads would be mistaken for one only if grids 2^32 launches apart ran at
 * the same time.  In larger grids, where threads share home ports, every close is fenced.  In a
 * grid of at most TETHER_RPC_NEAR_SPAN threads, where the plugin timed the L2 (CUDA), the home
 * port is the one of the caller's id in its SM's near window, whose lock is about 100-200
 * cycles faster (device_client.h, near windows); still one thread per port.
 */
static DEV_INLINE rpc_port_t dev_open_home(const struct tether_rpc_device_const *c,
                                           struct rpc_client *client, uint32_t opcode,
                                           uint64_t mask)
{
    uint32_t id = dev_broadcast(mask, dev_caller_id()), ports = client->process.ports;
    uint32_t home = id < ports ? id : id % ports; /* a division only where it is needed */
    uint32_t key = 0;
#if defined(RPC_ARCH_NVPTX)
    uint64_t threads = (uint64_t)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
    if (threads <= ports) {
        uint64_t grid;
        __asm__("mov.u64 %0, %%gridid;" : "=l"(grid));
        key = (uint32_t)grid;
        /* A small grid: the port whose lock is in the L2 partition near this SM
         * (device_client.h, near windows). */
        if ((c->flags & TETHER_RPC_CLIENT_NEAR) != 0 && threads <= TETHER_RPC_NEAR_SPAN) {
            /* The table word straight from constant memory: indexed at run time, a copy of it
             * in the caller's struct would put the whole struct in local memory (0.75 us more
             * per call on an H200). */
            uint32_t sm = __nvvm_read_ptx_sreg_smid();
            uint32_t window =
                sm < TETHER_RPC_NEAR_SMS
                    ? tether_rpc_near_pick(__tether_rpc_client_const.near[sm / 32], sm)
                    : 0;
            home = tether_rpc_near_home(c->flags, window, id);
        }
    }
#else
    (void)c;
#endif
    uint32_t spins = 0;
    rpc_port_t port;
    while (!rpc_client_try_open_keyed(client, opcode, mask, home, key, &port))
        rpc_arch_backoff(&spins);
    return port;
}

/*
 * Waits for the answer's head.  NVIDIA: one poll of host memory is a round trip over the link
 * (about 1.3 us on an H200), and an answer that lands in host memory just after a poll has read
 * it is seen only one round trip later, so the first poll is issued after a delay learnt per
 * port (device_wait.h: why and how) and kept in the port's user bits.  What the call does after
 * a first poll that found the answer is worked out during that delay: the delay rule's next
 * step (dev_wait_plan) and the word that closes the port (*close_p, *fenced_p, for
 * rpc_client_close_after_head; a thread's instructions after the answer are on the call's path,
 * those before the poll are not).  Elsewhere: rpc_client_recv.
 */
static DEV_INLINE void dev_await_head(const struct tether_rpc_device_const *c,
                                      struct rpc_client *client, rpc_port_t *port,
                                      uint64_t *close_p, bool *fenced_p)
{
    (void)c; /* host clients only */
#if defined(RPC_ARCH_NVPTX)
    uint64_t sent = __nvvm_read_ptx_sreg_clock64();
    uint32_t user = rpc_port_user(port);
    bool explore = dev_wait_explores(rpc_port_seq(port));
    uint64_t wait = dev_wait_cycles(user, explore);
#if defined(DEV_FIXED_WAIT) /* test/cuda/probe/rpc_phases variants: no learning */
    wait = (uint64_t)DEV_FIXED_WAIT * DEV_WAIT_UNIT;
#endif
    struct dev_wait_plan plan = dev_wait_plan(user, explore);
    uint64_t close = rpc_client_close_word_after_head(port, fenced_p);
    /* Computed here, not after the poll where they are used. */
    __asm__ volatile(""
                     : "+r"(plan.slow_after), "+r"(plan.slow_bits), "+r"(plan.hit_units),
                       "+r"(plan.fast_cap), "+l"(close));
    *close_p = close;
    dev_spin_since(sent, wait);
#if defined(TETHER_DEVICE_PROFILE)
    tether_device_profile_delay(wait);
#endif
    uint64_t t0 = __nvvm_read_ptx_sreg_clock64();
    bool hit = rpc_client_try_recv(client, port, NULL, (void *)0);
    uint64_t took = __nvvm_read_ptx_sreg_clock64() - t0;
    if (hit) {
        rpc_port_set_user(port, dev_wait_hit(&plan, took));
    } else {
        rpc_client_recv(client, port, NULL, (void *)0);
        rpc_port_set_user(port, dev_wait_next(user, explore, false, took));
    }
#else
#if defined(RPC_ARCH_HOST)
    if (c->flags & TETHER_RPC_CLIENT_WAKES)
        dev_host_await(c, client, port);
    else
#endif
        rpc_client_recv(client, port, NULL, (void *)0);
    *close_p = rpc_client_close_word_after_head(port, fenced_p); /* after the recv: the same */
#endif
}

static DEV_INLINE void dev_call_port(const struct tether_rpc_device_const *c, uint32_t opcode,
                                     uint64_t mask, const struct dev_iov *iov, uint32_t niov,
                                     bool answer, void *dst, uint64_t cap, uint64_t *len_p,
                                     uint32_t *status_p, bool strs)
{
    struct dev_tx tx = {iov, niov, 0, 0, 0, 0};
    for (uint32_t k = 0; k < niov; k++)
        tx.len += strs ? iov[k].len & ~DEV_IOV_PRINTF_STRS : iov[k].len;

    /* The client object (pointers and sizes, 64 bytes) in registers for the whole call.  Its
     * `server` field is 0; said here as a constant, it lets the compiler drop every server-side
     * branch of rpc.h from the call's code. */
    struct rpc_client client = c->client;
    client.process.server = 0;
#if defined(RPC_ARCH_NVPTX)
    /* One thread, one packet: a short request (tagged words, no fence before the flag), its
     * words built before the port's lock, whose acquire empties L1 (the caller's bytes, often
     * on its stack, would then be read from L2). */
    bool one = tx_one_packet(&tx);
    _Alignas(16) uint64_t w[RPC_BUFFER_SIZE / 8];
    if (one) {
        tx_packet(&tx, w);
        /* The words into registers here: left to the compiler, their loads of the caller's
         * bytes sink past the lock, and every one is then a read of L2. */
#pragma unroll
        for (uint32_t k = 0; k < RPC_BUFFER_SIZE / 8; k++)
            __asm__ volatile("" : "+l"(w[k]));
    }
#endif
    DEV_PROF_(0);
    rpc_port_t port = dev_open_home(c, &client, opcode, mask);
    DEV_PROF_(1);
#if defined(RPC_ARCH_NVPTX)
    if (one) {
        rpc_client_send_short(&client, &port, w, (uint32_t)(8 + tx.len));
        tx.sent = RPC_BUFFER_SIZE;
    }
#endif
    bool first = true;
    while (rpc_arch_any(mask, tx.sent < 8 + tx.len)) {
        rpc_client_send(&client, &port, strs ? tx_fill_strs : tx_fill, &tx);
        if (first) {
            dev_ring(c);
            first = false;
        }
    }
    DEV_PROF_(2);

    if (answer) {
        /* The head tells that the answer came and, for a short one, holds all of it. */
        uint64_t close;
        bool fenced;
        dev_await_head(c, &client, &port, &close, &fenced);
        DEV_PROF_(5);
        uint64_t head[2] = {rpc_port_head(&port, 0), rpc_port_head(&port, 1)};
        if (tether_rpc_inline_is(head)) {
            /* All of it in the head: unlock first, so that the unlock's release has no store
             * of the answer to wait for. */
            rpc_client_close_after_head(&client, &port, close, fenced);
            DEV_PROF_(4);
            tether_rpc_inline_unpack(head, status_p, len_p, (unsigned char *)dst, cap);
            DEV_PROF_(3);
            return;
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
        *status_p = ans.status;
        *len_p = rx.len >= sizeof ans ? rx.len - sizeof ans : 0;
        DEV_PROF_(3);
    }
    rpc_client_close(&client, &port);
    DEV_PROF_(4);
}

bool tether_device_call(uint32_t opcode, const struct dev_iov *iov, uint32_t niov, bool answer,
                        void *dst, uint64_t cap, uint64_t *len_p, uint32_t *status_p)
{
    struct tether_rpc_device_const cfg;
    if (!tether_device_config(&cfg))
        return false;
    DEV_PROF_(8);
    const struct tether_rpc_device_const *c = &cfg;
#if defined(RPC_ARCH_NVPTX)
    /* Each thread makes its own call (a one-lane port).  Under independent
     * thread scheduling the lanes that __activemask() reports need not meet
     * again at the next warp-synchronous step, and a mask that the lanes do
     * not agree on makes shfl/vote/bar.warp.sync undefined (seen on an H200:
     * calls returned garbage or hung).  A one-lane mask is always agreed on. */
    uint64_t mask = (uint64_t)1 << rpc_arch_lane_id();
    dev_call_port(c, opcode, mask, iov, niov, answer, dst, cap, len_p, status_p, false);
    return true;
#elif RPC_ARCH_SIMT
    /* AMD: the active lanes of a wave run in lockstep.  Lanes calling together
     * with different opcodes take one port per opcode. */
    uint64_t remaining = dev_active_mask();
    for (;;) {
        uint32_t lead = dev_broadcast(remaining, opcode);
        uint64_t group = dev_ballot(remaining, opcode == lead);
        if (opcode == lead) {
            dev_call_port(c, opcode, group, iov, niov, answer, dst, cap, len_p, status_p, false);
            return true;
        }
        remaining &= ~group;
    }
#else
    uint64_t mask = 1;
    if (c->flags & TETHER_RPC_CLIENT_WIDE) {
        uint32_t lanes = c->client.process.lanes;
        mask = lanes >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << lanes) - 1);
        opcode |= TETHER_RPC_WIDE;
    }
    dev_call_port(c, opcode, mask, iov, niov, answer, dst, cap, len_p, status_p, false);
    return true;
#endif
}

/* tether_device_call for PRINTF with a DEV_IOV_PRINTF_STRS piece.  Its own copy of the lane
 * choice, so that the call into device_stdio.c stays out of tether_device_call's code; out of
 * line on GPUs, so that its registers do not count against a kernel's ordinary printf. */
#if RPC_ARCH_SIMT
__attribute__((noinline))
#endif
bool tether_device_call_printf(const struct dev_iov *iov, uint32_t niov)
{
    struct tether_rpc_device_const cfg;
    if (!tether_device_config(&cfg))
        return false;
    uint32_t opcode = TETHER_RPC_OP_PRINTF;
#if defined(RPC_ARCH_NVPTX)
    uint64_t mask = (uint64_t)1 << rpc_arch_lane_id(); /* as tether_device_call */
#elif RPC_ARCH_SIMT
    uint64_t mask = dev_active_mask(); /* every lane here prints: one opcode */
#else
    uint64_t mask = 1;
    if (cfg.flags & TETHER_RPC_CLIENT_WIDE) {
        uint32_t lanes = cfg.client.process.lanes;
        mask = lanes >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << lanes) - 1);
        opcode |= TETHER_RPC_WIDE;
    }
#endif
    dev_call_port(&cfg, opcode, mask, iov, niov, false, (void *)0, 0, (uint64_t *)0, (uint32_t *)0,
                  true);
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
    uint64_t len = 0;
    uint32_t status = TETHER_RPC_CALL_ERROR;
    if (!tether_device_call(opcode, &iov, 1, true, out, out == (void *)0 ? 0 : out_size, &len,
                            &status))
        return -(int64_t)TETHER_RPC_CALL_NO_SERVER;
    if (status != TETHER_RPC_CALL_OK)
        return -(int64_t)status;
    return (int64_t)len;
}

DEV_END
