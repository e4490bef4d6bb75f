/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/host/bench_host.c - timings of one x86_64 host plugin (whichever LD_LIBRARY_PATH finds),
 * printed as "key value" lines for bench_host_driver, which runs it with tether's plugin and with
 * LLVM's and prints the comparison.  Built with stock clang-16.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t size, int device_num);
void llvm_omp_target_free_host(void *ptr, int device_num);
void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

#define MIB (1 << 20)

static char *buf;
static int dev;

static void op_region_empty(void)
{
#pragma omp target
    {
    }
}

static void op_region_map(void)
{
#pragma omp target map(tofrom : buf [0:MIB])
    buf[0] += 1;
}

static void op_alloc_host(void)
{
    void *p = llvm_omp_target_alloc_host(64 * 1024, dev);

    llvm_omp_target_free_host(p, dev);
}

static void op_lock_unlock(void)
{
    void *p = llvm_omp_target_lock_mem(buf, 4 * MIB, dev);

    (void)p;
    llvm_omp_target_unlock_mem(buf, dev);
}

/* Best of `reps` rounds of `iters` calls, microseconds per call. */
static double time_us(void (*op)(void), int reps, int iters)
{
    double best = 1e30;

    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime(), t;

        for (int i = 0; i < iters; i++) {
            op();
        }
        t = (omp_get_wtime() - t0) * 1e6 / iters;
        best = t < best ? t : best;
    }
    return best;
}

int main(void)
{
    int initial = 1;

    buf = aligned_alloc(4096, 4 * MIB);
    dev = omp_get_default_device();
    if (buf == NULL || omp_get_num_devices() == 0) {
        fprintf(stderr, "bench_host: no offload device\n");
        return 1;
    }
    memset(buf, 1, 4 * MIB);
#pragma omp target map(from : initial)
    initial = omp_is_initial_device();
    if (initial) {
        fprintf(stderr, "bench_host: not offloaded\n");
        return 1;
    }
    printf("region_empty_us %.3f\n", time_us(op_region_empty, 5, 2000));
    printf("region_map_1mib_us %.3f\n", time_us(op_region_map, 5, 200));
    printf("alloc_host_free_64k_us %.3f\n", time_us(op_alloc_host, 5, 2000));
    printf("lock_unlock_4mib_us %.3f\n", time_us(op_lock_unlock, 5, 2000));
    free(buf);
    return 0;
}
