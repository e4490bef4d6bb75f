/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/gpu/gpu_diag.c - narrows down failures of the RPC services on
 * a GPU: each mode runs one shape of calls and reports on stderr when its
 * target region returned, so the first failing shape is the last line.
 *
 *   gpu_diag floats          one thread: the printf lines of offload_printf, one region each
 *   gpu_diag repeat T N      T teams x 1 thread, N lines each (ints only)
 *   gpu_diag lanes T L N     T teams x L threads (omp parallel), N lines each
 *   gpu_diag heap T L R      T teams x L threads, R malloc/free rounds each, data checked
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma omp declare target
static uint64_t diag_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int diag_churn(int id, int rounds)
{
    enum { SLOTS = 16 };
    unsigned char *p[SLOTS];
    uint32_t n[SLOTS];
    int errors = 0;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (int i = 0; i < SLOTS; i++)
        p[i] = NULL;
    for (int r = 0; r < rounds; r++) {
        int i = (int)(diag_next(&s) % SLOTS);
        if (p[i] != NULL) {
            unsigned char first = p[i][0], last = p[i][n[i] - 1];
            if (first != (unsigned char)(id + i) || last != (unsigned char)i) {
                if (errors++ < 3)
                    printf("diag: id %d slot %d: block %p of %u bytes holds %u..%u, want %u..%u\n",
                           id, i, (void *)p[i], n[i], first, last, (unsigned char)(id + i),
                           (unsigned char)i);
            }
            free(p[i]);
            p[i] = NULL;
            continue;
        }
        n[i] = 2 + (uint32_t)(diag_next(&s) % 4095); /* 2 or more: first and last byte differ */
        p[i] = malloc(n[i]);
        if (p[i] == NULL) {
            if (errors++ < 3)
                printf("diag: id %d slot %d: malloc(%u) returned NULL\n", id, i, n[i]);
            continue;
        }
        p[i][0] = (unsigned char)(id + i);
        p[i][n[i] - 1] = (unsigned char)i;
    }
    for (int i = 0; i < SLOTS; i++)
        free(p[i]);
    return errors;
}
#pragma omp end declare target

static int arg(int argc, char **argv, int i, int dflt)
{
    return argc > i ? atoi(argv[i]) : dflt;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "floats";
    setvbuf(stderr, NULL, _IONBF, 0);
    if (strcmp(mode, "floats") == 0) {
        for (int n = 0; n < 8; n++) {
#pragma omp target firstprivate(n)
            {
                if (n == 0)
                    printf("ints %d %i %u %x [%6d] [%-6d]\n", -n * 77, n, 3u, 255u, n, n);
                else if (n == 1)
                    printf("longs %ld %lld %zu\n", -123456789012L, -(7LL << 40), (size_t)9);
                else if (n == 2)
                    printf("double %f\n", 0.125);
                else if (n == 3)
                    printf("doubles %f %.2f %e\n", 0.125, -1 / 3.0, 1.5e12);
                else if (n == 4)
                    printf("floats %f %.2f %e %E %g %G %a [%10.3f] [%-12.4e]\n", 2 * 0.125,
                           -2 / 3.0, 2 * 1.5e12, 2 * 2.5e-12, 2 * 98.7654, 1e-6 * 2, 2 * 0.75,
                           2 / 7.0, -2 * 123.0);
                else if (n == 5)
                    printf("strs [%s] [%12s] [%.4s]\n", "alpha", "z", "a longer string");
                else if (n == 6)
                    printf("star [%*d] [%.*e]\n", 7, n, 3, n * 1e7);
                else
                    printf("plain text that is long enough to need more than one packet of "
                           "sixty-four bytes, n=%d\n",
                           n);
            }
            fprintf(stderr, "diag: floats case %d returned\n", n);
        }
        return 0;
    }
    if (strcmp(mode, "repeat") == 0) {
        int teams = arg(argc, argv, 2, 6), lines = arg(argc, argv, 3, 30);
#pragma omp target teams num_teams(teams) thread_limit(1)
        {
            int t = omp_get_team_num();
            for (int k = 0; k < lines; k++)
                printf("repeat t%d k%d %d\n", t, k, t * 1000 + k);
        }
        fprintf(stderr, "diag: repeat %d x %d returned\n", teams, lines);
        return 0;
    }
    if (strcmp(mode, "lanes") == 0) {
        int teams = arg(argc, argv, 2, 1), threads = arg(argc, argv, 3, 64);
        int lines = arg(argc, argv, 4, 3);
#pragma omp target teams num_teams(teams) thread_limit(threads)
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_team_num(), l = omp_get_thread_num();
            for (int k = 0; k < lines; k++)
                printf("lane t%d l%d k%d of %d\n", t, l, k, omp_get_num_threads());
        }
        fprintf(stderr, "diag: lanes %d x %d x %d returned\n", teams, threads, lines);
        return 0;
    }
    if (strcmp(mode, "heap") == 0) {
        int teams = arg(argc, argv, 2, 4), threads = arg(argc, argv, 3, 1);
        int rounds = arg(argc, argv, 4, 500), errors = 0;
#pragma omp target teams num_teams(teams) thread_limit(threads) map(tofrom : errors)
#pragma omp parallel num_threads(threads) reduction(+ : errors)
        errors += diag_churn(omp_get_team_num() * 1024 + omp_get_thread_num(), rounds);
        fprintf(stderr, "diag: heap %d x %d x %d returned, %d errors\n", teams, threads, rounds,
                errors);
        return errors != 0;
    }
    fprintf(stderr, "gpu_diag: unknown mode %s\n", mode);
    return 2;
}
