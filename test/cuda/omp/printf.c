/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* printf.c - OpenMP: printf from 132 teams x 128 threads, one line each, timed until the target
 * region returned; lines that never reached stdout are counted as lost, and the time the first
 * line reached stdout is reported (before the end: output while the kernel runs).  Built twice:
 * plain (CUDA's vprintf) and with -ltether-device (printf over tether's RPC). */
#include "omp_common.h"

int main(void)
{
    struct bench_capture cap;

    omp_bench_require_gpu("printf");
#pragma omp target
    {
        printf("warm-up\n");
    }
    fflush(stdout);
    bench_capture_begin(&cap);
    double t0 = bench_now_us();
#pragma omp target teams distribute parallel for num_teams(BENCH_PRINTF_TEAMS)                     \
    thread_limit(BENCH_PRINTF_THREADS)
    for (int i = 0; i < BENCH_PRINTF_LINES; i++)
        printf("tether-line team %d thread %d\n", omp_get_team_num(), omp_get_thread_num());
    double ms = (bench_now_us() - t0) / 1e3;
    long lines = bench_capture_end(&cap, "tether-line");
    bench_fig("printf_132x128", ms, "ms");
    bench_fig("printf_rate", BENCH_PRINTF_LINES / (ms * 1e3), "Mlines/s");
    bench_fig("printf_first_output", bench_capture_first_ms(&cap), "ms");
    bench_fig("printf_lines_lost", (double)(BENCH_PRINTF_LINES - lines), "lines");
    return 0;
}
