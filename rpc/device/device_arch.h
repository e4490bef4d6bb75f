/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_arch.h - the few target-specific operations the device
 * library needs beyond rpc/rpc_arch.h: the active lane mask, a spreading hint
 * for port scans, and atomics with explicit ordering on ordinary memory (the
 * allocator's state).
 *
 * Why not __atomic_* everywhere: clang-16's NVPTX backend cannot select
 * atomic loads or stores ("Cannot select: AtomicLoad") and emits plain
 * `atom.global` for read-modify-writes whatever the ordering asked for, so
 * on nvptx loads and stores are volatile and ordering comes from explicit
 * fences (membar.gl: device scope, enough for memory only this GPU uses).
 * On amdgcn and the host the __atomic builtins do what they say (and
 * ThreadSanitizer understands them, which it does not for lone fences).
 *
 * All functions are static inline; include inside `#pragma omp declare
 * target` for device code.  Freestanding.
 */
#ifndef TETHER_DEVICE_ARCH_H
#define TETHER_DEVICE_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "../rpc_arch.h"

/* Device code of the library sits between these (no-ops in a plain host
 * build such as the host-thread tests). */
#if defined(_OPENMP)
#define DEV_BEGIN _Pragma("omp begin declare target")
#define DEV_END _Pragma("omp end declare target")
#else
#define DEV_BEGIN
#define DEV_END
#endif

#if defined(RPC_ARCH_AMDGCN)
/* Lanes of a wavefront for the target being compiled: clang defines 64 for gfx9 (gfx90a,
 * gfx940) and 32 for wave32 targets (gfx10+); the plugin reports the same to the server. */
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define DEV_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define DEV_WAVE_SIZE 64
#endif
#endif

/* The lanes executing this call together (host: one thread = lane 0). */
static inline uint64_t dev_active_mask(void)
{
#if defined(RPC_ARCH_NVPTX)
    uint32_t mask;
    __asm__ volatile("activemask.b32 %0;" : "=r"(mask));
    return mask;
#elif defined(RPC_ARCH_AMDGCN)
    return __builtin_amdgcn_read_exec();
#else
    return 1;
#endif
}

/* The lanes that make one call together.  NVIDIA: the calling thread alone, as the port's lane
 * 0 (ports of one lane: the CUDA backend's limits.rpc_lanes).  Under independent thread
 * scheduling the lanes that __activemask() reports need not meet again at the next
 * warp-synchronous step, and a mask that the lanes do not agree on makes shfl/vote/bar.warp.sync
 * undefined (seen on an H200: calls returned garbage or hung); a one-lane mask is always agreed
 * on, and every warp operation of rpc.h folds away for it.  AMD: the active lanes of the wave,
 * which run in lockstep.  Host: the one thread. */
static inline uint64_t dev_call_lanes(void)
{
#if defined(RPC_ARCH_NVPTX)
    return 1;
#else
    return dev_active_mask();
#endif
}

/* Lanes of `mask` (all executing this call) for which `pred` holds. */
static inline uint64_t dev_ballot(uint64_t mask, bool pred)
{
#if defined(RPC_ARCH_NVPTX)
    if ((mask & (mask - 1)) == 0)
        return pred ? mask : 0;
    return __nvvm_vote_ballot_sync((uint32_t)mask, pred);
#elif defined(RPC_ARCH_AMDGCN)
#if DEV_WAVE_SIZE == 32
    return __builtin_amdgcn_ballot_w32(pred) & mask;
#else
    return __builtin_amdgcn_ballot_w64(pred) & mask;
#endif
#else
    return pred ? mask : 0;
#endif
}

/* `value` of the lowest lane of `mask`, on every lane of `mask`. */
static inline uint32_t dev_broadcast(uint64_t mask, uint32_t value)
{
#if defined(RPC_ARCH_NVPTX)
    /* As rpc_arch_broadcast: a one-lane mask (the NVIDIA calls') costs nothing. */
    return rpc_arch_broadcast(mask, value);
#elif defined(RPC_ARCH_AMDGCN)
    (void)mask;
    return __builtin_amdgcn_readfirstlane(value);
#else
    (void)mask;
    return value;
#endif
}

/* A number that stays the same for all calls of one caller (NVIDIA: its
 * thread in the grid, which calls alone; AMD: its wave; host: its thread)
 * and differs between concurrent callers: its home port, which keeps its
 * calls in order (see device_client.c). */
static inline uint32_t dev_caller_id(void)
{
#if defined(RPC_ARCH_NVPTX)
    return __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
           __nvvm_read_ptx_sreg_tid_x();
#elif defined(RPC_ARCH_AMDGCN)
    uint32_t waves = (__builtin_amdgcn_workgroup_size_x() + DEV_WAVE_SIZE - 1u) / DEV_WAVE_SIZE;
    return __builtin_amdgcn_workgroup_id_x() * waves +
           __builtin_amdgcn_workitem_id_x() / DEV_WAVE_SIZE;
#else
    static _Thread_local char anchor;
    uintptr_t p = (uintptr_t)&anchor;
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
#endif
}

#if defined(RPC_ARCH_NVPTX)
#define DEV_FENCE_() __nvvm_membar_gl()
#elif defined(RPC_ARCH_AMDGCN)
#define DEV_FENCE_() __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent")
#endif

static inline uint64_t dev_load_acquire64(const uint64_t *p)
{
#if defined(RPC_ARCH_NVPTX)
    uint64_t v = *(const volatile uint64_t *)p;
    DEV_FENCE_();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

static inline uint32_t dev_load_relaxed32(const uint32_t *p)
{
#if defined(RPC_ARCH_NVPTX)
    return *(const volatile uint32_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

static inline uint64_t dev_load_relaxed64(const uint64_t *p)
{
#if defined(RPC_ARCH_NVPTX)
    return *(const volatile uint64_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

static inline uint32_t dev_load_acquire32(const uint32_t *p)
{
#if defined(RPC_ARCH_NVPTX)
    uint32_t v = *(const volatile uint32_t *)p;
    DEV_FENCE_();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

static inline int32_t dev_load_relaxed_i32(const int32_t *p)
{
#if defined(RPC_ARCH_NVPTX)
    return *(const volatile int32_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

static inline void dev_store_relaxed32(uint32_t *p, uint32_t v)
{
#if defined(RPC_ARCH_NVPTX)
    *(volatile uint32_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

static inline void dev_store_release32(uint32_t *p, uint32_t v)
{
#if defined(RPC_ARCH_NVPTX)
    DEV_FENCE_();
    *(volatile uint32_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

static inline uint32_t dev_exchange32(uint32_t *p, uint32_t v)
{
#if defined(RPC_ARCH_NVPTX)
    DEV_FENCE_();
    uint32_t r = __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
    DEV_FENCE_();
    return r;
#else
    return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
#endif
}

static inline bool dev_cas32(uint32_t *p, uint32_t expected, uint32_t desired)
{
#if defined(RPC_ARCH_NVPTX)
    DEV_FENCE_();
    bool ok = __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED);
    DEV_FENCE_();
    return ok;
#else
    return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
#endif
}

static inline void dev_store_relaxed64(uint64_t *p, uint64_t v)
{
#if defined(RPC_ARCH_NVPTX)
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* The read side of a seqlock: the data loads (dev_seq_load*) must complete
 * before the second load of the sequence word that follows dev_seq_fence().
 * GPUs: relaxed loads and one fence.  Host: acquire loads and no fence (which
 * ThreadSanitizer understands, unlike a lone fence). */
static inline uint64_t dev_seq_load64(const uint64_t *p)
{
#if defined(RPC_ARCH_HOST)
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
    return dev_load_relaxed64(p);
#endif
}

static inline uint32_t dev_seq_load32(const uint32_t *p)
{
#if defined(RPC_ARCH_HOST)
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
    return dev_load_relaxed32(p);
#endif
}

static inline void dev_seq_fence(void)
{
#if defined(RPC_ARCH_NVPTX) || defined(RPC_ARCH_AMDGCN)
    DEV_FENCE_();
#endif
}

static inline void dev_store_release64(uint64_t *p, uint64_t v)
{
#if defined(RPC_ARCH_NVPTX)
    DEV_FENCE_();
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* Read-modify-writes with acquire-release ordering.  On NVPTX a relaxed RMW between two fences
 * (clang-16 cannot select ordered atomics there); elsewhere the builtin with ACQ_REL. */
#if defined(RPC_ARCH_NVPTX)
#define DEV_RMW_(name, type, builtin)                                                              \
    static inline type name(type *p, type v)                                                       \
    {                                                                                              \
        DEV_FENCE_();                                                                              \
        type r = builtin(p, v, __ATOMIC_RELAXED);                                                  \
        DEV_FENCE_();                                                                              \
        return r;                                                                                  \
    }
#else
#define DEV_RMW_(name, type, builtin)                                                              \
    static inline type name(type *p, type v)                                                       \
    {                                                                                              \
        return builtin(p, v, __ATOMIC_ACQ_REL);                                                    \
    }
#endif
DEV_RMW_(dev_fetch_add64, uint64_t, __atomic_fetch_add)
DEV_RMW_(dev_fetch_add32, int32_t, __atomic_fetch_add)
DEV_RMW_(dev_fetch_or32, uint32_t, __atomic_fetch_or)
DEV_RMW_(dev_fetch_and32, uint32_t, __atomic_fetch_and)
#undef DEV_RMW_

static inline bool dev_cas64(uint64_t *p, uint64_t expected, uint64_t desired)
{
#if defined(RPC_ARCH_NVPTX)
    DEV_FENCE_();
    bool ok = __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED);
    DEV_FENCE_();
    return ok;
#else
    return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
#endif
}

#endif /* TETHER_DEVICE_ARCH_H */
