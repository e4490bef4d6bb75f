/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tether/status.h - the one status type of tether.
 *
 * Every action function in tether returns a tether_status_t: 0 is success,
 * failures are negative.  The list below generates both the enum and the
 * strings, so the two cannot drift apart.  Functions that can fail for a
 * reason worth telling a user also take a `struct tether_error *` (may be
 * NULL) and write a one-line message naming the object and the cause.
 *
 * This header is freestanding-safe: no libc beyond <stddef.h>.
 */
#ifndef TETHER_STATUS_H
#define TETHER_STATUS_H

#include <stddef.h>

#define TETHER_STATUS_LIST(X)                                                                      \
    X(TETHER_OK, 0, "success")                                                                     \
    X(TETHER_ERR_INVALID, -1, "invalid argument")                                                  \
    X(TETHER_ERR_NO_MEMORY, -2, "out of memory")                                                   \
    X(TETHER_ERR_OVERLAP, -3, "range overlaps a locked range without lying inside it")             \
    X(TETHER_ERR_NOT_FOUND, -4, "not found")                                                       \
    X(TETHER_ERR_DRIVER, -5, "driver call failed")                                                 \
    X(TETHER_ERR_UNSUPPORTED, -6, "operation not supported by this backend")                       \
    X(TETHER_ERR_NO_DEVICE, -7, "no such device")                                                  \
    X(TETHER_ERR_BAD_IMAGE, -8, "device image not valid for this plugin")                          \
    X(TETHER_ERR_BUSY, -9, "resource still in use")                                                \
    X(TETHER_ERR_NOT_READY, -10, "not ready yet")                                                  \
    X(TETHER_ERR_NO_DRIVER, -11, "vendor driver not available")                                    \
    X(TETHER_ERR_INTERNAL, -12, "internal error")

typedef enum tether_status {
#define TETHER_STATUS_ENUM_(name, value, text) name = value,
    TETHER_STATUS_LIST(TETHER_STATUS_ENUM_)
#undef TETHER_STATUS_ENUM_
} tether_status_t;

/* Human-readable text for a status; never NULL. */
static inline const char *tether_status_str(tether_status_t status)
{
    switch (status) {
#define TETHER_STATUS_CASE_(name, value, text)                                                     \
    case name:                                                                                     \
        return text;
        TETHER_STATUS_LIST(TETHER_STATUS_CASE_)
#undef TETHER_STATUS_CASE_
    }
    return "unknown status";
}

/* A message explaining a failure: which call, which object, which cause. */
#define TETHER_ERROR_MSG_MAX 256
struct tether_error {
    char msg[TETHER_ERROR_MSG_MAX];
};

#endif /* TETHER_STATUS_H */
