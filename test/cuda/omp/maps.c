/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* maps.c - OpenMP: target regions that map data, and small `target update`s: what libomptarget
 * does around every region of an ordinary program (allocate device memory for the mapped
 * variables, copy in, launch, copy out, free).  Medians of single operations. */
#include "omp_common.h"

enum { N = 2000 };
static double t[N];
static double arr[8192]; /* 64 KiB */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_us(void)
{
    qsort(t, N, sizeof(t[0]), cmp_double);
    return t[N / 2];
}

/* `target update to` and then `from` of arr[0 : count] (mapped), N times each. */
static void time_updates(int count, const char *to_name, const char *from_name)
{
    for (int i = 0; i < N; i++) {
        double t0 = bench_now_us();
#pragma omp target update to(arr [0:count])
        t[i] = bench_now_us() - t0;
    }
    bench_fig(to_name, median_us(), "us");
    for (int i = 0; i < N; i++) {
        double t0 = bench_now_us();
#pragma omp target update from(arr [0:count])
        t[i] = bench_now_us() - t0;
    }
    bench_fig(from_name, median_us(), "us");
}

int main(void)
{
    int x = 0;

    omp_bench_require_gpu("maps");
    for (int i = 0; i < N; i++) {
        double t0 = bench_now_us();
#pragma omp target map(tofrom : x)
        x++;
        t[i] = bench_now_us() - t0;
    }
    if (x != N) {
        fprintf(stderr, "maps: x is %d after %d regions, not %d\n", x, N, N);
        return 1;
    }
    bench_fig("region_map_scalar", median_us(), "us");
    for (int i = 0; i < 8192; i++)
        arr[i] = i;
    for (int i = 0; i < N; i++) {
        double t0 = bench_now_us();
#pragma omp target map(to : arr [0:8192]) map(tofrom : x)
        x += (int)arr[i % 8192] - i % 8192 + 1;
        t[i] = bench_now_us() - t0;
    }
    if (x != 2 * N) {
        fprintf(stderr, "maps: x is %d, not %d: the array did not arrive\n", x, 2 * N);
        return 1;
    }
    bench_fig("region_map_64k_scalar", median_us(), "us");
#pragma omp target enter data map(alloc : arr [0:8192])
    time_updates(1, "update_to_8b", "update_from_8b");
    time_updates(8192, "update_to_64k", "update_from_64k");
#pragma omp target exit data map(delete : arr [0:8192])
    return 0;
}
