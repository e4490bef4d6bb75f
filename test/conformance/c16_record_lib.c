/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c16: a second device image (a shared library), so a message said per image would show twice. */
int c16_lib_twice(int x)
{
    int r = 0;

#pragma omp target map(from : r)
    r = 2 * x;
    return r;
}
