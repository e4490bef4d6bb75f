/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// register.cu - CUDA native: cost of cuMemHostRegister / cuMemHostUnregister
// (PORTABLE|DEVICEMAP) for 4 KiB and 1 GiB of prefaulted memory.
#include "native_common.h"

static void measure(const char *lock_name, const char *unlock_name, size_t size, int reps,
                    double scale, const char *unit)
{
    char *host = (char *)bench_host_alloc(size);
    double *lock_t = (double *)calloc((size_t)reps, sizeof(double));
    double *unlock_t = (double *)calloc((size_t)reps, sizeof(double));

    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_us();
        DRV_CHECK(cuMemHostRegister(host, size,
                                    CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
        double t1 = bench_now_us();
        DRV_CHECK(cuMemHostUnregister(host));
        lock_t[r] = (t1 - t0) / scale;
        unlock_t[r] = (bench_now_us() - t1) / scale;
    }
    bench_fig(lock_name, bench_median(lock_t, reps), unit);
    bench_fig(unlock_name, bench_median(unlock_t, reps), unit);
    free(lock_t);
    free(unlock_t);
    free(host);
}

int main(void)
{
    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaFree(0)); // create the context
    measure("lock_4k", "unlock_4k", 4096, 201, 1.0, "us");
    measure("lock_1g", "unlock_1g", BENCH_GIB, 5, 1e3, "ms");
    return 0;
}
