/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* malloc.c - OpenMP: device malloc+free pairs per second, 132 teams x 128 threads, 16 pairs of
 * 64 bytes per thread; then every thread holds BENCH_LIVE_BYTES at once (16.5 MiB, beyond CUDA's
 * default 8 MiB device heap) across two target regions, data checked.  Built twice: plain
 * (CUDA's malloc) and with -ltether-device (tether's device heap). */
#include <stdint.h>
#include <stdlib.h>

#include "omp_common.h"

static uintptr_t last[BENCH_PRINTF_LINES];
static uintptr_t live[BENCH_PRINTF_LINES];

/* One block per thread, all live at once: allocated and stamped in one target region, checked
 * and freed in the next. */
static void live_phase(void)
{
    int fails = 0, corrupt = 0;

#pragma omp target teams distribute parallel for num_teams(BENCH_PRINTF_TEAMS)                     \
    thread_limit(BENCH_PRINTF_THREADS) map(tofrom                                                  \
                                           : fails) map(from                                       \
                                                        : live)
    for (int i = 0; i < BENCH_PRINTF_LINES; i++) {
        char *p = malloc(BENCH_LIVE_BYTES);
        live[i] = (uintptr_t)p;
        if (p == NULL) {
#pragma omp atomic
            fails++;
            continue;
        }
        p[0] = (char)i;
        p[BENCH_LIVE_BYTES - 1] = (char)(i >> 8);
    }
#pragma omp target teams distribute parallel for num_teams(BENCH_PRINTF_TEAMS)                     \
    thread_limit(BENCH_PRINTF_THREADS) map(tofrom                                                  \
                                           : corrupt) map(to                                       \
                                                          : live)
    for (int i = 0; i < BENCH_PRINTF_LINES; i++) {
        char *p = (char *)live[i];
        if (p == NULL)
            continue;
        if (p[0] != (char)i || p[BENCH_LIVE_BYTES - 1] != (char)(i >> 8)) {
#pragma omp atomic
            corrupt++;
        }
        free(p);
    }
    bench_fig("malloc_live", (double)BENCH_PRINTF_LINES * BENCH_LIVE_BYTES / 1048576.0, "MiB");
    bench_fig("malloc_live_failures", (double)fails, "calls");
    bench_fig("malloc_live_corrupt", (double)corrupt, "blocks");
}

static double run(int *failures)
{
    int fails = 0;
    double t0 = bench_now_us();

    /* Each address is stored to device memory the host reads back, so the compiler cannot drop
     * the malloc/free pair (clang removes a pair whose pointer does not escape). */
#pragma omp target teams distribute parallel for num_teams(BENCH_PRINTF_TEAMS)                     \
    thread_limit(BENCH_PRINTF_THREADS) map(tofrom                                                  \
                                           : fails) map(from                                       \
                                                        : last)
    for (int i = 0; i < BENCH_PRINTF_LINES; i++) {
        for (int j = 0; j < BENCH_MALLOC_PER_THREAD; j++) {
            char *p = malloc(64);
            if (p == NULL) {
#pragma omp atomic
                fails++;
                continue;
            }
            p[0] = (char)j;
            last[i] = (uintptr_t)p;
            free(p);
        }
    }
    double us = bench_now_us() - t0;
    if (fails == 0 && (last[0] == 0 || last[BENCH_PRINTF_LINES - 1] == 0))
        fprintf(stderr, "malloc: addresses did not reach the host\n");
    *failures += fails;
    return (double)BENCH_PRINTF_LINES * BENCH_MALLOC_PER_THREAD / us;
}

int main(void)
{
    int failures = 0;
    double best = 0;

    omp_bench_require_gpu("malloc");
    run(&failures);
    failures = 0;
    for (int r = 0; r < 5; r++) {
        double rate = run(&failures);
        if (rate > best)
            best = rate;
    }
    bench_fig("malloc_free", best, "Mpairs/s");
    bench_fig("malloc_failures", (double)failures, "calls");
    live_phase();
    return 0;
}
