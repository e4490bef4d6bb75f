/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/svc_rig.h - a server whose client is another host thread, for tests: its
 * "shared memory" callbacks (page-aligned host memory that is its own device address), fake
 * device memory (host memory, counted, with an optional budget), the attach of the device
 * library's global client, a server made and attached in one call and taken down, and a clock.
 */
#ifndef TETHER_SVC_RIG_H
#define TETHER_SVC_RIG_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../rpc/device_client.h"
#include "tether/rpc.h"
#include "tether/status.h"

static inline tether_status_t svc_shared_alloc(void *ctx, size_t size, void **host_p,
                                               uint64_t *dev_p)
{
    (void)ctx;
    void *p = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    if (p == NULL)
        return TETHER_ERR_NO_MEMORY;
    *host_p = p;
    *dev_p = (uint64_t)(uintptr_t)p;
    return TETHER_OK;
}

static inline void svc_shared_free(void *ctx, void *host)
{
    (void)ctx;
    free(host);
}

/* Makes srv's client and copies it into the host build of the device library's global, as a
 * plugin does at image load: the calls of this process's "device" threads then go to srv. */
static inline tether_status_t svc_attach_client(tether_rpc_server_t *srv)
{
    extern struct tether_rpc_device_client __tether_rpc_client;
    unsigned char buf[sizeof(struct tether_rpc_device_client)];
    tether_status_t st = tether_rpc_server_client_bytes(
        srv, (uint64_t)(uintptr_t)&__tether_rpc_client, buf, sizeof buf);
    if (st == TETHER_OK)
        memcpy(&__tether_rpc_client, buf, sizeof buf);
    return st;
}

/* Fake device memory: host memory, its blocks and bytes counted; with a budget (0: none) an
 * allocation beyond it fails.  Give a struct svc_dev_mem as device_ctx. */
struct svc_dev_mem {
    atomic_long live;
    atomic_ullong bytes;
    unsigned long long budget;
};

struct svc_dev_block {
    size_t size;
    size_t pad;
};

static inline tether_status_t svc_device_alloc(void *ctx, size_t size, uint64_t *dev_p)
{
    struct svc_dev_mem *m = ctx;
    if (m->budget != 0 && atomic_load(&m->bytes) + size > m->budget)
        return TETHER_ERR_NO_MEMORY;
    struct svc_dev_block *b = malloc(sizeof *b + size);
    if (b == NULL)
        return TETHER_ERR_NO_MEMORY;
    b->size = size;
    atomic_fetch_add(&m->live, 1);
    atomic_fetch_add(&m->bytes, size);
    *dev_p = (uint64_t)(uintptr_t)(b + 1);
    return TETHER_OK;
}

static inline void svc_device_free(void *ctx, uint64_t dev)
{
    struct svc_dev_mem *m = ctx;
    struct svc_dev_block *b = (struct svc_dev_block *)(uintptr_t)dev - 1;
    atomic_fetch_sub(&m->live, 1);
    atomic_fetch_sub(&m->bytes, b->size);
    free(b);
}

/* Creates a server from cfg (its shared-memory callbacks filled in here), attaches the device
 * library's global to it, starts its thread when `thread`, and starts a kernel.  Any failure
 * ends the test program (exit 2) with a line saying which step failed. */
static inline tether_rpc_server_t *svc_server_up(struct tether_rpc_server_config cfg, bool thread)
{
    cfg.shared_alloc = svc_shared_alloc;
    cfg.shared_free = svc_shared_free;
    struct tether_error err = {""};
    tether_rpc_server_t *srv = NULL;
    const char *step = "server_create";
    tether_status_t st = tether_rpc_server_create(&cfg, &srv, &err);
    if (st == TETHER_OK) {
        step = "attach the client";
        st = svc_attach_client(srv);
    }
    if (st == TETHER_OK && thread) {
        step = "start the thread";
        st = tether_rpc_server_start(srv, NULL, &err);
    }
    if (st != TETHER_OK) {
        fprintf(stderr, "%s: %s (%s)\n", step, tether_status_str(st), err.msg);
        exit(2);
    }
    tether_rpc_server_kernel_started(srv);
    return srv;
}

/* Ends the kernel, destroys the server and detaches the global. */
static inline void svc_server_down(tether_rpc_server_t *srv)
{
    extern struct tether_rpc_device_client __tether_rpc_client;
    tether_rpc_server_kernel_finished(srv);
    tether_rpc_server_destroy(srv);
    memset(&__tether_rpc_client, 0, sizeof __tether_rpc_client);
}

/* Nanoseconds of `clock` (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline uint64_t svc_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* TETHER_SVC_RIG_H */
