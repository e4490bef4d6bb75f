/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_misuse.c - protocol misuse is caught by the checked
 * build's assertions.  Each case runs in a child process, which must die of
 * SIGABRT (assert) exactly in the misuse; a control case doing the same
 * steps correctly must exit normally, so the harness cannot pass by crashing.
 */
#undef NDEBUG
#define RPC_DEBUG 1

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rpc_test_util.h"

static struct rpc_client client;
static struct rpc_server server;
static struct rpc_client other_client;

static void put(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)arg;
    b->data[0] = lane;
}

static void get(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)b;
    (void)lane;
    (void)arg;
}

/* Prints the step reached, so a death elsewhere shows in the log. */
static volatile int reached;

#define MISUSE(stmt)                                                                               \
    do {                                                                                           \
        reached = 1;                                                                               \
        stmt;                                                                                      \
        reached = 2;                                                                               \
    } while (0)

static void use_after_close(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    rpc_client_send(&client, &p, put, NULL);
    rpc_client_close(&client, &p);
    MISUSE(rpc_client_send(&client, &p, put, NULL));
}

static void stale_copy_after_close(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    rpc_port_t copy = p;
    rpc_client_close(&client, &p);
    MISUSE(rpc_client_close(&client, &copy)); /* lock no longer held */
}

static void conjured_zero(void)
{
    rpc_port_t p = {0};
    MISUSE(rpc_client_send(&client, &p, put, NULL));
}

static void conjured_forged(void)
{
    rpc_port_t real = rpc_client_open(&client, 1, 1, 3);
    rpc_port_t fake = real;
    fake.index_ = 4; /* a port this caller never opened */
    MISUSE(rpc_client_send(&client, &fake, put, NULL));
}

static void wrong_process(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    MISUSE(rpc_client_send(&other_client, &p, put, NULL));
}

static void client_port_to_server(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    rpc_client_send(&client, &p, put, NULL);
    MISUSE(rpc_server_recv(&server, &p, get, NULL));
}

static void client_recv_first(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    MISUSE(rpc_client_recv(&client, &p, get, NULL));
}

static void server_send_first(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    rpc_client_send(&client, &p, put, NULL);
    rpc_port_t s = rpc_server_open(&server);
    MISUSE(rpc_server_send(&server, &s, put, NULL));
}

static void op_inside_stream(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    const void *src[1] = {"hello"};
    uint64_t size[1] = {5}, got[1];
    rpc_client_send_n(&client, &p, src, size);
    rpc_port_t s = rpc_server_open(&server);
    rpc_server_recv_n_size(&server, &s, got);
    MISUSE(rpc_server_send(&server, &s, put, NULL));
}

static void data_without_size(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 1, 0);
    rpc_client_send(&client, &p, put, NULL);
    rpc_port_t s = rpc_server_open(&server);
    char buf[8];
    void *dst[1] = {buf};
    uint64_t cap[1] = {8};
    MISUSE(rpc_server_recv_n_data(&server, &s, dst, cap));
}

static void lane_mask_too_wide(void)
{
    MISUSE((void)rpc_client_open(&client, 1, 1ull << 4, 0)); /* region has 4 lanes */
}

static void empty_lane_mask(void)
{
    MISUSE((void)rpc_client_open(&client, 1, 0, 0));
}

/* Control: the same kinds of steps, done right. */
static void control(void)
{
    rpc_port_t p = rpc_client_open(&client, 1, 0xf, 0);
    rpc_client_send(&client, &p, put, NULL);
    rpc_port_t s = rpc_server_open(&server);
    rpc_server_recv(&server, &s, get, NULL);
    rpc_server_send(&server, &s, put, NULL);
    rpc_client_recv(&client, &p, get, NULL);
    const void *src[4] = {"a", "b", "c", "d"};
    uint64_t size[4] = {1, 1, 1, 1}, got[4];
    char b[4][2];
    void *dst[4] = {b[0], b[1], b[2], b[3]};
    uint64_t cap[4] = {2, 2, 2, 2};
    rpc_client_send_n(&client, &p, src, size);
    rpc_server_recv_n_size(&server, &s, got);
    rpc_server_recv_n_data(&server, &s, dst, cap);
    rpc_server_close(&server, &s);
    rpc_client_close(&client, &p);
    reached = 2;
}

static void on_abort(int sig)
{
    (void)sig;
    _exit(reached == 1 ? 42 : 43);
}

struct misuse_case {
    const char *name;
    void (*run)(void);
    int dies;
};

static int run_case(const struct misuse_case *c)
{
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* Quiet the expected assertion message. */
        if (c->dies)
            REQUIRE(freopen("/dev/null", "w", stderr) != NULL);
        signal(SIGABRT, on_abort);
        c->run();
        _exit(reached == 2 ? 0 : 3);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int ok = code == (c->dies ? 42 : 0);
    printf("%-24s %s (%s)\n", c->name, ok ? "ok" : "FAILED",
           code == 42   ? "assertion in the misusing call"
           : code == 0  ? "ran to the end"
           : code == 43 ? "assertion before the misuse"
                        : "other exit");
    return ok;
}

int main(void)
{
    uint32_t ports = 8, lanes = 4;
    uint64_t size = rpc_region_size(ports, lanes);
    void *region = test_map(size, 0), *region2 = test_map(size, 0);
    void *cl = calloc(1, rpc_lock_size(ports)), *sl = calloc(1, rpc_lock_size(ports));
    void *ol = calloc(1, rpc_lock_size(ports));
    REQUIRE(rpc_client_init(&client, region, ports, lanes, cl) == TETHER_OK);
    REQUIRE(rpc_server_init(&server, region, ports, lanes, sl) == TETHER_OK);
    REQUIRE(rpc_client_init(&other_client, region2, ports, lanes, ol) == TETHER_OK);

    static const struct misuse_case cases[] = {
        {"control", control, 0},
        {"use_after_close", use_after_close, 1},
        {"stale_copy_after_close", stale_copy_after_close, 1},
        {"conjured_zero", conjured_zero, 1},
        {"conjured_forged", conjured_forged, 1},
        {"wrong_process", wrong_process, 1},
        {"client_port_to_server", client_port_to_server, 1},
        {"client_recv_first", client_recv_first, 1},
        {"server_send_first", server_send_first, 1},
        {"op_inside_stream", op_inside_stream, 1},
        {"data_without_size", data_without_size, 1},
        {"lane_mask_too_wide", lane_mask_too_wide, 1},
        {"empty_lane_mask", empty_lane_mask, 1},
    };
    int failed = 0;
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        failed += !run_case(&cases[i]);
    printf("rpc_test_misuse: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
