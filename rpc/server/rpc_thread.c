/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_thread.c - the per-device server thread.
 *
 * Placement: on the cores the user lists in TETHER_RPC_CPUS; else on the cores
 * local to the device's PCI address (sysfs local_cpulist, through hwloc
 * bitmaps), unless the machine has one NUMA node, where any core is as good as
 * another.
 *
 * Waiting for calls (TETHER_WAIT; every sleep is a futex wait on srv->bell.seq, which
 * kernel_started, notify and host clients' doorbells bump):
 *   no kernel runs        for 2 ms after the last kernel ended, a server of device clients
 *                         sleeps in the longest slices as while a kernel runs, so that a launch
 *                         after quiet kernels makes no system call; then it parks: sleeps until
 *                         rung (a 50 ms safety poll).  spin: parks at once
 *   a kernel runs         adaptive (default): stay hot while calls come (sweep, and between
 *                         sweeps watch the ports of the last calls), and after a round without
 *                         a call back off step by step (struct srv_idle, rpc_internal.h): more hot
 *                         rounds, then rounds of polling with a cpu-relax pause, then sleeps in
 *                         slices that grow to 100 us, or to 800 us until the first call was
 *                         served (a GPU cannot ring: the slice bounds how late a call after a
 *                         quiet spell is seen, and a program whose kernels never call pays one
 *                         wake-up per 800 us; timer slack is set to 1 us so that a slice is
 *                         kept).  A device call sets a doorbell word in shared
 *                         memory, so a wake-up looks at one word, not at every port
 *                         (sleep_for_device).  A host client rings for each call, so a server
 *                         of host clients with no call in flight sleeps until rung instead.
 *                         spin: always hot (a core busy while the kernel runs), except on the
 *                         program's one core (placement_shared_core).  block: sleep after every
 *                         round that found no call.
 * A call served makes the thread hot again, and so does a ring (a kernel launch, notify, a host
 * client's call) when calls were served since the ring before it; a ring that follows only quiet
 * kernels starts the thread at the longest sleep, as after a long quiet spell.  So calls in a burst
 * are seen within a pause, a call after a long quiet spell within about 100 us (the program's
 * first call within 800 us), a quiet kernel costs one wake-up per 100 us (800 us before the first
 * call; a host client's: none), and a program whose kernels make no calls
 * does not keep the thread spinning after each of its launches (the first call of such a kernel is
 * seen within a slice, as after a long quiet spell).
 */
#include <errno.h>
#include <hwloc.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rpc_env.h"
#include "rpc_internal.h"

/* Between two sweeps while a kernel runs, the thread watches only the ports that served the
 * last calls (srv_hot_waiting) for this long: a device thread's next call on its home port is
 * seen within a pause instead of after a sweep over every port (16384 on a GPU), and is served
 * at once (srv_serve_hot).  Bounded by time, not by a count of polls: a pause lasts 16-140 ns
 * depending on the processor (16 ns on the H200 machines, where 64 polls were 2 us, less than a
 * device thread's 2.5 us from one call to the next, so its next call often came during a
 * sweep).  Calls on other ports wait at most this much longer; a host client's doorbell, a
 * stop ends the watch at once.  The clock is read every THREAD_HOT_CHECK
 * polls. */
#define THREAD_HOT_NS 8000u
#define THREAD_HOT_CHECK 16u
/* While the last call served was answered (its caller waits and will likely call again on its
 * hot port), and the thread has not slept since, each sweep for new calls covers this many
 * bitmap words (1024 ports) and the next one goes on from there (srv_handle): the hot ports are
 * polled again within a fraction of a microsecond of an answer, and a full ring of 16384 ports
 * takes 16 rounds.  Otherwise (fire-and-forget traffic such as printf, or after a sleep) a
 * sweep covers every port. */
#define THREAD_SWEEP_WORDS 32u
/* The longest sleep without a deadline: a safety poll (every wake-up that matters rings). */
#define THREAD_IDLE_POLL_NS 50000000L

struct srv_thread {
    pthread_t tid;
    struct tether_rpc_server *srv;
    struct tether_rpc_thread_config config;
    _Atomic bool stop;
    /* start-up handshake */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started;
    tether_status_t start_status;
    struct tether_error start_err;
    hwloc_bitmap_t cpuset;      /* where to run, NULL: anywhere */
    enum tether_wait_mode wait; /* TETHER_WAIT at start */
    uint64_t start_ns;          /* CLOCK_MONOTONIC when it was started */
};

static long futex_wait(_Atomic uint32_t *word, uint32_t expect, const struct timespec *timeout)
{
    return syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expect, timeout, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Wakes the thread (and anyone waiting on the bell). */
static void bell_ring(struct tether_rpc_server *srv)
{
    atomic_fetch_add(&srv->bell.seq, 1);
    if (atomic_load(&srv->bell.sleepers) != 0)
        futex_wake_all(&srv->bell.seq);
}

/* ---- placement -------------------------------------------------------------------------- */

static bool bus_id_sane(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                  c == ':' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

/* The cores of `list` (hwloc's syntax: "8", "8-11,20") this process may use, or NULL with *why_p
 * saying what is wrong with it. */
static hwloc_bitmap_t cores_allowed(hwloc_topology_t topo, const char *list, const char **why_p)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL || hwloc_bitmap_list_sscanf(set, list) != 0) {
        *why_p = "not a list of cores";
        hwloc_bitmap_free(set);
        return NULL;
    }
    hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set)) {
        *why_p = "no core this process may use";
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

/* The thread runs on `set` (taken over); `origin` says why, in srv->where. */
static void placement_take(struct srv_thread *t, hwloc_bitmap_t set, const char *origin)
{
    char text[96];
    hwloc_bitmap_list_snprintf(text, sizeof text, set);
    snprintf(t->srv->where, sizeof t->srv->where, "thread on cores %s (%s)", text, origin);
    t->cpuset = set;
}

/* TETHER_RPC_CPUS: the user's list of cores for the thread; true when it was given and usable
 * (then it decided). */
static bool placement_from_env(struct srv_thread *t, hwloc_topology_t topo)
{
    const char *list = tether_env_str("TETHER_RPC_CPUS"), *why = NULL;
    if (list == NULL)
        return false;
    hwloc_bitmap_t set = cores_allowed(topo, list, &why);
    if (set == NULL) {
        tether_env_warn("TETHER_RPC_CPUS",
                        "TETHER_RPC_CPUS=%s is not usable: %s (e.g. 8 or 8-11,20); using the "
                        "placement tether chooses",
                        list, why);
        return false;
    }
    placement_take(t, set, "TETHER_RPC_CPUS");
    return true;
}

/* True when the kernel lists one NUMA node ("0" in sysfs) and no HWLOC_* variable (a synthetic or
 * saved topology, as the tests use) asks hwloc to decide: then there is nothing to place, and the
 * topology, whose discovery takes milliseconds at every image load (4-6 ms on 16 cores), is not
 * loaded. */
static bool placement_one_node(void)
{
    extern char **environ;
    for (char **e = environ; *e != NULL; e++)
        if (strncmp(*e, "HWLOC_", 6) == 0)
            return false;
    char buf[8] = "";
    FILE *f = fopen("/sys/devices/system/node/online", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strcmp(buf, "0\n") == 0 || strcmp(buf, "0") == 0;
}

/* Decides where the thread runs and writes srv->where. */
static void placement_plan(struct srv_thread *t)
{
    struct tether_rpc_server *srv = t->srv;
    const char *bus = t->config.pci_bus_id;
    if (tether_env_str("TETHER_RPC_CPUS") == NULL && placement_one_node()) {
        snprintf(srv->where, sizeof srv->where, "thread on any core (one NUMA node)");
        return;
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        snprintf(srv->where, sizeof srv->where, "thread on any core (hwloc failed)");
        return;
    }
    if (placement_from_env(t, topo))
        goto out;
    int numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (numa <= 1) {
        snprintf(srv->where, sizeof srv->where, "thread on any core (one NUMA node)");
        goto out;
    }
    if (bus == NULL || !bus_id_sane(bus)) {
        snprintf(srv->where, sizeof srv->where, "thread on any core (%d NUMA nodes, %s)", numa,
                 bus == NULL ? "no PCI address" : "bad PCI address");
        goto out;
    }
    char path[128];
    char list[4096];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(list, 1, sizeof list - 1, f) : 0;
    if (f)
        fclose(f);
    list[n] = '\0';
    const char *why = "not a list of cores";
    hwloc_bitmap_t set = n == 0 ? NULL : cores_allowed(topo, list, &why);
    if (set == NULL) {
        snprintf(srv->where, sizeof srv->where, "thread on any core (cores local to %s: %s)", bus,
                 n == 0 ? "none listed" : why);
        goto out;
    }
    char origin[64];
    snprintf(origin, sizeof origin, "local to %s", bus);
    /* A launcher (mpirun, srun, taskset) may have bound the process to some cores, and the
     * thread would inherit that: it keeps to them, taking the device's cores only where they
     * overlap them.  (Where the binding cannot be read, e.g. on a synthetic topology, as before.)
     */
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (bound != NULL && hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_THREAD) == 0 &&
        !hwloc_bitmap_iszero(bound) && !hwloc_bitmap_isincluded(set, bound)) {
        if (!hwloc_bitmap_intersects(set, bound)) {
            snprintf(srv->where, sizeof srv->where,
                     "thread on the process's cores (those local to %s are outside its binding)",
                     bus);
            hwloc_bitmap_free(set);
            hwloc_bitmap_free(bound);
            goto out;
        }
        hwloc_bitmap_and(set, set, bound);
        snprintf(origin, sizeof origin, "local to %s, within the process's binding", bus);
    }
    hwloc_bitmap_free(bound);
    placement_take(t, set, origin);
out:
    hwloc_topology_destroy(topo);
}

/* The cores of the plan (t->cpuset, which is set) as a cpu_set_t. */
static void placement_cores(const struct srv_thread *t, cpu_set_t *cs)
{
    CPU_ZERO(cs);
    for (int i = hwloc_bitmap_first(t->cpuset); i >= 0; i = hwloc_bitmap_next(t->cpuset, i))
        if (i < CPU_SETSIZE)
            CPU_SET(i, cs);
}

/* A thread that would run on the program's one core (a launcher bound the process to one core)
 * does not spin: spinning there takes the core from the program, which waits for the same
 * kernels (a one-rank MPI stencil bound to one core runs twice as slow beside a spinning
 * thread): it waits as in adaptive, and srv->where says so. */
static void placement_shared_core(struct srv_thread *t)
{
    cpu_set_t program, thread;
    if (t->wait != TETHER_WAIT_SPIN || sched_getaffinity(0, sizeof program, &program) != 0 ||
        CPU_COUNT(&program) != 1)
        return;
    thread = program; /* the thread inherits the caller's cores unless placed */
    if (t->cpuset != NULL)
        placement_cores(t, &thread);
    if (!CPU_EQUAL(&program, &thread))
        return;
    size_t n = strlen(t->srv->where);
    snprintf(t->srv->where + n, sizeof t->srv->where - n,
             ", the program's one core: TETHER_WAIT=spin not applied to it");
    t->wait = TETHER_WAIT_ADAPTIVE;
}

static void placement_apply(struct srv_thread *t)
{
    if (t->cpuset == NULL)
        return;
    cpu_set_t cs;
    placement_cores(t, &cs);
    if (pthread_setaffinity_np(pthread_self(), sizeof cs, &cs) != 0)
        srv_diag(t->srv, "could not bind the server thread: %s", strerror(errno));
}

/* ---- back-off -------------------------------------------------------------------------- */

void srv_idle_init(struct srv_idle *idle, enum tether_wait_mode mode)
{
    idle->mode = mode;
    idle->empty = 0;
    idle->served = false;
}

void srv_idle_reset(struct srv_idle *idle)
{
    idle->empty = 0;
    idle->served = true;
}

uint64_t srv_idle_slice_max(const struct srv_idle *idle)
{
    return idle->served ? SRV_IDLE_SLICE_MAX_NS : SRV_IDLE_SLICE_FIRST_NS;
}

void srv_idle_quiet(struct srv_idle *idle)
{
    uint64_t max = srv_idle_slice_max(idle);
    uint32_t slices = 0; /* slices from the shortest to the longest */
    for (uint64_t slice = SRV_IDLE_SLICE_MIN_NS; slice < max; slice *= 2)
        slices++;
    idle->empty = SRV_IDLE_HOT_ROUNDS + SRV_IDLE_RELAX_ROUNDS + slices;
}

enum srv_idle_phase srv_idle_next(struct srv_idle *idle, uint64_t *slice_ns_p)
{
    const uint32_t spin = SRV_IDLE_HOT_ROUNDS + SRV_IDLE_RELAX_ROUNDS;
    const uint64_t max = srv_idle_slice_max(idle);
    switch (idle->mode) {
    case TETHER_WAIT_SPIN:
        return SRV_IDLE_HOT;
    case TETHER_WAIT_BLOCK:
        *slice_ns_p = max;
        return SRV_IDLE_SLEEP;
    case TETHER_WAIT_ADAPTIVE:
        break;
    }
    uint64_t slice = SRV_IDLE_SLICE_MIN_NS;
    if (idle->empty < spin) {
        idle->empty++;
        return idle->empty <= SRV_IDLE_HOT_ROUNDS ? SRV_IDLE_HOT : SRV_IDLE_RELAX;
    }
    for (uint32_t k = spin; k < idle->empty && slice < max; k++)
        slice *= 2;
    if (slice < max)
        idle->empty++; /* the next slice is longer */
    else
        slice = max;
    *slice_ns_p = slice;
    return SRV_IDLE_SLEEP;
}

/* ---- the loop --------------------------------------------------------------------------- */

static void serve_until_quiet(struct tether_rpc_server *srv)
{
    for (;;) {
        uint32_t progress = 0;
        tether_rpc_server_handle(srv, &progress);
        if (progress == 0)
            return;
    }
}

/* Between two sweeps: watches the hot ports (srv_hot_waiting) with a pause between polls for up
 * to THREAD_HOT_NS, and serves a call found there at once (srv_serve_hot).  `hot`: the thread is
 * hot, so fire-and-forget traffic (SRV_HOT_SWEEP) ends the watch at once for the next sweep.  A
 * ring of the doorbell (seq moved) or a stop ends it too.  Returns true when it
 * served a call. */
static bool watch_hot_ports(struct srv_thread *t, bool hot, uint32_t seq)
{
    struct tether_rpc_server *srv = t->srv;
    uint64_t until = now_ns() + THREAD_HOT_NS;
    for (uint32_t k = 1;; k++) {
        uint32_t port = srv_hot_waiting(srv);
        if (port == SRV_HOT_SWEEP && hot)
            return false;
        if (port != 0 && port != SRV_HOT_SWEEP) {
            srv_prof_seen(srv); /* a hot port has a call */
            return srv_serve_hot(srv, port - 1);
        }
        cpu_pause();
        if (k % THREAD_HOT_CHECK != 0)
            continue;
        if (now_ns() >= until) {
            sched_yield(); /* a thread woken on this core (a host client) runs now, not later */
            return false;
        }
        if (atomic_load_explicit(&srv->bell.seq, memory_order_relaxed) != seq ||
            atomic_load_explicit(&t->stop, memory_order_relaxed))
            return false;
    }
}

/* Sleeps on the doorbell until it is rung or `ns` passed (seq: its value before the last sweep,
 * so a ring since then returns at once). */
static void sleep_on_bell(struct tether_rpc_server *srv, uint32_t seq, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    atomic_fetch_add(&srv->bell.sleepers, 1);
    futex_wait(&srv->bell.seq, seq, &ts);
    atomic_fetch_sub(&srv->bell.sleepers, 1);
    atomic_fetch_add(&srv->st_wakeups, 1);
}

/* The sleep of a server of device clients: clears the doorbell word, sweeps every port (for
 * calls made before the clear), then sleeps in the back-off's slices and, at each wake-up, looks
 * at the word alone, not at the ports (16384 on a GPU); every SRV_IDLE_SWEEP_EVERY_NS it clears
 * and sweeps again.  Returns true when a call came (served by a sweep, or the word set): hot
 * again; false when a ring, a stop or the end of the kernels woke it. */
static bool sleep_for_device(struct srv_thread *t, struct srv_idle *idle, uint32_t seq,
                             uint64_t slice_ns)
{
    struct tether_rpc_server *srv = t->srv;
    for (;;) {
        atomic_fetch_add(&srv->bell_clears, 1); /* odd: clearing (kernel_finished) */
        atomic_exchange(srv->device_bell, 0);   /* a full barrier: the sweep reads after it */
        atomic_fetch_add(&srv->bell_clears, 1);
        uint32_t progress = 0;
        srv_handle(srv, 0, true, &progress);
        atomic_fetch_add(&srv->st_idle_sweeps, 1);
        if (progress != 0)
            return true;
        for (uint64_t slept = 0; slept < SRV_IDLE_SWEEP_EVERY_NS;) {
            sleep_on_bell(srv, seq, slice_ns);
            slept += slice_ns;
            if (atomic_load_explicit(srv->device_bell, memory_order_relaxed) != 0)
                return true;
            if (atomic_load_explicit(&srv->bell.seq, memory_order_relaxed) != seq ||
                atomic_load_explicit(&t->stop, memory_order_relaxed) ||
                atomic_load_explicit(&srv->kernels, memory_order_relaxed) == 0 ||
                srv_idle_next(idle, &slice_ns) != SRV_IDLE_SLEEP)
                return false;
        }
    }
}

/* No kernel runs.  Within SRV_PARK_AFTER_NS of the last kernel's end, a server of device clients
 * (adaptive or block) sleeps a longest slice and then looks at the doorbell word, as while a
 * kernel runs, so that the next launch need not ring it; after that it parks: sleeps until rung
 * (a 50 ms safety poll), and launches ring (tether_rpc_server_kernel_started).  The flag and the
 * kernel count are a store then a load on each side, all sequentially consistent: a launch that
 * does not see the flag is seen by the thread's load of the count. */
static void sleep_between_kernels(struct srv_thread *t, struct srv_idle *idle, uint32_t seq)
{
    struct tether_rpc_server *srv = t->srv;
    uint64_t ended = atomic_load_explicit(&srv->kernels_ended_ns, memory_order_relaxed);
    if (srv->device_bell != NULL && t->wait != TETHER_WAIT_SPIN && ended != 0 &&
        now_ns() - ended < SRV_PARK_AFTER_NS) {
        sleep_on_bell(srv, seq, srv_idle_slice_max(idle));
        if (atomic_load_explicit(srv->device_bell, memory_order_relaxed) != 0)
            srv_idle_reset(idle); /* a kernel launched without a ring calls */
        return;
    }
    atomic_store(&srv->parked, true);
    if (atomic_load(&srv->kernels) == 0)
        sleep_on_bell(srv, seq, THREAD_IDLE_POLL_NS);
    atomic_store(&srv->parked, false);
}

static void *thread_main(void *arg)
{
    struct srv_thread *t = arg;
    struct tether_rpc_server *srv = t->srv;
    placement_apply(t);
    char name[16]; /* shown by top -H, ps -L, gdb: the device the thread serves */
    snprintf(name, sizeof name, "tether-rpc%u", srv->config.device_id);
    pthread_setname_np(pthread_self(), name);
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* 1 us: keep short futex timeouts short */
    tether_status_t st = TETHER_OK;
    if (t->config.attach != NULL)
        st = t->config.attach(t->config.attach_ctx, &t->start_err);
    pthread_mutex_lock(&t->mu);
    t->started = true;
    t->start_status = st;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (st != TETHER_OK)
        return NULL;

    struct srv_idle idle;
    srv_idle_init(&idle, t->wait);
    uint32_t rung = atomic_load(&srv->bell.seq);
    uint64_t calls_at_ring = atomic_load(&srv->st_calls);
    bool woke = true; /* just started or slept: the next sweep covers every port */
    while (!atomic_load(&t->stop)) {
        uint32_t seq = atomic_load(&srv->bell.seq);
        if (seq != rung) {
            /* A kernel started, notify, a host client's call: hot if calls came since the
             * ring before, else straight to the longest sleeps. */
            uint64_t calls = atomic_load_explicit(&srv->st_calls, memory_order_relaxed);
            if (calls != calls_at_ring)
                srv_idle_reset(&idle);
            else
                srv_idle_quiet(&idle);
            calls_at_ring = calls;
            rung = seq;
        }
        uint32_t progress = 0;
        bool slice = !woke && atomic_load_explicit(&srv->hot_answered, memory_order_relaxed);
        srv_handle(srv, slice ? THREAD_SWEEP_WORDS : 0, false, &progress);
        woke = false;
        if (progress != 0) {
            srv_idle_reset(&idle);
            continue;
        }
        if (atomic_load(&srv->kernels) == 0) {
            srv_flush_now(srv);
            srv_idle_quiet(&idle); /* a kernel launched without a ring starts quiet */
            sleep_between_kernels(t, &idle, seq);
            woke = true;
            continue;
        }
        uint64_t slice_ns = 0;
        enum srv_idle_phase phase = srv_idle_next(&idle, &slice_ns);
        switch (phase) {
        case SRV_IDLE_HOT:
        case SRV_IDLE_RELAX:
            if (watch_hot_ports(t, phase == SRV_IDLE_HOT, seq))
                srv_idle_reset(&idle);
            break;
        case SRV_IDLE_SLEEP:
            if (srv->device_bell != NULL) {
                if (sleep_for_device(t, &idle, seq, slice_ns))
                    srv_idle_reset(&idle);
                woke = true;
                break;
            }
            /* Host clients ring for every call: with none in flight, sleep until one does. */
            if (srv->config.host_client &&
                atomic_load_explicit(&srv->in_flight, memory_order_relaxed) == 0)
                slice_ns = THREAD_IDLE_POLL_NS;
            srv_flush_now(srv);
            sleep_on_bell(srv, seq, slice_ns);
            woke = true;
            break;
        }
    }
    serve_until_quiet(srv);
    return NULL;
}

/* ---- API -------------------------------------------------------------------------------- */

tether_status_t tether_rpc_server_start(tether_rpc_server_t *srv,
                                        const struct tether_rpc_thread_config *config,
                                        struct tether_error *err)
{
    if (srv == NULL)
        return TETHER_ERR_INVALID;
    if (srv->thread != NULL) {
        if (err != NULL)
            snprintf(err->msg, sizeof err->msg, "rpc server: thread already started");
        return TETHER_ERR_BUSY;
    }
    struct srv_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return TETHER_ERR_NO_MEMORY;
    t->srv = srv;
    if (config != NULL)
        t->config = *config;
    t->config.pci_bus_id = NULL; /* not kept: only used below */
    t->wait = tether_env_wait();
    t->start_ns = now_ns();
    t->config.pci_bus_id = config != NULL ? config->pci_bus_id : NULL;
    placement_plan(t);
    placement_shared_core(t);
    t->config.pci_bus_id = NULL;
    atomic_init(&t->stop, false);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);

    tether_status_t st = TETHER_ERR_INTERNAL;
    int rc = pthread_create(&t->tid, NULL, thread_main, t);
    if (rc != 0) {
        if (err != NULL)
            snprintf(err->msg, sizeof err->msg, "rpc server: pthread_create: %s", strerror(rc));
        goto fail;
    }
    pthread_mutex_lock(&t->mu);
    while (!t->started)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
    st = t->start_status;
    if (st != TETHER_OK) {
        pthread_join(t->tid, NULL);
        if (err != NULL)
            *err = t->start_err;
        goto fail;
    }
    srv->thread = t;
    return TETHER_OK;

fail:
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    hwloc_bitmap_free(t->cpuset);
    free(t);
    return st;
}

void srv_thread_stop(struct tether_rpc_server *srv)
{
    struct srv_thread *t = srv->thread;
    if (t == NULL)
        return;
    if (atomic_load(&srv->forked)) {
        /* A fork child: the thread stayed in the parent, and its mutex and condition variable
         * may be in any state; only the memory is ours. */
        hwloc_bitmap_free(t->cpuset);
        free(t);
        srv->thread = NULL;
        return;
    }
    atomic_store(&t->stop, true);
    bell_ring(srv);
    pthread_join(t->tid, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    hwloc_bitmap_free(t->cpuset);
    free(t);
    srv->thread = NULL;
}

void srv_thread_times(struct tether_rpc_server *srv, uint64_t *cpu_ns_p, uint64_t *run_ns_p)
{
    struct srv_thread *t = srv->thread;
    clockid_t clock;
    struct timespec ts;
    *cpu_ns_p = 0;
    *run_ns_p = 0;
    if (t == NULL || atomic_load(&srv->forked))
        return; /* no thread (a fork child's copy: the parent's) */
    if (pthread_getcpuclockid(t->tid, &clock) == 0 && clock_gettime(clock, &ts) == 0)
        *cpu_ns_p = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    *run_ns_p = now_ns() - t->start_ns;
}

void tether_rpc_server_kernel_started(tether_rpc_server_t *srv)
{
    if (srv->trace)
        srv_diag(srv, "kernel started (%u running before)", atomic_load(&srv->kernels));
    if (atomic_fetch_add(&srv->kernels, 1) == 0)
        atomic_store(&srv->clears_at_start, atomic_load(&srv->bell_clears));
    /* A parked thread must be woken.  One that watches in slices between kernels sees this one
     * by itself: it is rung only to be hot at once, when calls came since the last launch. */
    uint64_t calls = atomic_load_explicit(&srv->st_calls, memory_order_relaxed);
    uint64_t before = atomic_exchange_explicit(&srv->calls_at_launch, calls, memory_order_relaxed);
    if (atomic_load(&srv->parked) || calls != before)
        bell_ring(srv);
}

/* A kernel that ran alone (`old`: the count of running kernels before its end, 1) and made no
 * call: its writes are all visible now that it has completed, its client sets the doorbell word
 * with every call and none is set, and the thread cleared none since the launch
 * (`clears_at_start`, even: not in the middle of one). */
static bool kernel_made_no_call(struct tether_rpc_server *srv, uint32_t old,
                                uint64_t clears_at_start)
{
    return old == 1 && srv->device_bell != NULL && atomic_load(&srv->client_rings) &&
           atomic_load(srv->device_bell) == 0 &&
           atomic_load(&srv->bell_clears) == clears_at_start && clears_at_start % 2 == 0;
}

void tether_rpc_server_kernel_finished(tether_rpc_server_t *srv)
{
    uint64_t clears_at_start = atomic_load(&srv->clears_at_start); /* before the count falls */
    uint32_t old = atomic_load(&srv->kernels);
    while (old != 0 && !atomic_compare_exchange_weak(&srv->kernels, &old, old - 1))
        ;
    if (old == 1)
        atomic_store_explicit(&srv->kernels_ended_ns, now_ns(), memory_order_relaxed);
    /* The kernel made its last calls before it completed: serve them here, on the caller's
     * thread (handle_lock keeps it and the server thread apart), rather than ring the thread and
     * sleep until it says it is done, two thread wake-ups per kernel.  A kernel that made none
     * leaves nothing to serve or write: no sweep of every port on the launching thread. */
    if (!kernel_made_no_call(srv, old, clears_at_start))
        serve_until_quiet(srv);
    if (atomic_load(&srv->kernels) == 0)
        srv_heap_flush_deferred(srv);
}

void tether_rpc_server_notify(tether_rpc_server_t *srv)
{
    bell_ring(srv);
}

void tether_rpc_server_describe(const tether_rpc_server_t *srv, char *buf, size_t size)
{
    if (buf == NULL || size == 0)
        return;
    char reserve[48] = "";
    if (srv->reserve_size != 0)
        snprintf(reserve, sizeof reserve, ", heap reserve %llu KiB",
                 (unsigned long long)(srv->reserve_size >> 10));
    snprintf(buf, size, "rpc: %u ports x %u lanes (%llu KiB shared), %s%s%s",
             srv->config.port_count, srv->config.lane_count,
             (unsigned long long)(srv->region_size >> 10), srv->where,
             srv->config.host_client ? ", doorbell" : "", reserve);
}

/* ---- fork ------------------------------------------------------------------------------- */

/*
 * fork() copies only the thread that calls it.  Before it, the handlers take the locks that are
 * held only for short bookkeeping (the process-wide handler table, each server's handler table
 * and heap), so the child gets them whole and free, and the servers' output lock after flushing
 * their FILEs, so the child's copies of those buffers hold no device line.  handle_lock is not
 * taken: a user handler runs under it for as long as it likes, and may itself wait for the thread
 * that forks.  In the child each server is marked forked (its thread is gone); a handle_lock that
 * another thread of the parent held is made anew, and the call state it guarded is dropped, not
 * freed, by tether_rpc_server_reset.  A fork inside a user handler leaves that handler's server
 * alone: the child's one thread is the one serving it.
 */
static pthread_mutex_t srv_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tether_rpc_server *srv_registry;
static pthread_once_t srv_fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&srv_out_lock);
    pthread_mutex_lock(&srv_registry_lock);
    pthread_mutex_lock(&srv_global_handlers.lock);
    for (struct tether_rpc_server *srv = srv_registry; srv != NULL; srv = srv->reg_next) {
        pthread_mutex_lock(&srv->handlers.lock);
        pthread_mutex_lock(&srv->heap_lock);
        fflush(srv->out);
        fflush(srv->err);
    }
}

static void fork_parent(void)
{
    for (struct tether_rpc_server *srv = srv_registry; srv != NULL; srv = srv->reg_next) {
        pthread_mutex_unlock(&srv->heap_lock);
        pthread_mutex_unlock(&srv->handlers.lock);
    }
    pthread_mutex_unlock(&srv_global_handlers.lock);
    pthread_mutex_unlock(&srv_registry_lock);
    pthread_mutex_unlock(&srv_out_lock);
}

static void fork_child(void)
{
    struct tether_rpc_server *own = tether_rpc_server_current();
    for (struct tether_rpc_server *srv = srv_registry; srv != NULL; srv = srv->reg_next) {
        pthread_mutex_unlock(&srv->heap_lock);
        pthread_mutex_unlock(&srv->handlers.lock);
        if (srv == own)
            continue;
        srv->fork_whole = pthread_mutex_trylock(&srv->handle_lock) == 0;
        if (srv->fork_whole)
            pthread_mutex_unlock(&srv->handle_lock);
        else
            pthread_mutex_init(&srv->handle_lock, NULL); /* held by a thread the child lacks */
        atomic_store(&srv->forked, true);
    }
    pthread_mutex_unlock(&srv_global_handlers.lock);
    pthread_mutex_unlock(&srv_registry_lock);
    pthread_mutex_unlock(&srv_out_lock);
}

static void fork_handlers_install(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void srv_registry_add(struct tether_rpc_server *srv)
{
    pthread_once(&srv_fork_once, fork_handlers_install);
    pthread_mutex_lock(&srv_registry_lock);
    srv->reg_prev = NULL;
    srv->reg_next = srv_registry;
    if (srv_registry != NULL)
        srv_registry->reg_prev = srv;
    srv_registry = srv;
    pthread_mutex_unlock(&srv_registry_lock);
}

void srv_registry_remove(struct tether_rpc_server *srv)
{
    pthread_mutex_lock(&srv_registry_lock);
    if (srv->reg_prev != NULL)
        srv->reg_prev->reg_next = srv->reg_next;
    else
        srv_registry = srv->reg_next;
    if (srv->reg_next != NULL)
        srv->reg_next->reg_prev = srv->reg_prev;
    srv->reg_prev = srv->reg_next = NULL;
    pthread_mutex_unlock(&srv_registry_lock);
}

bool tether_rpc_server_forked(tether_rpc_server_t *srv)
{
    return atomic_load_explicit(&srv->forked, memory_order_acquire);
}

void tether_rpc_server_reset(tether_rpc_server_t *srv)
{
    if (srv == NULL || !atomic_load(&srv->forked))
        return;
    srv_thread_stop(srv);
    srv_calls_reset(srv);
    srv->fork_whole = true;
    atomic_store(&srv->kernels, 0);
    atomic_store(&srv->bell.sleepers, 0);
    atomic_store_explicit(&srv->forked, false, memory_order_release);
}
