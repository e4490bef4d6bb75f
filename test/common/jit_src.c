/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* A small offload program built with -fopenmp-target-jit for nvptx64: its device image is LLVM
 * bitcode, which test_jit compiles (dumped from the executable's .llvm.offloading section at
 * build time).  One SPMD kernel (jit_saxpy) and one generic kernel (jit_generic). */
#include <stdio.h>

void jit_saxpy(int n, float a, const float *x, float *y)
{
#pragma omp target teams distribute parallel for map(to : x [0:n]) map(tofrom : y [0:n])
    for (int i = 0; i < n; i++) {
        y[i] = a * x[i] + y[i];
    }
}

int jit_generic(int v)
{
    int r = 0;

#pragma omp target teams num_teams(1) thread_limit(64) map(from : r) map(to : v)
    {
        for (int i = 0; i < v; i++) {
            r += i;
        }
    }
    return r;
}

int main(void)
{
    float x[8], y[8];

    for (int i = 0; i < 8; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    jit_saxpy(8, 2.0f, x, y);
    printf("%g %d\n", y[7], jit_generic(5));
    return y[7] == 15.0f && jit_generic(5) == 10 ? 0 : 1;
}
