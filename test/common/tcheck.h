/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/tcheck.h - the checks of tether's C tests (header-only): one family for every test
 * of common/, pinned/, plugins/, rpc/ and the services.
 *
 * Record a failure (file:line and what failed, on stderr) and go on:
 *   CHECK(cond)              the condition holds
 *   CHECK_EQ(a, b)           two integers are equal; both values are printed
 *   CHECK_RC(expr, want)     a tether_status_t is the one expected; both names are printed
 *   CHECK_MSG(msg, frag...)  the message contains every fragment (one or more)
 *   CHECKF(cond, fmt, ...)   the condition holds; on failure a printf-style message follows it
 *                            (the values that explain the failure), evaluated only then
 * Record a failure and end the process at once (exit 1), for a check that later code relies on
 * (a pointer about to be used, a set-up step):
 *   REQUIRE(cond)            REQUIRE_RC(expr, want)
 *   REQUIREF(cond, fmt, ...) with a printf-style message after the condition
 * At the end of main: `return tcheck_exit("name");` prints a summary and gives the exit status,
 * 0 only when every check passed and at least one ran.  tcheck_failures() is the number of checks
 * failed so far (a test that wants to know whether one phase failed).
 *
 * The counters are atomic and shared by every file of the test program (weak definitions), so
 * checks may run on any number of threads and in helper files.
 */
#ifndef TETHER_TEST_TCHECK_H
#define TETHER_TEST_TCHECK_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/status.h"

__attribute__((weak)) atomic_int tcheck_failed_count;
__attribute__((weak)) atomic_int tcheck_ran_count;

/* Count one check; on failure print "file:line: <what>" and count it failed.  Returns ok. */
static inline __attribute__((format(printf, 4, 5))) int tcheck_note(int ok, const char *file,
                                                                    int line, const char *fmt, ...)
{
    atomic_fetch_add(&tcheck_ran_count, 1);
    if (!ok) {
        char what[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        atomic_fetch_add(&tcheck_failed_count, 1);
        fprintf(stderr, "%s:%d: %s\n", file, line, what);
    }
    return ok;
}

#define CHECK(cond) ((void)tcheck_note(!!(cond), __FILE__, __LINE__, "CHECK failed: %s", #cond))

/* On failure "file:line: CHECK failed: <cond>", then the message on the next line. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!tcheck_note(!!(cond), __FILE__, __LINE__, "CHECK failed: %s", #cond)) {               \
            fputs("  ", stderr);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        tcheck_note(a_ == b_, __FILE__, __LINE__, "CHECK failed: %s == %s (%lld != %lld)", #a, #b, \
                    a_, b_);                                                                       \
    } while (0)

#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        int got_ = (int)(expr), want_ = (int)(want);                                               \
        tcheck_note(got_ == want_, __FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)",    \
                    #expr, got_, tether_status_str((tether_status_t)got_), want_,                  \
                    tether_status_str((tether_status_t)want_));                                    \
    } while (0)

/* Every NULL-terminated fragment is in msg. */
static inline int tcheck_msg(const char *file, int line, const char *msg, ...)
{
    int ok = 1;
    va_list ap;

    va_start(ap, msg);
    for (const char *frag = va_arg(ap, const char *); frag != NULL;
         frag = va_arg(ap, const char *)) {
        ok &= tcheck_note(msg != NULL && strstr(msg, frag) != NULL, file, line,
                          "message \"%s\" lacks \"%s\"", msg != NULL ? msg : "(null)", frag);
    }
    va_end(ap);
    return ok;
}

#define CHECK_MSG(msg, ...)                                                                        \
    ((void)tcheck_msg(__FILE__, __LINE__, (msg), __VA_ARGS__, (const char *)NULL))

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!tcheck_note(!!(cond), __FILE__, __LINE__, "REQUIRE failed: %s", #cond)) {             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define REQUIREF(cond, ...)                                                                        \
    do {                                                                                           \
        if (!tcheck_note(!!(cond), __FILE__, __LINE__, "REQUIRE failed: %s", #cond)) {             \
            fputs("  ", stderr);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define REQUIRE_RC(expr, want)                                                                     \
    do {                                                                                           \
        int got_ = (int)(expr), want_ = (int)(want);                                               \
        if (!tcheck_note(got_ == want_, __FILE__, __LINE__,                                        \
                         "%s returned %d (%s), expected %d (%s)", #expr, got_,                     \
                         tether_status_str((tether_status_t)got_), want_,                          \
                         tether_status_str((tether_status_t)want_))) {                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline int tcheck_failures(void)
{
    return atomic_load(&tcheck_failed_count);
}

static inline int tcheck_exit(const char *name)
{
    int ran = atomic_load(&tcheck_ran_count), failed = atomic_load(&tcheck_failed_count);

    if (ran == 0) {
        fprintf(stderr, "%s: FAIL (no check ran)\n", name);
        return 1;
    }
    if (failed != 0) {
        fprintf(stderr, "%s: FAIL (%d of %d checks failed)\n", name, failed, ran);
        return 1;
    }
    printf("%s: PASS (%d checks)\n", name, ran);
    return 0;
}

#endif /* TETHER_TEST_TCHECK_H */
