/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/svc_test.h - tiny assertion helpers for the services tests.
 * A failed CHECK prints where and why, counts the failure and carries on;
 * svc_test_exit() turns the count into the exit status.
 */
#ifndef TETHER_SVC_TEST_H
#define TETHER_SVC_TEST_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Atomic: tests check from several threads at once. */
static atomic_int svc_failures;
static atomic_int svc_checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        svc_checks++;                                                                              \
        if (!(cond)) {                                                                             \
            svc_failures++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static inline int svc_test_exit(const char *name)
{
    if (atomic_load(&svc_failures) == 0) {
        printf("%s: %d checks passed\n", name, atomic_load(&svc_checks));
        return 0;
    }
    fprintf(stderr, "%s: %d of %d checks FAILED\n", name, atomic_load(&svc_failures),
            atomic_load(&svc_checks));
    return 1;
}

#endif /* TETHER_SVC_TEST_H */
