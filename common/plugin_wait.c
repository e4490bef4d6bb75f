/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_wait.c - poll, then sleep: the one waiting policy of every backend
 * (plugin_wait.h has the policy in words).
 */
#include "plugin_wait.h"

#include <stdio.h>
#include <time.h>

#include "plugin.h"
#include "../rpc/server/rpc_env.h"

/* One parser reads TETHER_WAIT for the plugins and the RPC server thread (rpc_env.h). */
_Static_assert(PLUGIN_WAIT_ADAPTIVE == (int)TETHER_WAIT_ADAPTIVE &&
                   PLUGIN_WAIT_SPIN == (int)TETHER_WAIT_SPIN &&
                   PLUGIN_WAIT_BLOCK == (int)TETHER_WAIT_BLOCK,
               "TETHER_WAIT's words in one order");

/* Weight of the newest wait in the running figures: 1/8 (the last ~8 waits count). */
#define WAIT_AVG_SHIFT 3
/* The window is PLUGIN_WAIT_MIN_NS once more than this share of recent waits were long. */
#define WAIT_LONG_MOSTLY (PLUGIN_WAIT_SHARE_ONE * 3 / 4)

static inline void wait_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void plugin_wait_sleep(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

uint64_t plugin_wait_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void plugin_wait_init(struct plugin_wait *w)
{
    w->mode = (enum plugin_wait_mode)plugin_env_wait();
    w->clock = plugin_wait_clock;
    w->sleep = plugin_wait_sleep;
    atomic_init(&w->typical_ns, PLUGIN_WAIT_MAX_NS / 2);
    atomic_init(&w->floor_ns, 0);
    atomic_init(&w->waits, 0);
    atomic_init(&w->napped, 0);
    atomic_init(&w->blocked, 0);
    atomic_init(&w->long_share, 0);
}

uint64_t plugin_wait_window(const struct plugin_wait *w)
{
    uint64_t window = 2 * atomic_load_explicit(&w->typical_ns, memory_order_relaxed);

    if (atomic_load_explicit(&w->long_share, memory_order_relaxed) > WAIT_LONG_MOSTLY ||
        window < PLUGIN_WAIT_MIN_NS) {
        return PLUGIN_WAIT_MIN_NS;
    }
    return window > PLUGIN_WAIT_MAX_NS ? PLUGIN_WAIT_MAX_NS : window;
}

uint64_t plugin_wait_nap(const struct plugin_wait *w)
{
    uint64_t lo = atomic_load_explicit(&w->floor_ns, memory_order_relaxed);
    uint64_t margin = lo / 4 > PLUGIN_WAIT_NAP_MARGIN_NS ? lo / 4 : PLUGIN_WAIT_NAP_MARGIN_NS;

    if (lo < PLUGIN_WAIT_NAP_FROM_NS || lo - margin >= plugin_wait_window(w)) {
        return 0;
    }
    return lo - margin;
}

void plugin_wait_record(struct plugin_wait *w, uint64_t ns)
{
    bool is_long = ns > PLUGIN_WAIT_MAX_NS;
    uint32_t share = atomic_load_explicit(&w->long_share, memory_order_relaxed);

    share =
        share - (share >> WAIT_AVG_SHIFT) + (is_long ? PLUGIN_WAIT_SHARE_ONE >> WAIT_AVG_SHIFT : 0);
    atomic_store_explicit(&w->long_share, share, memory_order_relaxed);
    if (!is_long) {
        int64_t typical = (int64_t)atomic_load_explicit(&w->typical_ns, memory_order_relaxed);

        typical += ((int64_t)ns - typical) / (1 << WAIT_AVG_SHIFT);
        atomic_store_explicit(&w->typical_ns, (uint64_t)typical, memory_order_relaxed);
        uint64_t lo = atomic_load_explicit(&w->floor_ns, memory_order_relaxed);
        lo = ns < lo ? ns : lo + ((ns - lo) >> WAIT_AVG_SHIFT);
        atomic_store_explicit(&w->floor_ns, lo, memory_order_relaxed);
    }
}

tether_status_t plugin_wait(struct plugin_wait *w, plugin_wait_poll_t poll,
                            plugin_wait_block_t block, void *ctx, struct tether_error *err)
{
    bool done = false;
    tether_status_t rc = poll(ctx, &done, err);
    uint64_t start, now, window, nap;

    if (rc != TETHER_OK || done) {
        return rc; /* done at once: no wait to learn from */
    }
    atomic_fetch_add_explicit(&w->waits, 1, memory_order_relaxed);
    switch (w->mode) {
    case PLUGIN_WAIT_BLOCK:
        atomic_fetch_add_explicit(&w->blocked, 1, memory_order_relaxed);
        return block(ctx, err);
    case PLUGIN_WAIT_SPIN:
        do {
            wait_relax();
            rc = poll(ctx, &done, err);
        } while (rc == TETHER_OK && !done);
        return rc;
    case PLUGIN_WAIT_ADAPTIVE:
        break;
    }
    start = w->clock();
    window = plugin_wait_window(w);
    nap = plugin_wait_nap(w);
    if (nap != 0) {
        atomic_fetch_add_explicit(&w->napped, 1, memory_order_relaxed);
        w->sleep(nap);
        rc = poll(ctx, &done, err);
        if (rc != TETHER_OK) {
            return rc;
        }
        if (done) {
            /* The work ended during the nap, how early is unknown: no naps until the floor is
             * learnt again. */
            atomic_store_explicit(&w->floor_ns, 0, memory_order_relaxed);
            return TETHER_OK;
        }
    }
    do {
        wait_relax();
        rc = poll(ctx, &done, err);
        now = w->clock();
        if (rc != TETHER_OK) {
            return rc;
        }
        if (done) {
            plugin_wait_record(w, now - start);
            return TETHER_OK;
        }
    } while (now - start < window);
    atomic_fetch_add_explicit(&w->blocked, 1, memory_order_relaxed);
    rc = block(ctx, err);
    if (rc == TETHER_OK) {
        plugin_wait_record(w, w->clock() - start);
    }
    return rc;
}

void plugin_wait_report(const struct plugin_device *dev, const struct plugin_wait *w)
{
    static const char *const modes[] = {"adaptive", "spin", "block"};
    uint64_t waits = atomic_load_explicit(&w->waits, memory_order_relaxed);
    char learnt[160] = "";

    if (waits == 0 || !plugin_info_enabled(dev->plugin, PLUGIN_INFO_PLUGIN)) {
        return;
    }
    if (w->mode == PLUGIN_WAIT_ADAPTIVE) {
        snprintf(learnt, sizeof(learnt),
                 "; learnt: typical %.1f us, shortest %.1f us, %.0f%% of recent waits over %llu ms",
                 (double)atomic_load_explicit(&w->typical_ns, memory_order_relaxed) / 1e3,
                 (double)atomic_load_explicit(&w->floor_ns, memory_order_relaxed) / 1e3,
                 100.0 * atomic_load_explicit(&w->long_share, memory_order_relaxed) /
                     PLUGIN_WAIT_SHARE_ONE,
                 (unsigned long long)(PLUGIN_WAIT_MAX_NS / 1000000u));
    }
    plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
               "waits for the device (TETHER_WAIT=%s): %llu found work running, %llu of them "
               "napped first, %llu slept in the driver%s",
               modes[w->mode], (unsigned long long)waits,
               (unsigned long long)atomic_load_explicit(&w->napped, memory_order_relaxed),
               (unsigned long long)atomic_load_explicit(&w->blocked, memory_order_relaxed), learnt);
}
