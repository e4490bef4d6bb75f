/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_bench.c - host-thread figures of the port protocol, each next
 * to a raw shared-memory baseline measured in the same run.
 *
 *   rpc_call_rtt_1packet     one client thread, one server thread: open, send
 *                            one packet, server replies one packet, close;
 *                            vs a raw ping-pong (two threads flipping two
 *                            flags on separate cache lines).
 *   rpc_calls_per_s_Nclients N client threads against one server thread vs
 *                            N raw ping-pong pairs (calls/s summed).
 *   rpc_server_sweep_Nports  one idle server sweep over N ports (word-wise,
 *                            as rpc_server_try_open) vs a port-by-port scan.
 *
 * Waiting loops on both sides of every comparison use rpc_arch_backoff (a
 * short spin, then sched_yield), so oversubscribed runs (8 clients on 2
 * cores) compare like with like.  Ours and the baseline run alternately,
 * REPS times each; each figure is the best of its runs (least disturbed by
 * other processes on a shared machine), the baseline likewise.
 *
 *   rpc_bench [--calls N] [--reps R] [--pin 0|1]
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <unistd.h>

#include "rpc_test_util.h"

static uint64_t opt_calls = 50000, opt_reps = 11, opt_pin = 0;

/* --pin 1: with one client and one server (or one ping-pong pair) each side
 * gets its own CPU.  Off by default: on a shared machine a pinned thread
 * waits behind whatever else runs on its CPU. */
static int pin_two;

