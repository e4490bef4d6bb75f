/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_gpu_check.c - the port protocol with a real GPU as the client:
 * warps of an OpenMP target region call a host server thread through pinned
 * host memory (system-scope atomics over PCIe, rpc_arch.h's nvptx layer).
 * Not part of ctest (needs an NVIDIA GPU); see test/rpc/rpc_gpu_check.sh.
 *
 *   rpc_gpu_check [teams [calls [diverge [verbose]]]]
 *
 * One warp per team.  Per call round, the whole warp makes one call, then
 * (diverge=1) the even lanes make one call and the odd lanes two, from
 * separate functions (two divergent groups of one warp on two ports at once).  Every
 * lane sends a packet derived from its own tag (team, round, group, lane);
 * the server checks every word of every lane, answers each lane from its own
 * tag, and counts each (tag, lane) once; each lane checks its answer.  The
 * lane masks are whatever the hardware had active (printed as a histogram):
 * the checks hold for any grouping.  Exit 0 when everything holds.
 *
 * The region is host memory registered with cuMemHostRegister (libomptarget
 * 16 cannot allocate pinned host memory); the client's lock bitmap and the
 * client object itself are device memory written by the host.  A failing
 * protocol check on the GPU reports its rpc.h line through pinned memory.
 */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A failing protocol check on the GPU writes its line number into pinned
 * host memory before trapping, so the host can say which check it was. */
#pragma omp declare target
uint32_t *gpu_fail_line;
void gpu_fail(uint32_t line)
{
#if defined(__NVPTX__)
    *(volatile uint32_t *)gpu_fail_line = line;
    __nvvm_membar_sys();
#else
    (void)line;
#endif
    __builtin_trap();
}
#pragma omp end declare target
#define RPC_ASSERT(cond) ((cond) ? (void)0 : gpu_fail(__LINE__))

#pragma omp declare target
#include "rpc.h"
#pragma omp end declare target

#ifndef PORTS
#define PORTS 256 /* fewer ports than warps: callers contend */
#endif
static uint32_t TEAMS = 528; /* 4 warps per SM of an H100, one warp per team */
static uint32_t CALLS = 64;
static uint32_t DIVERGE = 1;
#define LANES 32
#define OP_CHECK 0x77

/* Tag of one lane's packet: team << 32 | group << 24 | round << 8 | lane;
 * group 0: whole warp, 1: even lanes, 2 and 3: odd lanes. */
static uint64_t word_of(uint64_t tag, uint32_t k)
{
    uint64_t x = tag * 0x9e3779b97f4a7c15ull + k;
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

#pragma omp declare target
struct lane_arg {
    uint64_t tag;
    uint32_t bad;
};

static uint64_t dev_word(uint64_t tag, uint32_t k)
{
    uint64_t x = tag * 0x9e3779b97f4a7c15ull + k;
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

static void dev_fill(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct lane_arg *a = (struct lane_arg *)arg;
    b->data[0] = a->tag;
    for (uint32_t k = 1; k < 8; k++)
        b->data[k] = dev_word(a->tag, k);
    if ((a->tag & 0xff) != lane)
        a->bad++;
}

static void dev_check(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct lane_arg *a = (struct lane_arg *)arg;
    (void)lane;
    if (b->data[0] != ~a->tag)
        a->bad++;
    for (uint32_t k = 1; k < 8; k++)
        if (b->data[k] != dev_word(a->tag, k) + 1)
            a->bad++;
}

static uint64_t dev_active_mask(void)
{
#if defined(__NVPTX__)
    uint32_t m;
    __asm__ volatile("activemask.b32 %0;" : "=r"(m));
    return m;
#else
    return 1;
#endif
}

static uint32_t dev_call(struct rpc_client *client, uint64_t tag, uint32_t hint)
{
    struct lane_arg a = {tag, 0};
    uint64_t mask = dev_active_mask();
    rpc_port_t port = rpc_client_open(client, OP_CHECK, mask, hint);
    rpc_client_send(client, &port, dev_fill, &a);
    rpc_client_recv(client, &port, dev_check, &a);
    rpc_client_close(client, &port);
    return a.bad;
}

/* Two distinct functions, so that the compiler cannot merge the even and the
 * odd lanes' calls into one call. */
__attribute__((noinline)) uint32_t dev_call_even(struct rpc_client *client, uint64_t tag,
                                                 uint32_t hint)
{
    return dev_call(client, tag, hint);
}

__attribute__((noinline)) uint32_t dev_call_odd(struct rpc_client *client, uint64_t tag,
                                                uint32_t hint)
{
    return dev_call(client, tag, hint + 1);
}
#pragma omp end declare target

/* ---- host side -------------------------------------------------------- */

static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*primary_retain)(void **, int);
    int (*ctx_set_current)(void *);
    int (*host_register)(void *, size_t, unsigned);
    int (*host_get_device_pointer)(uint64_t *, void *, unsigned);
} cu;

static int load_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return -1;
    *(void **)&cu.init = dlsym(h, "cuInit");
    *(void **)&cu.device_get = dlsym(h, "cuDeviceGet");
    *(void **)&cu.primary_retain = dlsym(h, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **)&cu.host_register = dlsym(h, "cuMemHostRegister_v2");
    *(void **)&cu.host_get_device_pointer = dlsym(h, "cuMemHostGetDevicePointer_v2");
    return cu.init && cu.device_get && cu.primary_retain && cu.ctx_set_current &&
                   cu.host_register && cu.host_get_device_pointer
               ? 0
               : -1;
}

