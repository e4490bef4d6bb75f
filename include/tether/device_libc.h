/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tether/device_libc.h - routes the printf, malloc and free calls of a program's NVIDIA device
 * code, and the printf calls of its AMD GPU code, to libtether-device.a.  Every source file of an
 * OpenMP offload program that links the library is compiled with it force-included:
 * `pkg-config --cflags tether` gives `-include <includedir>/tether/device_libc.h`, and CMake's
 * tether::device adds the same.
 *
 * Why a header: ptxas compiles a call to `malloc`, `free` or `vprintf` as a call of one of CUDA's
 * system calls, which keep almost every register; a separately compiled definition of these
 * names breaks its callers (tether's CUDA plugin refuses such an image).  So the library defines
 * none of them on NVIDIA, and the program's device code never calls them:
 *   - malloc and free are OpenMP declare variants for nvptx64 that call tether_device_malloc and
 *     tether_device_free;
 *   - clang-16 lowers printf in device code to __llvm_omp_vprintf(format, packed arguments,
 *     size), which the device runtime implements with CUDA's vprintf (and on AMD GPUs as
 *     "return -1"); the weak definition below is linked in its place and hands the packed
 *     arguments to the library.
 * The other C library names the library serves (puts, fputs, fwrite, calloc, realloc, exit,
 * abort, ...) are ordinary functions, which the device link binds without help.  With the
 * header a program needs no -foffload-lto; with -foffload-lto it works the same way.  A program
 * compiled with the header links the library (`pkg-config --libs tether`): its GPU code refers
 * to the library's functions, which the device link otherwise reports undefined.
 *
 * Only clang's OpenMP compiles see any of this: for other compilers, or without -fopenmp, the
 * header is empty, and on the host and other GPUs nothing in it is selected.
 */
#ifndef TETHER_DEVICE_LIBC_H
#define TETHER_DEVICE_LIBC_H

#if defined(__clang__) && defined(_OPENMP)

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma omp begin declare target
void *tether_device_malloc(uint64_t size);
void tether_device_free(void *ptr);
int tether_device_printf_packed(uint32_t stream, const char *fmt, const void *args,
                                uint64_t args_len);
#pragma omp end declare target

#pragma omp begin declare variant match(device = {arch(nvptx64)})
static inline void *malloc(size_t size)
{
    return tether_device_malloc(size);
}

static inline void free(void *ptr)
{
    tether_device_free(ptr);
}
#pragma omp end declare variant

#if defined(__NVPTX__) || defined(__AMDGCN__)
#pragma omp begin declare target
/* 1 is TETHER_RPC_STDOUT (tether/rpc_opcodes.h). */
__attribute__((weak)) int __llvm_omp_vprintf(const char *fmt, void *args, uint32_t size)
{
    return tether_device_printf_packed(1u, fmt, args, size);
}
#pragma omp end declare target
#endif

#ifdef __cplusplus
}
#endif

#endif /* __clang__ && _OPENMP */
#endif /* TETHER_DEVICE_LIBC_H */
