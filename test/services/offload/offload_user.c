/*
 * offload_user.c - a user opcode: the host registers a handler, threads of a
 * target region call it and check the answers; an opcode without a handler
 * gets an error answer (and one diagnostic on stderr), never a hang.
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

int main(void)
{
    tether_status_t st = tether_rpc_register_user(OP_SUM, sum_handler, NULL);
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
    return errors != 0 || atomic_load(&calls) != 400 ||
           unhandled != -(int)TETHER_RPC_CALL_UNHANDLED;
}
