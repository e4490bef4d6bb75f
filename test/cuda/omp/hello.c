/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hello.c - smoke test: an sm_90 target region runs on the GPU and computes the right sum. */
#include "omp_common.h"

int main(void)
{
    enum { N = 1 << 20 };
    long sum = 0;
    int on_host = 1;

#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum, on_host)
    for (int i = 0; i < N; i++) {
        sum += i;
        if (i == 0)
            on_host = omp_is_initial_device();
    }
    printf("hello: %d device(s), region ran on the %s, sum %ld (want %ld)\n", omp_get_num_devices(),
           on_host ? "HOST" : "GPU", sum, (long)N * (N - 1) / 2);
    return on_host || sum != (long)N * (N - 1) / 2;
}
