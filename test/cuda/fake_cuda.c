/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda.c - the entry points of the fake libcuda.so.1 that tests call,
 * with behaviour a test can recognise (see fake_cuda_stubs.c for the rest).
 */
#include <string.h>

#include "cuda_driver.h"

#define FAKE_CUDA_DEVICES 3
#define FAKE_CUDA_ALLOC_BASE 0xC0DA0000u

CUresult cuInit(unsigned int flags);
CUresult cuDeviceGetCount(int *count);
CUresult cuGetErrorName(CUresult error, const char **str);
CUresult cuGetErrorString(CUresult error, const char **str);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);

CUresult cuInit(unsigned int flags)
{
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *count)
{
    *count = FAKE_CUDA_DEVICES;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult result;
    const char *name;
    const char *text;
} fake_cuda_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error (fake driver)"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument (fake driver)"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory (fake driver)"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device (fake driver)"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "invalid kernel image (fake driver)"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "not ready (fake driver)"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "already registered (fake driver)"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "not supported (fake driver)"},
};

static int fake_cuda_error_index(CUresult error)
{
    for (size_t i = 0; i < sizeof(fake_cuda_errors) / sizeof(fake_cuda_errors[0]); i++)
        if (fake_cuda_errors[i].result == error)
            return (int)i;
    return -1;
}

/* Like the real driver: unknown codes give CUDA_ERROR_INVALID_VALUE and a NULL string. */
CUresult cuGetErrorName(CUresult error, const char **str)
{
    int i = fake_cuda_error_index(error);

    *str = i < 0 ? NULL : fake_cuda_errors[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **str)
{
    int i = fake_cuda_error_index(error);

    *str = i < 0 ? NULL : fake_cuda_errors[i].text;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The versioned entry point hands out recognisable addresses... */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    *dptr = FAKE_CUDA_ALLOC_BASE + bytes;
    return CUDA_SUCCESS;
}

/* ...the legacy 32-bit one must never be picked. */
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
    (void)dptr;
    (void)bytes;
    return CUDA_ERROR_UNKNOWN;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    memset(uuid->bytes, 0, sizeof(uuid->bytes));
    memcpy(uuid->bytes, "fake-uuid", 9);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}
