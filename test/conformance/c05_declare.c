/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c05: declare target globals and functions across two translation units (c05_declare_part1.c
 * defines the ones declared extern here). */
#include "conformance.h"

#pragma omp declare target
extern int counter;     /* defined in part1 */
extern double table[8]; /* defined in part1 */
int add_scaled(int x);  /* defined in part1 */
static int local_square(int x)
{
    return x * x;
}
int here_global = 3;
#pragma omp end declare target

int main(void)
{
    int r = 0;

    conf_require_tether(0);
#pragma omp target map(from : r)
    r = add_scaled(local_square(here_global)); /* 9 * 2 + counter(10) */
    CHECK(r == 28);

    /* Globals live on the device: update moves them. */
    counter = 100;
#pragma omp target update to(counter)
#pragma omp target map(from : r)
    r = add_scaled(1);
    CHECK(r == 102);

#pragma omp target
    {
        for (int i = 0; i < 8; i++) {
            table[i] = i * 1.5;
        }
        counter = -1;
    }
    CHECK(table[7] == 0.0); /* host copy untouched until update */
#pragma omp target update from(table, counter)
    CHECK(table[7] == 10.5 && counter == -1);
    return conf_exit("c05_declare");
}
