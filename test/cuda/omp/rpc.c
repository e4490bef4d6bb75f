/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rpc.c - OpenMP + libtether-device.a: round trip of a one-packet RPC call (a user opcode with
 * 4 bytes each way) from one GPU thread, served by tether's RPC server thread.  Reported as
 * "pingpong", the name of the raw pinned-memory ping-pong of native/pingpong.cu (the floor for
 * any device-to-host RPC), so the comparison lines them up.  Then the first call after a quiet
 * stretch inside one kernel (the server thread has backed off to sleeping by then): 50 calls
 * each after 10 ms (p99) and 5 calls each after 1 s (the slowest), timed on the GPU's clock.
 * Built only with -ltether-device (bin/omp-rpc) and run only through tether's plugin. */
#include <stdint.h>
#include <string.h>

#include "omp_common.h"
#include "tether/rpc.h"

#define OP_ECHO 0x8100u
#define ROUNDS 20000

static tether_status_t echo(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    return tether_rpc_reply_append(reply, req->data, req->size);
}

#pragma omp begin declare target
/* Nanoseconds on the GPU's global timer (0 where the region falls back to the host). */
static uint64_t gpu_ns(void)
{
#ifdef __NVPTX__
    uint64_t t;
    __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return 0;
#endif
}
#pragma omp end declare target

#define IDLE_MAX 50

/* n calls, each after gap_ns without any; their round trips in us, sorted, in lat[]. */
static int idle_calls(uint64_t gap_ns, int n, double *lat)
{
    int bad = 0;

#pragma omp target map(from : lat [0:n]) map(tofrom : bad)
    for (int i = 0; i < n; i++) {
        uint64_t t = gpu_ns();
        while (gpu_ns() - t < gap_ns) {
        }
        uint32_t in = (uint32_t)i, out = ~0u;
        uint64_t a = gpu_ns();
        if (tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != (int64_t)sizeof out ||
            out != in)
            bad++;
        lat[i] = (double)(gpu_ns() - a) / 1000.0;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && lat[j - 1] > lat[j]; j--) {
            double x = lat[j];
            lat[j] = lat[j - 1];
            lat[j - 1] = x;
        }
    return bad;
}

static int calls(int rounds)
{
    int bad = 0;

#pragma omp target map(tofrom : bad)
    {
        for (int i = 0; i < rounds; i++) {
            uint32_t in = (uint32_t)i * 2654435761u, out = 0;
            if (tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != (int64_t)sizeof out ||
                out != in)
                bad++;
        }
    }
    return bad;
}

int main(void)
{
    if (tether_rpc_register_user(OP_ECHO, echo, NULL) != TETHER_OK) {
        fprintf(stderr, "rpc: tether_rpc_register_user failed (no tether plugin loaded?)\n");
        return 1;
    }
    omp_bench_require_gpu("rpc");
    int bad = calls(1000); /* warm-up: module, server thread, caches */
    double t0 = bench_now_us();
    bad += calls(ROUNDS);
    double per = (bench_now_us() - t0) / ROUNDS;
    if (bad != 0) {
        fprintf(stderr, "rpc: %d calls returned a wrong answer\n", bad);
        return 1;
    }
    bench_fig("pingpong", per, "us");

    double lat[IDLE_MAX];
    bad = idle_calls(10000000ull, 50, lat);
    bench_fig("rpc_after_10ms_p99", lat[49], "us"); /* of 50: the 99th percentile is the top */
    bench_fig("rpc_after_10ms_median", (lat[24] + lat[25]) / 2, "us");
    bad += idle_calls(1000000000ull, 5, lat);
    bench_fig("rpc_after_1s_max", lat[4], "us");
    if (bad != 0) {
        fprintf(stderr, "rpc: %d calls after a quiet stretch returned a wrong answer\n", bad);
        return 1;
    }
    return 0;
}
