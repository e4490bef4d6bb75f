/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// link_costs.cu - what each step of a device-to-host call costs on this GPU and link, measured
// with nvcc alone (no OpenMP, no tether): the primitives the RPC protocol is made of (fences,
// reductions, reads of pinned host memory) timed on the GPU, and 18 shapes of a one-packet
// round trip between one GPU thread and one host thread, from the raw flag ping-pong up to the
// flag + fence + 64-byte packet shape of rpc.h, the shapes that carry a tag in every 8-byte word
// instead (docs/rpc-protocol.md, "Tagged answers"), the short call with its device lock, and
// ways of polling for the answer (acquire, relaxed + one fence, several copies in flight).
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/link_costs tools/probes/link_costs.cu && /tmp/link_costs
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "../../test/cuda/native/native_common.h"

#define ROUNDS 20000u
#define WARM 1000u

struct shared {
    alignas(64) unsigned req_flag;
    alignas(64) unsigned ans_flag;
    alignas(64) unsigned long long req[8];
    alignas(64) unsigned long long ans[8];
    alignas(64) unsigned long long scratch[64];
    alignas(64) unsigned long long copies[8][8]; // shapes 15-17: the answer in 2, 4 or 8 lines
};

__device__ __forceinline__ void fence_acq_rel_sys(void)
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void store16(volatile unsigned long long *p, unsigned long long a,
                                        unsigned long long b)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

// 16-byte loads of host memory, one per kind of PTX load: both words in one instruction.
#define LOAD16(name, op)                                                                           \
    __device__ __forceinline__ void name(const volatile unsigned long long *p,                     \
                                         unsigned long long *a, unsigned long long *b)             \
    {                                                                                              \
        asm volatile(op " {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");              \
    }
LOAD16(load16, "ld.volatile.global.v2.u64")
LOAD16(load16_relaxed, "ld.relaxed.sys.global.v2.u64")
LOAD16(load16_weak, "ld.global.v2.u64")
LOAD16(load16_cv, "ld.global.cv.v2.u64")
LOAD16(load16_acquire, "ld.acquire.sys.global.v2.u64")

__device__ __forceinline__ void red_xor(unsigned *p, unsigned v)
{
    asm volatile("red.sys.xor.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- primitives, timed on the GPU ----------------------------------------------------------------

#define N 2000

// N repetitions of `body` timed into out[slot].
#define TIME(slot, body)                                                                           \
    do {                                                                                           \
        unsigned long long t0_ = native_gtime();                                                   \
        for (int i = 0; i < N; i++) {                                                              \
            body;                                                                                  \
        }                                                                                          \
        out[slot] = native_gtime() - t0_;                                                          \
    } while (0)

enum load_kind { LOAD_VOLATILE, LOAD_RELAXED, LOAD_WEAK, LOAD_CV };

// One 64-byte read of host memory as four 16-byte loads of one kind; the address depends on the
// previous result, so reads do not overlap across calls.
__device__ unsigned long long load64(struct shared *h, unsigned long long x, enum load_kind kind)
{
    unsigned long long s = 0, a, b;
    for (int k = 0; k < 4; k++) {
        unsigned long long *p = &h->scratch[32 + 2 * k + (x & 1) * 8];
        if (kind == LOAD_VOLATILE)
            load16(p, &a, &b);
        else if (kind == LOAD_RELAXED)
            load16_relaxed(p, &a, &b);
        else if (kind == LOAD_WEAK)
            load16_weak(p, &a, &b);
        else
            load16_cv(p, &a, &b);
        s += a + b;
    }
    return s;
}

// A call's own work on the GPU without the wait: lock, header, packet, head clear, fence,
// flip (red.sys.xor or a plain store), unlock.
__device__ void client_work(struct shared *h, unsigned *dev_word, unsigned i, bool red,
                            unsigned long long *x)
{
    unsigned old;
    asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 1;" : "=r"(old) : "l"(dev_word) : "memory");
    *x += old;
    store16(&h->scratch[40], i, old);
    for (int k = 0; k < 4; k++)
        store16(&h->scratch[48 + 2 * k], i, k);
    store16(&h->scratch[42], 0, 0);
    fence_acq_rel_sys();
    if (red)
        red_xor((unsigned *)&h->scratch[16], 1);
    else
        *(volatile unsigned *)&h->scratch[16] = i;
    asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i << 8) : "memory");
}

