/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* taskwait_deps.c - target tasks with dependences, waited for by `taskwait depend(...)`, in a
 * loop: each round chains two nowait regions through an inout dependence on one array and one
 * on another, waits for the first chain with taskwait depend, checks it, then waits for the
 * rest.  Exits 1 on a wrong value; the argument is the number of rounds (default 200).  Run many
 * times by scripts/device-run.sh step taskdeps: libomp 16's taskwait-depend code has a race on
 * its stack node that short target tasks can expose (docs/conformance.md). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 4096, ROUNDS = 200 };

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS;
    static int a[N], b[N];

    for (int i = 0; i < N; i++) {
        a[i] = 0;
        b[i] = 0;
    }
#pragma omp target enter data map(to : a, b)
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < rounds; r++) {
#pragma omp target teams distribute parallel for nowait depend(inout : a) map(always, tofrom : a)
        for (int i = 0; i < N; i++)
            a[i] += 1;
#pragma omp target teams distribute parallel for nowait depend(inout : b)
        for (int i = 0; i < N; i++)
            b[i] += 2;
#pragma omp target teams distribute parallel for nowait depend(inout : a) map(always, tofrom : a)
        for (int i = 0; i < N; i++)
            a[i] += 1;
#pragma omp taskwait depend(in : a)
        if (a[0] != 2 * (r + 1) || a[N - 1] != 2 * (r + 1)) {
            fprintf(stderr, "taskwait_deps: round %d: a = %d / %d, expected %d\n", r, a[0],
                    a[N - 1], 2 * (r + 1));
            exit(1);
        }
#pragma omp taskwait
    }
#pragma omp target exit data map(from : b) map(release : a)
    if (b[0] != 2 * rounds || b[N - 1] != 2 * rounds) {
        fprintf(stderr, "taskwait_deps: b = %d / %d, expected %d\n", b[0], b[N - 1], 2 * rounds);
        return 1;
    }
    printf("taskwait_deps: %d rounds ok\n", rounds);
    return 0;
}
