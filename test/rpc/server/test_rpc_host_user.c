/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_user.c - test_rpc_host's user and user-lanes: user opcodes from
 * many threads, inline and long answers, the hot path, handlers replaced, shadowed and removed.
 */
#include <pthread.h>
#include <string.h>

#include "test_rpc_host.h"

/* ---- user opcodes ----------------------------------------------------------------------- */

tether_status_t reverse_handler(void *user, const struct tether_rpc_request *req,
                                struct tether_rpc_reply *reply)
{
    atomic_int *count = user;
    atomic_fetch_add(count, 1);
    if (req->size == 4 && memcmp(req->data, "fail", 4) == 0)
        return TETHER_ERR_INVALID;
    unsigned char buf[4096];
    if (req->size > sizeof buf)
        return TETHER_ERR_INVALID;
    for (size_t i = 0; i < req->size; i++)
        buf[i] = ((const unsigned char *)req->data)[req->size - 1 - i];
    return tether_rpc_reply_append(reply, buf, req->size);
}

/* Upper-cases the request: a second handler to swap in. */
static tether_status_t upper_handler(void *user, const struct tether_rpc_request *req,
                                     struct tether_rpc_reply *reply)
{
    (void)user;
    unsigned char buf[64];
    if (req->size > sizeof buf)
        return TETHER_ERR_INVALID;
    for (size_t i = 0; i < req->size; i++) {
        unsigned char c = ((const unsigned char *)req->data)[i];
        buf[i] = c >= 'a' && c <= 'z' ? (unsigned char)(c - 'a' + 'A') : c;
    }
    return tether_rpc_reply_append(reply, buf, req->size);
}

struct user_arg {
    int t;
    int calls;
    atomic_int *failures;
};

static void *user_thread(void *arg)
{
    struct user_arg *a = arg;
    char in[3000], out[3000];
    for (int c = 0; c < a->calls; c++) {
        int n = snprintf(in, sizeof in, "thread %d call %d ", a->t, c);
        for (int k = 0; k < (c % 40) * 60; k++)
            in[n++] = (char)('a' + (k + c) % 26);
        int64_t r = tether_rpc_call(0x8001, in, (uint64_t)n, out, sizeof out);
        bool ok = r == n;
        for (int i = 0; ok && i < n; i++)
            ok = out[i] == in[n - 1 - i];
        if (!ok)
            atomic_fetch_add(a->failures, 1);
    }
    return NULL;
}

/* wide: the host client's calls (one thread over all lanes of a port); else one-lane calls as
 * a GPU thread makes them, which the server thread answers on its hot path when it sees them
 * on a port of the last calls (srv_serve_hot). */
