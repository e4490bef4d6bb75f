/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_calls.c - many client threads against server thread(s)
 * over one region, every payload checked, no call lost or duplicated.
 *
 *   rpc_test_calls --ports P --lanes L --clients K --servers S --calls N
 *                  [--fork 1] [--short 1 [--late 1]]
 *
 * Each client makes N/K calls of three shapes, chosen per call:
 *   ECHO  send, recv                    (reply checked lane by lane)
 *   FIRE  send, close                   (fire and forget)
 *   MULTI send, send, recv              (server: recv, recv, send)
 * Every lane's packet is derived from the call's tag (client, sequence), so
 * a packet read early, late, torn or from another call fails a check.  The
 * server marks each tag once in `seen`; at the end every tag must be marked
 * exactly once.  With --fork 1 the servers run in a child process and the
 * region is a MAP_SHARED mapping; the lock bitmaps stay private.
 * With --lanes > 1 each client thread plays a warp with a random active-lane
 * mask per call.
 * With --short 1 about half the calls are one-lane calls whose first packet
 * goes as a short request (rpc_client_send_short): the first 6 to 64 bytes
 * of the usual packet, the size in the opcode; the server checks those bytes
 * and zeros after them.  Every answer carries a head derived from the tag,
 * which the client checks; a short call's client reads the reply buffers or
 * takes the head alone (so the port's "buffers read" state changes hands
 * between client threads).  With --late 1 too, a quarter of the short
 * requests are sent by hand with the flag first and the words after it, in
 * shuffled order with yields between, as words still in flight would arrive:
 * the server must leave such a port and come back to it.
 * With --home 1 each client opens its home port (client % ports) directly
 * (rpc_client_try_open_port), as a device thread does: clients that share a
 * home port take turns on it, each trusting the state word the other left.
 */
#if defined(RPC_TEST_CHECKED)
#undef NDEBUG /* the checked variant: every protocol assertion on */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rpc_test_util.h"

enum { OP_ECHO = 0x101, OP_FIRE = 0x102, OP_MULTI = 0x103 };

/* A short call's opcode: OP_SHORT | shape, the request's byte count in bits 16..23. */
#define OP_SHORT 0x1000u

struct shared {
    _Atomic uint64_t served;
    _Atomic uint8_t seen[]; /* one per call */
};

static uint64_t opt_ports = 64, opt_lanes = 1, opt_clients = 4, opt_servers = 1, opt_calls = 100000,
                opt_fork = 0, opt_short = 0, opt_late = 0, opt_home = 0;
static uint64_t per_client;
static void *region;
static struct shared *shared;
static struct rpc_client client;

/* ---- payloads ---------------------------------------------------------- */

static uint64_t tag_of(uint64_t c, uint64_t seq)
{
    return (c << 40) | seq;
}

static uint64_t word(uint64_t tag, uint32_t lane, uint32_t k, uint64_t packet)
{
    return test_mix(tag * 131 + lane * 8 + k + (packet << 20));
}

struct packet {
    uint64_t tag;
    uint64_t mask;
    uint64_t packet; /* 0: first send, 1: second send, 2: reply */
    uint32_t lanes_seen;
    uint32_t nbytes; /* a short request: its byte count (else 0) */
};

static void fill_packet(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct packet *p = arg;
    b->data[0] = p->tag;
    b->data[1] = p->mask;
    for (uint32_t k = 2; k < 8; k++)
        b->data[k] = word(p->tag, lane, k, p->packet);
    p->lanes_seen++;
}

/* A short request: bytes [0, nbytes) of the packet fill_packet makes, zeros after (the tag, at
 * most 48 bits, is in the first 6 bytes). */
static void check_short(struct rpc_buffer *b, uint32_t lane, struct packet *p)
{
    p->tag = b->data[0];
    struct packet want = {p->tag, p->mask, 0, 0, 0};
    struct rpc_buffer full;
    fill_packet(&full, lane, &want);
    const unsigned char *got = (const unsigned char *)b->data,
                        *pkt = (const unsigned char *)full.data;
    for (uint32_t i = 0; i < RPC_BUFFER_SIZE; i++)
        REQUIREF(got[i] == (i < p->nbytes ? pkt[i] : 0), "short request byte %u of %u: %#x", i,
                 p->nbytes, got[i]);
    p->lanes_seen++;
}

