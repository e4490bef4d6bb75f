/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * omp_common.h - helpers for the OpenMP GPU benchmarks (clang-16, sm_90).
 */
#ifndef TETHER_TEST_CUDA_OMP_COMMON_H
#define TETHER_TEST_CUDA_OMP_COMMON_H

#include <omp.h>

#include "../bench_common.h"

/* libomptarget 16 exports these but no header declares them. */
void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

/* Exit unless target regions really run on a GPU (with no plugin, libomptarget silently runs them
 * on the host, and every figure would be meaningless). */
static inline void omp_bench_require_gpu(const char *prog)
{
    int on_host = 1;

#pragma omp target map(from : on_host)
    {
        on_host = omp_is_initial_device();
    }
    if (on_host || omp_get_num_devices() < 1) {
        fprintf(stderr, "%s: target regions run on the host (%d devices): no GPU plugin loaded\n",
                prog, omp_get_num_devices());
        exit(1);
    }
}

#endif /* TETHER_TEST_CUDA_OMP_COMMON_H */