static struct rpc_server server;
static _Atomic uint64_t served, server_bad;
static _Atomic int stop, verbose;
static uint8_t *seen; /* per (team, round, group, lane) */
static uint64_t seen_size;
static _Atomic uint64_t lanes_served, mask_hist[33];

struct host_arg {
    uint32_t lanes;
    uint32_t bad;
    uint64_t first_tag;
};

static void host_check(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    struct host_arg *a = arg;
    uint64_t tag = b->data[0];
    for (uint32_t k = 1; k < 8; k++)
        if (b->data[k] != word_of(tag, k))
            a->bad++;
    uint64_t team = tag >> 32, group = (tag >> 24) & 0xff, round = (tag >> 8) & 0xffff;
    uint64_t id = ((team * CALLS + round) * 4 + group) * 32 + lane;
    if ((tag & 0xff) != lane || team >= TEAMS || round >= CALLS || group > 3 || id >= seen_size ||
        atomic_fetch_add((_Atomic uint8_t *)&seen[id], 1) != 0)
        a->bad++;
    if (a->lanes++ == 0)
        a->first_tag = tag;
}

static void host_reply(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)lane;
    (void)arg;
    uint64_t tag = b->data[0]; /* still the lane's request: answer in place */
    b->data[0] = ~tag;
    for (uint32_t k = 1; k < 8; k++)
        b->data[k] = word_of(tag, k) + 1;
}

static void *server_main(void *unused)
{
    (void)unused;
    uint32_t spins = 0;
    while (!atomic_load(&stop)) {
        rpc_port_t port;
        if (!rpc_server_try_open(&server, &port)) {
            rpc_arch_backoff(&spins);
            continue;
        }
        spins = 0;
        struct host_arg a = {0, 0, 0};
        uint64_t mask = rpc_port_lane_mask(&port);
        rpc_server_recv(&server, &port, host_check, &a);
        if (rpc_port_opcode(&port) != OP_CHECK || a.lanes != (uint32_t)__builtin_popcountll(mask))
            a.bad++;
        rpc_server_send(&server, &port, host_reply, &a);
        rpc_server_close(&server, &port);
        if (atomic_load(&verbose))
            printf("served port %u mask %#llx first tag %#llx bad %u\n", rpc_port_index(&port),
                   (unsigned long long)mask, (unsigned long long)a.first_tag, a.bad);
        atomic_fetch_add(&mask_hist[a.lanes], 1);
        atomic_fetch_add(&lanes_served, a.lanes);
        atomic_fetch_add(&server_bad, a.bad);
        atomic_fetch_add(&served, 1);
    }
    return NULL;
}