/* Checks a packet; for the first packet of a call learns the tag. */
static void check_packet(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct packet *p = arg;
    if (p->packet == 0 && p->nbytes != 0) {
        check_short(b, lane, p);
        return;
    }
    if (p->lanes_seen == 0 && p->packet == 0)
        p->tag = b->data[0];
    REQUIREF(b->data[0] == p->tag, "lane %u tag %llx want %llx", lane,
             (unsigned long long)b->data[0], (unsigned long long)p->tag);
    REQUIREF(b->data[1] == p->mask, "lane %u mask %llx want %llx", lane,
             (unsigned long long)b->data[1], (unsigned long long)p->mask);
    REQUIRE((p->mask >> lane) & 1);
    for (uint32_t k = 2; k < 8; k++)
        REQUIREF(b->data[k] == word(p->tag, lane, k, p->packet), "lane %u word %u packet %llu",
                 lane, k, (unsigned long long)p->packet);
    p->lanes_seen++;
}

/* The head that the server stores with each answer of call `tag`. */
static uint64_t head_payload(uint64_t tag, uint32_t i)
{
    return test_mix(tag + i) & ((1ull << RPC_HEAD_BITS) - 1);
}

/* ---- client -------------------------------------------------------------- */

/* rpc_client_send_short done by hand in the worst order a link may deliver it: the flag first,
 * then the words one by one, shuffled, with yields between.  Mirrors the encoding in rpc.h
 * (struct rpc_header): meta word, then six packet bytes per word above the tag. */
static void late_send_short(rpc_port_t *port, const uint64_t *pkt, uint32_t nbytes, uint64_t r)
{
    struct rpc_process *p = &client.process;
    uint32_t index = rpc_port_index(port), n = (nbytes + 5) / 6;
    uint32_t lane = (uint32_t)__builtin_ctzll(rpc_port_lane_mask(port));
    uint64_t tag = 0x8000u | (port->seq_ & 0xffu), w[RPC_SHORT_WORDS];
    const unsigned char *bytes = (const unsigned char *)pkt;
    REQUIRE((port->state_ & (RPC_PS_FIRST | RPC_PS_OWNED)) == (RPC_PS_FIRST | RPC_PS_OWNED));
    w[0] = tag | (uint64_t)rpc_port_opcode(port) << 16 | (uint64_t)lane << 48 | (uint64_t)n << 54;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t v = 0;
        for (uint32_t b = 0; b < 6 && 6 * k + b < nbytes; b++)
            v |= (uint64_t)bytes[6 * k + b] << (8 * b);
        w[1 + k] = tag | v << 16;
    }
    uint32_t order[RPC_SHORT_WORDS];
    for (uint32_t k = 0; k <= n; k++)
        order[k] = k;
    for (uint32_t k = n; k > 0; k--) {
        r = test_mix(r);
        uint32_t j = (uint32_t)(r % (k + 1)), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    uint32_t flag = ((port->state_ & RPC_PS_OUT) ? 0u : 1u) | RPC_FLAG_SHORT;
    atomic_store_explicit(&p->cflags[index], (uint8_t)flag, memory_order_release);
    for (uint32_t k = 0; k <= n; k++) {
        if ((r >> k) & 1)
            sched_yield();
        atomic_store_explicit(&p->headers[index].req[order[k]], w[order[k]], memory_order_relaxed);
    }
    port->state_ ^= RPC_PS_OUT;
    port->state_ &= ~(uint32_t)(RPC_PS_OWNED | RPC_PS_READ | RPC_PS_RECEIVED | RPC_PS_FIRST);
}

