/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_user.c - a user opcode: the host registers a handler, threads of a
 * target region call it and check the answers; an opcode without a handler
 * gets an error answer (and one diagnostic on stderr), never a hang.  Then
 * short calls with answers in the head, on every shape of port sharing a GPU
 * meets (rpc.h, L3): a grid whose threads each have a home port of their own
 * (their calls close without a fence), the same grid again (a new grid id: its
 * threads must read the mailbox first), a grid larger than the port count
 * (threads share home ports, every close fenced), and two grids at once.
 */
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"

#define OP_SUM 0x8100u
#define OP_NONE 0x8101u
#define OP_MIX 0x8102u

struct sum_req {
    int32_t id;
    int32_t n;
    int64_t v[16];
};
struct sum_ans {
    int32_t id;
    int32_t pad;
    int64_t sum;
};

static atomic_int calls;

static tether_status_t sum_handler(void *user, const struct tether_rpc_request *req,
                                   struct tether_rpc_reply *reply)
{
    (void)user;
    struct sum_req r;
    if (req->size != sizeof r)
        return TETHER_ERR_INVALID;
    memcpy(&r, req->data, sizeof r);
    if (r.n < 0 || r.n > 16)
        return TETHER_ERR_INVALID;
    struct sum_ans a = {r.id, 0, 0};
    for (int i = 0; i < r.n; i++)
        a.sum += r.v[i];
    atomic_fetch_add(&calls, 1);
    return tether_rpc_reply_append(reply, &a, sizeof a);
}

/* 4 bytes in, 4 bytes out: the answer comes in the head. */
static tether_status_t mix_handler(void *user, const struct tether_rpc_request *req,
                                   struct tether_rpc_reply *reply)
{
    (void)user;
    uint32_t v;
    if (req->size != sizeof v)
        return TETHER_ERR_INVALID;
    memcpy(&v, req->data, sizeof v);
    v = v * 2654435761u + 12345u;
    atomic_fetch_add(&calls, 1);
    return tether_rpc_reply_append(reply, &v, sizeof v);
}

/* Every thread of (up to) `teams` x `threads` makes `per` calls; returns the wrong answers and
 * adds the calls made to *made.  Counted with atomics: LLVM 16's reductions across many teams
 * lost contributions on an H100 (249856 of 262144 calls counted, every one served). */
static int mix_grid(int teams, int threads, int per, uint32_t salt, int *made)
{
    int counts[2] = {0, 0}; /* wrong answers, calls */
#pragma omp target teams num_teams(teams) thread_limit(threads) map(tofrom : counts)
#pragma omp parallel num_threads(threads)
    {
        uint32_t id = (uint32_t)(omp_get_team_num() * omp_get_num_threads() + omp_get_thread_num());
        int wrong = 0;
        for (int k = 0; k < per; k++) {
            uint32_t in = salt ^ (id << 8) ^ (uint32_t)k, out = 0;
            int64_t len = tether_rpc_call(OP_MIX, &in, sizeof in, &out, sizeof out);
            wrong += len != (int64_t)sizeof out || out != in * 2654435761u + 12345u;
        }
#pragma omp atomic update
        counts[0] += wrong;
#pragma omp atomic update
        counts[1] += per;
    }
    *made += counts[1];
    return counts[0];
}

static int mix_shapes(void)
{
    int gpu = 0;
    /* `gpu` used in the region by the host's compile as well: a variable only the device's
     * compile sees is not passed to the kernel (clang builds the argument list on the host). */
#pragma omp target map(from : gpu)
    {
        gpu = 0;
#if defined(__NVPTX__) || defined(__AMDGPU__)
        gpu = 1;
#endif
    }
    /* GPU: the CUDA plugin has 16384 ports, so 64 x 128 threads have one each and 256 x 128
     * share them by four.  Host offload: small shapes (its threads are CPU threads). */
    int small = gpu ? 64 : 2, large = gpu ? 256 : 4, width = gpu ? 128 : 4, per = 8;
    int before = atomic_load(&calls), errors = 0, made = 0;
    errors += mix_grid(small, width, per, 0x1000u, &made);
    errors += mix_grid(small, width, per, 0x2000u, &made);
    errors += mix_grid(large, width, 2, 0x3000u, &made);
    int e1 = 0, e2 = 0, m1 = 0, m2 = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task shared(e1, m1)
        e1 = mix_grid(small / 2, width, per, 0x4000u, &m1);
#pragma omp task shared(e2, m2)
        e2 = mix_grid(small / 2, width, per, 0x5000u, &m2);
    }
    errors += e1 + e2;
    made += m1 + m2;
    /* On a GPU every thread of each shape ran; the host plugin may run fewer threads. */
    int expect = 2 * small * width * per + large * width * 2 + 2 * (small / 2) * width * per;
    int served = atomic_load(&calls) - before;
    printf("short calls: %d made, %d served, %d wrong answers (GPU: %d expected)\n", made, served,
           errors, expect);
    return errors != 0 || served != made || made == 0 || (gpu && made != expect);
}

int main(void)
{
    tether_status_t st = tether_rpc_register_user(OP_SUM, sum_handler, NULL);
    if (st == TETHER_OK)
        st = tether_rpc_register_user(OP_MIX, mix_handler, NULL);
    if (st != TETHER_OK) {
        fprintf(stderr, "offload_user: register: %s\n", tether_status_str(st));
        return 1;
    }
    int errors = 0, unhandled = 0;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(4)                  \
    reduction(+ : errors) map(tofrom : errors)
    for (int i = 0; i < 400; i++) {
        struct sum_req r;
        struct sum_ans a;
        r.id = i;
        r.n = i % 17;
        int64_t want = 0;
        for (int k = 0; k < 16; k++) {
            r.v[k] = (int64_t)i * 1000 + k;
            if (k < r.n)
                want += r.v[k];
        }
        int64_t len = tether_rpc_call(OP_SUM, &r, sizeof r, &a, sizeof a);
        errors += len != (int64_t)sizeof a || a.id != i || a.sum != want;
    }
#pragma omp target map(from : unhandled)
    {
        char out[4];
        unhandled = (int)tether_rpc_call(OP_NONE, "x", 1, out, sizeof out);
    }
    printf("user opcode: %d calls served, %d wrong answers, unhandled call returned %d\n",
           atomic_load(&calls), errors, unhandled);
    if (errors != 0 || atomic_load(&calls) != 400 || unhandled != -(int)TETHER_RPC_CALL_UNHANDLED)
        return 1;
    return mix_shapes();
}