void test_user(bool wide)
{
    struct rig rig;
    rig_up(&rig, wide, 16, 32, true);
    atomic_int count = 0, failures = 0;
    CHECKF(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    CHECKF(tether_rpc_register(rig.srv, 0x7fff, reverse_handler, &count) == TETHER_ERR_INVALID,
           "opcode below the user range refused");
    enum { THREADS = 6 };
    pthread_t tid[THREADS];
    struct user_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct user_arg){t, 200 * scale, &failures};
        pthread_create(&tid[t], NULL, user_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECKF(atomic_load(&failures) == 0, "%d wrong answers", atomic_load(&failures));
    CHECKF(atomic_load(&count) == THREADS * 200 * scale, "handler ran %d times",
           atomic_load(&count));

    /* Answers of 0..TETHER_RPC_INLINE_MAX bytes come in the head, longer ones in the buffers. */
    struct tether_rpc_stats st0, st1;
    tether_rpc_server_stats(rig.srv, &st0);
    const char *alpha = "abcdefghijklmnop";
    for (uint64_t n = 0; n <= TETHER_RPC_INLINE_MAX + 2; n++) {
        char rev[16];
        memset(rev, '?', sizeof rev);
        int64_t got = tether_rpc_call(0x8001, alpha, n, rev, sizeof rev);
        bool ok = got == (int64_t)n && rev[n] == '?';
        for (uint64_t i = 0; ok && i < n; i++)
            ok = rev[i] == alpha[n - 1 - i];
        CHECKF(ok, "answer of %llu bytes: length %lld", (unsigned long long)n, (long long)got);
    }
    tether_rpc_server_stats(rig.srv, &st1);
    CHECKF(st1.inline_answers - st0.inline_answers == TETHER_RPC_INLINE_MAX + 1,
           "%llu inline answers, expected %u",
           (unsigned long long)(st1.inline_answers - st0.inline_answers),
           TETHER_RPC_INLINE_MAX + 1);
    /* One thread's calls one after the other on its home port: one-lane calls are answered on
     * the server thread's hot path (most of them; at least one must be, however long a loaded
     * machine keeps the server thread off its CPU: no time limit here but ctest's hang guard).
     * Wide ones ring the doorbell, which ends the thread's watch of the hot ports, so they may
     * be served by either way. */
    for (int c = 0;; c++) {
        char one[4] = {(char)c, 1, 2, 3}, rev[4];
        CHECKF(tether_rpc_call(0x8001, one, 4, rev, 4) == 4 && rev[0] == 3 && rev[3] == (char)c,
               "call %d: wrong answer", c);
        if (c < 200)
            continue;
        tether_rpc_server_stats(rig.srv, &st1);
        if (wide || st1.hot_answers > st0.hot_answers)
            break;
        if (c == 1000000)
            fprintf(stderr, "no call answered on the hot path after %d calls; calling on\n", c);
    }
    CHECKF(wide ? st1.hot_answers <= st1.inline_answers : st1.hot_answers > st0.hot_answers,
           "%s calls: %llu answered on the hot path, %llu inline", wide ? "wide" : "one-lane",
           (unsigned long long)st1.hot_answers, (unsigned long long)st1.inline_answers);
    uint64_t head[2];
    uint32_t status;
    uint64_t ilen;
    unsigned char bytes[TETHER_RPC_INLINE_MAX];
    CHECKF(tether_rpc_inline_pack(
               200, (const unsigned char *)"\xff\x01\x80\x7f\x00\xfe\x02\x03\x04\x05", 10, head) &&
               tether_rpc_inline_unpack(head, &status, &ilen, bytes, 3) && status == 200 &&
               ilen == 10 && memcmp(bytes, "\xff\x01\x80", 3) == 0,
           "inline pack/unpack round trip, answer cut to the caller's size");
    CHECKF(!tether_rpc_inline_pack(256, bytes, 0, head) &&
               !tether_rpc_inline_pack(0, bytes, TETHER_RPC_INLINE_MAX + 1, head),
           "what does not fit is not packed");
    head[0] = head[1] = 0;
    CHECKF(!tether_rpc_inline_unpack(head, &status, &ilen, bytes, 10),
           "an empty head holds no answer");

    char out[8];
    int64_t r = tether_rpc_call(0x8001, "abcdefghij", 10, out, sizeof out);
    CHECKF(r == 10 && memcmp(out, "jihgfedc", 8) == 0, "answer cut to out_size, length %lld",
           (long long)r);
    r = tether_rpc_call(0x8001, "fail", 4, out, sizeof out);
    CHECKF(r == -(int64_t)TETHER_RPC_CALL_ERROR, "failing handler: %lld", (long long)r);
    /* A handler replaced, added or shadowed between calls is the one that runs (the server
     * keeps its last lookup while no table changed). */
    CHECKF(tether_rpc_register(rig.srv, 0x8001, upper_handler, NULL) == TETHER_OK, "replace");
    r = tether_rpc_call(0x8001, "abc", 3, out, sizeof out);
    CHECKF(r == 3 && memcmp(out, "ABC", 3) == 0, "replaced handler: %lld", (long long)r);
    CHECKF(tether_rpc_register_global(0x8003, reverse_handler, &count) == TETHER_OK, "global");
    r = tether_rpc_call(0x8003, "abc", 3, out, sizeof out);
    CHECKF(r == 3 && memcmp(out, "cba", 3) == 0, "process-wide handler: %lld", (long long)r);
    CHECKF(tether_rpc_register(rig.srv, 0x8003, upper_handler, NULL) == TETHER_OK, "shadow");
    r = tether_rpc_call(0x8003, "abc", 3, out, sizeof out);
    CHECKF(r == 3 && memcmp(out, "ABC", 3) == 0, "the server's own handler first: %lld",
           (long long)r);
    CHECKF(tether_rpc_register(rig.srv, 0x8003, NULL, NULL) == TETHER_OK &&
               tether_rpc_register_global(0x8003, NULL, NULL) == TETHER_OK &&
               tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK,
           "restore");
    r = tether_rpc_call(0x8001, "abc", 3, out, sizeof out);
    CHECKF(r == 3 && memcmp(out, "cba", 3) == 0, "handler back: %lld", (long long)r);
    r = tether_rpc_call(0x8002, "x", 1, out, sizeof out);
    CHECKF(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "unhandled opcode: %lld", (long long)r);
    r = tether_rpc_call(0x8002, "x", 1, out, sizeof out);
    CHECKF(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "unhandled again: %lld", (long long)r);
    r = tether_rpc_call(5, "x", 1, out, sizeof out);
    CHECKF(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "built-in opcode refused: %lld", (long long)r);
    CHECKF(tether_rpc_register(rig.srv, 0x8001, NULL, NULL) == TETHER_OK, "unregister");
    r = tether_rpc_call(0x8001, "x", 1, out, sizeof out);
    CHECKF(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "after unregister: %lld", (long long)r);
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *err = slurp(rig.err, &len);
    CHECKF(strstr(err, "no handler for RPC opcode 0x8002") != NULL &&
               strstr(strstr(err, "0x8002") + 1, "0x8002") == NULL,
           "one diagnostic for 0x8002: \"%s\"", err);
    free(err);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.unhandled == 3, "stats: %llu unhandled", (unsigned long long)st.unhandled);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}
