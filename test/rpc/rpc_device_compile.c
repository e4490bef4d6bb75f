/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * Compile-only check: every rpc.h operation inside `#pragma omp declare
 * target`, so the header stays valid device code for nvptx64, amdgcn and the
 * x86_64 offload target.  Built by test/rpc/rpc_device_compile.sh; never run.
 */
#include <stdint.h>

#pragma omp declare target
#include "rpc_stream.h"

static void fill_word(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    buffer->data[0] = *(uint64_t *)arg + lane;
}

static void take_word(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    (void)lane;
    *(uint64_t *)arg = buffer->data[0];
}

/* A client making every kind of call the device library will make. */
uint64_t rpc_compile_client(struct rpc_client *client, uint64_t lane_mask, uint32_t hint,
                            const char *text, uint64_t len, char *out, uint64_t cap)
{
    uint64_t value = 42, sum = 0, got = 0;
    rpc_port_t port = rpc_client_open(client, 7, lane_mask, hint);
    rpc_client_send(client, &port, fill_word, &value);
    rpc_client_recv(client, &port, take_word, &got);
    sum += got;
    const void *src[1] = {text};
    uint64_t size[1] = {len};
    rpc_client_send_n(client, &port, src, size);
    uint64_t total[1];
    void *dst[1] = {out};
    uint64_t caps[1] = {cap};
    rpc_client_recv_n(client, &port, dst, caps, total);
    sum += total[0];
    rpc_client_recv_n_size(client, &port, total);
    rpc_client_recv_n_data(client, &port, dst, caps);
    while (!rpc_client_try_send(client, &port, fill_word, &value))
        ;
    while (!rpc_client_try_recv(client, &port, take_word, &got))
        ;
    sum += rpc_port_opcode(&port) + rpc_port_index(&port) + rpc_port_lane_mask(&port);
    rpc_client_close(client, &port);

    /* Fire and forget. */
    if (rpc_client_try_open(client, 8, lane_mask, hint, &port)) {
        rpc_client_send(client, &port, fill_word, &value);
        rpc_client_close(client, &port);
    }
    /* A call on a home port answered through the head alone. */
    if (rpc_client_try_open_port(client, 9, lane_mask, hint, &port)) {
        rpc_client_send(client, &port, fill_word, &value);
        rpc_client_recv(client, &port, NULL, NULL);
        sum += rpc_port_head(&port, 0);
        rpc_client_close(client, &port);
    }
    return sum;
}

/* The server side compiles for devices too (a GPU could serve a peer). */
uint64_t rpc_compile_server(struct rpc_server *server, char *out, uint64_t cap)
{
    uint64_t got = 0, total[1], caps[1] = {cap};
    void *dst[1] = {out};
    const void *src[1] = {out};
    rpc_port_t port;
    if (!rpc_server_try_open(server, &port))
        port = rpc_server_open(server);
    rpc_server_recv(server, &port, take_word, &got);
    rpc_server_send(server, &port, fill_word, &got);
    rpc_server_recv_n(server, &port, dst, caps, total);
    rpc_server_send_n(server, &port, src, total);
    rpc_server_recv_n_size(server, &port, total);
    rpc_server_recv_n_data(server, &port, dst, caps);
    (void)rpc_server_try_recv(server, &port, take_word, &got);
    (void)rpc_server_try_send(server, &port, fill_word, &got);
    rpc_server_close(server, &port);
    return got + total[0];
}

int rpc_compile_init(struct rpc_client *client, struct rpc_server *server, void *region,
                     void *client_locks, void *server_locks, uint32_t ports, uint32_t lanes)
{
    if (rpc_region_size(ports, lanes) == 0 || rpc_lock_size(ports) == 0)
        return -1;
    return (int)rpc_client_init(client, region, ports, lanes, client_locks) +
           (int)rpc_server_init(server, region, ports, lanes, server_locks);
}
#pragma omp end declare target

/* Make sure the functions are also reachable from a target region. */
uint64_t rpc_compile_kernel(struct rpc_client *client, char *out)
{
    uint64_t r = 0;
#pragma omp target map(tofrom : r) is_device_ptr(client, out)
    r = rpc_compile_client(client, 1, 0, out, 5, out, 5);
    return r;
}
