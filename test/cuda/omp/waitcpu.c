/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * waitcpu.c - OpenMP: what waiting for the GPU costs the host, in CPU time and in latency.
 *
 *   wait_cpu_2s     host CPU time of the whole process (every thread's, getrusage) during one
 *                   target region whose kernel runs 2 s, in % of one core
 *   wait_2s_region  that region's time, s (the kernel's 2 s and the launch)
 *   wait_empty      an empty target region, us: the median of 11 batches of 2000
 *   wait_50us, wait_100us, wait_1ms
 *                   a region whose kernel runs 50 us, 100 us, 1 ms, us: the median of 301, 301,
 *                   101 regions, each timed alone, after 50 to learn from
 *   wait_cpu_50us, wait_cpu_100us, wait_cpu_1ms
 *                   host CPU time of the process during those timed regions, in % of one core
 *
 * A kernel's time is the device's own: one thread reads the GPU's global nanosecond timer
 * (%globaltimer) until the time has passed, so the optimiser cannot shorten it.  Nothing is mapped
 * (the duration goes in firstprivate): each region is a launch and the wait for it.
 * scripts/device-run.sh (step `wait`) runs it under LLVM 16's plugin and under tether's with
 * TETHER_WAIT=spin and =adaptive.
 */
#include <sys/resource.h>

#include "omp_common.h"

#pragma omp declare target
static unsigned long long wait_device_ns(void)
{
    unsigned long long t;
#if defined(__NVPTX__)
    __asm__ __volatile__("mov.u64 %0, %%globaltimer;" : "=l"(t));
#else
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    t = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
#endif
    return t;
}
#pragma omp end declare target

/* One target region whose kernel runs `ns` nanoseconds of device time. */
static void busy_region(unsigned long long ns)
{
#pragma omp target firstprivate(ns)
    {
        unsigned long long t0 = wait_device_ns();

        while (wait_device_ns() - t0 < ns) {
        }
    }
}

/* CPU time of the process (all threads), seconds, at microsecond resolution. */
static double rusage_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Median time of `n` regions of `ns` each, timed alone, after `warm` untimed ones, us; the
 * process's CPU during the timed ones in *cpu_pct, % of one core. */
static double region_median_us(unsigned long long ns, int warm, int n, double *cpu_pct)
{
    double *t = malloc((size_t)n * sizeof(*t));
    double median, cpu0, wall0;

    if (t == NULL)
        exit(1);
    for (int i = 0; i < warm; i++)
        busy_region(ns);
    cpu0 = rusage_cpu_s();
    wall0 = bench_now_us();
    for (int i = 0; i < n; i++) {
        double t0 = bench_now_us();

        busy_region(ns);
        t[i] = bench_now_us() - t0;
    }
    *cpu_pct = 100.0 * (rusage_cpu_s() - cpu0) / ((bench_now_us() - wall0) / 1e6);
    median = bench_median(t, n);
    free(t);
    return median;
}

int main(void)
{
    enum { BATCHES = 11, PER_BATCH = 2000 };
    double batch_us[BATCHES], cpu0, t0, cpu, wall;

    omp_bench_require_gpu("waitcpu");
    busy_region(1000); /* the kernel's first launch */

    /* (a) a 2 s kernel: what the waiting thread costs */
    cpu0 = rusage_cpu_s();
    t0 = bench_now_us();
    busy_region(2000000000ull);
    wall = (bench_now_us() - t0) / 1e6;
    cpu = rusage_cpu_s() - cpu0;
    bench_fig("wait_cpu_2s", 100.0 * cpu / wall, "%");
    bench_fig("wait_2s_region", wall, "s");

    /* (b) empty regions, as launch.c measures them */
    for (int i = 0; i < 1000; i++) {
#pragma omp target
        {
        }
    }
    for (int b = 0; b < BATCHES; b++) {
        double b0 = bench_now_us();

        for (int i = 0; i < PER_BATCH; i++) {
#pragma omp target
            {
            }
        }
        batch_us[b] = (bench_now_us() - b0) / PER_BATCH;
    }
    bench_fig("wait_empty", bench_median(batch_us, BATCHES), "us");

    /* (c) kernels that repeat */
    static const struct {
        const char *name, *cpu_name;
        unsigned long long ns;
        int n;
    } repeats[] = {{"wait_50us", "wait_cpu_50us", 50000, 301},
                   {"wait_100us", "wait_cpu_100us", 100000, 301},
                   {"wait_1ms", "wait_cpu_1ms", 1000000, 101}};
    for (size_t i = 0; i < sizeof(repeats) / sizeof(repeats[0]); i++) {
        double pct, us = region_median_us(repeats[i].ns, 50, repeats[i].n, &pct);

        bench_fig(repeats[i].name, us, "us");
        bench_fig(repeats[i].cpu_name, pct, "%");
    }
    return 0;
}
