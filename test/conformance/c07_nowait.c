/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c07: target nowait with depend, taskwait, several regions in flight. */
#include "conformance.h"

#define N 2048
#define K 8

int main(void)
{
    static int a[K][N];
    int done[K];

    conf_require_tether(0);
#pragma omp parallel
#pragma omp single
    {
        for (int k = 0; k < K; k++) {
            int *row = a[k];

#pragma omp target nowait map(from : row [0:N]) depend(out : row[0])
            for (int i = 0; i < N; i++) {
                row[i] = k * N + i;
            }
#pragma omp target nowait map(tofrom : row [0:N]) depend(inout : row[0])
            for (int i = 0; i < N; i++) {
                row[i] += 1;
            }
        }
#pragma omp taskwait
    }
    for (int k = 0; k < K; k++) {
        done[k] = 1;
        for (int i = 0; i < N; i++) {
            done[k] &= a[k][i] == k * N + i + 1;
        }
        CHECK(done[k]);
    }

    /* nowait + taskwait without a parallel region around it. */
    {
        int x = 0;

#pragma omp target nowait map(tofrom : x)
        x = 99;
#pragma omp taskwait
        CHECK(x == 99);
    }
    return conf_exit("c07_nowait");
}
