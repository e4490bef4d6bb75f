/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* jit_refused.c - built with -fopenmp-target-jit (its device image is LLVM bitcode): the x86_64
 * plugin refuses the image, saying why, and the target region runs on the host (the initial
 * device) instead. */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    int on_host = 0;

#pragma omp target map(from : on_host)
    on_host = omp_is_initial_device();
    printf("host_jit: %s\n", on_host ? "ran on the host" : "FAIL: ran on a device");
    return on_host ? 0 : 1;
}
