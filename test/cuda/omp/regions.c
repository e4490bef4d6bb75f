/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* regions.c - OpenMP: what ordinary offloaded loops cost, maps included: a `target teams
 * distribute parallel for` that maps an array tofrom (2, 16 and 128 MiB), a sum reduction over
 * one mapped `to`, and four `nowait` regions on resident data joined by a taskwait.  Medians. */
#include "omp_common.h"

enum { REPS = 50 };
static double t[REPS];

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_us(int n)
{
    qsort(t, (size_t)n, sizeof(t[0]), cmp_double);
    return t[n / 2];
}

int main(void)
{
    char name[64];

    omp_bench_require_gpu("regions");
    for (int k = 0; k < 3; k++) {
        size_t n = k == 0 ? (size_t)1 << 18 : k == 1 ? (size_t)1 << 21 : (size_t)1 << 24;
        int reps = k == 2 ? 10 : REPS;
        double *a = malloc(n * sizeof(*a));
        if (a == NULL)
            return 1;
        for (size_t i = 0; i < n; i++)
            a[i] = 1.0;
        for (int r = 0; r < reps; r++) {
            double t0 = bench_now_us();
#pragma omp target teams distribute parallel for map(tofrom : a [0:n])
            for (size_t i = 0; i < n; i++)
                a[i] = a[i] * 2.0;
            t[r] = bench_now_us() - t0;
        }
        if (a[0] != (double)(1ull << reps) || a[n - 1] != a[0]) {
            fprintf(stderr, "regions: a[] is %g / %g after %d doublings\n", a[0], a[n - 1], reps);
            return 1;
        }
        snprintf(name, sizeof(name), "region_tofrom_%zumib", (n * sizeof(double)) >> 20);
        bench_fig(name, median_us(reps), "us");
        double sum = 0;
        for (int r = 0; r < reps; r++) {
            double t0 = bench_now_us();
            double s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(to : a [0:n])
            for (size_t i = 0; i < n; i++)
                s += a[i];
            t[r] = bench_now_us() - t0;
            sum = s;
        }
        if (sum != a[0] * (double)n) {
            fprintf(stderr, "regions: sum %g, expected %g\n", sum, a[0] * (double)n);
            return 1;
        }
        snprintf(name, sizeof(name), "reduce_to_%zumib", (n * sizeof(double)) >> 20);
        bench_fig(name, median_us(reps), "us");
        free(a);
    }
    size_t n = (size_t)1 << 20;
    double *b[4];
    for (int k = 0; k < 4; k++) {
        b[k] = calloc(n, sizeof(double));
        if (b[k] == NULL)
            return 1;
        double *p = b[k];
#pragma omp target enter data map(to : p [0:n])
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now_us();
        for (int k = 0; k < 4; k++) {
            double *p = b[k];
#pragma omp target teams distribute parallel for nowait
            for (size_t i = 0; i < n; i++)
                p[i] += 1.0;
        }
#pragma omp taskwait
        t[r] = bench_now_us() - t0;
    }
    bench_fig("nowait4_8mib", median_us(REPS), "us");
    for (int k = 0; k < 4; k++) {
        double *p = b[k];
#pragma omp target exit data map(from : p [0:n])
        if (p[0] != REPS || p[n - 1] != REPS) {
            fprintf(stderr, "regions: nowait region %d ran %g times, not %d\n", k, p[0], REPS);
            return 1;
        }
        free(p);
    }
    return 0;
}
