/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/conformance/conformance.h - shared by the OpenMP conformance programs.
 *
 * Every program is ordinary OpenMP C (one C++ program for device constructors) that builds
 * unchanged for x86_64-pc-linux-gnu and nvptx64 (scripts/build-conformance.sh).  Each one first
 * proves it really offloads to a tether plugin (conf_require_tether), then checks behaviour with
 * CHECK, and exits 0 only when every check passed.  TETHER_EXPECT_PLUGIN names the backend
 * expected to serve device 0 ("x86_64", "cuda").
 */
#ifndef TETHER_CONFORMANCE_H
#define TETHER_CONFORMANCE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create, dladdr */
#endif

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/tether.h"

#ifndef TETHER_EXPECT_PLUGIN
#define TETHER_EXPECT_PLUGIN "x86_64"
#endif

static int conf_failed;
static int conf_ran;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        conf_ran++;                                                                                \
        if (!(cond)) {                                                                             \
            conf_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Device `dev` is served by tether's TETHER_EXPECT_PLUGIN and a target region on it really runs
 * off the initial device.  Stops the program when not: every other check would be meaningless. */
static inline void conf_require_tether(int dev)
{
    struct tether_device_info info;
    int initial = 1;
    int rc;

    if (omp_get_num_devices() <= dev) {
        fprintf(stderr, "FAIL: %d OpenMP device(s); is tether's plugin on LD_LIBRARY_PATH?\n",
                omp_get_num_devices());
        exit(2);
    }
#pragma omp target device(dev) map(from : initial)
    initial = omp_is_initial_device();
    if (initial) {
        fprintf(stderr, "FAIL: the target region ran on the host, not offloaded\n");
        exit(2);
    }
    rc = tether_device_query(dev, &info);
    if (rc != TETHER_OK || strcmp(info.plugin, TETHER_EXPECT_PLUGIN) != 0) {
        fprintf(stderr, "FAIL: device %d is not served by tether's %s plugin (query: %d %s)\n", dev,
                TETHER_EXPECT_PLUGIN, rc, rc == TETHER_OK ? info.plugin : "");
        exit(2);
    }
}

/* Capture what the runtime prints on stderr while `call` runs (host code only). */
#include <sys/mman.h>
#include <unistd.h>

struct conf_capture {
    int saved;
    int mem;
};

static inline void conf_capture_begin(struct conf_capture *c)
{
    fflush(stderr);
    c->saved = dup(2);
    c->mem = memfd_create("conformance-capture", 0);
    dup2(c->mem, 2);
}

static inline void conf_capture_end(struct conf_capture *c, char *buf, size_t len)
{
    ssize_t n;

    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    n = pread(c->mem, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    close(c->mem);
}

/* Number of pinned ranges tether reports for a device (-1 when the query fails). */
static inline long conf_pinned(int dev)
{
    struct tether_device_info info;

    if (tether_device_query(dev, &info) != TETHER_OK) {
        return -1;
    }
    return (long)info.pinned_ranges;
}

static inline int conf_exit(const char *name)
{
    if (conf_ran == 0 || conf_failed != 0) {
        fprintf(stderr, "%s: FAIL (%d of %d checks failed)\n", name, conf_failed, conf_ran);
        return 1;
    }
    printf("%s: PASS (%d checks)\n", name, conf_ran);
    return 0;
}

#endif /* TETHER_CONFORMANCE_H */
