/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * omp_kernels.c - OpenMP source compiled by clang-16 for amdgcn-amd-amdhsa (gfx90a, gfx940,
 * gfx1030) to produce the real code objects the AMDGPU unit tests read.  Never run: only its
 * device image is used.  Keep the kernels' shapes stable, test_amdgpu_code_object.c checks them:
 *   - saxpy: a combined construct (SPMD) with 4 pointer-sized arguments;
 *   - bump: a plain target region with 1 argument.
 */
#include <stdio.h>

#pragma omp declare target
int tether_global = 42;
double tether_table[16];
#pragma omp end declare target

void saxpy(int n, float a, const float *x, float *y)
{
#pragma omp target teams distribute parallel for map(to : x [0:n]) map(tofrom : y [0:n])
    for (int i = 0; i < n; i++)
        y[i] = a * x[i] + y[i] + (float)tether_global;
}

void bump(int *p)
{
#pragma omp target map(tofrom : p [0:1])
    {
        *p += 1;
    }
}

int main(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    int v = 0;

    saxpy(4, 2.0f, x, y);
    bump(&v);
    printf("%f %d\n", (double)y[0], v);
    return 0;
}