static void pin(int cpu)
{
    if (!pin_two)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double lowest(const double *v, uint64_t n)
{
    double m = v[0];
    for (uint64_t i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static double highest(const double *v, uint64_t n)
{
    double m = v[0];
    for (uint64_t i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* ---- raw ping-pong ------------------------------------------------------- */

struct pingpong {
    _Alignas(64) _Atomic uint64_t ping;
    _Alignas(64) _Atomic uint64_t pong;
    uint64_t rounds;
};

static void wait_eq(_Atomic uint64_t *flag, uint64_t value)
{
    uint32_t spins = 0;
    while (atomic_load_explicit(flag, memory_order_acquire) != value)
        rpc_arch_backoff(&spins);
}

static void *pong_main(void *arg)
{
    struct pingpong *pp = arg;
    pin(1);
    for (uint64_t i = 1; i <= pp->rounds; i++) {
        wait_eq(&pp->ping, i);
        atomic_store_explicit(&pp->pong, i, memory_order_release);
    }
    return NULL;
}

static void *ping_main(void *arg)
{
    struct pingpong *pp = arg;
    pin(0);
    for (uint64_t i = 1; i <= pp->rounds; i++) {
        atomic_store_explicit(&pp->ping, i, memory_order_release);
        wait_eq(&pp->pong, i);
    }
    return NULL;
}

/* Seconds for `pairs` ping-pong pairs doing `rounds` round trips each. */
static double run_pingpong(uint32_t pairs, uint64_t rounds)
{
    struct pingpong *pp = aligned_alloc(64, sizeof(*pp) * pairs);
    pthread_t t[2 * 64];
    REQUIRE(pp && pairs <= 64);
    for (uint32_t i = 0; i < pairs; i++) {
        atomic_init(&pp[i].ping, 0);
        atomic_init(&pp[i].pong, 0);
        pp[i].rounds = rounds;
    }
    double t0 = test_now();
    for (uint32_t i = 0; i < pairs; i++) {
        REQUIRE(pthread_create(&t[2 * i], NULL, pong_main, &pp[i]) == 0);
        REQUIRE(pthread_create(&t[2 * i + 1], NULL, ping_main, &pp[i]) == 0);
    }
    for (uint32_t i = 0; i < 2 * pairs; i++)
        REQUIRE(pthread_join(t[i], NULL) == 0);
    double dt = test_now() - t0;
    free(pp);
    return dt;
}

/* ---- protocol calls ------------------------------------------------------ */

struct calls {
    void *region;
    struct rpc_client client;
    struct rpc_server server;
    void *client_locks, *server_locks;
    uint64_t per_client;
    uint32_t clients;
    _Atomic uint32_t done;
};

static void put_word(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)lane;
    b->data[0] = *(uint64_t *)arg;
}

static void get_word(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)lane;
    *(uint64_t *)arg = b->data[0];
}

static void *call_client_main(void *arg)
{
    struct calls *c = arg;
    static _Atomic uint32_t next_id;
    uint32_t id = atomic_fetch_add(&next_id, 1);
    pin(0);
    for (uint64_t i = 0; i < c->per_client; i++) {
        uint64_t v = i, r = 0;
        rpc_port_t port = rpc_client_open(&c->client, 1, 1, id * 8);
        rpc_client_send(&c->client, &port, put_word, &v);
        rpc_client_recv(&c->client, &port, get_word, &r);
        rpc_client_close(&c->client, &port);
        REQUIRE(r == i + 1);
    }
    atomic_fetch_add(&c->done, 1);
    return NULL;
}

static void *call_server_main(void *arg)
{
    struct calls *c = arg;
    uint32_t spins = 0;
    pin(1);
    for (;;) {
        rpc_port_t port;
        if (!rpc_server_try_open(&c->server, &port)) {
            if (atomic_load_explicit(&c->done, memory_order_relaxed) == c->clients)
                return NULL;
            rpc_arch_backoff(&spins);
            continue;
        }
        spins = 0;
        uint64_t v = 0;
        rpc_server_recv(&c->server, &port, get_word, &v);
        v++;
        rpc_server_send(&c->server, &port, put_word, &v);
        rpc_server_close(&c->server, &port);
    }
}

/* Seconds for `clients` client threads making `per_client` one-packet calls
 * each against one server thread, over 64 ports of 1 lane. */
static double run_calls(uint32_t clients, uint64_t per_client)
{
    const uint32_t ports = 64;
    struct calls *c = calloc(1, sizeof(*c));
    REQUIRE(c);
    uint64_t size = rpc_region_size(ports, 1);
    c->region = test_map(size, 0);
    c->client_locks = calloc(1, rpc_lock_size(ports));
    c->server_locks = calloc(1, rpc_lock_size(ports));
    REQUIRE(rpc_client_init(&c->client, c->region, ports, 1, c->client_locks) == TETHER_OK);
    REQUIRE(rpc_server_init(&c->server, c->region, ports, 1, c->server_locks) == TETHER_OK);
    c->per_client = per_client;
    c->clients = clients;
    pthread_t server, t[64];
    REQUIRE(clients <= 64);
    double t0 = test_now();
    REQUIRE(pthread_create(&server, NULL, call_server_main, c) == 0);
    for (uint32_t i = 0; i < clients; i++)
        REQUIRE(pthread_create(&t[i], NULL, call_client_main, c) == 0);
    for (uint32_t i = 0; i < clients; i++)
        REQUIRE(pthread_join(t[i], NULL) == 0);
    REQUIRE(pthread_join(server, NULL) == 0);
    double dt = test_now() - t0;
    test_unmap(c->region, size);
    free(c->client_locks);
    free(c->server_locks);
    free(c);
    return dt;
}

/* ---- idle server sweep --------------------------------------------------- */

/* Baseline: the port-by-port scan of a protocol with one mailbox word per
 * port side (2 loads per port), written as plainly as possible. */
static uint32_t scan_port_by_port(rpc_flag_t *in, rpc_flag_t *out, uint32_t ports)
{
    for (uint32_t p = 0; p < ports; p++) {
        uint32_t a = atomic_load_explicit(&in[p], memory_order_relaxed) & 1;
        uint32_t b = atomic_load_explicit(&out[p], memory_order_relaxed) & 1;
        if (a != b)
            return p;
    }
    return ports;
}

static void sweep_figure(uint32_t ports, uint64_t reps)
{
    uint64_t size = rpc_region_size(ports, 1);
    void *region = test_map(size, 0);
    void *locks = calloc(1, rpc_lock_size(ports));
    struct rpc_server server;
    REQUIRE(rpc_server_init(&server, region, ports, 1, locks) == TETHER_OK);
    const uint32_t n = ports >= 4096 ? 200 : 20000;
    double ours[32] = {0}, base[32] = {0};
    REQUIRE(reps <= 32);
    volatile uint32_t sink = 0;
    for (uint64_t r = 0; r < reps; r++) {
        double t0 = test_now();
        for (uint32_t i = 0; i < n; i++) {
            rpc_port_t port;
            sink += rpc_server_try_open(&server, &port);
        }
        double t1 = test_now();
        for (uint32_t i = 0; i < n; i++)
            sink += scan_port_by_port(server.process.cflags, server.process.sflags, ports);
        double t2 = test_now();
        ours[r] = (t1 - t0) / n;
        base[r] = (t2 - t1) / n;
    }
    (void)sink;
    double o = lowest(ours, reps), b = lowest(base, reps);
    printf("rpc_server_sweep_%uports: %.3f us (%.2fx vs port-by-port scan %.3f us)\n", ports,
           o * 1e6, o / b, b * 1e6);
    test_unmap(region, size);
    free(locks);
}

int main(int argc, char **argv)
{
    const struct test_opt opts[] = {
        {"--calls", &opt_calls}, {"--reps", &opt_reps}, {"--pin", &opt_pin}};
    test_parse(argc, argv, opts, 3);
    REQUIRE(opt_reps >= 1 && opt_reps <= 32);

    /* One-packet round trip, 1 client vs 1 ping-pong pair, pinned. */
    double ours[32] = {0}, base[32] = {0};
    pin_two = opt_pin && sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    for (uint64_t r = 0; r < opt_reps; r++) {
        base[r] = run_pingpong(1, opt_calls) / (double)opt_calls;
        ours[r] = run_calls(1, opt_calls) / (double)opt_calls;
    }
    double o = lowest(ours, opt_reps), b = lowest(base, opt_reps);
    printf("rpc_call_rtt_1packet: %.0f ns (%.2fx vs raw ping-pong %.0f ns)\n", o * 1e9, o / b,
           b * 1e9);
    pin_two = 0;

    static const uint32_t clients[] = {1, 2, 8};
    for (unsigned k = 0; k < 3; k++) {
        uint32_t n = clients[k];
        uint64_t per = opt_calls / n;
        for (uint64_t r = 0; r < opt_reps; r++) {
            base[r] = (double)(per * n) / run_pingpong(n, per);
            ours[r] = (double)(per * n) / run_calls(n, per);
        }
        o = highest(ours, opt_reps);
        b = highest(base, opt_reps);
        printf("rpc_calls_per_s_%uclients: %.0f calls/s (%.2fx vs %u raw ping-pong pair%s %.0f "
               "round trips/s)\n",
               n, o, o / b, n, n > 1 ? "s" : "", b);
    }

    sweep_figure(64, opt_reps);
    sweep_figure(4096, opt_reps);
    sweep_figure(65536, opt_reps);
    return 0;
}
