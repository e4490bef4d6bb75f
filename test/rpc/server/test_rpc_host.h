/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host.h - what the files of test_rpc_host share: the rig (a server with
 * the device library's global client attached, fake device memory) and one entry point per case;
 * every file checks with tcheck.h (CHECKF: a check with a message).
 *
 * test_rpc_host.c         the rig and main (argv[1] picks the case)
 * test_rpc_host_stdio.c   printf-wide printf-lanes write
 * test_rpc_host_heap.c    malloc malloc-burst
 * test_rpc_host_user.c    user user-lanes (and the handlers other cases register)
 * test_rpc_host_bad.c     bad
 * test_rpc_host_exit.c    exit abort drain
 * test_rpc_host_idle.c    idle-lanes idle-wide quiet-kernels finish slow-answers
 * test_rpc_host_placement.c placement
 */
#ifndef TETHER_TEST_RPC_HOST_H
#define TETHER_TEST_RPC_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../../rpc/device/device_internal.h"
#include "../../../rpc/server/rpc_internal.h"
#include "svc_rig.h"
#include "tcheck.h"
#include "tether/rpc.h"

extern struct tether_rpc_device_client __tether_rpc_client;

/* argv[2]: multiplies the rounds of the cases that loop (1 by default). */
extern int scale;
/* The servers' fake device memory (svc_rig.h): blocks handed out and not yet freed in .live. */
extern struct svc_dev_mem dev_mem;

/* A server with the global client attached. */
struct rig {
    tether_rpc_server_t *srv;
    FILE *out;
    FILE *err;
};

/* Creates the server (its streams are temporary files), attaches the global client, starts
 * its thread when asked and starts a kernel. */
void rig_up(struct rig *rig, bool wide, uint32_t ports, uint32_t lanes, bool thread);
/* Ends the kernel, destroys the server and checks that every device block came back. */
void rig_down(struct rig *rig);
/* Reads a whole stream back (malloc'ed, NUL-terminated). */
char *slurp(FILE *f, size_t *len_p);
/* printf through the device library to the server's stdout. */
__attribute__((format(printf, 1, 2))) int dprintf_(const char *fmt, ...);
/* A user handler that reverses the request ("fail" fails); counts its calls in *(atomic_int *)user.
 */
tether_status_t reverse_handler(void *user, const struct tether_rpc_request *req,
                                struct tether_rpc_reply *reply);

void test_printf(bool wide, uint32_t lanes);
void test_write(void);
void test_malloc(void);
void test_malloc_burst(void);
void test_user(bool wide);
void test_bad(void);
void test_exit(bool is_abort);
void test_drain(void);
void test_idle(bool wide);
void test_slow_answers(void);
void test_quiet_kernels(void);
void test_finish(void);
/* 77 (skip) when no PCI device of this machine lists its local cores. */
int test_placement(void);
void test_shared_core(void);

#endif /* TETHER_TEST_RPC_HOST_H */
