/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/rpc_arch.h - the architecture layer under rpc/rpc.h.
 *
 * Role: everything rpc.h needs from a processor, and nothing else: the types
 * of a shared 32-bit word, of an outbox flag byte and of an answer-head word;
 * relaxed loads, an acquire fence, a release store of a flag (the mailbox
 * flip), 32 flags of two outboxes compared at once (the scans), acquire
 * loads and release stores of a head; the port locks of each side (the
 * server's lock bitmap of 32-bit words, the client's 64-bit state word per
 * port); a pause; and the
 * few warp operations a SIMT target needs so that a whole warp can drive one
 * port.  Three implementations:
 *
 *   host   (x86-64/aarch64 CPU code, also the x86_64 offload "device"):
 *          C11 <stdatomic.h> (SSE2 for the flag compares).  One thread plays
 *          a whole warp: RPC_ARCH_SIMT 0, every warp operation is the identity.
 *   nvptx  (clang, __NVPTX__): volatile loads/stores, fence.acq_rel.sys,
 *          ld.acquire.sys / atom.acquire.gpu / st.release.gpu (inline PTX;
 *          clang-16's NVPTX backend cannot select an atomic store to global
 *          memory, see docs/rpc-protocol.md); warp operations are the *_sync
 *          builtins.
 *   amdgcn (clang, __AMDGPU__): __atomic_* builtins (system scope on amdgcn)
 *          and __builtin_amdgcn_fence; readfirstlane / ballot for the wave.
 *
 * Invariants every caller may assume:
 *   - `mask` arguments are the lanes executing the call together (on the host
 *     any non-zero value, ignored); on a SIMT target all lanes in `mask` call
 *     the function convergently and get the same result back.
 *   - rpc_arch_load(), rpc_arch_flag_load(), rpc_arch_diff32(),
 *     rpc_arch_head_load() and rpc_arch_broadcast() return the same value to
 *     every lane in `mask` (the first lane's).
 *   - A flag byte is written only through rpc_arch_flag_store() or
 *     rpc_arch_flag_store_posted(), by the one agent of its side that holds
 *     the port, so no read-modify-write is needed; the other side only reads
 *     it.  Bit 0 is the outbox bit (the only bit rpc_arch_diff32() compares);
 *     bit 1 marks a short request.
 *   - Request words (rpc_arch_req_*) are single-copy atomic 64-bit words,
 *     stored by a client with no ordering among them, read and zeroed by the
 *     server.
 *
 * Freestanding: <stdint.h>, <stdbool.h> and, on the host, <stdatomic.h>.
 */
#ifndef TETHER_RPC_ARCH_H
#define TETHER_RPC_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__NVPTX__)
#define RPC_ARCH_NVPTX 1
#define RPC_ARCH_SIMT 1
#elif defined(__AMDGPU__)
#define RPC_ARCH_AMDGCN 1
#define RPC_ARCH_SIMT 1
#else
#define RPC_ARCH_HOST 1
#define RPC_ARCH_SIMT 0
#endif

/* ThreadSanitizer does not model atomic_thread_fence (gcc even warns about it
 * with -Wtsan).  Under TSan the host layer expresses "acquire fence after the
 * relaxed load that saw ownership" as an acquire re-load of the same word,
 * which TSan does understand; see rpc_arch_acquire_flag(). */
#if defined(__SANITIZE_THREAD__)
#define RPC_ARCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RPC_ARCH_TSAN 1
#endif
#endif

/* Words of a short request in a port header (rpc.h, I4 and S): a meta word and eleven
 * data words. */
#define RPC_SHORT_WORDS 12u

/* A host waiter in rpc_arch_backoff() spins RPC_HOST_SPINS times, then yields its CPU
 * RPC_HOST_YIELDS times, then sleeps 1, 2, 4 ... 1024 us between looks (asked: the thread's
 * timer slack, 50 us unless set, lengthens the short ones): a long wait (a port another thread
 * holds through a slow call, a peer that is descheduled) costs little CPU. */
#ifndef RPC_HOST_SPINS
#define RPC_HOST_SPINS 256
#endif
#define RPC_HOST_YIELDS 64u
#define RPC_HOST_SLEEP_STEPS 10u

/* ------------------------------------------------------------------------ */
#if defined(RPC_ARCH_HOST)

#include <stdatomic.h>
#if defined(__SSE2__) && !defined(RPC_ARCH_TSAN)
#include <emmintrin.h>
#endif

/* A 32-bit word shared with the other side or with this side's other agents. */
typedef _Atomic uint32_t rpc_word_t;

/* Declared here, not through their headers: this header is also compiled as strict ISO C and
 * inside offload (declare target) code, where <time.h> brings in variables of its own. */
extern int sched_yield(void);
extern int usleep(unsigned int usec);

static inline void rpc_arch_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/* Waiting-loop step: a short spin, then give the CPU away (oversubscribed hosts: 8 client
 * threads on 2 cores must let the server run), then sleep ever longer (see RPC_HOST_SPINS). */
static inline void rpc_arch_backoff(uint32_t *spins)
{
    uint32_t n = *spins;
    if (n < RPC_HOST_SPINS) {
        rpc_arch_pause();
    } else if (n < RPC_HOST_SPINS + RPC_HOST_YIELDS) {
        sched_yield();
    } else {
        uint32_t k = n - RPC_HOST_SPINS - RPC_HOST_YIELDS;
        usleep(1u << (k < RPC_HOST_SLEEP_STEPS ? k : RPC_HOST_SLEEP_STEPS));
    }
    if (n < RPC_HOST_SPINS + RPC_HOST_YIELDS + RPC_HOST_SLEEP_STEPS)
        *spins = n + 1;
}

static inline void rpc_arch_init(rpc_word_t *word, uint32_t value)
{
    atomic_init(word, value);
}

static inline uint32_t rpc_arch_lane_id(void)
{
    return 0;
}

static inline bool rpc_arch_is_first_lane(uint64_t mask)
{
    (void)mask;
    return true;
}

static inline void rpc_arch_sync(uint64_t mask)
{
    (void)mask;
}

/* True when `pred` holds on any lane of `mask`. */
static inline bool rpc_arch_any(uint64_t mask, bool pred)
{
    (void)mask;
    return pred;
}

/* The first lane's `value`, returned to every lane of `mask`. */
static inline uint32_t rpc_arch_broadcast(uint64_t mask, uint32_t value)
{
    (void)mask;
    return value;
}

/* Relaxed load; the value is uniform over `mask`. */
static inline uint32_t rpc_arch_load(uint64_t mask, rpc_word_t *word)
{
    (void)mask;
    return atomic_load_explicit(word, memory_order_relaxed);
}

/* Relaxed store (used only for the server's rotating scan start). */
static inline void rpc_arch_store(uint64_t mask, rpc_word_t *word, uint32_t value)
{
    (void)mask;
    atomic_store_explicit(word, value, memory_order_relaxed);
}

/* Clears `bit` of this side's lock word with release (the server's lock bitmap). */
static inline void rpc_arch_unlock(uint64_t mask, rpc_word_t *word, uint32_t bit)
{
    (void)mask;
    atomic_fetch_and_explicit(word, ~bit, memory_order_release);
}

/* Sets `bit` of a lock word with acquire and returns the old word in *old_p, uniform over
 * `mask`; true if this caller set it. */
static inline bool rpc_arch_lock_word(uint64_t mask, rpc_word_t *word, uint32_t bit,
                                      uint32_t *old_p)
{
    (void)mask;
    *old_p = atomic_fetch_or_explicit(word, bit, memory_order_acquire);
    return (*old_p & bit) == 0;
}

/* A client port's state word: its lock bit and what the holder leaves for the next one
 * (rpc.h, RPC_CS_*). */
typedef _Atomic uint64_t rpc_state_t;

/* Relaxed load of a state word (checks only). */
static inline uint64_t rpc_arch_load_state(uint64_t mask, rpc_state_t *word)
{
    (void)mask;
    return atomic_load_explicit(word, memory_order_relaxed);
}

/* As rpc_arch_lock_word, for a state word. */
static inline bool rpc_arch_lock_state(uint64_t mask, rpc_state_t *word, uint64_t bit,
                                       uint64_t *old_p)
{
    (void)mask;
    *old_p = atomic_fetch_or_explicit(word, bit, memory_order_acquire);
    return (*old_p & bit) == 0;
}

/* The holder stores the state word's next value (lock bit clear) with release. */
static inline void rpc_arch_unlock_state(uint64_t mask, rpc_state_t *word, uint64_t value)
{
    (void)mask;
    atomic_store_explicit(word, value, memory_order_release);
}

/* A port's client outbox flag: one byte (0 or 1), written by the port's holder only. */
typedef _Atomic uint8_t rpc_flag_t;

static inline uint32_t rpc_arch_flag_load(uint64_t mask, rpc_flag_t *flag)
{
    (void)mask;
    return atomic_load_explicit(flag, memory_order_relaxed);
}

/* Acquire fence after a relaxed load of the other side's `flag` showed that this side owns the
 * port: orders every later buffer access after the other side's release store.  (Under
 * ThreadSanitizer, which does not model fences: an acquire re-load of the same flag.) */
static inline void rpc_arch_acquire_flag(uint64_t mask, rpc_flag_t *flag)
{
    (void)mask;
#if defined(RPC_ARCH_TSAN)
    (void)atomic_load_explicit(flag, memory_order_acquire);
#else
    (void)flag;
    atomic_thread_fence(memory_order_acquire);
#endif
}

/* Release store of a flag: every earlier buffer access happens before the other side sees it. */
static inline void rpc_arch_flag_store(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    (void)mask;
    atomic_store_explicit(flag, (uint8_t)value, memory_order_release);
}

/* Relaxed loads of 32 flags of each outbox (32-aligned): bit i set where flag i differs.  SSE2:
 * two 16-byte compares; elsewhere eight bytes at a time; under ThreadSanitizer one at a time (it
 * would take a wide read of 1-byte atomics for a race). */
static inline uint32_t rpc_arch_diff32(uint64_t mask, rpc_flag_t *a, rpc_flag_t *b)
{
    (void)mask;
    uint32_t bits = 0;
#if defined(RPC_ARCH_TSAN)
    for (uint32_t i = 0; i < 32; i++)
        bits |= (uint32_t)((atomic_load_explicit(&a[i], memory_order_relaxed) ^
                            atomic_load_explicit(&b[i], memory_order_relaxed)) &
                           1u)
                << i;
#elif defined(__SSE2__)
    const __m128i *va = (const __m128i *)(const void *)a, *vb = (const __m128i *)(const void *)b;
    const __m128i one = _mm_set1_epi8(1);
    /* A byte's bit 0 moved to its top bit: movemask collects the outbox bits that differ. */
    __m128i d0 = _mm_slli_epi16(
        _mm_and_si128(_mm_xor_si128(_mm_load_si128(va), _mm_load_si128(vb)), one), 7);
    __m128i d1 = _mm_slli_epi16(
        _mm_and_si128(_mm_xor_si128(_mm_load_si128(va + 1), _mm_load_si128(vb + 1)), one), 7);
    bits = (uint32_t)_mm_movemask_epi8(d0) | (uint32_t)_mm_movemask_epi8(d1) << 16;
#else
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t x =
            __atomic_load_n((const uint64_t *)(const void *)(a + 8 * i), __ATOMIC_RELAXED) ^
            __atomic_load_n((const uint64_t *)(const void *)(b + 8 * i), __ATOMIC_RELAXED);
        bits |= (uint32_t)(((x & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56) << (8 * i);
    }
#endif
    return bits;
}

/* A port's answer head: two 64-bit words in the shared region, written by the server only,
 * each a single-copy-atomic unit (a reader may see one word new and the other old). */
typedef _Atomic uint64_t rpc_head_word_t;

/* Acquire loads of both head words; the values are uniform over `mask`.  A reader that finds
 * the tag it waits for in both words sees everything the writer did before its stores. */
static inline void rpc_arch_head_load(uint64_t mask, rpc_head_word_t *head, uint64_t *w0,
                                      uint64_t *w1)
{
    (void)mask;
    *w0 = atomic_load_explicit(&head[0], memory_order_acquire);
    *w1 = atomic_load_explicit(&head[1], memory_order_acquire);
}

/* Release stores of both head words. */
static inline void rpc_arch_head_store(uint64_t mask, rpc_head_word_t *head, uint64_t w0,
                                       uint64_t w1)
{
    (void)mask;
    atomic_store_explicit(&head[0], w0, memory_order_release);
    atomic_store_explicit(&head[1], w1, memory_order_release);
}

/* Relaxed stores of zero into both head words (the release flip that follows orders them). */
static inline void rpc_arch_head_clear(uint64_t mask, rpc_head_word_t *head)
{
    (void)mask;
    atomic_store_explicit(&head[0], 0, memory_order_relaxed);
    atomic_store_explicit(&head[1], 0, memory_order_relaxed);
}

/* A client flip that needs no fence before it (a short request whose words carry their own
 * tags).  On the host a release store costs nothing more, so it stays one. */
static inline void rpc_arch_flag_store_posted(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    rpc_arch_flag_store(mask, flag, value);
}

/* Request words: relaxed 64-bit accesses, the functions shared with AMDGCN at the end. */
#define RPC_ARCH_WORD_STORE_(p, v) atomic_store_explicit(p, v, memory_order_relaxed)
#define RPC_ARCH_WORD_LOAD_(p) atomic_load_explicit(p, memory_order_relaxed)

/* ------------------------------------------------------------------------ */
#elif defined(RPC_ARCH_NVPTX)

typedef uint32_t rpc_word_t;

static inline void rpc_arch_pause(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __asm__ volatile("nanosleep.u32 64;" ::: "memory");
#endif
}

/* Polls without sleeping first: each poll of host memory is already a round trip over the link
 * (~1 us), and nanosleep's real granularity is coarse; a waiter that keeps waiting then sleeps,
 * so thousands of waiting threads do not flood the link. */
#ifndef RPC_NVPTX_SPINS
#define RPC_NVPTX_SPINS 64
#endif

#if defined(TETHER_RPC_PROFILE)
void tether_rpc_profile_poll(void); /* the device library's profiling build */
#endif

static inline void rpc_arch_backoff(uint32_t *spins)
{
#if defined(TETHER_RPC_PROFILE)
    tether_rpc_profile_poll(); /* a poll that found nothing */
#endif
    if (*spins < RPC_NVPTX_SPINS) {
        ++*spins;
        return;
    }
    rpc_arch_pause();
}

static inline void rpc_arch_init(rpc_word_t *word, uint32_t value)
{
    *word = value;
}

static inline uint32_t rpc_arch_lane_id(void)
{
    return __nvvm_read_ptx_sreg_laneid();
}

static inline uint32_t rpc_arch_first_lane_(uint64_t mask)
{
    return (uint32_t)__builtin_ctzll(mask);
}

/* A call of one lane (the device library's, mask = 1): the caller is the first lane, and there
 * is nothing to vote, broadcast or synchronise.  The compiler sees the one-bit mask and drops
 * the warp primitives below (each a shuffle or vote behind a
 * convergence check: tens of cycles, paid several times per call) at compile time. */
static inline bool rpc_arch_one_lane_(uint64_t mask)
{
    return (mask & (mask - 1)) == 0;
}

static inline bool rpc_arch_is_first_lane(uint64_t mask)
{
    return rpc_arch_one_lane_(mask) || rpc_arch_lane_id() == rpc_arch_first_lane_(mask);
}

static inline void rpc_arch_sync(uint64_t mask)
{
    if (!rpc_arch_one_lane_(mask))
        __nvvm_bar_warp_sync((uint32_t)mask);
}

static inline bool rpc_arch_any(uint64_t mask, bool pred)
{
    return rpc_arch_one_lane_(mask) ? pred : __nvvm_vote_any_sync((uint32_t)mask, pred);
}

static inline uint32_t rpc_arch_broadcast(uint64_t mask, uint32_t value)
{
    if (rpc_arch_one_lane_(mask))
        return value;
    return (uint32_t)__nvvm_shfl_sync_idx_i32((uint32_t)mask, (int)value,
                                              (int)rpc_arch_first_lane_(mask), 31);
}

static inline uint64_t rpc_arch_broadcast64(uint64_t mask, uint64_t value)
{
    if (rpc_arch_one_lane_(mask))
        return value;
    return (uint64_t)rpc_arch_broadcast(mask, (uint32_t)value) |
           (uint64_t)rpc_arch_broadcast(mask, (uint32_t)(value >> 32)) << 32;
}

/* ld.volatile has the memory-model meaning of ld.relaxed.sys (PTX ISA). */
static inline uint32_t rpc_arch_load(uint64_t mask, rpc_word_t *word)
{
    return rpc_arch_broadcast(mask, *(volatile uint32_t *)word);
}

static inline void rpc_arch_store(uint64_t mask, rpc_word_t *word, uint32_t value)
{
    if (rpc_arch_is_first_lane(mask))
        *(volatile uint32_t *)word = value;
    rpc_arch_sync(mask);
}

/* fence.acq_rel.sys after the volatile (relaxed, system scope) read that saw
 * ownership: the PTX memory model's acquire pattern.  Cheaper than membar.sys
 * (fence.sc.sys), which a round trip paid three times. */
static inline void rpc_arch_fence_acq_rel_sys_(void)
{
    __asm__ volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Lock words in device memory, used by this GPU only: device-scope RMW plus membar.gl. */
static inline void rpc_arch_unlock(uint64_t mask, rpc_word_t *word, uint32_t bit)
{
    __nvvm_membar_gl();
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        (void)__nvvm_atom_and_gen_i((int *)word, (int)~bit);
    rpc_arch_sync(mask);
}

/* One device-scope atom.acquire (a single round trip to L2, where atom + membar.gl cost more);
 * the other lanes get the old word by shuffle.  They need no acquire of their own: what the
 * word guards (the port's seq and known state) is in the word itself. */
static inline bool rpc_arch_lock_word(uint64_t mask, rpc_word_t *word, uint32_t bit,
                                      uint32_t *old_p)
{
    uint32_t old = 0;
    if (rpc_arch_is_first_lane(mask))
        __asm__ volatile("atom.acquire.gpu.global.or.b32 %0, [%1], %2;"
                         : "=r"(old)
                         : "l"(word), "r"(bit)
                         : "memory");
    *old_p = rpc_arch_broadcast(mask, old);
    return (*old_p & bit) == 0;
}

typedef uint8_t rpc_flag_t;

static inline uint32_t rpc_arch_flag_load(uint64_t mask, rpc_flag_t *flag)
{
    return rpc_arch_broadcast(mask, *(volatile uint8_t *)flag);
}

static inline void rpc_arch_acquire_flag(uint64_t mask, rpc_flag_t *flag)
{
    (void)mask;
    (void)flag;
    rpc_arch_fence_acq_rel_sys_();
}

/* Every lane fences (fence.acq_rel.sys), the warp synchronises, the first lane stores the byte:
 * a posted write, where a red.sys on host memory costs a link round trip (~0.9 us on an H200,
 * tools/probes/link_costs.cu). */
static inline void rpc_arch_flag_store(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    rpc_arch_fence_acq_rel_sys_();
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        *(volatile uint8_t *)flag = (uint8_t)value;
    rpc_arch_sync(mask);
}

static inline uint32_t rpc_arch_diff32(uint64_t mask, rpc_flag_t *a, rpc_flag_t *b)
{
    uint32_t bits = 0;
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t x = *(volatile uint64_t *)(a + 8 * i) ^ *(volatile uint64_t *)(b + 8 * i);
        bits |= (uint32_t)(((x & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56) << (8 * i);
    }
    return rpc_arch_broadcast(mask, bits);
}

typedef uint64_t rpc_state_t;

static inline uint64_t rpc_arch_load_state(uint64_t mask, rpc_state_t *word)
{
    return rpc_arch_broadcast64(mask, *(volatile uint64_t *)word);
}

/* As rpc_arch_lock_word, 64 bits wide. */
static inline bool rpc_arch_lock_state(uint64_t mask, rpc_state_t *word, uint64_t bit,
                                       uint64_t *old_p)
{
    uint64_t old = 0;
    if (rpc_arch_is_first_lane(mask))
        __asm__ volatile("atom.acquire.gpu.global.or.b64 %0, [%1], %2;"
                         : "=l"(old)
                         : "l"(word), "l"(bit)
                         : "memory");
    *old_p = rpc_arch_broadcast64(mask, old);
    return (*old_p & bit) == 0;
}

/* bar.warp.sync orders every lane's accesses before the first lane's release store. */
static inline void rpc_arch_unlock_state(uint64_t mask, rpc_state_t *word, uint64_t value)
{
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        __asm__ volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
    rpc_arch_sync(mask);
}

typedef uint64_t rpc_head_word_t;

/* One 16-byte ld.acquire.sys: both words in one read of host memory (measured on an H200 with
 * tools/probes/link_costs.cu: a strong load is one link round trip, ~1.1 us, and a thread's
 * strong loads of host memory do not overlap, so two 8-byte loads would cost two), with the
 * acquire that orders the buffer reads that may follow. */
static inline void rpc_arch_head_load_raw_(rpc_head_word_t *head, uint64_t *w0, uint64_t *w1)
{
    __asm__ volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(*w0), "=l"(*w1)
                     : "l"(head)
                     : "memory");
}

/* Release: every lane fences, the first lane stores both words with one 16-byte store. */
static inline void rpc_arch_head_store(uint64_t mask, rpc_head_word_t *head, uint64_t w0,
                                       uint64_t w1)
{
    rpc_arch_fence_acq_rel_sys_();
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        __asm__ volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(head), "l"(w0), "l"(w1)
                         : "memory");
    rpc_arch_sync(mask);
}

/* A posted 16-byte store of zeros, no fence: the flip that follows fences. */
static inline void rpc_arch_head_clear(uint64_t mask, rpc_head_word_t *head)
{
    if (rpc_arch_is_first_lane(mask))
        __asm__ volatile("st.volatile.global.v2.u64 [%0], {%1, %1};" ::"l"(head), "l"(0ull)
                         : "memory");
}

/* The flip of a short request: the byte alone, no fence (the request words carry tags). */
static inline void rpc_arch_flag_store_posted(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        *(volatile uint8_t *)flag = (uint8_t)value;
    rpc_arch_sync(mask);
}

/* Two request words as one posted 16-byte store. */
static inline void rpc_arch_req_store2(rpc_head_word_t *pair, uint64_t a, uint64_t b)
{
    __asm__ volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(pair), "l"(a), "l"(b)
                     : "memory");
}

static inline uint64_t rpc_arch_req_load(rpc_head_word_t *word)
{
    return *(volatile uint64_t *)word;
}

static inline void rpc_arch_req_clear(rpc_head_word_t *word)
{
    *(volatile uint64_t *)word = 0;
}

/* ------------------------------------------------------------------------ */
#elif defined(RPC_ARCH_AMDGCN)

typedef uint32_t rpc_word_t;

static inline void rpc_arch_pause(void)
{
    __builtin_amdgcn_s_sleep(2);
}

static inline void rpc_arch_backoff(uint32_t *spins)
{
    (void)spins;
    rpc_arch_pause();
}

static inline void rpc_arch_init(rpc_word_t *word, uint32_t value)
{
    *word = value;
}

static inline uint32_t rpc_arch_lane_id(void)
{
    return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

static inline bool rpc_arch_is_first_lane(uint64_t mask)
{
    return rpc_arch_lane_id() == (uint32_t)__builtin_ctzll(mask);
}

static inline void rpc_arch_sync(uint64_t mask)
{
    (void)mask;
    __builtin_amdgcn_wave_barrier();
}

static inline bool rpc_arch_any(uint64_t mask, bool pred)
{
    (void)mask;
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE == 32
    return __builtin_amdgcn_ballot_w32(pred) != 0; /* wave32 targets (gfx10+) */
#else
    return __builtin_amdgcn_ballot_w64(pred) != 0;
#endif
}

/* `mask` must equal the active lanes (exec): readfirstlane reads the lowest. */
static inline uint32_t rpc_arch_broadcast(uint64_t mask, uint32_t value)
{
    (void)mask;
    return __builtin_amdgcn_readfirstlane(value);
}

static inline uint64_t rpc_arch_broadcast64(uint64_t mask, uint64_t value)
{
    return (uint64_t)rpc_arch_broadcast(mask, (uint32_t)value) |
           (uint64_t)rpc_arch_broadcast(mask, (uint32_t)(value >> 32)) << 32;
}

static inline uint32_t rpc_arch_load(uint64_t mask, rpc_word_t *word)
{
    return rpc_arch_broadcast(mask, __atomic_load_n(word, __ATOMIC_RELAXED));
}

static inline void rpc_arch_store(uint64_t mask, rpc_word_t *word, uint32_t value)
{
    if (rpc_arch_is_first_lane(mask))
        __atomic_store_n(word, value, __ATOMIC_RELAXED);
    rpc_arch_sync(mask);
}

static inline void rpc_arch_unlock(uint64_t mask, rpc_word_t *word, uint32_t bit)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        (void)__atomic_fetch_and(word, ~bit, __ATOMIC_RELAXED);
    rpc_arch_sync(mask);
}

typedef uint8_t rpc_flag_t;

static inline uint32_t rpc_arch_flag_load(uint64_t mask, rpc_flag_t *flag)
{
    return rpc_arch_broadcast(mask, __atomic_load_n(flag, __ATOMIC_RELAXED));
}

static inline void rpc_arch_acquire_flag(uint64_t mask, rpc_flag_t *flag)
{
    (void)mask;
    (void)flag;
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");
}

static inline void rpc_arch_flag_store(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "");
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        __atomic_store_n(flag, (uint8_t)value, __ATOMIC_RELAXED);
    rpc_arch_sync(mask);
}

