/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/gpu/gpu_probe.c - diagnostics for a GPU run: what the device
 * sees in __tether_rpc_client and in the shared mailboxes around one user
 * call, returned through mapped arrays (printf itself is what is checked).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../../rpc/device_client.h"
#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"

#pragma omp declare target
extern struct tether_rpc_device_client __tether_rpc_client;
#pragma omp end declare target
#if !defined(__NVPTX__)
/* The host version of the target region needs one too (never filled in). */
struct tether_rpc_device_client __tether_rpc_client;
#endif

static tether_status_t echo(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    fprintf(stderr, "probe: handler called, %zu bytes, lane %u\n", req->size, req->lane);
    return tether_rpc_reply_append(reply, req->data, req->size);
}

int main(void)
{
    printf("probe: register: %s\n",
           tether_status_str(tether_rpc_register_user(0x8100, echo, NULL)));
    uint64_t v[24];
    memset(v, 0, sizeof v);
#pragma omp target map(from : v [0:24])
    {
        struct tether_rpc_device_client *c = &__tether_rpc_client;
        v[0] = c->magic;
        v[1] = c->version;
        v[2] = c->flags;
        v[3] = c->client.process.ports;
        v[4] = c->client.process.lanes;
        v[5] = (uint64_t)(uintptr_t)c->client.process.sflags;
        v[6] = (uint64_t)(uintptr_t)c->client.process.cflags;
        v[7] = (uint64_t)(uintptr_t)c->client.process.buffers;
        v[8] = (uint64_t)(uintptr_t)c->client.process.locks;
        v[9] = (uint64_t)(uintptr_t)c;
        v[10] = c->client.process.server;
#if defined(__NVPTX__)
        /* Raw visibility: a volatile store and a system-scope xor into the last port's buffer. */
        uint32_t *scratch =
            (uint32_t *)(c->client.process.buffers +
                         (uint64_t)(c->client.process.ports - 1) * c->client.process.lanes);
        *(volatile uint32_t *)&scratch[0] = 0x1234u;
        __nvvm_atom_sys_xor_gen_i((int *)&scratch[1], 0xf0);
        __nvvm_membar_sys();
        v[23] = (uint64_t)(uintptr_t)scratch;
#endif
        v[11] = *(volatile uint32_t *)c->client.process.sflags;
        v[12] = *(volatile uint32_t *)c->client.process.cflags;
#if defined(__NVPTX__)
        uint32_t mask;
        __asm__ volatile("activemask.b32 %0;" : "=r"(mask));
        v[13] = mask;
        v[14] = __nvvm_read_ptx_sreg_laneid();
#endif
        char out[8] = {0};
        v[15] = (uint64_t)tether_rpc_call(0x8100, "hello", 5, out, sizeof out);
        __builtin_memcpy(&v[16], out, 8);
        v[17] = *(volatile uint32_t *)c->client.process.sflags;
        v[18] = *(volatile uint32_t *)c->client.process.cflags;
        v[19] = c->client.process.locks[0];
        v[20] = c->client.process.buffers[0].data[0];
        v[21] = c->client.process.buffers[0].data[1];
        v[22] = tether_rpc_attached();
    }
    const char *names[] = {"magic",      "version", "flags",   "ports",   "lanes",   "inbox",
                           "outbox",     "buffers", "locks",   "global",  "server",  "in0",
                           "out0",       "mask",    "laneid",  "call",    "answer",  "in0 after",
                           "out0 after", "locks0",  "buf0.d0", "buf0.d1", "attached"};
    for (int i = 0; i < 23; i++)
        printf("probe: %-10s 0x%llx (%lld)\n", names[i], (unsigned long long)v[i], (long long)v[i]);
    printf("probe: answer text \"%.8s\"\n", (char *)&v[16]);
    if (v[23] != 0) {
        volatile uint32_t *scratch = (volatile uint32_t *)(uintptr_t)v[23];
        printf("probe: host sees scratch 0x%x (want 0x1234), xor word 0x%x (want 0xf0)\n",
               scratch[0], scratch[1]);
    }
    if (v[5] != 0) {
        printf("probe: host sees server outbox 0x%x, client outbox 0x%x, buf0 %llx %llx\n",
               *(volatile uint32_t *)(uintptr_t)v[5], *(volatile uint32_t *)(uintptr_t)v[6],
               (unsigned long long)((volatile uint64_t *)(uintptr_t)v[7])[0],
               (unsigned long long)((volatile uint64_t *)(uintptr_t)v[7])[1]);
    }
    int n = 0;
#pragma omp target map(from : n)
    n = printf("probe: device printf %d\n", 42);
    printf("probe: device printf returned %d\n", n);
    return 0;
}
