/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// lock_ctx.cu - what a port lock's atomic costs in the company of a call's other accesses.
// tools/probes/l2_lat.cu times chains of atomics alone (about 290 cycles near, 500 far); the
// RPC call's open phase takes longer.  One GPU thread runs a call's skeleton without a server:
// the lock (atom.acquire.gpu.or on a device word), the request (stores to mapped host memory),
// a delay, the poll (a load of mapped host memory), the close (a relaxed store to the lock
// word), and a pause standing for the caller's loop.  Each variant leaves one piece out or
// changes it, and the program prints the lock's cycles (issue to result) and the whole
// iteration's, as medians over ITERS iterations.  Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/lock_ctx tools/probes/lock_ctx.cu && /tmp/lock_ctx
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define ITERS 4000
enum {
    V_ALL = 0,     // lock, request, delay, poll (acquire), close, pause
    V_CHAIN,       // lock only, back to back
    V_NO_CLOSE,    // no close store
    V_CLOSE_OTHER, // the close stores to a word one line away
    V_RELAXED,     // the lock is atom.relaxed
    V_POLL_RLX,    // the poll is ld.relaxed.sys
    V_NO_POLL,     // no poll (a spin as long as one instead)
    V_NO_REQ,      // no request stores
    V_CLOSE_ATOM,  // the close is an atom.exch (its result unused)
    V_FENCE_CLOSE, // the close is followed by fence.acq_rel.gpu
    V_COUNT
};
static const char *names[V_COUNT] = {
    "lock+req+delay+poll+close (the call)", "lock only, back to back", "no close store",
    "close one line away", "lock atom.relaxed", "poll ld.relaxed.sys", "no poll (spin 2600)",
    "no request stores", "close as atom.exch", "close + fence.acq_rel.gpu"};

__device__ __forceinline__ void spin(long long c)
{
    long long t0 = clock64();
    while (clock64() - t0 < c)
        ;
}

__global__ void run(int v, unsigned long long *word, unsigned long long *host, unsigned *lock_c,
                    unsigned *iter_c)
{
    unsigned long long acc = 0;
    long long prev = clock64();
    for (int i = 0; i < ITERS; i++) {
        unsigned long long old;
        long long t0 = clock64();
        if (v == V_RELAXED)
            asm volatile("atom.relaxed.gpu.global.or.b64 %0, [%1], 1;" : "=l"(old) : "l"(word) : "memory");
        else
            asm volatile("atom.acquire.gpu.global.or.b64 %0, [%1], 1;" : "=l"(old) : "l"(word) : "memory");
        acc += old & 2; // the result is used before the clock is read
        asm volatile("" ::"l"(acc));
        long long t1 = clock64() + (long long)(acc & 1);
        if (v == V_CHAIN) {
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(acc & 4) : "memory");
        } else {
            if (v != V_NO_REQ) {
                unsigned long long a = i, b = i + 1;
                asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(host + 8), "l"(a), "l"(b) : "memory");
                asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(host + 10), "l"(b), "l"(a) : "memory");
                asm volatile("st.volatile.global.u8 [%0], %1;" ::"l"(host + 32), "h"((unsigned short)(i & 1)) : "memory");
            }
            spin(300);
            if (v == V_NO_POLL) {
                spin(2600);
            } else {
                unsigned long long x, y;
                if (v == V_POLL_RLX)
                    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(host) : "memory");
                else
                    asm volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(host) : "memory");
                acc += (x ^ y) & 8;
            }
            unsigned long long close = (acc & 4) | 0x100;
            if (v == V_CLOSE_OTHER)
                asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word + 8), "l"(close) : "memory");
            else if (v == V_CLOSE_ATOM) {
                unsigned long long o2;
                asm volatile("atom.relaxed.gpu.global.exch.b64 %0, [%1], %2;" : "=l"(o2) : "l"(word), "l"(close) : "memory");
                acc += o2 & 0; // the result counts as used (no set-but-unused warning)
            } else if (v != V_NO_CLOSE)
                asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(close) : "memory");
            if (v == V_FENCE_CLOSE)
                asm volatile("fence.acq_rel.gpu;" ::: "memory");
            spin(500);
        }
        long long t2 = clock64();
        lock_c[i] = (unsigned)(t1 - t0);
        iter_c[i] = (unsigned)(t2 - prev);
        prev = t2;
    }
    if (acc == 12345)
        host[40] = acc;
}

static unsigned median(unsigned *a, int n)
{
    std::sort(a, a + n);
    return a[n / 2];
}

int main(void)
{
    unsigned long long *word, *host, *dhost;
    unsigned *lock_c, *iter_c;
    cudaMalloc(&word, 4096);
    cudaMemset(word, 0, 4096);
    cudaHostAlloc((void **)&host, 4096, cudaHostAllocMapped);
    cudaHostGetDevicePointer((void **)&dhost, host, 0);
    cudaMallocManaged(&lock_c, ITERS * sizeof(unsigned));
    cudaMallocManaged(&iter_c, ITERS * sizeof(unsigned));
    for (int rep = 0; rep < 3; rep++)
        for (int v = 0; v < V_COUNT; v++) {
            run<<<1, 1>>>(v, word, dhost, lock_c, iter_c);
            if (cudaDeviceSynchronize() != cudaSuccess) {
                fprintf(stderr, "lock_ctx: kernel failed\n");
                return 1;
            }
            printf("lock_ctx: %-40s lock %4u cycles, iteration %5u cycles (median)\n", names[v],
                   median(lock_c + 100, ITERS - 100), median(iter_c + 100, ITERS - 100));
        }
    return 0;
}
