/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * own_malloc.c - a separately compiled device malloc/free (the hazard syscall_abi_test.sh checks
 * tether's CUDA plugin refuses): linked into syscall_probe without -foffload-lto, the program's
 * calls are compiled for CUDA's system-call convention and these definitions break it.
 */
#include <stddef.h>

#pragma omp declare target
#if defined(__NVPTX__)
static char own_pool[1 << 16];
static size_t own_used;

void *malloc(size_t size)
{
    size_t at = __atomic_fetch_add(&own_used, (size + 15) & ~(size_t)15, __ATOMIC_RELAXED);
    return at + size <= sizeof own_pool ? own_pool + at : NULL;
}

void free(void *ptr)
{
    (void)ptr;
}
#endif
#pragma omp end declare target
