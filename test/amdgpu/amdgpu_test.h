/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_test.h - what the AMDGPU unit tests share besides the checks of tcheck.h.
 *
 * Their checks are REQUIRE and REQUIRE_RC: each test is one process (ctest runs it with a
 * timeout) whose later steps build on the earlier ones, so it stops at the first failure.
 */
#ifndef TETHER_TEST_AMDGPU_TEST_H
#define TETHER_TEST_AMDGPU_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "tcheck.h"
#include "tether/status.h"

/* A mode's result: its own non-zero status (a usage error, a skip), else the checks' summary. */
static inline int amdgpu_test_end(const char *mode, int rc)
{
    return rc != 0 ? rc : tcheck_exit(mode);
}

/* Read a whole file into a malloc'ed buffer (exit 1 on failure). */
static inline void *test_read_file(const char *path, size_t *size_p)
{
    FILE *f = fopen(path, "rb");
    long n;
    void *buf;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *size_p = (size_t)n;
    return buf;
}

#endif /* TETHER_TEST_AMDGPU_TEST_H */
