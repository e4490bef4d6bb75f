/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * examples/device_rpc.c - an OpenMP offload program whose device code calls the host through
 * tether: printf, and a user opcode with tether_rpc_call() that a host function answers.
 *
 *   export PKG_CONFIG_PATH=<prefix>/lib/pkgconfig
 *   clang-16 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu $(pkg-config --cflags tether) \
 *     device_rpc.c $(pkg-config --libs tether) -o device_rpc
 *   <prefix>/bin/tether-run ./device_rpc
 *
 * The libraries come after the sources: libtether-device.a is an archive, which the linker
 * searches only for what the objects before it need.  Exit status 0 when every answer was
 * right and every call was served on the host.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tether/rpc.h>
#include <tether/rpc_opcodes.h>

#define OP_SQUARE TETHER_RPC_OP_USER_FIRST /* int64 -> its square, computed on the host */
#define N 64

/* Runs on the RPC server thread of tether's plugin; `user` is the counter given below. */
static tether_status_t square(void *user, const struct tether_rpc_request *req,
                              struct tether_rpc_reply *reply)
{
    int64_t v;
    if (req->size != sizeof v)
        return TETHER_ERR_INVALID;
    memcpy(&v, req->data, sizeof v);
    v *= v;
    __atomic_fetch_add((int *)user, 1, __ATOMIC_RELAXED);
    return tether_rpc_reply_append(reply, &v, sizeof v);
}

int main(void)
{
    int served = 0, wrong = 0, attached = 0;
    tether_status_t st = tether_rpc_register_user(OP_SQUARE, square, &served);
    if (st != TETHER_OK) {
        printf("device_rpc: no tether plugin with RPC in this process (%s): run it with "
               "tether-run\n",
               tether_status_str(st));
        return 1;
    }

#pragma omp target teams distribute parallel for map(tofrom : attached) reduction(+ : wrong)
    for (int i = 0; i < N; i++) {
        int64_t v = i, sq = -1;
        int64_t n = tether_rpc_call(OP_SQUARE, &v, sizeof v, &sq, sizeof sq);
        if (n != (int64_t)sizeof sq || sq != v * v)
            wrong++;
        if (i % 16 == 0)
            printf("device_rpc: device thread for i = %d: the host says %d squared is %lld\n", i, i,
                   (long long)sq);
        if (i == 0)
            attached = tether_rpc_attached();
    }

    int calls = __atomic_load_n(&served, __ATOMIC_RELAXED);
    printf("device_rpc: %d calls served on the host, %d wrong answers, server attached: %s\n",
           calls, wrong, attached ? "yes" : "no");
    if (wrong != 0 || calls != N || !attached) {
        printf("device_rpc: FAIL\n");
        return 1;
    }
    printf("device_rpc: PASS\n");
    return 0;
}