static void *client_main(void *arg)
{
    uint64_t c = (uint64_t)(uintptr_t)arg;
    uint64_t lanes_mask = opt_lanes >= 64 ? ~0ull : (1ull << opt_lanes) - 1;
    uint32_t hint = (uint32_t)(c * (opt_ports / opt_clients + 1));
    for (uint64_t seq = 0; seq < per_client; seq++) {
        uint64_t tag = tag_of(c, seq), r = test_mix(tag ^ 0xabcdef);
        uint64_t mask = opt_lanes == 1 ? 1 : (r & lanes_mask);
        if (mask == 0)
            mask = 1ull << (r % opt_lanes);
        uint32_t shape = (uint32_t)((r >> 61) % 4);
        uint32_t op = shape == 2 ? OP_FIRE : shape == 3 ? OP_MULTI : OP_ECHO;
        /* Short: one lane, 6 to 64 bytes of the first packet. */
        bool is_short = opt_short && ((r >> 40) & 1);
        uint32_t nbytes = 6 + (uint32_t)((r >> 20) % (RPC_SHORT_MAX - 5));
        if (is_short) {
            mask = 1ull << ((r >> 8) % opt_lanes);
            op |= OP_SHORT | nbytes << 16;
        }
        uint32_t n = (uint32_t)__builtin_popcountll(mask);

        rpc_port_t port;
        if (opt_home) {
            uint32_t spins = 0;
            while (!rpc_client_try_open_port(&client, op, mask, (uint32_t)(c % opt_ports), &port))
                rpc_arch_backoff(&spins);
        } else {
            port = rpc_client_open(&client, op, mask, hint);
        }
        REQUIRE(rpc_port_opcode(&port) == op && rpc_port_lane_mask(&port) == mask);
        struct packet p = {tag, mask, 0, 0, 0};
        if (is_short) {
            struct rpc_buffer pkt;
            fill_packet(&pkt, (uint32_t)__builtin_ctzll(mask), &p);
            if (opt_late && ((r >> 44) & 3) == 0)
                late_send_short(&port, pkt.data, nbytes, r);
            else
                rpc_client_send_short(&client, &port, pkt.data, nbytes);
        } else {
            rpc_client_send(&client, &port, fill_packet, &p);
        }
        REQUIRE(p.lanes_seen == n);
        if ((op & 0xfff) == OP_MULTI) {
            p.packet = 1;
            rpc_client_send(&client, &port, fill_packet, &p);
        }
        if ((op & 0xfff) != OP_FIRE) {
            struct packet reply = {tag, mask, 2, 0, 0};
            if (is_short && ((r >> 46) & 1)) {
                rpc_client_recv(&client, &port, NULL, NULL); /* the head alone */
            } else {
                rpc_client_recv(&client, &port, check_packet, &reply);
                REQUIRE(reply.lanes_seen == n);
            }
            REQUIRE(rpc_port_head(&port, 0) == head_payload(tag, 0));
            REQUIRE(rpc_port_head(&port, 1) == head_payload(tag, 1));
        }
        rpc_client_close(&client, &port);
    }
    return NULL;
}

/* ---- server -------------------------------------------------------------- */

struct server_arg {
    struct rpc_server *server;
};

static void *server_main(void *arg)
{
    struct rpc_server *server = ((struct server_arg *)arg)->server;
    uint64_t total = per_client * opt_clients;
    uint32_t spins = 0;
    while (atomic_load_explicit(&shared->served, memory_order_relaxed) < total) {
        rpc_port_t port;
        if (!rpc_server_try_open(server, &port)) {
            rpc_arch_backoff(&spins);
            continue;
        }
        spins = 0;
        uint32_t op = rpc_port_opcode(&port);
        uint64_t mask = rpc_port_lane_mask(&port);
        uint32_t n = (uint32_t)__builtin_popcountll(mask), nbytes = 0;
        if (opt_short && (op & OP_SHORT)) {
            nbytes = op >> 16;
            REQUIREF(nbytes >= 6 && nbytes <= RPC_SHORT_MAX && n == 1, "short opcode %x mask %llx",
                     op, (unsigned long long)mask);
            op &= 0xfff;
        }
        REQUIREF(op == OP_ECHO || op == OP_FIRE || op == OP_MULTI, "opcode %x", op);

        struct packet p = {0, mask, 0, 0, nbytes};
        rpc_server_recv(server, &port, check_packet, &p);
        REQUIRE(p.lanes_seen == n);
        p.nbytes = 0;
        if (op == OP_MULTI) {
            p.packet = 1;
            p.lanes_seen = 0;
            rpc_server_recv(server, &port, check_packet, &p);
            REQUIRE(p.lanes_seen == n);
        }
        if (op != OP_FIRE) {
            struct packet reply = {p.tag, mask, 2, 0, 0};
            rpc_port_set_head(&port, head_payload(p.tag, 0), head_payload(p.tag, 1));
            rpc_server_send(server, &port, fill_packet, &reply);
        }
        rpc_server_close(server, &port);

        uint64_t c = p.tag >> 40, seq = p.tag & ((1ull << 40) - 1);
        REQUIREF(c < opt_clients && seq < per_client, "tag %llx", (unsigned long long)p.tag);
        uint8_t before = atomic_fetch_add(&shared->seen[c * per_client + seq], 1);
        REQUIREF(before == 0, "call %llx served twice", (unsigned long long)p.tag);
        atomic_fetch_add_explicit(&shared->served, 1, memory_order_relaxed);
    }
    return NULL;
}

/* Runs opt_servers server threads over the region until every call is
 * served; each server process side has its own lock bitmap. */
static void serve_all(void)
{
    struct rpc_server server;
    void *locks = calloc(1, rpc_lock_size((uint32_t)opt_ports));
    REQUIRE(locks);
    REQUIRE(rpc_server_init(&server, region, (uint32_t)opt_ports, (uint32_t)opt_lanes, locks) ==
            TETHER_OK);
    pthread_t threads[16];
    struct server_arg arg = {&server};
    for (uint64_t i = 0; i < opt_servers; i++)
        REQUIRE(pthread_create(&threads[i], NULL, server_main, &arg) == 0);
    for (uint64_t i = 0; i < opt_servers; i++)
        REQUIRE(pthread_join(threads[i], NULL) == 0);
    free(locks);
}

