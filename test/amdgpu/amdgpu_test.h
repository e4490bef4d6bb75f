/*
 * amdgpu_test.h - the few checking macros the AMDGPU unit tests share.
 *
 * CHECK(cond) fails the test (exit 1) with the file, line and condition; CHECK_ST(expr, want)
 * compares tether statuses and prints both names.  Each test is one process (ctest runs it with
 * a timeout), so failing fast is enough.
 */
#ifndef TETHER_TEST_AMDGPU_TEST_H
#define TETHER_TEST_AMDGPU_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "tether/status.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_ST(expr, want)                                                                       \
    do {                                                                                           \
        tether_status_t got_ = (expr);                                                             \
        if (got_ != (want)) {                                                                      \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__,  \
                    #expr, (int)got_, tether_status_str(got_), (int)(want),                        \
                    tether_status_str(want));                                                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

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