__constant__ unsigned long long const_words[16];

// A load of constant memory the compiler cannot hoist or merge (the same line every time, as
// the device library's configuration is).
__device__ __forceinline__ unsigned long long ld_const(void)
{
    unsigned long long v;
    asm volatile("ld.const.u64 %0, [const_words];" : "=l"(v)::"memory");
    return v;
}

__global__ void primitives(struct shared *h, unsigned *dev_word, unsigned long long *out)
{
    unsigned long long x = 0, a, b;
    volatile unsigned long long *vh = h->scratch;
    unsigned *flag = (unsigned *)&h->scratch[16];
    TIME(0, fence_acq_rel_sys());
    TIME(1, for (int k = 0; k < 4; k++) store16(&h->scratch[2 * k], i, k); fence_acq_rel_sys());
    TIME(2, for (int k = 0; k < 4; k++) store16(&h->scratch[2 * k], i, k));
    TIME(3, red_xor(flag, 1));
    TIME(4, x += vh[24 + (x & 1)]);
    TIME(5, x += load64(h, x, LOAD_VOLATILE));
    TIME(6, atomicOr(dev_word, 1u); __threadfence(); atomicAnd(dev_word, ~1u); __threadfence());
    TIME(7, for (int k = 0; k < 4; k++) store16(&h->scratch[2 * k], i, k); __threadfence_system());
    TIME(8, x += load64(h, x, LOAD_RELAXED));
    TIME(9, fence_acq_rel_sys(); x += load64(h, x, LOAD_WEAK));
    TIME(10, load16(&h->scratch[32 + (x & 1) * 8], &a, &b); x += a + b);
    TIME(11, for (int k = 0; k < 8; k++) x += vh[32 + k + (x & 1) * 8]);
    TIME(12, *(volatile unsigned *)flag = i);
    TIME(13, asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(i) : "memory"));
    TIME(14, unsigned old;
         asm volatile("atom.acquire.gpu.global.or.b32 %0, [%1], 1;"
                      : "=r"(old)
                      : "l"(dev_word)
                      : "memory");
         x += old;
         asm volatile("red.release.gpu.global.and.b32 [%0], 0xfffffffe;" ::"l"(dev_word) : "memory"));
    TIME(15, unsigned v;
         asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                      : "=r"(v)
                      : "l"(&h->scratch[24 + (x & 1)])
                      : "memory");
         x += v);
    TIME(16, red_xor(flag, 1); for (int k = 0; k < 4; k++) store16(&h->scratch[2 * k], i, k));
    TIME(17, x += load64(h, x, LOAD_WEAK));
    TIME(18, x += load64(h, x, LOAD_CV));
    TIME(19, load16_cv(&h->scratch[32 + (x & 1) * 8], &a, &b); x += a + b);
    TIME(20, red_xor(flag, 1);
         asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory"));
    TIME(21, red_xor(flag, 1);
         asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory"));
    TIME(22, asm volatile("red.sys.add.u32 [%0], 1;" ::"l"(flag) : "memory"));
    TIME(23, unsigned old;
         asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 0;" : "=r"(old) : "l"(dev_word) : "memory");
         x += old);
    TIME(24, asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory"));
    TIME(25, client_work(h, dev_word, i, true, &x));
    TIME(26, client_work(h, dev_word, i, false, &x));
    TIME(27, asm volatile("fence.acq_rel.gpu;" ::: "memory"));
    /* Do a thread's strong loads overlap when they go to different lines?  Four 16-byte
     * volatile loads of four lines (scratch[0], [8], [16], [24] with scratch 64-byte aligned),
     * issued together; the next round's addresses depend on their sum. */
    TIME(28, unsigned long long s = 0; for (int k = 0; k < 4; k++) {
        load16(&h->scratch[8 * k + 2 * (x & 1)], &a, &b);
        s += a + b;
    } x += s);
    TIME(29, unsigned long long s = 0; for (int k = 0; k < 4; k++) {
        load16_acquire(&h->scratch[8 * k + 2 * (x & 1)], &a, &b);
        s += a + b;
    } x += s);
    /* Does an acquire or release empty the constant cache?  Each followed by a constant load
     * whose value the next step uses. */
    TIME(30, x += ld_const());
    TIME(31, unsigned old;
         asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 0;" : "=r"(old) : "l"(dev_word) : "memory");
         x += old + ld_const());
    TIME(32, asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"((unsigned)x) : "memory");
         x += ld_const());
    TIME(33, unsigned v;
         asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                      : "=r"(v)
                      : "l"(&h->scratch[24 + (x & 1)])
                      : "memory");
         x += v + ld_const());
    out[39] = x;
}

// ---- round trips ---------------------------------------------------------------------------------

// shape 0: raw flags.  1: rpc.h today (64-byte packet, fence, flip; wait flip, fence, read 64 bytes).
// 2: request as today, answer tagged (tag in the high half of every 8-byte word; the GPU polls the
// answer itself).  3: both tagged: the GPU stores a tagged packet and flips with no fence; the
// host, seeing the flip, polls the packet's tags.
// 11, 12: the short-call shape: a device lock (atom.acquire.gpu), a tagged request of four
// 16-byte stores, a plain flag store, a 16-byte volatile answer poll, then the unlock as
// st.release.gpu (11) or st.relaxed.gpu (12).
// 13: as 11 with the answer polled by ld.acquire.sys (what the device library does).
// 14: as 11 with volatile polls, then one fence.acq_rel.sys (the acquire pattern for the answer and
// the release pattern for the unlock at once), then the unlock as st.relaxed.gpu.
// 15, 16, 17: as 14, the host writing the answer into 2, 4 or 8 lines and the GPU keeping one
// volatile load of each in flight, so that a load reaches host memory more often.
__device__ __forceinline__ bool tagged(unsigned long long a, unsigned long long b,
                                       unsigned long long tag)
{
    return (a & 0xffffffff00000000ull) == tag && (b & 0xffffffff00000000ull) == tag;
}

// One 8-byte volatile load per copy (the tag and the answer in one word), K kept in flight: a
// copy's value is looked at only after the other copies' loads were issued.
__device__ __forceinline__ unsigned long long load8(const volatile unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

template <int K>
__device__ __forceinline__ unsigned long long poll_copies(struct shared *h, unsigned long long tag)
{
    unsigned long long v[K];
#pragma unroll
    for (int c = 0; c < K; c++)
        v[c] = load8(&h->copies[c][0]);
    for (;;) {
#pragma unroll
        for (int c = 0; c < K; c++) {
            if ((v[c] & 0xffffffff00000000ull) == tag)
                return v[c];
            v[c] = load8(&h->copies[c][0]);
        }
    }
}

__global__ void client(struct shared *h, int shape, unsigned *dev_word, unsigned long long *out)
{
    unsigned long long t0 = 0;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        if (i == WARM + 1)
            t0 = native_gtime();
        unsigned long long sum = 0;
        if (shape >= 11) {
            unsigned old;
            asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 1;" : "=r"(old) : "l"(dev_word) : "memory");
            unsigned long long tag = (unsigned long long)i << 32;
            for (int k = 0; k < 4; k++)
                store16(&h->req[2 * k], tag | (2 * k) | (old & 1), tag | (2 * k + 1));
            *(volatile unsigned *)&h->req_flag = i;
            unsigned long long a, b;
            if (shape >= 15) {
                a = shape == 15 ? poll_copies<2>(h, tag)
                                : shape == 16 ? poll_copies<4>(h, tag) : poll_copies<8>(h, tag);
                b = a;
            } else
                do
                    if (shape == 13)
                        load16_acquire(&h->ans[0], &a, &b);
                    else
                        load16(&h->ans[0], &a, &b);
                while (!tagged(a, b, tag));
            sum = 3;
            if (shape >= 14)
                fence_acq_rel_sys();
            if (shape == 11 || shape == 13)
                asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"((unsigned)(a & 0)) : "memory");
            else
                asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"((unsigned)(a & 0)) : "memory");
        } else if (shape == 0) {
            *(volatile unsigned *)&h->req_flag = i;
            while (*(volatile unsigned *)&h->ans_flag != i)
                ;
        } else if (shape == 1 || shape == 2 || shape == 9 || shape == 10) {
            unsigned long long tag = (unsigned long long)i << 32;
            for (int k = 0; k < 4; k++)
                store16(&h->req[2 * k], tag | (2 * k), tag | (2 * k + 1));
            fence_acq_rel_sys();
            if (shape == 10)
                *(volatile unsigned *)&h->req_flag = i;
            else
                red_xor(&h->req_flag, 1);
            if (shape == 1) {
                while ((*(volatile unsigned *)&h->ans_flag & 1) != (i & 1))
                    ;
                fence_acq_rel_sys();
                for (int k = 0; k < 4; k++) {
                    unsigned long long a, b;
                    load16(&h->ans[2 * k], &a, &b);
                    sum += a + b;
                }
            }
        } else {
            unsigned long long tag = (unsigned long long)i << 32;
            for (int k = 0; k < 4; k++)
                store16(&h->req[2 * k], tag | (2 * k), tag | (2 * k + 1));
            if (shape == 3)
                red_xor(&h->req_flag, 1);
            else
                *(volatile unsigned *)&h->req_flag = i; /* same parity as the flip */
        }
        if (shape >= 2 && shape <= 10) {
            unsigned long long tag = (unsigned long long)i << 32;
            for (;;) {
                bool ok = true;
                unsigned long long w[8];
                if (shape == 6)
                    for (int k = 0; k < 4; k++)
                        load16_cv(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                else if (shape >= 7) {
                    if (shape == 7)
                        load16(&h->ans[0], &w[0], &w[1]);
                    else
                        load16_acquire(&h->ans[0], &w[0], &w[1]);
                    for (int k = 2; k < 8; k++)
                        w[k] = tag;
                }
                else if (shape == 4)
                    for (int k = 0; k < 4; k++)
                        load16_relaxed(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                else if (shape == 5)
                    for (int k = 0; k < 8; k++)
                        w[k] = ((volatile unsigned long long *)h->ans)[k];
                else
                    for (int k = 0; k < 4; k++)
                        load16(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                for (int k = 0; k < 8; k++)
                    ok &= (w[k] & 0xffffffff00000000ull) == tag;
                if (ok) {
                    for (int k = 0; k < 8; k++)
                        sum += w[k] & 0xffffffffu;
                    if (sum != (shape >= 7 ? 3u : 36u))
                        out[2]++; /* a word with the right tag and the wrong data: torn */
                    break;
                }
            }
        }
        if (shape == 0)
            sum = i;
        out[1] += sum;
    }
    out[0] = native_gtime() - t0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int serve(struct shared *h, int shape)
{
    volatile struct shared *v = h;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        double start = now_us();
        if (shape == 0) {
            while (v->req_flag != i)
                if (now_us() - start > 5e6)
                    return 1;
            __atomic_store_n(&h->ans_flag, i, __ATOMIC_RELEASE);
            continue;
        }
        while ((__atomic_load_n(&h->req_flag, __ATOMIC_ACQUIRE) & 1) != (i & 1))
            if (now_us() - start > 5e6)
                return 1;
        unsigned long long req[8], tag = (unsigned long long)i << 32;
        if (shape >= 3) {
            for (;;) {
                bool ok = true;
                for (int k = 0; k < 8; k++) {
                    req[k] = __atomic_load_n(&h->req[k], __ATOMIC_ACQUIRE);
                    ok &= (req[k] & 0xffffffff00000000ull) == tag;
                }
                if (ok)
                    break;
            }
        } else {
            for (int k = 0; k < 8; k++)
                req[k] = v->req[k];
        }
        if (shape == 1) {
            for (int k = 0; k < 8; k++)
                v->ans[k] = req[k] + 1;
            __atomic_fetch_xor(&h->ans_flag, 1, __ATOMIC_RELEASE);
        } else if (shape >= 15) {
            int copies = shape == 15 ? 2 : shape == 16 ? 4 : 8;
            for (int c = 0; c < copies; c++)
                __atomic_store_n(&h->copies[c][0], tag | ((req[0] + 1) & 0xffffffffu),
                                 __ATOMIC_RELAXED);
        } else {
            for (int k = 0; k < 8; k++)
                __atomic_store_n(&h->ans[k], tag | ((req[k] + 1) & 0xffffffffu), __ATOMIC_RELAXED);
            __atomic_fetch_xor(&h->ans_flag, 1, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

int main(void)
{
    struct shared *h, *d;
    unsigned long long *out;
    unsigned *dev_word;
    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaHostAlloc((void **)&h, sizeof *h, cudaHostAllocMapped));
    RT_CHECK(cudaHostGetDevicePointer((void **)&d, h, 0));
    RT_CHECK(cudaMallocManaged((void **)&out, 40 * sizeof *out));
    RT_CHECK(cudaMalloc((void **)&dev_word, sizeof *dev_word));
    RT_CHECK(cudaMemset(dev_word, 0, sizeof *dev_word));

    primitives<<<1, 1>>>(d, dev_word, out);
    RT_CHECK(cudaDeviceSynchronize());
    primitives<<<1, 1>>>(d, dev_word, out);
    RT_CHECK(cudaDeviceSynchronize());
    const char *names[34] = {"fence.acq_rel.sys, nothing outstanding",
                            "64-byte store to host + fence.acq_rel.sys",
                            "64-byte store to host",
                            "red.sys.xor on host memory",
                            "dependent 8-byte load of host memory",
                            "dependent 64-byte load of host memory (4 x 16)",
                            "device lock + unlock (atom + membar.gl, twice)",
                            "64-byte store to host + fence.sc.sys",
                            "dependent 64-byte load, 4 x 16 ld.relaxed.sys",
                            "fence.acq_rel.sys + 4 x 16 weak loads",
                            "dependent 16-byte volatile load",
                            "dependent 64-byte load, 8 x 8 volatile",
                            "st.volatile.u32 to host",
                            "st.release.sys.u32 to host",
                            "device lock + unlock, atom.acquire/red.release",
                            "dependent ld.acquire.sys.u32 of host",
                            "red.sys.xor + 64-byte store",
                            "4 x 16 weak loads, no fence (L1?)",
                            "dependent 64-byte load, 4 x 16 ld.global.cv",
                            "dependent 16-byte ld.global.cv",
                            "red.sys.xor + st.release.gpu (device)",
                            "red.sys.xor + st.relaxed.gpu (device)",
                            "red.sys.add.u32 on host memory",
                            "atom.acquire.gpu.or (device)",
                            "st.release.gpu (device)",
                            "client work: lock..red..unlock",
                            "client work, st flag instead of red",
                            "fence.acq_rel.gpu",
                            "4 x 16-byte volatile loads of 4 lines",
                            "4 x 16-byte ld.acquire.sys of 4 lines",
                            "ld.const (same line)",
                            "atom.acquire.gpu + ld.const",
                            "st.release.gpu + ld.const",
                            "ld.acquire.sys of host + ld.const"};
    for (int k = 0; k < 34; k++)
        printf("link_costs: %-48s %7.3f us\n", names[k], out[k] / 1e3 / N);

    const char *shapes[18] = {"raw flag ping-pong", "rpc.h: packet, fence, flip / flip, fence, read",
                             "tagged answer (request as rpc.h)", "tagged request and answer",
                             "tagged, st flag, ld.relaxed.sys answer", "tagged, st flag, 8 x 8 answer",
                             "tagged, st flag, 4 x 16 ld.cv answer", "tagged, st flag, 16-byte answer",
                             "tagged, st flag, 16-byte ld.acquire answer",
                             "rpc.h request, 16-byte ld.acquire answer",
                             "fence + st flag, 16-byte ld.acquire answer",
                             "lock, tagged, st flag, 16-byte answer, st.release",
                             "lock, tagged, st flag, 16-byte answer, st.relaxed",
                             "as 11, answer by ld.acquire.sys",
                             "as 11, volatile polls, fence.sys, st.relaxed",
                             "as 14, answer in 2 lines, polled together",
                             "as 14, answer in 4 lines, polled together",
                             "as 14, answer in 8 lines, polled together"};
    for (int shape = 0; shape < 18; shape++) {
        memset(h, 0, sizeof *h);
        out[0] = out[1] = out[2] = 0;
        client<<<1, 1>>>(d, shape, dev_word, out);
        RT_CHECK(cudaGetLastError());
        if (serve(h, shape) != 0) {
            fprintf(stderr, "link_costs: shape %d: no request from the GPU\n", shape);
            return 1;
        }
        RT_CHECK(cudaDeviceSynchronize());
        printf("link_costs: round trip, %-48s %7.3f us (%llu torn)\n", shapes[shape],
               out[0] / 1e3 / (ROUNDS - WARM), out[2]);
    }
    return 0;
}
