/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_idle.c - test_rpc_host's idle-lanes, idle-wide, quiet-kernels,
 * finish and slow-answers: the server thread while a kernel makes no call or short kernels make
 * none, a kernel's end with and without calls, and host clients sleeping for slow answers.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_rpc_host.h"

/* ---- the thread while a kernel runs but makes no call ------------------------------------ */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/*
 * A kernel runs (rig_up started one) and makes no call for half a second.  Bounds that only a
 * busy server thread can break, never a slow machine (which wakes it less): a GPU-like server
 * (lanes) sleeps in slices of at most 800 us before its first call and 100 us once calls stop, so
 * it wakes at most once per 800 or 100 us (plus the first, shorter slices); a server of host
 * clients (wide), which ring for every call, sleeps until rung, so it wakes only at its 50 ms
 * safety poll and its CPU time is a small share of the stretch.  TETHER_WAIT=spin (ctest sets it
 * for idle-spin): no sleep at all while the kernel runs; block: sleeps too.  Then calls are
 * answered.
 */
void test_idle(bool wide)
{
    const char *mode = getenv("TETHER_WAIT") != NULL ? getenv("TETHER_WAIT") : "adaptive";
    bool spin = strcmp(mode, "spin") == 0;
    struct rig rig;
    rig_up(&rig, wide, 16, 32, true);
    char desc[256];
    tether_rpc_server_describe(rig.srv, desc, sizeof desc);
    if (spin && strstr(desc, "TETHER_WAIT=spin not applied to it") != NULL) {
        printf("%s: the thread waits as in adaptive (shared-core tests it)\n", desc);
        spin = false; /* a machine with one core for this process */
    }
    atomic_int count = 0;
    CHECKF(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    struct tether_rpc_stats s0, s1;
    if (!wide && !spin) {
        /* Before the first call: the longest slices are 800 us (a kernel of a program that
         * makes no call costs one wake-up per 800 us). */
        tether_rpc_server_stats(rig.srv, &s0);
        uint64_t t0 = svc_clock_ns(CLOCK_MONOTONIC);
        sleep_ms(200);
        tether_rpc_server_stats(rig.srv, &s1);
        uint64_t elapsed = svc_clock_ns(CLOCK_MONOTONIC) - t0, wakeups = s1.wakeups - s0.wakeups;
        printf("before any call: %llu wake-ups in %.1f ms\n", (unsigned long long)wakeups,
               (double)elapsed / 1e6);
        CHECKF(wakeups <= elapsed / SRV_IDLE_SLICE_FIRST_NS + 8,
               "before any call: %llu wake-ups in %llu ns: slices shorter than %u ns",
               (unsigned long long)wakeups, (unsigned long long)elapsed, SRV_IDLE_SLICE_FIRST_NS);
    }
    char rev[4];
    CHECKF(tether_rpc_call(0x8001, "abcd", 4, rev, 4) == 4, "a call before the quiet stretch");
    sleep_ms(20); /* past the hot rounds and the first slices */

    tether_rpc_server_stats(rig.srv, &s0);
    uint64_t sweeps0 = atomic_load(&rig.srv->st_idle_sweeps);
    uint64_t t0 = svc_clock_ns(CLOCK_MONOTONIC);
    sleep_ms(500);
    tether_rpc_server_stats(rig.srv, &s1);
    uint64_t elapsed = svc_clock_ns(CLOCK_MONOTONIC) - t0;
    uint64_t wakeups = s1.wakeups - s0.wakeups, cpu = s1.thread_cpu_ns - s0.thread_cpu_ns;
    printf("%s, TETHER_WAIT=%s: %llu wake-ups and %.2f ms of the server thread's CPU in %.1f ms "
           "without calls (%.2f%% of a core)\n",
           wide ? "host clients" : "GPU-like clients", mode, (unsigned long long)wakeups,
           (double)cpu / 1e6, (double)elapsed / 1e6, 100.0 * (double)cpu / (double)elapsed);
    CHECKF(s0.thread_ns != 0 && s1.thread_ns > s0.thread_ns && s1.thread_cpu_ns >= s0.thread_cpu_ns,
           "thread times: %llu ns of CPU in %llu ns", (unsigned long long)s1.thread_cpu_ns,
           (unsigned long long)s1.thread_ns);
    if (spin) {
        CHECKF(wakeups == 0, "TETHER_WAIT=spin: the thread slept %llu times while a kernel ran",
               (unsigned long long)wakeups);
    } else if (wide) {
        CHECKF(wakeups <= elapsed / 50000000u + 4,
               "host clients: %llu wake-ups in %llu ns without a call or a ring",
               (unsigned long long)wakeups, (unsigned long long)elapsed);
        CHECKF(cpu < elapsed / 20, "host clients: the thread used %.2f%% of a core without calls",
               100.0 * (double)cpu / (double)elapsed);
    } else {
        CHECKF(wakeups >= 1, "the thread never slept in %llu ns without calls",
               (unsigned long long)elapsed);
        CHECKF(wakeups <= elapsed / SRV_IDLE_SLICE_MAX_NS + 4,
               "%llu wake-ups in %llu ns: slices shorter than %u ns", (unsigned long long)wakeups,
               (unsigned long long)elapsed, SRV_IDLE_SLICE_MAX_NS);
        /* A wake-up looks at the doorbell word, not at every port: a sweep at most every
         * SRV_IDLE_SWEEP_EVERY_NS (a slow machine wakes less often, never more). */
        uint64_t sweeps = atomic_load(&rig.srv->st_idle_sweeps) - sweeps0;
        printf("  %llu sweeps of every port\n", (unsigned long long)sweeps);
        CHECKF(sweeps <= elapsed / SRV_IDLE_SWEEP_EVERY_NS + 4,
               "%llu sweeps of every port in %llu ns without calls (%llu wake-ups)",
               (unsigned long long)sweeps, (unsigned long long)elapsed,
               (unsigned long long)wakeups);
    }
    /* Calls after the quiet stretch are answered (and the thread is hot again for them). */
    for (int c = 0; c < 100; c++) {
        char in[4] = {'w', 'x', 'y', (char)c};
        CHECKF(tether_rpc_call(0x8001, in, 4, rev, 4) == 4 && rev[0] == (char)c && rev[3] == 'w',
               "call %d after the quiet stretch", c);
    }
    CHECKF(atomic_load(&count) == 101, "handler ran %d times", atomic_load(&count));
    if (!wide && !spin) {
        /* A device call's doorbell store may land before its packet's flag: a sleeping thread
         * that found the word set and no call must still see the call.  Calls that set no word
         * at all are answered by the periodic sweep. */
        uint64_t doorbell = __tether_rpc_client.doorbell;
        __tether_rpc_client.doorbell = 0;
        for (int c = 0; c < 20; c++) {
            sleep_ms(2); /* asleep again */
            char in[4] = {'q', 'r', 's', (char)c};
            CHECKF(tether_rpc_call(0x8001, in, 4, rev, 4) == 4 && rev[0] == (char)c,
                   "call %d that set no doorbell word", c);
        }
        __tether_rpc_client.doorbell = doorbell;
        CHECKF(atomic_load(&count) == 121, "handler ran %d times", atomic_load(&count));
    }
    rig_down(&rig);
}

/* Short kernels that make no call, one after another (a stencil's steps).  A launch rings the
 * thread only when it parked (2 ms after the last kernel) or to make it hot after calls; a launch
 * right after a quiet kernel finds it watching in slices and makes no system call.  The thread
 * is hot only after calls: in its hot rounds it swept for calls 32 times, polling up to 8 us
 * between sweeps, longer than these 200 us kernels, so it spun through all of them.  Bounds by
 * count that a slow machine only makes easier: rings (at most the first launch and one after
 * each gap the machine made longer than 2 ms, which is far from every launch), and sweeps (a few
 * per kernel, and one per slice or per 10 ms).  A call after them is answered. */
void test_quiet_kernels(void)
{
    struct rig rig;
    rig_up(&rig, false, 16, 32, true);
    atomic_int count = 0;
    CHECKF(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    tether_rpc_server_kernel_finished(rig.srv); /* rig_up started one */
    enum { KERNELS = 200 };
    struct tether_rpc_stats s0, s1;
    tether_rpc_server_stats(rig.srv, &s0);
    uint64_t sweeps0 = atomic_load(&rig.srv->st_empty_sweeps);
    uint32_t rings0 = atomic_load(&rig.srv->bell.seq);
    uint64_t t0 = svc_clock_ns(CLOCK_MONOTONIC);
    for (int k = 0; k < KERNELS; k++) {
        tether_rpc_server_kernel_started(rig.srv);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        tether_rpc_server_kernel_finished(rig.srv);
    }
    uint64_t wall = svc_clock_ns(CLOCK_MONOTONIC) - t0;
    uint64_t sweeps = atomic_load(&rig.srv->st_empty_sweeps) - sweeps0;
    uint32_t rings = atomic_load(&rig.srv->bell.seq) - rings0;
    tether_rpc_server_stats(rig.srv, &s1);
    uint64_t cpu = s1.thread_cpu_ns - s0.thread_cpu_ns;
    printf("quiet kernels: %d kernels in %.1f ms, %u rings, %llu sweeps that found no call, server "
           "thread %.2f ms of CPU (%.1f%%), %llu wake-ups\n",
           KERNELS, (double)wall / 1e6, rings, (unsigned long long)sweeps, (double)cpu / 1e6,
           100.0 * (double)cpu / (double)wall, (unsigned long long)(s1.wakeups - s0.wakeups));
    CHECKF(rings <= KERNELS / 2, "%u of %d launches rang the thread", rings, KERNELS);
    uint64_t bound = 2 * KERNELS + wall / SRV_IDLE_SLICE_MAX_NS + wall / SRV_IDLE_SWEEP_EVERY_NS;
    CHECKF(sweeps <= bound, "%llu sweeps through %d quiet kernels (at most %llu)",
           (unsigned long long)sweeps, KERNELS, (unsigned long long)bound);
    tether_rpc_server_kernel_started(rig.srv);
    char rev[4];
    CHECKF(tether_rpc_call(0x8001, "abcd", 4, rev, 4) == 4 && memcmp(rev, "dcba", 4) == 0,
           "a call after the quiet kernels");
    CHECKF(atomic_load(&count) == 1, "handler ran %d times", atomic_load(&count));
    /* The call makes the next launch ring (the thread is hot at once); a kernel launched long
     * after the last one ended rings the parked thread. */
    tether_rpc_server_kernel_finished(rig.srv);
    uint32_t seq = atomic_load(&rig.srv->bell.seq);
    tether_rpc_server_kernel_started(rig.srv);
    CHECKF(atomic_load(&rig.srv->bell.seq) != seq, "a launch after a call rings");
    tether_rpc_server_kernel_finished(rig.srv);
    struct timespec park = {0, 3 * (long)SRV_PARK_AFTER_NS};
    nanosleep(&park, NULL);
    for (int w = 0; w < 60000 && !atomic_load(&rig.srv->parked); w++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECKF(atomic_load(&rig.srv->parked), "the thread parks after the kernels");
    seq = atomic_load(&rig.srv->bell.seq);
    tether_rpc_server_kernel_started(rig.srv);
    CHECKF(atomic_load(&rig.srv->bell.seq) != seq, "a launch rings a parked thread");
    CHECKF(tether_rpc_call(0x8001, "efgh", 4, rev, 4) == 4 && memcmp(rev, "hgfe", 4) == 0,
           "a call in a kernel launched after the thread parked");
    rig_down(&rig);
}

/* kernel_finished with no server thread (so every sweep is the finishing thread's): a kernel that
 * ran alone and made no call is finished without a sweep; one that made a call has it served and
 * its line written, also when the thread cleared the doorbell word during the kernel (the word
 * then says nothing) or was clearing it at the launch; with a client that does not set the word
 * (one not made by tether_rpc_server_client_bytes) every end sweeps. */
void test_finish(void)
{
    struct rig rig;
    rig_up(&rig, false, 16, 32, false);
    struct tether_rpc_server *srv = rig.srv;
    uint64_t sweeps = atomic_load(&srv->st_empty_sweeps);
    tether_rpc_server_kernel_finished(srv); /* rig_up started one */
    CHECKF(atomic_load(&srv->st_empty_sweeps) == sweeps, "a quiet kernel's end swept the ports");

    long pos = ftell(rig.out);
    tether_rpc_server_kernel_started(srv);
    dprintf_("one\n");
    tether_rpc_server_kernel_finished(srv);
    tether_rpc_server_kernel_started(srv);
    dprintf_("two\n");
    atomic_fetch_add(&srv->bell_clears, 1); /* the thread clears the word: the call stays */
    atomic_store(srv->device_bell, 0);
    atomic_fetch_add(&srv->bell_clears, 1);
    tether_rpc_server_kernel_finished(srv);
    atomic_fetch_add(&srv->bell_clears, 1); /* a launch while the thread clears the word */
    tether_rpc_server_kernel_started(srv);
    dprintf_("three\n");
    atomic_store(srv->device_bell, 0); /* and ends it after the kernel's end looked */
    sweeps = atomic_load(&srv->st_empty_sweeps);
    tether_rpc_server_kernel_finished(srv);
    atomic_fetch_add(&srv->bell_clears, 1);
    CHECKF(atomic_load(&srv->st_empty_sweeps) > sweeps, "no sweep after a call");
    size_t len;
    char *text = slurp(rig.out, &len);
    CHECKF(len == (size_t)pos + 14 && memcmp(text + pos, "one\ntwo\nthree\n", 14) == 0,
           "the kernels' lines: \"%s\"", text + pos);
    free(text);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(srv, &st);
    CHECKF(st.printf_lines == 3, "%llu lines served", (unsigned long long)st.printf_lines);

    /* A client built on rpc.h alone sets no doorbell word: every end sweeps. */
    atomic_store(&srv->client_rings, false);
    tether_rpc_server_kernel_started(srv);
    sweeps = atomic_load(&srv->st_empty_sweeps);
    tether_rpc_server_kernel_finished(srv);
    CHECKF(atomic_load(&srv->st_empty_sweeps) > sweeps, "a client that does not ring: no sweep");
    atomic_store(&srv->client_rings, true);

    /* Two kernels at once: the first to end sweeps (the other may still call). */
    tether_rpc_server_kernel_started(srv);
    tether_rpc_server_kernel_started(srv);
    sweeps = atomic_load(&srv->st_empty_sweeps);
    tether_rpc_server_kernel_finished(srv);
    CHECKF(atomic_load(&srv->st_empty_sweeps) > sweeps, "overlapping kernels: no sweep");
    rig_down(&rig); /* ends the other */
}

/* Host clients whose answers take long (a handler that sleeps): the caller polls briefly, then
 * sleeps until the server wakes it (device_client.h, TETHER_RPC_CLIENT_WAKES), and a caller whose
 * port another caller holds backs off into ever longer sleeps (rpc_arch_backoff), so the calling
 * threads' CPU time is a small share of their wait (a busy machine only lowers it).  Run with 16
 * ports (callers mostly on ports of their own) and with one (every caller waits for the port). */
static tether_status_t slow_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    sleep_ms(20);
    return tether_rpc_reply_append(reply, req->data, req->size);
}

struct slow_arg {
    int calls;
    uint64_t cpu_ns, wall_ns;
    atomic_int *wrong;
};

static void *slow_thread(void *arg)
{
    struct slow_arg *a = arg;
    uint64_t c0 = svc_clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = svc_clock_ns(CLOCK_MONOTONIC);
    for (int c = 0; c < a->calls; c++) {
        char in[24], out[24];
        int n = snprintf(in, sizeof in, "slow call %d", c);
        if (tether_rpc_call(0x8002, in, (uint64_t)n, out, sizeof out) != n || memcmp(in, out, n))
            atomic_fetch_add(a->wrong, 1);
    }
    a->cpu_ns = svc_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    a->wall_ns = svc_clock_ns(CLOCK_MONOTONIC) - t0;
    return NULL;
}

static void slow_answers(uint32_t ports)
{
    struct rig rig;
    rig_up(&rig, true, ports, 32, true);
    CHECKF(tether_rpc_register(rig.srv, 0x8002, slow_handler, NULL) == TETHER_OK, "register");
    enum { THREADS = 3, CALLS = 6 };
    atomic_int wrong = 0;
    pthread_t tid[THREADS];
    struct slow_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct slow_arg){CALLS, 0, 0, &wrong};
        pthread_create(&tid[t], NULL, slow_thread, &args[t]);
    }
    uint64_t cpu = 0, wall = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        cpu += args[t].cpu_ns;
        wall += args[t].wall_ns;
    }
    printf(
        "slow answers, %u ports: %d callers waited %.1f ms in all, using %.2f ms of CPU (%.2f%%)\n",
        ports, THREADS, (double)wall / 1e6, (double)cpu / 1e6, 100.0 * (double)cpu / (double)wall);
    CHECKF(atomic_load(&wrong) == 0, "%d wrong answers", atomic_load(&wrong));
    CHECKF(cpu < wall / 10, "%u ports: callers used %.2f%% of their waits' time on a CPU", ports,
           100.0 * (double)cpu / (double)wall);
    const struct tether_rpc_doorbell *bell =
        (const struct tether_rpc_doorbell *)(uintptr_t)__tether_rpc_client.doorbell;
    CHECKF(bell != NULL && __atomic_load_n(&bell->waiters, __ATOMIC_RELAXED) == 0,
           "callers still counted as waiting");
    rig_down(&rig);
}

void test_slow_answers(void)
{
    slow_answers(16);
    slow_answers(1);
}
