/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// printf.cu - CUDA native: device printf, 132 blocks x 128 threads, one line
// each, timed from launch until the lines were flushed at the sync.
#include <cstdio>

#include "native_common.h"

__global__ void say(void)
{
    printf("tether-line team %d thread %d\n", blockIdx.x, threadIdx.x);
}

int main(void)
{
    struct bench_capture cap;

    RT_CHECK(cudaSetDevice(0));
    // The FIFO must hold every line; the default (1 MiB) can drop some.
    RT_CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 64u << 20));
    say<<<1, 1>>>();
    RT_CHECK(cudaDeviceSynchronize()); // warm-up (module load, FIFO allocation)
    bench_capture_begin(&cap);
    double t0 = bench_now_us();
    say<<<BENCH_PRINTF_TEAMS, BENCH_PRINTF_THREADS>>>();
    RT_CHECK(cudaDeviceSynchronize());
    double ms = (bench_now_us() - t0) / 1e3;
    long lines = bench_capture_end(&cap, "tether-line");
    bench_fig("printf_132x128", ms, "ms");
    bench_fig("printf_rate", BENCH_PRINTF_LINES / (ms * 1e3), "Mlines/s");
    bench_fig("printf_first_output", bench_capture_first_ms(&cap), "ms");
    bench_fig("printf_lines_lost", (double)(BENCH_PRINTF_LINES - lines), "lines");
    return 0;
}
