/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_printf.c - many teams x threads printing from target regions with
 * every common conversion (TEAMS x THREADS streams of lines over the teams and threads the
 * runtime gives; a CPU "device" caps threads per team at its core count).  `offload_printf expect`
 * prints the same lines with the host's printf (the reference); `offload_printf run` prints them
 * from target regions and needs a server attached; `run-any` does not.
 * run_offload.sh compares the two line by line and checks each thread's order.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tether/rpc_opcodes.h"

/* LLVM 16 runs a GPU parallel region with 1 thread when fewer than 32 are asked for, so GPU
 * builds ask for two warps per team. */
#define TEAMS 6
#if defined(SVC_GPU)
#define THREADS 64
#else
#define THREADS 6
#endif
#define LINES 30

/* Sixteen %s and 130 long longs: more than 12 strings and more than 1 KiB of arguments. */
#define S4 "%s %s %s %s "
#define L10 "%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "
#define LL10(x) x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9

#pragma omp declare target
static void emit(int tm, int th, int n)
{
    static const char *words[4] = {"alpha", "", "a longer string, with spaces", "z"};
    const char *w = words[n % 4];
    switch (n % 10) {
    case 0:
        printf("T%d.%d n%d ints %d %i %u %x %X %o [%6d] [%-6d] [%06d] [%+d] [% d]\n", tm, th, n,
               -n * 77, n, (unsigned)n * 3u, (unsigned)n * 255u, (unsigned)n * 4095u, (unsigned)n,
               n, n, n, n, n);
        break;
    case 1:
        printf("T%d.%d n%d longs %ld %lu %lld %llx %zu %zd %jd %td %hhd %hu\n", tm, th, n,
               -123456789012L * n, 4000000000UL + (unsigned long)n, -(long long)n << 40,
               0xfeedfacecafeULL + (unsigned long long)n, (size_t)n * 1000u, (ssize_t)-n,
               (intmax_t)n << 35, (ptrdiff_t)(-n - 1), (signed char)(n * 9), (unsigned short)n);
        break;
    case 2:
        printf("T%d.%d n%d floats %f %.2f %e %E %g %G %a [%10.3f] [%-12.4e]\n", tm, th, n,
               n * 0.125, -n / 3.0, n * 1.5e12, n * 2.5e-12, n * 98.7654, 1e-6 * n, n * 0.75,
               n / 7.0, -n * 123.0);
        break;
    case 3:
        printf("T%d.%d n%d strs [%s] [%12s] [%-12s] [%.4s] [%*s] [%.*s] [%s]\n", tm, th, n, w, w, w,
               w, 9, w, 3, w, (const char *)0);
        break;
    case 4:
        printf("T%d.%d n%d chars %c%c [%4c] [%-4c] 100%% [%#x] [%#o] [%p]\n", tm, th, n,
               'a' + n % 26, 'Z' - n % 26, '*', '+', (unsigned)n + 1u, (unsigned)n + 8u,
               (void *)(uintptr_t)(0x1000u * (unsigned)(n + 1)));
        break;
    case 5:
        printf("T%d.%d n%d star [%*d] [%-*d] [%*.*f] [%.*e]\n", tm, th, n, 7, n, 5, n, 10, 2,
               n * 3.25, 3, n * 1e7);
        break;
    case 6:
#if defined(SVC_GPU) /* no long double in GPU code */
        printf("T%d.%d n%d double %f %g %.3e\n", tm, th, n, (double)n / 3, (double)n * 1e100,
               (double)n * 7);
#else
        printf("T%d.%d n%d long double %Lf %Lg %.3Le\n", tm, th, n, (long double)n / 3,
               (long double)n * 1e100L, (long double)n * 7);
#endif
        break;
    case 7: /* numbered arguments, the thousands flag (the host's locale: C) */
        printf(
            "T%3$d.%2$d n%1$d numbered [%5$s] [%4$*6$lld] [%4$-*6$llx] [%7$.*6$f] %8$'d %4$'lld\n",
            n, th, tm, (long long)n * 1000003, w, 9, n / 7.0, n * 1234567);
        break;
    case 8: {
        long long b = (long long)n << 33;
        printf(
            "T%d.%d n%d many " S4 S4 S4 S4 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10 "\n",
            tm, th, n, w, "b", w, "d", w, "f", w, "h", w, "j", w, "l", w, "n", w, "p", LL10(b),
            LL10(b + 10), LL10(b + 20), LL10(b + 30), LL10(b + 40), LL10(b + 50), LL10(b + 60),
            LL10(b + 70), LL10(b + 80), LL10(b + 90), LL10(b + 100), LL10(b + 110), LL10(b + 120));
        break;
    }
    default:
        printf("T%d.%d n%d plain text that is long enough to need more than one packet of "
               "sixty-four bytes, printed by team %d thread %d\n",
               tm, th, n, tm, th);
        break;
    }
}
#pragma omp end declare target

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "run";
    if (strcmp(mode, "expect") == 0) {
        for (int tm = 0; tm < TEAMS; tm++)
            for (int th = 0; th < THREADS; th++)
                for (int n = 0; n < LINES; n++)
                    emit(tm, th, n);
        printf("host after the target region\n");
        return 0;
    }
    int attached = 0;
#pragma omp target map(from : attached)
    attached = tether_rpc_attached();
    if (strcmp(mode, "run") == 0 && !attached) {
        fprintf(stderr, "offload_printf: no RPC server attached to the image\n");
        return 1;
    }
    /* TEAMS x THREADS streams of lines; each stream runs on one thread, in order. */
#pragma omp target teams distribute parallel for num_teams(TEAMS) thread_limit(THREADS)
    for (int i = 0; i < TEAMS * THREADS; i++)
        for (int n = 0; n < LINES; n++)
            emit(i / THREADS, i % THREADS, n);
    printf("host after the target region\n");
    return 0;
}
