/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/bench_printf.c - cost of formatting one device printf call on
 * the host (decode the message, scan, format each conversion) against the
 * host's own snprintf of the same line, measured in the same run.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../../rpc/server/rpc_printf.h"
#include "tether/rpc_opcodes.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    /* printf("rank %d step %5lld x=%.6e name=%s\n", 17, 123456LL, 3.25e-3, "velocity") */
    static const char fmt[] = "rank %d step %5lld x=%.6e name=%s\n";
    static const char name[] = "velocity";
    unsigned char msg[256];
    struct tether_rpc_printf_hdr hdr = {TETHER_RPC_STDOUT, sizeof fmt, 32, 1};
    size_t n = 0;
    memcpy(msg, &hdr, sizeof hdr);
    n += sizeof hdr;
    memcpy(msg + n, fmt, sizeof fmt);
    n += sizeof fmt;
    unsigned char args[32] = {0};
    int32_t rank = 17;
    int64_t step = 123456;
    double x = 3.25e-3;
    uint64_t ptr = 0x1000;
    memcpy(args, &rank, 4);
    memcpy(args + 8, &step, 8);
    memcpy(args + 16, &x, 8);
    memcpy(args + 24, &ptr, 8);
    memcpy(msg + n, args, 32);
    n += 32;
    uint32_t len = sizeof name;
    memcpy(msg + n, &len, 4);
    n += 4;
    memcpy(msg + n, name, sizeof name);
    n += sizeof name;

    enum { ITERS = 400000 };
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    char line[256];
    size_t sink = 0;
    for (int round = 0; round < 2; round++) { /* round 0 warms up */
        double t0 = now_s();
        for (int i = 0; i < ITERS; i++) {
            int k = snprintf(line, sizeof line, fmt, rank, (long long)step, x, name);
            sink += (size_t)k;
        }
        double t_host = now_s() - t0;
        t0 = now_s();
        for (int i = 0; i < ITERS; i++) {
            out.len = 0;
            rpc_printf_format_msg(&out, msg, n, NULL, NULL, NULL);
            sink += out.len;
        }
        double t_ours = now_s() - t0;
        if (round == 1) {
            double ns_host = t_host / ITERS * 1e9;
            double ns_ours = t_ours / ITERS * 1e9;
            printf("printf_format_ns_per_line: %.1f ns (%.2fx vs host snprintf %.1f ns)\n", ns_ours,
                   ns_ours / ns_host, ns_host);
        }
    }
    rpc_outbuf_free(&out);
    return sink == 0;
}
