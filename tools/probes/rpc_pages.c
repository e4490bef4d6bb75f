/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc_pages.c - does tether's round trip depend on where its port lies in host memory?  The
 * one-packet call of test/cuda/omp/rpc.c, made by the GPU thread whose id (and so home port) is
 * `port`, for ports whose headers lie on different 4 KiB pages (32 ports per page) and whose client
 * flags lie on different pages (4096 ports per page), all in one process.  Built like
 * bin/omp-rpc (scripts/device-bundle.sh: tether/device_libc.h, -ltether-device); run there through
 * tether's plugin.  Figures only.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

#include "tether/rpc.h"

#define OP_ECHO 0x8100u

static tether_status_t echo(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    return tether_rpc_reply_append(reply, req->data, req->size);
}

/* us per call of `calls` calls from the thread of id `port` (128 threads per team). */
static double per_call(int port, int calls)
{
    int teams = port / 128 + 1, bad = 0;
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(128) map(tofrom     \
                                                                                        : bad)
    for (int i = 0; i < teams * 128; i++) {
        if (i != port)
            continue;
        for (int c = 0; c < calls; c++) {
            uint32_t in = (uint32_t)c, out = 0;
            if (tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != 4 || out != in)
                bad++;
        }
    }
    double t = (omp_get_wtime() - t0) * 1e6 / calls;
    return bad ? -t : t;
}

int main(void)
{
    if (tether_rpc_register_user(OP_ECHO, echo, NULL) != TETHER_OK) {
        fprintf(stderr, "rpc_pages: no tether plugin\n");
        return 1;
    }
    per_call(0, 1000); /* warm-up */
    int ports[] = {0,   32,  64,  96,  128, 160,  192,  224,  256,  288,   320,
                   352, 384, 416, 448, 480, 4096, 4128, 8192, 8224, 12288, 12320};
    for (int r = 0; r < 2; r++)
        for (unsigned k = 0; k < sizeof ports / sizeof ports[0]; k++)
            printf("rpc_pages: port %5d (header page %3d, flag page %d): %.3f us\n", ports[k],
                   ports[k] / 32, ports[k] / 4096, per_call(ports[k], 5000));
    return 0;
}
