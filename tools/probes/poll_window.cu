/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// poll_window.cu - where the time of a device-to-host call over pinned host memory goes, with
// no OpenMP and no tether (nvcc only): one GPU thread calls one host thread, in shapes
//   raw          st the request flag; poll the answer flag (pingpong.cu's pingpong_gpu)
//   call         tether's short call: device lock (atom.acquire.gpu), two 16-byte tagged request
//                stores and a flag byte, DELAY cycles, the 16-byte tagged answer polled by
//                ld.acquire.sys, unlock by st.relaxed.gpu
//   call-nolock  the same without the lock
//   call2        as call, the answer also in a second line, polled DELTA cycles after the first
// with the host's side varied (where it polls, its own time before it answers, how it leaves
// the answer), and the host-started raw ping-pong of pingpong.cu (the benchmark's baseline)
// measured in the same process before each round.  Figures only.  Found on H200 machines
// (docs/performance.md):
//   - A thread's strong loads of host memory do not overlap: K polls of the answer's line in
//     flight, 80-400 cycles apart, took 3.4, 4.4, 5.4 and 12.5 us for K = 2, 3, 4, 8 against
//     2.4-2.6 us one at a time; two polls of two lines (call2): a round trip more, always.
//   - With the first poll's delay right, a call costs its delay plus about 1.5 us, and every
//     nanosecond the host takes to answer adds one; a poll issued too early finds nothing and
//     costs a round trip more.  Zeroing the request, prefetching its line, clwb, clflushopt or
//     movnti for the answer: no gain.  The lock: 0.15-0.3 us.
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/poll_window tools/probes/poll_window.cu
//   /tmp/poll_window [ROUNDS_OUTER]
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "../../test/cuda/native/native_common.h"

#define ROUNDS 20000u
#define WARM 1000u

/* The mailbox words live at byte offsets into `area`, set per configuration. */
struct shared {
    alignas(4096) unsigned char area[16384];
    alignas(64) unsigned ping[2]; /* host-started raw: ping, reply (one line, as pingpong.cu) */
};

enum { RAW, RAW_VOL, CALL, CALL_NOLOCK, CALL2 };

struct config {
    int shape;
    unsigned req, flag, head; /* byte offsets; raw: flag = request flag, head = answer flag */
    unsigned delay;
    const char *what;
    int poll_req;     /* call: the host polls the request's tags, not the flag */
    int no_flag;      /* call: the GPU writes no flag */
    unsigned host_ns; /* call: the host's own time between seeing the request and answering */
    int flush;        /* call: after the answer, 1 clflushopt its line, 2 clwb, 3 movnti stores */
    int zero;         /* call: the host zeroes the request words (as tether's server does) */
    int prefetch;   /* call: on seeing the request, 1 prefetchw of the request's line, 2 prefetch */
    unsigned delta; /* call2: the answer also in the next line, polled this many cycles later */
};

__device__ __forceinline__ void spin(unsigned cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < (long long)cycles)
        ;
}

__device__ __forceinline__ void st16(void *p, unsigned long long a, unsigned long long b)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__global__ void client(unsigned char *area, struct config c, unsigned long long *lock,
                       unsigned long long *out)
{
    unsigned long long t0 = 0;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        if (i == WARM + 1)
            t0 = native_gtime();
        if (c.shape == RAW || c.shape == RAW_VOL) {
            unsigned *ans = (unsigned *)(area + c.head), v;
            *(volatile unsigned *)(area + c.flag) = i;
            do
                if (c.shape == RAW)
                    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];"
                                 : "=r"(v)
                                 : "l"(ans)
                                 : "memory");
                else
                    v = *(volatile unsigned *)ans;
            while (v != i);
            continue;
        }
        unsigned long long old = 0, tag = 0x8000u | (i & 0xffu), a, b;
        if (c.shape == CALL || c.shape == CALL2)
            asm volatile("atom.acquire.gpu.global.or.b64 %0, [%1], 1;"
                         : "=l"(old)
                         : "l"(lock)
                         : "memory");
        st16(area + c.req, tag | (unsigned long long)i << 16, tag | (old & 2));
        st16(area + c.req + 16, tag, 0);
        if (!c.no_flag)
            *(volatile unsigned char *)(area + c.flag) = (unsigned char)(i & 1) | 2;
        if (c.delay)
            spin(c.delay);
        long long p0 = clock64();
        unsigned polls = 0;
        if (c.shape == CALL2) {
            /* Two polls in flight, of two lines holding the same answer: the second a little
             * later, so that an answer that just missed the first is seen without another
             * round trip. */
            unsigned long long a2, b2;
            asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];"
                         : "=l"(a), "=l"(b)
                         : "l"(area + c.head)
                         : "memory");
            spin(c.delta);
            asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];"
                         : "=l"(a2), "=l"(b2)
                         : "l"(area + c.head + 128)
                         : "memory");
            polls = 1;
            if ((a & 0xffff) != tag || (b & 0xffff) != tag) {
                a = a2;
                b = b2;
                polls = 2;
            }
            while ((a & 0xffff) != tag || (b & 0xffff) != tag) {
                asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];"
                             : "=l"(a), "=l"(b)
                             : "l"(area + c.head)
                             : "memory");
                polls++;
            }
            asm volatile("fence.acq_rel.sys;" ::: "memory");
            if (i > WARM) {
                out[1] += polls - 1;
                out[2] += polls == 1 && clock64() - p0 > 3600;
            }
        } else
            do {
                asm volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];"
                             : "=l"(a), "=l"(b)
                             : "l"(area + c.head)
                             : "memory");
                polls++;
            } while ((a & 0xffff) != tag || (b & 0xffff) != tag);
        if (c.shape != CALL2 && i > WARM) {
            out[1] += polls - 1;                           /* polls that found nothing */
            out[2] += polls == 1 && clock64() - p0 > 3600; /* one poll, but a slow one */
        }
        if (c.shape == CALL || c.shape == CALL2)
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(lock), "l"(old & ~1ull)
                         : "memory");
    }
    out[0] = native_gtime() - t0;
}

