/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_util.h - helpers shared by the rpc/ tests and benches:
 * the checks (test/common/tcheck.h; these tests stop at the first failed one, REQUIRE and
 * REQUIREF, since later steps build on earlier ones), shared-region allocation
 * (private or MAP_SHARED for fork tests), a monotonic clock, argument parsing.
 */
#ifndef TETHER_RPC_TEST_UTIL_H
#define TETHER_RPC_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../common/tcheck.h"
#include "rpc_stream.h"

/* Zeroed, page-aligned memory; shared across fork() when `shared`. */
static inline void *test_map(uint64_t size, int shared)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    return p;
}

static inline void test_unmap(void *p, uint64_t size)
{
    REQUIRE(munmap(p, size) == 0);
}

static inline double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parses "--name value" pairs into the matching uint64 option. */
struct test_opt {
    const char *name;
    uint64_t *value;
};

static inline void test_parse(int argc, char **argv, const struct test_opt *opts, int n)
{
    for (int i = 1; i < argc; i++) {
        int found = 0;
        for (int k = 0; k < n; k++) {
            if (strcmp(argv[i], opts[k].name) == 0 && i + 1 < argc) {
                *opts[k].value = strtoull(argv[++i], NULL, 0);
                found = 1;
                break;
            }
        }
        if (!found) {
            fprintf(stderr, "unknown or incomplete option: %s\n", argv[i]);
            exit(2);
        }
    }
}

/* splitmix64: deterministic per-call payload words. */
static inline uint64_t test_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif /* TETHER_RPC_TEST_UTIL_H */
