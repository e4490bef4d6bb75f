/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_heap.c - malloc/calloc/realloc/free in target regions: many
 * threads at once with their data checked, then 48 MiB live at once (six
 * times CUDA's default device heap), freed and allocated again.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc_opcodes.h"

/* LLVM 16 runs a GPU parallel region with 1 thread when fewer than 32 are asked for, so GPU
 * builds ask for two warps per team. */
#if defined(SVC_GPU)
#define TEAMS 4
#define THREADS 64
#define ROUNDS 1000
#else
#define TEAMS 4
#define THREADS 8
#define ROUNDS 3000
#endif

#pragma omp declare target
static uint64_t step(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int churn(int id, int rounds)
{
    enum { SLOTS = 64 };
    unsigned char *p[SLOTS];
    size_t n[SLOTS];
    int errors = 0;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (int i = 0; i < SLOTS; i++)
        p[i] = NULL;
    for (int r = 0; r < rounds; r++) {
        int i = (int)(step(&s) % SLOTS);
        if (p[i] != NULL) {
            for (size_t k = 0; k < n[i]; k += 31)
                errors += p[i][k] != (unsigned char)(id + i + k);
            free(p[i]);
            p[i] = NULL;
            continue;
        }
        uint64_t kind = step(&s) % 100;
        n[i] = kind < 80   ? 1 + step(&s) % 512
               : kind < 98 ? 512 + step(&s) % 60000
                           : (1u << 20) + step(&s) % (1u << 20);
        p[i] = kind % 5 == 0 ? calloc(n[i], 1) : malloc(n[i]);
        if (p[i] == NULL) {
            errors++;
            continue;
        }
        if (kind % 5 == 0)
            for (size_t k = 0; k < n[i]; k += 37)
                errors += p[i][k] != 0;
        for (size_t k = 0; k < n[i]; k += 31)
            p[i][k] = (unsigned char)(id + i + k);
    }
    for (int i = 0; i < SLOTS; i++)
        free(p[i]);
    return errors;
}

static int big_live(void)
{
    enum { N = 48 };
    unsigned char *b[N];
    int errors = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            b[i] = malloc(1u << 20);
            if (b[i] == NULL) {
                errors++;
                continue;
            }
            memset(b[i], i + round, 1u << 20);
        }
        for (int i = 0; i < N; i++) {
            if (b[i] == NULL)
                continue;
            errors += b[i][0] != (unsigned char)(i + round);
            errors += b[i][(1u << 20) - 1] != (unsigned char)(i + round);
            free(b[i]);
        }
    }
    char *r = malloc(8);
    memcpy(r, "realloc", 8);
    r = realloc(r, 3u << 20);
    errors += r == NULL || memcmp(r, "realloc", 8) != 0;
    free(r);
    return errors;
}
#pragma omp end declare target

int main(void)
{
    int attached = 0, errors = 0, big = 0;
#pragma omp target map(from : attached)
    attached = tether_rpc_attached();
    if (!attached) {
        fprintf(stderr, "offload_heap: no RPC server attached to the image\n");
        return 1;
    }
#pragma omp target teams distribute parallel for num_teams(TEAMS) thread_limit(THREADS)          \
    reduction(+ : errors) map(tofrom : errors)
    for (int i = 0; i < TEAMS * THREADS; i++)
        errors += churn(i, ROUNDS);
#pragma omp target map(tofrom : big)
    big = big_live();
    printf("heap: %d errors in the concurrent phase, %d with 48 MiB live\n", errors, big);
    return errors != 0 || big != 0;
}
