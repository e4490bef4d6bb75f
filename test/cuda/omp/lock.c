/* lock.c - OpenMP: cost of llvm_omp_target_lock_mem / unlock_mem for 4 KiB and 1 GiB (prefaulted);
 * compare with cuMemHostRegister/Unregister alone (native/register.cu). */
#include "omp_common.h"

static void measure(const char *lock_name, const char *unlock_name, size_t size, int reps,
                    double scale, const char *unit)
{
    char *buf = bench_host_alloc(size);
    double *lock_t = calloc((size_t)reps, sizeof(double));
    double *unlock_t = calloc((size_t)reps, sizeof(double));
    int dev = omp_get_default_device();

    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_us();
        void *p = llvm_omp_target_lock_mem(buf, size, dev);
        double t1 = bench_now_us();
        if (p == NULL) {
            fprintf(stderr, "lock: llvm_omp_target_lock_mem(%zu) returned NULL\n", size);
            exit(1);
        }
        llvm_omp_target_unlock_mem(buf, dev);
        lock_t[r] = (t1 - t0) / scale;
        unlock_t[r] = (bench_now_us() - t1) / scale;
    }
    bench_fig(lock_name, bench_median(lock_t, reps), unit);
    bench_fig(unlock_name, bench_median(unlock_t, reps), unit);
    free(lock_t);
    free(unlock_t);
    free(buf);
}

int main(void)
{
    omp_bench_require_gpu("lock");
    measure("lock_4k", "unlock_4k", 4096, 201, 1.0, "us");
    measure("lock_1g", "unlock_1g", BENCH_GIB, 5, 1e3, "ms");
    return 0;
}
