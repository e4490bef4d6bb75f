/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch.c - OpenMP: empty target region latency (launch + completion). */
#include "omp_common.h"

int main(void)
{
    enum { BATCHES = 11, PER_BATCH = 2000 };
    double batch_us[BATCHES];

    omp_bench_require_gpu("launch");
    for (int i = 0; i < 1000; i++) {
#pragma omp target
        {
        }
    }
    for (int b = 0; b < BATCHES; b++) {
        double t0 = bench_now_us();
        for (int i = 0; i < PER_BATCH; i++) {
#pragma omp target
            {
            }
        }
        batch_us[b] = (bench_now_us() - t0) / PER_BATCH;
    }
    bench_fig("launch_empty", bench_median(batch_us, BATCHES), "us");
    return 0;
}
