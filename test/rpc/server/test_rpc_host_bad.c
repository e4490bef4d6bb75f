/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_bad.c - test_rpc_host's bad: malformed calls written straight onto
 * the ports, and a port left mid-call; the server says what was wrong and serves on.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "test_rpc_host.h"

/* ---- bad input from the device ---------------------------------------------------------- */

struct raw_msg {
    const unsigned char *bytes;
    uint64_t len;   /* bytes actually sent */
    uint64_t claim; /* length written into the stream */
    uint64_t pos;
};

static void raw_fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct raw_msg *m = arg;
    unsigned char *dst = (unsigned char *)buffer->data;
    (void)lane;
    memset(dst, 0, 64);
    uint64_t off = 0;
    if (m->pos == 0) {
        memcpy(dst, &m->claim, 8);
        off = 8;
    }
    uint64_t data = m->pos == 0 ? 0 : m->pos - 8;
    uint64_t n = m->len > data ? m->len - data : 0;
    if (n > 64 - off)
        n = 64 - off;
    memcpy(dst + off, m->bytes + data, n);
    m->pos += 64;
}

struct raw_answer {
    uint32_t status;
    bool got;
};

static void raw_use(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct raw_answer *a = arg;
    (void)lane;
    if (!a->got) {
        memcpy(&a->status, (unsigned char *)buffer->data + 8, 4);
        a->got = true;
    }
}

/* Opens exactly port `at` (waiting until it is free). */
static rpc_port_t open_at(struct rpc_client *c, uint32_t opcode, uint32_t at)
{
    rpc_port_t port;
    for (;;) {
        if (rpc_client_try_open(c, opcode, 1, at, &port)) {
            if (rpc_port_index(&port) == at)
                return port;
            rpc_client_close(c, &port);
        }
        sched_yield();
    }
}

/* Sends one lane-0 message with the given bytes and claimed length on port
 * `at`; reads a one-packet answer if asked. */
static uint32_t raw_call(uint32_t opcode, const void *bytes, uint64_t len, uint64_t claim,
                         bool answer, uint32_t at)
{
    struct rpc_client *c = &__tether_rpc_client.client;
    rpc_port_t port = open_at(c, opcode, at);
    struct raw_msg m = {bytes, len, claim, 0};
    uint64_t packets = (len + 8 + 63) / 64;
    for (uint64_t p = 0; p < packets; p++)
        rpc_client_send(c, &port, raw_fill, &m);
    struct raw_answer a = {0, false};
    if (answer)
        rpc_client_recv(c, &port, raw_use, &a);
    rpc_client_close(c, &port);
    return a.status;
}

void test_bad(void)
{
    struct rig rig;
    enum { PORTS = 16 };
    rig_up(&rig, false, PORTS, 1, true);
    uint32_t home = dev_caller_id() % PORTS; /* this thread's calls use it: keep it free */
    /* printf shorter than its header; with lengths that do not add up. */
    raw_call(TETHER_RPC_OP_PRINTF, "abc", 3, 3, false, (home + 1) % PORTS);
    struct {
        struct tether_rpc_printf_hdr h;
        char fmt[8];
    } pf = {{TETHER_RPC_STDOUT, 1000, 1000, 1000}, "%d %s\n"};
    raw_call(TETHER_RPC_OP_PRINTF, &pf, sizeof pf, sizeof pf, false, (home + 1) % PORTS);
    /* write shorter than its header */
    raw_call(TETHER_RPC_OP_WRITE, "ab", 2, 2, false, (home + 1) % PORTS);
    /* alloc with a wrong size and with a bad alignment */
    CHECKF(raw_call(TETHER_RPC_OP_ALLOC, "abcd", 4, 4, true, (home + 1) % PORTS) ==
               TETHER_RPC_CALL_ERROR,
           "short alloc request");
    struct tether_rpc_alloc_req areq = {64, 3};
    CHECKF(raw_call(TETHER_RPC_OP_ALLOC, &areq, sizeof areq, sizeof areq, true,
                    (home + 1) % PORTS) == TETHER_RPC_CALL_ERROR,
           "alloc with alignment 3");
    /* free of a pointer the host never handed out */
    struct tether_rpc_free_req freq = {0x12345678};
    raw_call(TETHER_RPC_OP_FREE, &freq, sizeof freq, sizeof freq, false, (home + 1) % PORTS);
    /* an opcode with reserved bits, and an unknown built-in opcode */
    CHECKF(raw_call(0x777 | (1u << 20), "", 0, 0, true, (home + 1) % PORTS) ==
               TETHER_RPC_CALL_UNHANDLED,
           "unknown opcode");
    /* a request claiming more than TETHER_RPC_MSG_MAX: dropped with an answer */
    static unsigned char junk[200];
    raw_call(0x8003, junk, sizeof junk, (uint64_t)1 << 62, false, (home + 2) % PORTS);
    /* a port left mid-call by the device: the others still work */
    struct rpc_client *c = &__tether_rpc_client.client;
    rpc_port_t stuck = open_at(c, TETHER_RPC_OP_PRINTF, (home + 3) % PORTS);
    struct raw_msg m = {junk, 100, 1000, 0};
    rpc_client_send(c, &stuck, raw_fill, &m); /* 1 of 16 packets, then nothing */
    dprintf_("still %s\n", "served");
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *out = slurp(rig.out, &len);
    char *err = slurp(rig.err, &len);
    CHECKF(strstr(out, "still served\n") != NULL, "stdout: \"%s\"", out);
    CHECKF(strstr(out, "<missing") != NULL || strstr(out, "<bad") != NULL ||
               strstr(out, "%d") == NULL,
           "garbled printf shows markers: \"%s\"", out);
    CHECKF(strstr(err, "shorter than its header") != NULL, "diagnostics: \"%s\"", err);
    CHECKF(strstr(err, "never handed out") != NULL, "free diagnostic: \"%s\"", err);
    CHECKF(strstr(err, "reserved bits") != NULL, "reserved bits diagnostic: \"%s\"", err);
    free(out);
    free(err);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.malformed >= 6, "stats: %llu malformed", (unsigned long long)st.malformed);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig); /* destroy must not hang on the stuck port */
    (void)stuck;
}
