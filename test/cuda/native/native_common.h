/*
 * native_common.h - error checks for the CUDA native baselines.
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

#endif /* TETHER_TEST_CUDA_NATIVE_COMMON_H */
