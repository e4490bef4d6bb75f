/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * omp_jit.c - an OpenMP program built with -fopenmp-target-jit (its device image is LLVM
 * bitcode): tether's AMDGPU plugin refuses such images, saying why (a linker tether does not
 * ship), and the target region runs on the host.  Run on fake_hsa.c's GPU through Debian's
 * libomptarget (run_omp.sh); prints "omp jit: ran on the host" when it did.
 */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    int on_host = 0;

#pragma omp target map(from : on_host)
    on_host = omp_is_initial_device();
    if (!on_host) {
        fprintf(stderr, "omp jit: the target region did not run on the host\n");
        return 1;
    }
    printf("omp jit: ran on the host\n");
    return 0;
}