__global__ void pong(volatile unsigned *ping, volatile unsigned *reply, unsigned rounds)
{
    for (unsigned i = 1; i <= rounds; i++) {
        while (*ping != i)
            ;
        *reply = i;
        __threadfence_system();
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int serve(unsigned char *area, const struct config *c)
{
    for (unsigned i = 1; i <= ROUNDS; i++) {
        double start = now_us();
        if (c->shape == RAW || c->shape == RAW_VOL) {
            while (__atomic_load_n((unsigned *)(area + c->flag), __ATOMIC_ACQUIRE) != i)
                if (now_us() - start > 5e6)
                    return 1;
            __atomic_store_n((unsigned *)(area + c->head), i, __ATOMIC_RELEASE);
            continue;
        }
        unsigned long long tag = 0x8000u | (i & 0xffu),
                           *req = (unsigned long long *)(area + c->req);
        if (!c->poll_req)
            while ((__atomic_load_n(area + c->flag, __ATOMIC_ACQUIRE) & 1) != (i & 1))
                if (now_us() - start > 5e6)
                    return 1;
        if (c->prefetch == 1)
            __builtin_prefetch(req, 1, 3);
        else if (c->prefetch == 2)
            __builtin_prefetch(req, 0, 3);
        unsigned long long w0, w1, w2;
        do {
            w0 = __atomic_load_n(&req[0], __ATOMIC_ACQUIRE);
            w1 = __atomic_load_n(&req[1], __ATOMIC_ACQUIRE);
            w2 = __atomic_load_n(&req[2], __ATOMIC_ACQUIRE);
            if (now_us() - start > 5e6)
                return 1;
        } while ((w0 & 0xffff) != tag || (w1 & 0xffff) != tag || (w2 & 0xffff) != tag);
        if (c->zero) {
            __atomic_store_n(&req[0], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&req[1], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&req[2], 0, __ATOMIC_RELAXED);
        }
        if (c->host_ns)
            for (double t = now_us() + c->host_ns / 1e3; now_us() < t;)
                ;
        unsigned long long v = (w0 >> 16) + 1, *head = (unsigned long long *)(area + c->head);
        if (c->flush == 3) {
            __builtin_ia32_movnti64((long long *)&head[1], (long long)(tag | v << 16));
            __builtin_ia32_movnti64((long long *)&head[0], (long long)(tag | v << 16));
            __builtin_ia32_sfence();
            continue;
        }
        if (c->shape == CALL2) {
            __atomic_store_n(&head[17], tag | v << 16, __ATOMIC_RELAXED);
            __atomic_store_n(&head[16], tag | v << 16, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&head[1], tag | v << 16, __ATOMIC_RELAXED);
        __atomic_store_n(&head[0], tag | v << 16, __ATOMIC_RELEASE);
        if (c->flush == 1)
            asm volatile("clflushopt (%0)" ::"r"(head) : "memory");
        else if (c->flush == 2)
            asm volatile("clwb (%0)" ::"r"(head) : "memory");
    }
    return 0;
}

static double host_started(struct shared *h, volatile unsigned *dev_ping)
{
    h->ping[0] = h->ping[1] = 0;
    pong<<<1, 1>>>(dev_ping, dev_ping + 1, ROUNDS);
    RT_CHECK(cudaGetLastError());
    double t0 = 0;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        if (i == WARM + 1)
            t0 = now_us();
        __atomic_store_n(&h->ping[0], i, __ATOMIC_RELEASE);
        while (__atomic_load_n(&h->ping[1], __ATOMIC_ACQUIRE) != i)
            ;
    }
    double per = (now_us() - t0) / (ROUNDS - WARM);
    RT_CHECK(cudaDeviceSynchronize());
    return per;
}

int main(int argc, char **argv)
{
    int outer = argc > 1 ? atoi(argv[1]) : 3;
    /* Lines at 0, 64, 128 of one page, and the same three words a page apart. */
    /* Sweep: how the host leaves its answer (a plain store, then maybe a flush of its line, or
     * a non-temporal store) and the GPU's delay before its first poll. */
    static struct config cfg[64];
    int n = 0;
    cfg[n++] = (struct config){RAW, 0, 0, 4, 0, "flags in one line"};
    cfg[n++] = (struct config){RAW, 0, 0, 64, 0, "flags in two lines"};
    static const unsigned delays[] = {500, 700, 900, 1100, 1300};
    for (int h = 0; h < 2; h++) {
        const char *what = h ? "host 150 ns" : "host 0 ns";
        const char *what2 = h ? "host 150 ns, 2 lines" : "host 0 ns, 2 lines";
        for (int dl = 0; dl < 5; dl++)
            cfg[n++] = (struct config){CALL, 0, 64, 32, delays[dl], what, 0, 0, h ? 150u : 0u};
        for (int dl = 0; dl < 5; dl++)
            cfg[n++] = (struct config){CALL2,         0, 64, 32, delays[dl], what2, 0, 0,
                                       h ? 150u : 0u, 0, 0,  0,  200};
    }
    cfg[n++] = (struct config){CALL_NOLOCK, 0, 64, 32, 700, "host 0 ns, no lock"};
    cfg[n++] =
        (struct config){CALL, 0, 64, 32, 700, "host 0 ns, zeroes the request", 0, 0, 0, 0, 1};
    cfg[n++] = (struct config){CALL, 0, 64, 32, 700, "host 0 ns, prefetchw", 0, 0, 0, 0, 0, 1};
    cfg[n++] = (struct config){CALL, 0, 64, 32, 700, "host 0 ns, clwb", 0, 0, 0, 2};
    const char *names[] = {"raw", "raw-vol", "call", "call-nolock", "call2"};

    struct shared *h, *d;
    unsigned long long *out, *lock;
    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaHostAlloc((void **)&h, sizeof *h, cudaHostAllocMapped));
    RT_CHECK(cudaHostGetDevicePointer((void **)&d, h, 0));
    RT_CHECK(cudaMallocManaged((void **)&out, 8 * sizeof *out));
    RT_CHECK(cudaMalloc((void **)&lock, sizeof *lock));
    RT_CHECK(cudaMemset(lock, 0, sizeof *lock));
    double sum[64] = {0}, base_sum = 0;
    for (int r = 0; r < outer; r++) {
        double base = host_started(h, (volatile unsigned *)d->ping);
        base_sum += base;
        printf("poll_window: round %d: host-started raw ping-pong %.3f us\n", r, base);
        for (int k = 0; k < n; k++) {
            memset(h->area, 0, sizeof h->area);
            out[0] = out[1] = out[2] = 0;
            client<<<1, 1>>>(d->area, cfg[k], lock, out);
            RT_CHECK(cudaGetLastError());
            if (serve(h->area, &cfg[k]) != 0) {
                fprintf(stderr, "poll_window: %s: no request from the GPU\n", cfg[k].what);
                return 1;
            }
            RT_CHECK(cudaDeviceSynchronize());
            double us = out[0] / 1e3 / (ROUNDS - WARM);
            sum[k] += us;
            printf("poll_window: round %d: %-11s %-26s d%-5u %.3f us (%.2fx), %.1f%% empty, "
                   "%.1f%% slow\n",
                   r, names[cfg[k].shape], cfg[k].what, cfg[k].delay, us, us / base,
                   100.0 * out[1] / (ROUNDS - WARM), 100.0 * out[2] / (ROUNDS - WARM));
        }
    }
    printf("poll_window: mean host-started raw ping-pong %.3f us\n", base_sum / outer);
    for (int k = 0; k < n; k++)
        printf("poll_window: mean %-11s %-26s d%-5u %.3f us (%.2fx)\n", names[cfg[k].shape],
               cfg[k].what, cfg[k].delay, sum[k] / outer, sum[k] / base_sum);
    return 0;
}
