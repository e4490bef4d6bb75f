/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// malloc.cu - CUDA native: device malloc+free pairs per second, 132 blocks x
// 128 threads, 16 pairs of 64 bytes per thread; then one BENCH_LIVE_BYTES block
// per thread, all live at once (16.5 MiB, beyond the default 8 MiB heap, which
// is left as it is: the figure shows what a plain program gets).
#include "native_common.h"

__global__ void churn(int *failures)
{
    for (int i = 0; i < BENCH_MALLOC_PER_THREAD; i++) {
        char *p = (char *)malloc(64);
        if (p == NULL) {
            atomicAdd(failures, 1);
            continue;
        }
        p[0] = (char)i;
        free(p);
    }
}

__global__ void live_alloc(char **live, int *failures)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    char *p = (char *)malloc(BENCH_LIVE_BYTES);
    live[i] = p;
    if (p == NULL) {
        atomicAdd(failures, 1);
        return;
    }
    p[0] = (char)i;
    p[BENCH_LIVE_BYTES - 1] = (char)(i >> 8);
}

__global__ void live_free(char **live, int *corrupt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    char *p = live[i];
    if (p == NULL)
        return;
    if (p[0] != (char)i || p[BENCH_LIVE_BYTES - 1] != (char)(i >> 8))
        atomicAdd(corrupt, 1);
    free(p);
}

int main(void)
{
    int *failures;
    const double pairs = (double)BENCH_PRINTF_LINES * BENCH_MALLOC_PER_THREAD;
    double best = 0;

    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaMallocManaged(&failures, sizeof(int)));
    *failures = 0;
    churn<<<1, 1>>>(failures);
    RT_CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_us();
        churn<<<BENCH_PRINTF_TEAMS, BENCH_PRINTF_THREADS>>>(failures);
        RT_CHECK(cudaDeviceSynchronize());
        double rate = pairs / (bench_now_us() - t0); // pairs per us = M pairs/s
        if (rate > best)
            best = rate;
    }
    bench_fig("malloc_free", best, "Mpairs/s");
    bench_fig("malloc_failures", (double)*failures, "calls");
    char **live;
    int *corrupt;
    RT_CHECK(cudaMalloc(&live, sizeof(char *) * BENCH_PRINTF_LINES));
    RT_CHECK(cudaMallocManaged(&corrupt, sizeof(int)));
    *failures = 0;
    *corrupt = 0;
    live_alloc<<<BENCH_PRINTF_TEAMS, BENCH_PRINTF_THREADS>>>(live, failures);
    live_free<<<BENCH_PRINTF_TEAMS, BENCH_PRINTF_THREADS>>>(live, corrupt);
    RT_CHECK(cudaDeviceSynchronize());
    bench_fig("malloc_live", (double)BENCH_PRINTF_LINES * BENCH_LIVE_BYTES / 1048576.0, "MiB");
    bench_fig("malloc_live_failures", (double)*failures, "calls");
    bench_fig("malloc_live_corrupt", (double)*corrupt, "blocks");
    RT_CHECK(cudaFree(live));
    RT_CHECK(cudaFree(corrupt));
    RT_CHECK(cudaFree(failures));
    return 0;
}
