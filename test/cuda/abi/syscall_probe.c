/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * syscall_probe.c - a target region that calls malloc, free and printf.  syscall_abi_test.sh
 * builds it for sm_90 with own_malloc.c (tether's CUDA plugin must refuse the image: its global
 * malloc/free would break callers compiled for CUDA's system-call convention) and with
 * libtether-device.a, with and without tether/device_libc.h and -foffload-lto.  With
 * SYSCALL_PROBE_NO_HEAP the region only prints: its image cannot allocate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    uintptr_t seen = 0;

    /* The address leaves the region, so the compiler keeps the malloc/free calls. */
#pragma omp target map(from : seen)
    {
#if !defined(SYSCALL_PROBE_NO_HEAP)
        char *p = malloc(16);
        seen = (uintptr_t)p;
        free(p);
#endif
        printf("syscall_probe: device %d\n", 1);
    }
    printf("syscall_probe: region ran, malloc gave %#lx\n", (unsigned long)seen);
    return 0;
}
