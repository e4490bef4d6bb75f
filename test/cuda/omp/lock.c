/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* lock.c - OpenMP: cost of llvm_omp_target_lock_mem / unlock_mem for 4 KiB and 1 GiB (prefaulted),
 * interleaved in the same process, on the same buffer, with the bare driver calls
 * (cuMemHostRegister PORTABLE|DEVICEMAP / cuMemHostUnregister through libcuda.so.1), so that
 * the ratio shows the runtime's own overhead free of run-to-run noise.  native/register.cu is
 * the same measurement in a plain CUDA process. */
#include <dlfcn.h>

#include "omp_common.h"

typedef int (*reg_fn)(void *, size_t, unsigned);
typedef int (*unreg_fn)(void *);
typedef int (*retain_fn)(void **, int);
typedef int (*setcur_fn)(void *);

static reg_fn cu_register;
static unreg_fn cu_unregister;

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    retain_fn retain;
    setcur_fn set_current;
    void *ctx = NULL;

    if (lib == NULL) {
        fprintf(stderr, "lock: %s\n", dlerror());
        exit(1);
    }
    *(void **)&cu_register = dlsym(lib, "cuMemHostRegister_v2");
    *(void **)&cu_unregister = dlsym(lib, "cuMemHostUnregister");
    *(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&set_current = dlsym(lib, "cuCtxSetCurrent");
    if (!cu_register || !cu_unregister || !retain || !set_current || retain(&ctx, 0) != 0 ||
        set_current(ctx) != 0) {
        fprintf(stderr, "lock: cannot use the CUDA driver directly\n");
        exit(1);
    }
}

static void measure(const char *name, size_t size, int reps, double scale, const char *unit)
{
    char *buf = bench_host_alloc(size);
    double *t[4];
    int dev = omp_get_default_device();
    char fig[64];

    for (int k = 0; k < 4; k++)
        t[k] = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_us();
        if (cu_register(buf, size, 3) != 0) {
            fprintf(stderr, "lock: cuMemHostRegister(%zu) failed\n", size);
            exit(1);
        }
        double t1 = bench_now_us();
        cu_unregister(buf);
        double t2 = bench_now_us();
        void *p = llvm_omp_target_lock_mem(buf, size, dev);
        double t3 = bench_now_us();
        if (p == NULL) {
            fprintf(stderr, "lock: llvm_omp_target_lock_mem(%zu) returned NULL\n", size);
            exit(1);
        }
        llvm_omp_target_unlock_mem(buf, dev);
        double t4 = bench_now_us();
        t[0][r] = (t1 - t0) / scale;
        t[1][r] = (t2 - t1) / scale;
        t[2][r] = (t3 - t2) / scale;
        t[3][r] = (t4 - t3) / scale;
    }
    double raw_lock = bench_median(t[0], reps), raw_unlock = bench_median(t[1], reps);
    double lock = bench_median(t[2], reps), unlock = bench_median(t[3], reps);
    snprintf(fig, sizeof(fig), "lock_%s", name);
    bench_fig(fig, lock, unit);
    snprintf(fig, sizeof(fig), "unlock_%s", name);
    bench_fig(fig, unlock, unit);
    snprintf(fig, sizeof(fig), "lock_%s_driver", name);
    bench_fig(fig, raw_lock, unit);
    snprintf(fig, sizeof(fig), "unlock_%s_driver", name);
    bench_fig(fig, raw_unlock, unit);
    snprintf(fig, sizeof(fig), "lock_%s_over_driver", name);
    bench_fig(fig, lock / raw_lock, "x");
    snprintf(fig, sizeof(fig), "unlock_%s_over_driver", name);
    bench_fig(fig, unlock / raw_unlock, "x");
    for (int k = 0; k < 4; k++)
        free(t[k]);
    free(buf);
}

int main(void)
{
    omp_bench_require_gpu("lock");
    load_driver();
    measure("4k", 4096, 201, 1.0, "us");
    measure("1g", BENCH_GIB, 7, 1e3, "ms");
    return 0;
}
