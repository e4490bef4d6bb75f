/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// l2_lat.cu - how long a device-scope atomic takes from one thread, by SM and by address: one
// block per SM, one at a time, times 32 dependent atomics on each of 64 words STRIDE words apart
// (default 512: 4 KiB).  On an H200 the times are bimodal, about 290 or about 500 cycles: the
// word's 4 KiB page sits in the L2 partition near the SM or in the far one, and the SMs fall in
// two groups with opposite patterns.  Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/l2_lat tools/probes/l2_lat.cu && /tmp/l2_lat [STRIDE_WORDS]
// (The "load" line times ld.relaxed.gpu of the same word, which L1 served in these runs.)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define NADDR 64
#define REP 32
static int STRIDE_WORDS = 512;
__global__ void lat(unsigned long long *buf, unsigned *ticket, unsigned *out, unsigned nblk, int stride)
{
    unsigned b = blockIdx.x, sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    while (atomicAdd(ticket, 0) != b) __nanosleep(100);
    for (int k = 0; k < NADDR; k++) {
        unsigned long long *w = buf + (size_t)k * stride;
        unsigned long long old = 0;
        asm volatile("atom.relaxed.gpu.global.or.b64 %0, [%1], 0;" : "=l"(old) : "l"(w) : "memory");
        long long t0 = clock64();
        for (int r = 0; r < REP; r++)
            asm volatile("atom.relaxed.gpu.global.or.b64 %0, [%1], 0;" : "=l"(old) : "l"(w + (old & 1)) : "memory");
        long long t1 = clock64();
        for (int r = 0; r < REP; r++)
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(old) : "l"(w + (old & 1)) : "memory");
        long long t2 = clock64();
        out[(b * NADDR + k) * 3 + 0] = sm;
        out[(b * NADDR + k) * 3 + 1] = (unsigned)((t1 - t0) / REP);
        out[(b * NADDR + k) * 3 + 2] = (unsigned)((t2 - t1) / REP);
    }
    __threadfence();
    atomicAdd(ticket, 1);
}
int main(int argc, char **argv)
{
    if (argc > 1) STRIDE_WORDS = atoi(argv[1]);
    int nsm; cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0);
    unsigned nblk = nsm;
    unsigned long long *buf; unsigned *ticket, *out;
    cudaMalloc(&buf, (size_t)NADDR * 512 * 8); cudaMemset(buf, 0, (size_t)NADDR * 512 * 8);
    cudaMalloc(&ticket, 4); cudaMemset(ticket, 0, 4);
    cudaMallocManaged(&out, (size_t)nblk * NADDR * 3 * 4);
    lat<<<nblk, 1>>>(buf, ticket, out, nblk, STRIDE_WORDS);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("fail\n"); return 1; }
    // histogram of atom latencies, and per-address: how many SMs see it fast (< 450)
    unsigned hist[32] = {0}, lhist[32] = {0};
    for (unsigned i = 0; i < nblk * NADDR; i++) {
        unsigned a = out[i * 3 + 1], l = out[i * 3 + 2];
        hist[a / 50 < 31 ? a / 50 : 31]++; lhist[l / 50 < 31 ? l / 50 : 31]++;
    }
    printf("atom latency histogram (50-cycle buckets):"); for (int i = 0; i < 32; i++) printf(" %u", hist[i]); printf("\n");
    printf("load latency histogram (50-cycle buckets):"); for (int i = 0; i < 32; i++) printf(" %u", lhist[i]); printf("\n");
    for (unsigned b = 0; b < nblk; b += 11) {
        printf("sm %3u atom:", out[(b * NADDR) * 3]);
        for (int k = 0; k < NADDR; k++) printf(" %u", out[(b * NADDR + k) * 3 + 1]);
        printf("\n");
    }
    // per address min over SMs and max over SMs
    unsigned lo_all = 0, hi_all = 0;
    for (int k = 0; k < NADDR; k++) {
        unsigned lo = ~0u, hi = 0;
        for (unsigned b = 0; b < nblk; b++) { unsigned a = out[(b * NADDR + k) * 3 + 1]; lo = a < lo ? a : lo; hi = a > hi ? a : hi; }
        lo_all += lo; hi_all += hi;
    }
    printf("mean over addresses: best SM %u cycles, worst SM %u cycles\n", lo_all / NADDR, hi_all / NADDR);
    // per SM: best address and mean
    for (unsigned b = 0; b < nblk; b += 11) {
        unsigned lo = ~0u, sum = 0;
        for (int k = 0; k < NADDR; k++) { unsigned a = out[(b * NADDR + k) * 3 + 1]; lo = a < lo ? a : lo; sum += a; }
        printf("sm %3u: best address %u, mean %u\n", out[b * NADDR * 3], lo, sum / NADDR);
    }
    return 0;
}
