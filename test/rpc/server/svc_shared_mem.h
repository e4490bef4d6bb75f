/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/svc_shared_mem.h - the "shared memory" callbacks of a server whose client is
 * another host thread (page-aligned host memory that is its own device address), and the
 * attach of the device library's global client to such a server.
 */
#ifndef TETHER_SVC_SHARED_MEM_H
#define TETHER_SVC_SHARED_MEM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

#endif /* TETHER_SVC_SHARED_MEM_H */