static void *watch_main(void *fail_line)
{
    uint64_t last = ~0ull;
    for (int t = 0; !atomic_load(&stop); t++) {
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
        uint64_t now = atomic_load(&served);
        uint32_t line = *(volatile uint32_t *)fail_line;
        if (line)
            printf("watch: device check failed at rpc.h line %u\n", line);
        if (now == last && t % 5 == 4)
            printf("watch: stuck at %llu calls served\n", (unsigned long long)now);
        last = now;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1)
        TEAMS = (uint32_t)atoi(argv[1]);
    if (argc > 2)
        CALLS = (uint32_t)atoi(argv[2]);
    if (argc > 3)
        DIVERGE = (uint32_t)atoi(argv[3]);
    if (argc > 4)
        atomic_store(&verbose, atoi(argv[4]));
    int dev = omp_get_default_device();
    if (omp_get_num_devices() < 1) {
        printf("rpc_gpu_check: no offload device\n");
        return 77;
    }
    /* Let libomptarget set the device up (it retains the primary context). */
#pragma omp target
    {
    }
    if (load_cuda() != 0) {
        printf("rpc_gpu_check: libcuda.so.1 not usable\n");
        return 77;
    }
    void *ctx = NULL;
    int cudev = 0;
    if (cu.init(0) || cu.device_get(&cudev, 0) || cu.primary_retain(&ctx, cudev) ||
        cu.ctx_set_current(ctx)) {
        printf("rpc_gpu_check: no CUDA context\n");
        return 1;
    }

    uint64_t size = rpc_region_size(PORTS, LANES);
    uint64_t mapped = ((size + 4095) & ~4095ull) + 4096; /* + a page for gpu_fail */
    void *region = aligned_alloc(4096, mapped);
    memset(region, 0, mapped);
    uint64_t region_dev = 0;
    if (cu.host_register(region, mapped, 0x1 | 0x2 /* PORTABLE | DEVICEMAP */) ||
        cu.host_get_device_pointer(&region_dev, region, 0)) {
        printf("rpc_gpu_check: cuMemHostRegister failed\n");
        return 1;
    }

    gpu_fail_line = (uint32_t *)(uintptr_t)(region_dev + mapped - 4096);
#pragma omp target update to(gpu_fail_line)
    pthread_t watcher;
    pthread_create(&watcher, NULL, watch_main, (char *)region + mapped - 4096);

    /* Client object and its lock bitmap in device memory. */
    uint64_t lock_bytes = rpc_lock_size(PORTS);
    void *locks_dev = omp_target_alloc(lock_bytes, dev);
    void *zero = calloc(1, lock_bytes);
    omp_target_memcpy(locks_dev, zero, lock_bytes, 0, 0, dev, omp_get_initial_device());
    struct rpc_client host_view;
    if (rpc_client_init(&host_view, (void *)(uintptr_t)region_dev, PORTS, LANES, locks_dev) !=
        TETHER_OK)
        return 1;
    struct rpc_client *client_dev = omp_target_alloc(sizeof(host_view), dev);
    omp_target_memcpy(client_dev, &host_view, sizeof(host_view), 0, 0, dev,
                      omp_get_initial_device());

    void *server_locks = calloc(1, lock_bytes);
    if (rpc_server_init(&server, region, PORTS, LANES, server_locks) != TETHER_OK)
        return 1;
    seen_size = (uint64_t)TEAMS * CALLS * 4 * 32;
    seen = calloc(1, seen_size);
    pthread_t thread;
    pthread_create(&thread, NULL, server_main, NULL);

    uint32_t bad = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t teams = TEAMS, calls = CALLS, diverge = DIVERGE;
#pragma omp target teams num_teams(teams) thread_limit(32) is_device_ptr(client_dev)             \
    reduction(+ : bad)
#pragma omp parallel num_threads(32) reduction(+ : bad)
    {
        uint64_t team = (uint32_t)omp_get_team_num();
        uint32_t lane = (uint32_t)omp_get_thread_num();
        for (uint64_t round = 0; round < calls; round++) {
            uint64_t tag = team << 32 | round << 8 | lane;
            bad += dev_call(client_dev, tag, (uint32_t)team);
            if (!diverge)
                continue;
            /* Different shapes on the two sides, so that the compiler cannot
             * merge the branches into one call: the groups diverge. */
            if (lane % 2 == 0) {
                bad += dev_call_even(client_dev, tag | 1ull << 24, (uint32_t)team + 1);
            } else {
                for (uint64_t g = 2; g <= 3; g++)
                    bad += dev_call_odd(client_dev, tag | g << 24, (uint32_t)team + 1);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_store(&stop, 1);
    pthread_join(thread, NULL);
    pthread_join(watcher, NULL);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    uint64_t missing = 0, lanes_expected = (uint64_t)TEAMS * CALLS * (DIVERGE ? 80 : 32);
    for (uint64_t i = 0; i < seen_size; i++) {
        uint64_t group = (i / 32) % 4;
        int even = i % 2 == 0;
        int want = group == 0 || (DIVERGE && (group == 1 ? even : !even));
        missing += seen[i] != want;
    }
    printf("rpc_gpu_check: %u teams x 32 lanes, %u ports, %llu calls carrying %llu lane packets "
           "in %.3f s (%.0f calls/s): device errors %u, server errors %llu, lane packets not seen "
           "exactly once %llu\n",
           TEAMS, PORTS, (unsigned long long)atomic_load(&served),
           (unsigned long long)atomic_load(&lanes_served), dt, (double)atomic_load(&served) / dt,
           bad, (unsigned long long)atomic_load(&server_bad), (unsigned long long)missing);
    printf("rpc_gpu_check: calls by active lanes:");
    for (int n = 0; n <= 32; n++)
        if (atomic_load(&mask_hist[n]))
            printf(" %d:%llu", n, (unsigned long long)atomic_load(&mask_hist[n]));
    printf("\n");
    int ok = bad == 0 && atomic_load(&server_bad) == 0 && missing == 0 &&
             atomic_load(&lanes_served) == lanes_expected;
    printf("rpc_gpu_check: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
