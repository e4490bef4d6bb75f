/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c11: the shared library with its own device image. */
#pragma omp declare target
int lib_factor = 3;
#pragma omp end declare target

int lib_scale(int x)
{
    int r = 0;

#pragma omp target map(from : r)
    r = x * lib_factor;
    return r;
}
