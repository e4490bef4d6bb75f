/* rpc.c - OpenMP + libtether-device.a: round trip of a one-packet RPC call (a user opcode with
 * 4 bytes each way) from one GPU thread, served by tether's RPC server thread.  Reported as
 * "pingpong", the name of the raw pinned-memory ping-pong of native/pingpong.cu (the floor for
 * any device-to-host RPC), so the comparison lines them up.  Built only with -ltether-device
 * (bin/omp-rpc) and run only through tether's plugin. */
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
    return 0;
}
