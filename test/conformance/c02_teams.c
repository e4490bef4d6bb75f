/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c02: teams / distribute / parallel for, num_teams and thread_limit, reductions. */
#include "conformance.h"

#define N 10000

int main(void)
{
    static double a[N], b[N], c[N];
    long sum = 0;
    int teams = 0, threads = 0;

    conf_require_tether(0);
    for (int i = 0; i < N; i++) {
        a[i] = i;
        b[i] = 2 * i;
    }

#pragma omp target teams distribute parallel for map(to : a, b) map(from : c)
    for (int i = 0; i < N; i++) {
        c[i] = a[i] + b[i];
    }
    {
        int ok = 1;

        for (int i = 0; i < N; i++) {
            ok &= c[i] == 3.0 * i;
        }
        CHECK(ok);
    }

#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
    for (int i = 0; i < N; i++) {
        sum += i;
    }
    CHECK(sum == (long)N * (N - 1) / 2);

    /* teams + distribute + nested parallel for (generic mode). */
    {
        int hist[8] = {0};

#pragma omp target teams distribute map(tofrom : hist)
        for (int t = 0; t < 8; t++) {
            int local = 0;

#pragma omp parallel for reduction(+ : local)
            for (int i = 0; i < 100; i++) {
                local += 1;
            }
            hist[t] = local;
        }
        for (int t = 0; t < 8; t++) {
            CHECK(hist[t] == 100);
        }
    }

    /* num_teams / thread_limit are honoured as upper bounds. */
#pragma omp target teams num_teams(4) thread_limit(8) map(from : teams, threads)
    {
        if (omp_get_team_num() == 0) {
#pragma omp parallel
            {
#pragma omp master
                threads = omp_get_num_threads();
            }
            teams = omp_get_num_teams();
        }
    }
    CHECK(teams >= 1 && teams <= 4);
    CHECK(threads >= 1 && threads <= 8);

    /* max reduction inside a combined construct with a scalar result. */
    {
        int mx = -1;

#pragma omp target teams distribute parallel for reduction(max : mx) map(tofrom : mx)
        for (int i = 0; i < N; i++) {
            int v = (i * 7919) % 10007;

            mx = v > mx ? v : mx;
        }
        CHECK(mx == 10006);
    }
    return conf_exit("c02_teams");
}
