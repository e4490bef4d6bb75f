/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* A tiny offload program: its device images are the "real images" of test_image and test_plugin
 * (dumped from the executable's .llvm.offloading section at build time). */
#include <stdio.h>

#pragma omp declare target
int tether_test_global = 5;
long tether_test_array[16];
int tether_test_twice(int x)
{
    return 2 * x;
}
#pragma omp end declare target

int main(void)
{
    int value = 1;

#pragma omp target map(tofrom : value)
    {
        value = tether_test_twice(value) + tether_test_global;
        tether_test_array[0] = value;
    }
    printf("%d\n", value);
    return value == 7 ? 0 : 1;
}
