/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_error.c - plugin_error_set (plugin.h): the one writer of a failure's message into
 * struct tether_error, for common, the backends and the image reader alike.  On its own so that the
 * image reader's library (tether_image) needs nothing else of common.
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>

tether_status_t plugin_error_set(struct tether_error *err, tether_status_t status, const char *fmt,
                                 ...)
{
    va_list ap;

    if (err != NULL) {
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return status;
}
