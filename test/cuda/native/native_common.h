/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * native_common.h - error checks for the CUDA native baselines and probes.
 */
#ifndef TETHER_TEST_CUDA_NATIVE_COMMON_H
#define TETHER_TEST_CUDA_NATIVE_COMMON_H

#include <cuda.h>
#include <cuda_runtime.h>

#include "../bench_common.h"

#define RT_CHECK(call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define DRV_CHECK(call)                                                                            \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_);                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#if defined(__CUDACC__)
/* The GPU's global timer in ns (probes time loops on the device with it). */
__device__ __forceinline__ unsigned long long native_gtime(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

#endif /* TETHER_TEST_CUDA_NATIVE_COMMON_H */