static void *serve_all_main(void *arg)
{
    (void)arg;
    serve_all();
    return NULL;
}

static void check_all_seen(void)
{
    uint64_t total = per_client * opt_clients;
    REQUIRE(atomic_load(&shared->served) == total);
    for (uint64_t i = 0; i < total; i++)
        REQUIREF(atomic_load(&shared->seen[i]) == 1, "call %llu seen %u times",
                 (unsigned long long)i, (unsigned)atomic_load(&shared->seen[i]));
}

int main(int argc, char **argv)
{
    const struct test_opt opts[] = {
        {"--ports", &opt_ports},     {"--lanes", &opt_lanes}, {"--clients", &opt_clients},
        {"--servers", &opt_servers}, {"--calls", &opt_calls}, {"--fork", &opt_fork},
        {"--short", &opt_short},     {"--late", &opt_late},   {"--home", &opt_home},
    };
    test_parse(argc, argv, opts, (int)(sizeof(opts) / sizeof(opts[0])));
    REQUIRE(opt_clients >= 1 && opt_clients <= 256 && opt_servers >= 1 && opt_servers <= 16);
    REQUIRE(opt_short <= 1 && opt_late <= opt_short && opt_home <= 1);
    REQUIRE(rpc_config_valid((uint32_t)opt_ports, (uint32_t)opt_lanes));
    per_client = (opt_calls + opt_clients - 1) / opt_clients;
    uint64_t total = per_client * opt_clients;

    uint64_t region_size = rpc_region_size((uint32_t)opt_ports, (uint32_t)opt_lanes);
    uint64_t shared_size = sizeof(struct shared) + total;
    region = test_map(region_size, (int)opt_fork);
    shared = test_map(shared_size, (int)opt_fork);

    void *client_locks = calloc(1, rpc_lock_size((uint32_t)opt_ports));
    REQUIRE(client_locks);
    REQUIRE(rpc_client_init(&client, region, (uint32_t)opt_ports, (uint32_t)opt_lanes,
                            client_locks) == TETHER_OK);

    double t0 = test_now();
    pid_t child = -1;
    pthread_t server_thread;
    if (opt_fork) {
        fflush(NULL);
        child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            serve_all();
            check_all_seen();
            _exit(0);
        }
    } else {
        REQUIRE(pthread_create(&server_thread, NULL, serve_all_main, NULL) == 0);
    }

    pthread_t threads[256];
    for (uint64_t c = 0; c < opt_clients; c++)
        REQUIRE(pthread_create(&threads[c], NULL, client_main, (void *)(uintptr_t)c) == 0);
    for (uint64_t c = 0; c < opt_clients; c++)
        REQUIRE(pthread_join(threads[c], NULL) == 0);

    if (opt_fork) {
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        REQUIREF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server process status %#x",
                 status);
    } else {
        REQUIRE(pthread_join(server_thread, NULL) == 0);
    }
    check_all_seen();
    double dt = test_now() - t0;

    /* After the run every port is idle: client and server bits agree, no
     * lock is held and no short request word is left. */
    struct rpc_server probe;
    void *probe_locks = calloc(1, rpc_lock_size((uint32_t)opt_ports));
    REQUIRE(rpc_server_init(&probe, region, (uint32_t)opt_ports, (uint32_t)opt_lanes,
                            probe_locks) == TETHER_OK);
    rpc_port_t none;
    REQUIRE(!rpc_server_try_open(&probe, &none));
    for (uint32_t p = 0; p < (uint32_t)opt_ports; p++) {
        REQUIRE((atomic_load(&((rpc_state_t *)client_locks)[p]) & RPC_CS_LOCK) == 0);
        for (uint32_t k = 0; k < RPC_SHORT_WORDS; k++)
            REQUIRE(atomic_load(&client.process.headers[p].req[k]) == 0);
    }
    free(probe_locks);

    printf("rpc_test_calls: %llu calls%s%s, %llu clients, %llu server thread(s)%s, %llu ports x "
           "%llu lanes: ok in %.2f s (%.0f calls/s)\n",
           (unsigned long long)total,
           opt_short ? (opt_late ? " (short, some late)" : " (short mixed in)") : "",
           opt_home ? " (home ports)" : "", (unsigned long long)opt_clients,
           (unsigned long long)opt_servers, opt_fork ? " in another process" : "",
           (unsigned long long)opt_ports, (unsigned long long)opt_lanes, dt, (double)total / dt);
    free(client_locks);
    test_unmap(region, region_size);
    test_unmap(shared, shared_size);
    return tcheck_exit("rpc_test_calls");
}
