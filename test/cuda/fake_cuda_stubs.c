/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda_stubs.c - every entry point of CUDA_DRIVER_SYMBOLS as a weak stub
 * returning CUDA_ERROR_NOT_SUPPORTED.  Linked with fake_cuda.c (strong
 * definitions of the few the tests call) into test libraries named
 * libcuda.so.1; version scripts hide symbols to make the "missing" variants.
 */
#include "cuda_driver.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define FAKE_CUDA_STUB_(member, symbol, kind, params)                                              \
    __attribute__((weak)) CUresult symbol params;                                                  \
    __attribute__((weak)) CUresult symbol params                                                   \
    {                                                                                              \
        return CUDA_ERROR_NOT_SUPPORTED;                                                           \
    }
CUDA_DRIVER_SYMBOLS(FAKE_CUDA_STUB_)
#undef FAKE_CUDA_STUB_