static inline uint32_t rpc_arch_diff32(uint64_t mask, rpc_flag_t *a, rpc_flag_t *b)
{
    uint32_t bits = 0;
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t x = __atomic_load_n((uint64_t *)(a + 8 * i), __ATOMIC_RELAXED) ^
                     __atomic_load_n((uint64_t *)(b + 8 * i), __ATOMIC_RELAXED);
        bits |= (uint32_t)(((x & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56) << (8 * i);
    }
    return rpc_arch_broadcast(mask, bits);
}

typedef uint64_t rpc_state_t;

static inline uint64_t rpc_arch_load_state(uint64_t mask, rpc_state_t *word)
{
    return rpc_arch_broadcast64(mask, __atomic_load_n(word, __ATOMIC_RELAXED));
}

/* The lock RMWs of both widths: the first lane sets `bit`, every lane gets the old word, and
 * the acquire fence follows only where the lock was taken. */
#define RPC_ARCH_AMDGCN_LOCK_(name, word_t, value_t, broadcast)                                    \
    static inline bool name(uint64_t mask, word_t *word, value_t bit, value_t *old_p)              \
    {                                                                                              \
        value_t old = 0;                                                                           \
        if (rpc_arch_is_first_lane(mask))                                                          \
            old = __atomic_fetch_or(word, bit, __ATOMIC_RELAXED);                                  \
        *old_p = broadcast(mask, old);                                                             \
        if (*old_p & bit)                                                                          \
            return false;                                                                          \
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");                                         \
        return true;                                                                               \
    }
RPC_ARCH_AMDGCN_LOCK_(rpc_arch_lock_word, rpc_word_t, uint32_t, rpc_arch_broadcast)
RPC_ARCH_AMDGCN_LOCK_(rpc_arch_lock_state, rpc_state_t, uint64_t, rpc_arch_broadcast64)

static inline void rpc_arch_unlock_state(uint64_t mask, rpc_state_t *word, uint64_t value)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        __atomic_store_n(word, value, __ATOMIC_RELAXED);
    rpc_arch_sync(mask);
}

typedef uint64_t rpc_head_word_t;

static inline void rpc_arch_head_load_raw_(rpc_head_word_t *head, uint64_t *w0, uint64_t *w1)
{
    *w0 = __atomic_load_n(&head[0], __ATOMIC_ACQUIRE);
    *w1 = __atomic_load_n(&head[1], __ATOMIC_ACQUIRE);
}

static inline void rpc_arch_head_store(uint64_t mask, rpc_head_word_t *head, uint64_t w0,
                                       uint64_t w1)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "");
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask)) {
        __atomic_store_n(&head[0], w0, __ATOMIC_RELAXED);
        __atomic_store_n(&head[1], w1, __ATOMIC_RELAXED);
    }
    rpc_arch_sync(mask);
}

