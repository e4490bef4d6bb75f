/*
 * test/common/tcheck.h - minimal checks for tether's C unit tests (header-only).
 *
 * CHECK(cond) records a failure with file:line and goes on; tcheck_exit() prints a summary and
 * returns the process exit status (0 only when every check passed and at least one ran).
 */
#ifndef TETHER_TEST_TCHECK_H
#define TETHER_TEST_TCHECK_H

#include <stdio.h>
#include <string.h>

static int tcheck_failed;
static int tcheck_ran;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        tcheck_ran++;                                                                              \
        if (!(cond)) {                                                                             \
            tcheck_failed++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Status check that prints both values. */
#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        int got_ = (int)(expr);                                                                    \
        int want_ = (int)(want);                                                                   \
        tcheck_ran++;                                                                              \
        if (got_ != want_) {                                                                       \
            tcheck_failed++;                                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__,  \
                    #expr, got_, tether_status_str((tether_status_t)got_), want_,                  \
                    tether_status_str((tether_status_t)want_));                                    \
        }                                                                                          \
    } while (0)

/* A message must contain a substring. */
#define CHECK_MSG(msg, needle)                                                                     \
    do {                                                                                           \
        tcheck_ran++;                                                                              \
        if (strstr((msg), (needle)) == NULL) {                                                     \
            tcheck_failed++;                                                                       \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (msg),     \
                    (needle));                                                                     \
        }                                                                                          \
    } while (0)

static inline int tcheck_exit(const char *name)
{
    if (tcheck_ran == 0) {
        fprintf(stderr, "%s: FAIL (no check ran)\n", name);
        return 1;
    }
    if (tcheck_failed != 0) {
        fprintf(stderr, "%s: FAIL (%d of %d checks failed)\n", name, tcheck_failed, tcheck_ran);
        return 1;
    }
    printf("%s: PASS (%d checks)\n", name, tcheck_ran);
    return 0;
}

#endif /* TETHER_TEST_TCHECK_H */
