/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda_partial.c - a libcuda.so.1 that exports only the first few entry
 * points: cuda_driver_open() must fail naming the first one missing.
 */
#include "cuda_driver.h"

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuGetErrorName(CUresult error, const char **str);

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
    *version = 13000;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **str)
{
    (void)error;
    *str = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}
