/* malloc.c - OpenMP: device malloc+free pairs per second, 132 teams x 128 threads, 16 pairs of
 * 64 bytes per thread. */
#include <stdint.h>
#include <stdlib.h>

#include "omp_common.h"

static uintptr_t last[BENCH_PRINTF_LINES];

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
    return 0;
}
