/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/fuzz_server.c - libFuzzer target for the server's handling of
 * device bytes: arbitrary calls (any opcode, lane mask, wide flag, packet
 * count and packet bytes, answers read or not, calls abandoned midway) go
 * straight onto the ports of a fresh server, which is served between steps.
 * The server must not crash, trip an rpc.h check, leak or hang.
 *
 * Input: records of
 *   u8  flags    bits 0-1 port hint, bit 2 wide, bit 3 read an answer,
 *                bits 4-7 packets (0-15)
 *   u16 opcode   low 16 bits of the opcode
 *   u8  mask     lane mask (4 lanes; 0 means lane 0)
 *   then packets x 4 lanes x 64 bytes (missing input reads as zeros)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../rpc/device_client.h"
#include "../../../rpc/rpc.h"
#include "tether/rpc.h"
#include "svc_rig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { PORTS = 4, LANES = 4 };

/* Device memory is never touched by the server: hand out fake addresses. */
static uint64_t next_dev = 1ull << 40;
static long live;

static tether_status_t device_alloc(void *ctx, size_t size, uint64_t *dev_p)
{
    (void)ctx;
    if (size > (1ull << 36))
        return TETHER_ERR_NO_MEMORY;
    *dev_p = next_dev;
    next_dev += (size + 0xffff) & ~(uint64_t)0xffff;
    live++;
    return TETHER_OK;
}

static void device_free(void *ctx, uint64_t dev)
{
    (void)ctx;
    (void)dev;
    live--;
}

static void on_exit_cb(void *ctx, int status, bool is_abort)
{
    (void)ctx;
    (void)status;
    (void)is_abort;
}

static tether_status_t echo(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    if (req->size > 0 && ((const uint8_t *)req->data)[0] == 0xee)
        return TETHER_ERR_INVALID;
    return tether_rpc_reply_append(reply, req->data, req->size < 300 ? req->size : 300);
}

struct cursor {
    const uint8_t *p;
    size_t left;
};

static void fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct cursor *c = arg;
    (void)lane;
    size_t n = c->left < 64 ? c->left : 64;
    memset(buffer->data, 0, 64);
    memcpy(buffer->data, c->p, n);
    c->p += n;
    c->left -= n;
}

static void drop(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    (void)buffer;
    (void)lane;
    (void)arg;
}

static void serve(tether_rpc_server_t *srv)
{
    tether_rpc_server_handle(srv, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (null == NULL)
        null = fopen("/dev/null", "w");
    struct tether_rpc_server_config cfg = {
        .port_count = PORTS,
        .lane_count = LANES,
        .shared_alloc = svc_shared_alloc,
        .shared_free = svc_shared_free,
        .device_alloc = device_alloc,
        .device_free = device_free,
        .heap_limit = 1ull << 34,
        .on_exit = on_exit_cb,
        .out = null,
        .err = null,
    };
    tether_rpc_server_t *srv;
    if (tether_rpc_server_create(&cfg, &srv, NULL) != TETHER_OK)
        abort();
    tether_rpc_register(srv, 0x8001, echo, NULL);

    static unsigned char buf[262144]; /* the client: struct tether_rpc_device_client */
    if (tether_rpc_client_size() > sizeof buf)
        abort();
    /* The client's own view, built by the server for "device" addresses = host ones. */
    struct rpc_client *client = NULL;
    {
        static unsigned char global[262144] __attribute__((aligned(64)));
        memset(global, 0, sizeof global);
        if (tether_rpc_server_client_bytes(srv, (uint64_t)(uintptr_t)global, buf,
                                           tether_rpc_client_size()) != TETHER_OK)
            abort();
        memcpy(global, buf, tether_rpc_client_size());
        client = (struct rpc_client *)(global + offsetof(struct tether_rpc_device_client, client));
    }

    struct cursor c = {data, size};
    while (c.left >= 4) {
        uint8_t flags = c.p[0];
        uint32_t opcode = (uint32_t)c.p[1] | (uint32_t)c.p[2] << 8;
        uint64_t mask = c.p[3] & 0xf;
        c.p += 4;
        c.left -= 4;
        if (mask == 0)
            mask = 1;
        if (flags & 4)
            opcode |= TETHER_RPC_WIDE;
        rpc_port_t port;
        int tries = 0;
        while (!rpc_client_try_open(client, opcode, mask, flags & 3, &port)) {
            serve(srv);
            if (++tries > 8)
                goto done;
        }
        unsigned packets = flags >> 4;
        bool abandoned = false;
        for (unsigned k = 0; k < packets && !abandoned; k++) {
            tries = 0;
            while (!rpc_client_try_send(client, &port, fill, &c)) {
                serve(srv);
                if (++tries > 4) {
                    abandoned = true; /* the server waits for something else */
                    break;
                }
            }
            serve(srv);
        }
        if ((flags & 8) && packets > 0 && !abandoned) {
            for (int r = 0; r < 3; r++) {
                tries = 0;
                while (!rpc_client_try_recv(client, &port, drop, NULL)) {
                    serve(srv);
                    if (++tries > 4)
                        break;
                }
            }
        }
        rpc_client_close(client, &port);
        serve(srv);
    }
done:
    for (int i = 0; i < 4; i++)
        serve(srv);
    tether_rpc_server_destroy(srv);
    if (live != 0)
        abort(); /* device memory the server handed out was not released */
    return 0;
}
