/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* jit.c - built with -fopenmp-target-jit (scripts/device-bundle.sh): the device image is LLVM
 * bitcode, compiled for the GPU when the program starts using it.  Checks that the regions run on
 * the GPU and compute the right results (an SPMD loop and a generic region), and prints the time
 * of the first region (image load and compilation included) and of later ones. */
#include "omp_common.h"

int main(void)
{
    enum { N = 1 << 20 };
    static float x[N], y[N];
    double t0, first_ms, later_us;
    int on_host = 1, bad = 0;
    long count = 0;

    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000);
        y[i] = 1.0f;
    }
    t0 = bench_now_us();
#pragma omp target map(from : on_host)
    on_host = omp_is_initial_device();
    first_ms = (bench_now_us() - t0) / 1000.0;

#pragma omp target teams distribute parallel for map(to : x) map(tofrom : y)
    for (int i = 0; i < N; i++)
        y[i] = 2.0f * x[i] + y[i];
    for (int i = 0; i < N; i++)
        bad += y[i] != 2.0f * (float)(i % 1000) + 1.0f;

#pragma omp target teams num_teams(1) map(tofrom : count)
    {
        for (int i = 0; i < 1000; i++)
            count += i;
    }

    t0 = bench_now_us();
    for (int r = 0; r < 100; r++) {
#pragma omp target
        {
        }
    }
    later_us = (bench_now_us() - t0) / 100.0;

    printf(
        "jit: %d device(s), regions ran on the %s, %d wrong element(s), count %ld (want 499500)\n",
        omp_get_num_devices(), on_host ? "HOST" : "GPU", bad, count);
    bench_fig("jit_first_region", first_ms, "ms");
    bench_fig("jit_empty_region", later_us, "us");
    return on_host || bad != 0 || count != 499500;
}
