/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host.c - server library and device client together,
 * with host threads playing the device: the device library's own code
 * (rpc/device, compiled for the host) talks to a server and its thread over
 * plain host memory.  Runs under ThreadSanitizer too.
 *
 *   test_rpc_host <case> [scale]
 * cases: printf-wide printf-lanes write malloc malloc-burst user user-lanes bad exit abort drain
 *        idle-lanes idle-wide slow-answers quiet-kernels finish placement shared-core
 * (placement exits 77, ctest's skip, when no PCI device in sysfs lists its local cores)
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "svc_rig.h"
#include "test_rpc_host.h"

int scale = 1;

struct svc_dev_mem dev_mem;

/* ---- a server with the global attached -------------------------------------------------- */

void rig_up(struct rig *rig, bool wide, uint32_t ports, uint32_t lanes, bool thread)
{
    rig->out = tmpfile();
    rig->err = tmpfile();
    struct tether_rpc_server_config cfg = {
        .device_id = 0,
        .port_count = ports,
        .lane_count = lanes,
        .host_client = wide,
        .device_alloc = svc_device_alloc,
        .device_free = svc_device_free,
        .device_ctx = &dev_mem,
        .out = rig->out,
        .err = rig->err,
    };
    rig->srv = svc_server_up(cfg, thread);
}

/* Reads a whole stream back. */
char *slurp(FILE *f, size_t *len_p)
{
    fflush(f);
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    *len_p = got;
    return s;
}

void rig_down(struct rig *rig)
{
    svc_server_down(rig->srv);
    fclose(rig->out);
    fclose(rig->err);
    CHECKF(atomic_load(&dev_mem.live) == 0, "%ld device blocks still held after destroy",
           atomic_load(&dev_mem.live));
}

/* ---- printf ----------------------------------------------------------------------------- */

int dprintf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = tether_device_vprintf(TETHER_RPC_STDOUT, fmt, ap);
    va_end(ap);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s case [scale]\n", argv[0]);
        return 2;
    }
    if (argc > 2)
        scale = atoi(argv[2]);
    const char *c = argv[1];
    if (strcmp(c, "printf-wide") == 0)
        test_printf(true, 32);
    else if (strcmp(c, "printf-lanes") == 0)
        test_printf(false, 32);
    else if (strcmp(c, "write") == 0)
        test_write();
    else if (strcmp(c, "malloc") == 0)
        test_malloc();
    else if (strcmp(c, "malloc-burst") == 0)
        test_malloc_burst();
    else if (strcmp(c, "user") == 0)
        test_user(true);
    else if (strcmp(c, "user-lanes") == 0)
        test_user(false);
    else if (strcmp(c, "bad") == 0)
        test_bad();
    else if (strcmp(c, "exit") == 0)
        test_exit(false);
    else if (strcmp(c, "abort") == 0)
        test_exit(true);
    else if (strcmp(c, "drain") == 0)
        test_drain();
    else if (strcmp(c, "idle-lanes") == 0)
        test_idle(false);
    else if (strcmp(c, "idle-wide") == 0)
        test_idle(true);
    else if (strcmp(c, "slow-answers") == 0)
        test_slow_answers();
    else if (strcmp(c, "quiet-kernels") == 0)
        test_quiet_kernels();
    else if (strcmp(c, "finish") == 0)
        test_finish();
    else if (strcmp(c, "shared-core") == 0)
        test_shared_core();
    else if (strcmp(c, "placement") == 0) {
        if (test_placement() == 77)
            return 77;
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return tcheck_exit(c);
}