static inline void rpc_arch_head_clear(uint64_t mask, rpc_head_word_t *head)
{
    if (rpc_arch_is_first_lane(mask)) {
        __atomic_store_n(&head[0], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&head[1], 0, __ATOMIC_RELAXED);
    }
}

static inline void rpc_arch_flag_store_posted(uint64_t mask, rpc_flag_t *flag, uint32_t value)
{
    rpc_arch_sync(mask);
    if (rpc_arch_is_first_lane(mask))
        __atomic_store_n(flag, (uint8_t)value, __ATOMIC_RELAXED);
    rpc_arch_sync(mask);
}

#define RPC_ARCH_WORD_STORE_(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define RPC_ARCH_WORD_LOAD_(p) __atomic_load_n(p, __ATOMIC_RELAXED)

#endif

/* Tries to set `bit` of this side's lock word; true (with acquire) if this caller set it. */
static inline bool rpc_arch_try_lock(uint64_t mask, rpc_word_t *word, uint32_t bit)
{
    uint32_t old;
    return rpc_arch_lock_word(mask, word, bit, &old);
}

#if RPC_ARCH_SIMT
/* Acquire loads of both head words (rpc_arch_head_load_raw_), the first lane's values returned
 * to every lane of `mask`. */
static inline void rpc_arch_head_load(uint64_t mask, rpc_head_word_t *head, uint64_t *w0,
                                      uint64_t *w1)
{
    uint64_t v[2];
    rpc_arch_head_load_raw_(head, &v[0], &v[1]);
    *w0 = rpc_arch_broadcast64(mask, v[0]);
    *w1 = rpc_arch_broadcast64(mask, v[1]);
}
#endif

#if defined(RPC_ARCH_WORD_STORE_)
/* Request words on the host and AMDGCN (NVIDIA has its own, above): relaxed stores of
 * pair[0] = a and pair[1] = b in no particular order, a relaxed load, a clear. */
static inline void rpc_arch_req_store2(rpc_head_word_t *pair, uint64_t a, uint64_t b)
{
    RPC_ARCH_WORD_STORE_(&pair[0], a);
    RPC_ARCH_WORD_STORE_(&pair[1], b);
}

static inline uint64_t rpc_arch_req_load(rpc_head_word_t *word)
{
    return RPC_ARCH_WORD_LOAD_(word);
}

static inline void rpc_arch_req_clear(rpc_head_word_t *word)
{
    RPC_ARCH_WORD_STORE_(word, 0);
}
#endif

#endif /* TETHER_RPC_ARCH_H */
