/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c05, second translation unit. */
#pragma omp declare target
int counter = 10;
double table[8];
int add_scaled(int x)
{
    return 2 * x + counter;
}
#pragma omp end declare target
