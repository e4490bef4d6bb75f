// malloc.cu - CUDA native: device malloc+free pairs per second, 132 blocks x
// 128 threads, 16 pairs of 64 bytes per thread.
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
    RT_CHECK(cudaFree(failures));
    return 0;
}
