/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// c10: device constructors and destructors of declare target globals (libomptarget runs them as
// kernels with KernelArgs version 1).
#include "conformance.h"

struct Counter {
    int value;
    int ctor_ran;
    Counter() : value(42), ctor_ran(1)
    {
    }
    ~Counter()
    {
        value = -1;
    }
};

#pragma omp declare target
Counter g_counter;
int g_table[4] = {1, 2, 3, 4};
#pragma omp end declare target

int main()
{
    int v = 0, ran = 0, t = 0;

    conf_require_tether(0);
#pragma omp target map(from : v, ran, t)
    {
        v = g_counter.value;
        ran = g_counter.ctor_ran;
        t = g_table[3];
        g_counter.value += 1;
    }
    CHECK(v == 42 && ran == 1 && t == 4);
#pragma omp target map(from : v)
    v = g_counter.value;
    CHECK(v == 43);
    return conf_exit("c10_ctor");
}
