/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_profile.c - call timing of the profiling build (rpc_profile.h); compiled only
 * with -DTETHER_RPC_PROFILE=ON.
 */
#include "rpc_profile.h"

#include <time.h>

#include "rpc_env.h"
#include "rpc_internal.h"

#if !TETHER_RPC_PROFILE
#error "rpc_profile.c belongs to the profiling build (-DTETHER_RPC_PROFILE=ON)"
#endif

static uint64_t prof_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t srv_clock(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return prof_now_ns();
#endif
}

/* srv_clock's ns per tick: both clocks read across 2 ms. */
static double prof_calibrate(void)
{
#if defined(__x86_64__)
    uint64_t n0 = prof_now_ns(), t0 = srv_clock(), n1, t1;
    do {
        n1 = prof_now_ns();
        t1 = srv_clock();
    } while (n1 - n0 < 2000000u);
    return t1 > t0 ? (double)(n1 - n0) / (double)(t1 - t0) : 1.0;
#else
    return 1.0;
#endif
}

void srv_prof_init(struct tether_rpc_server *srv)
{
    struct srv_profile *p = &srv->prof;
    p->on = tether_env_bool("TETHER_RPC_TIMING", false);
    p->ns_per_tick = p->on ? prof_calibrate() : 1.0;
}

void srv_prof_reset(struct tether_rpc_server *srv)
{
    srv->prof.port = 0;
    srv->prof.seen_t = 0;
}

uint64_t srv_prof_now(struct tether_rpc_server *srv)
{
    return srv->prof.on ? srv_clock() : 0;
}

void srv_prof_seen(struct tether_rpc_server *srv)
{
    if (srv->prof.on)
        srv->prof.seen_t = srv_clock();
}

void srv_prof_opened(struct tether_rpc_server *srv, struct srv_call *call)
{
    struct srv_profile *p = &srv->prof;
    call->seen_t = 0;
    if (!p->on)
        return;
    uint32_t index = rpc_port_index(&call->port);
    call->open_t = srv_clock();
    if (p->port == index + 1) {
        srv_count(&p->gaps, 1);
        srv_count(&p->gap_ns, call->open_t - p->close_t);
    }
    if (p->seen_t != 0) {
        srv_count(&p->seen, 1);
        srv_count(&p->seen_ns, call->open_t - p->seen_t);
        call->seen_t = p->seen_t;
        p->seen_t = 0;
    }
}

void srv_prof_service(struct tether_rpc_server *srv, uint64_t t0)
{
    if (srv->prof.on)
        srv_count(&srv->prof.service_ns, srv_clock() - t0);
}

void srv_prof_answered(struct tether_rpc_server *srv, struct srv_call *call)
{
    if (srv->prof.on && call->seen_t != 0) {
        srv_count(&srv->prof.seen_answered, 1);
        srv_count(&srv->prof.seen_answer_ns, srv_clock() - call->seen_t);
    }
}

void srv_prof_closed(struct tether_rpc_server *srv, struct srv_call *call)
{
    struct srv_profile *p = &srv->prof;
    if (!p->on)
        return;
    p->close_t = srv_clock();
    p->port = rpc_port_index(&call->port) + 1;
    srv_count(&p->timed_calls, 1);
    srv_count(&p->serve_ns, p->close_t - call->open_t);
}

void srv_prof_sweep_empty(struct tether_rpc_server *srv)
{
    if (srv->prof.on)
        srv_count(&srv->prof.sweeps, 1);
}

void srv_prof_handle(struct tether_rpc_server *srv, uint64_t t0)
{
    if (srv->prof.on)
        srv_count(&srv->prof.handle_ns, srv_clock() - t0);
}

void srv_timing_read(tether_rpc_server_t *srv, struct srv_timing *timing_p)
{
    const struct srv_profile *p = &srv->prof;
    double k = p->ns_per_tick;
    struct srv_timing t;
    t.timed_calls = atomic_load(&p->timed_calls);
    t.serve_ns = (uint64_t)((double)atomic_load(&p->serve_ns) * k);
    t.gaps = atomic_load(&p->gaps);
    t.gap_ns = (uint64_t)((double)atomic_load(&p->gap_ns) * k);
    t.seen = atomic_load(&p->seen);
    t.seen_ns = (uint64_t)((double)atomic_load(&p->seen_ns) * k);
    t.seen_answered = atomic_load(&p->seen_answered);
    t.seen_answer_ns = (uint64_t)((double)atomic_load(&p->seen_answer_ns) * k);
    t.service_ns = (uint64_t)((double)atomic_load(&p->service_ns) * k);
    t.handle_ns = (uint64_t)((double)atomic_load(&p->handle_ns) * k);
    t.sweeps = atomic_load(&p->sweeps);
    *timing_p = t;
}
