/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c06: firstprivate scalars, private, defaultmap, reductions of several types. */
#include "conformance.h"

int main(void)
{
    int fp = 7, result = 0;
    double dsum = 0.0;
    long lprod = 1;
    unsigned bits = 0;

    conf_require_tether(0);
    /* firstprivate: the device gets the value; changes do not come back. */
#pragma omp target firstprivate(fp) map(from : result)
    {
        fp += 1;
        result = fp;
    }
    CHECK(result == 8 && fp == 7);

    /* Scalars are firstprivate by default in target regions. */
    fp = 20;
#pragma omp target map(from : result)
    result = fp * 2;
    CHECK(result == 40);

#pragma omp target teams distribute parallel for reduction(+ : dsum) map(tofrom : dsum)
    for (int i = 1; i <= 1000; i++) {
        dsum += 1.0 / i;
    }
    CHECK(dsum > 7.4854 && dsum < 7.4855);

#pragma omp target parallel for reduction(* : lprod) map(tofrom : lprod)
    for (int i = 1; i <= 15; i++) {
        lprod *= i;
    }
    CHECK(lprod == 1307674368000L);

#pragma omp target teams distribute parallel for reduction(| : bits) map(tofrom : bits)
    for (int i = 0; i < 32; i++) {
        bits |= 1u << i;
    }
    CHECK(bits == 0xffffffffu);

    /* private: a per-thread scratch that does not leak out. */
    {
        int scratch = 123, out[64];

#pragma omp target teams distribute parallel for private(scratch) map(from : out)
        for (int i = 0; i < 64; i++) {
            scratch = i * 3;
            out[i] = scratch;
        }
        CHECK(out[63] == 189 && scratch == 123);
    }
    return conf_exit("c06_private");
}
