/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_wait.h - how a backend waits for its device: poll for a while, then sleep.
 *
 * Role: every wait of a backend for work on its device (queue_sync, event_sync, a copy that must
 * wait for its stream) is one call of plugin_wait() with two primitives of the backend's own:
 * `poll` (never blocks: is the work done?) and `block` (sleeps in the driver until it is done:
 * CUDA, a blocking-sync event; HSA, a signal wait in HSA_WAIT_STATE_BLOCKED).  The policy is here
 * only, with its state in one `struct plugin_wait` per device, which the backend embeds in its
 * device and sets up with plugin_wait_init().  TETHER_WAIT picks it:
 *
 *   spin      poll until done: the lowest latency, a host core busy for the whole wait.
 *   block     poll once, then block: no CPU, but the driver's wake-up time on every wait.
 *   adaptive  (default) poll for a window, then block.  The window is twice the device's running
 *             estimate of how long its waits take (`typical`: an average over the last ~8 waits
 *             that ended within PLUGIN_WAIT_MAX_NS), clamped to [PLUGIN_WAIT_MIN_NS,
 *             PLUGIN_WAIT_MAX_NS]; when most recent waits (`long_share` > 3/4) outlasted
 *             PLUGIN_WAIT_MAX_NS, the window is PLUGIN_WAIT_MIN_NS.  So waits that repeat and end
 *             within the maximum (an empty target region, a 1 ms kernel) are caught by polling,
 *             at spin's latency, and a long wait costs at most the window in CPU time, then
 *             sleeps.  Work found done at the first poll teaches nothing (there was no wait).
 *             Before polling, a wait naps (a timed sleep, no driver call) through the part of it
 *             that recent waits all lasted: when the shortest recent wait (`floor`: it drops to
 *             a shorter wait at once and rises by 1/8 of the gap to a longer one) is at least
 *             PLUGIN_WAIT_NAP_FROM_NS, for the floor less a quarter of it, at least
 *             PLUGIN_WAIT_NAP_MARGIN_NS (the timer's slack and the wake-up).  So a 1 ms kernel
 *             that repeats costs about a fifth of its wait in CPU, not all of it, at spin's
 *             latency.  Work found done at the first poll after a nap (the wait was shorter than
 *             its nap, and ended late by at most the nap) sets the floor to 0: no naps until it
 *             is learnt again, so a change to shorter waits makes one wait late.
 *
 * Thread safety: plugin_wait() may run on any number of threads at once for one device; the
 * estimate is updated with relaxed atomics (a lost update only delays learning).  mode and clock
 * are written by plugin_wait_init() (and by tests) before the device is shared.
 */
#ifndef TETHER_COMMON_PLUGIN_WAIT_H
#define TETHER_COMMON_PLUGIN_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tether/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TETHER_WAIT's choices, in the order of its words "adaptive", "spin", "block". */
enum plugin_wait_mode {
    PLUGIN_WAIT_ADAPTIVE = 0,
    PLUGIN_WAIT_SPIN = 1,
    PLUGIN_WAIT_BLOCK = 2,
};

#define PLUGIN_WAIT_MIN_NS 20000ull         /* the shortest window: 20 us */
#define PLUGIN_WAIT_MAX_NS 2000000ull       /* the longest window: 2 ms */
#define PLUGIN_WAIT_SHARE_ONE 1024u         /* long_share of 1: every recent wait was long */
#define PLUGIN_WAIT_NAP_FROM_NS 200000ull   /* waits nap when the floor is at least 200 us */
#define PLUGIN_WAIT_NAP_MARGIN_NS 100000ull /* a nap ends at least 100 us before the floor */

/* One device's waiting policy and what it learnt. */
struct plugin_wait {
    enum plugin_wait_mode mode;
    uint64_t (*clock)(void);     /* nanoseconds, monotonic: plugin_wait_clock() unless a test's */
    void (*sleep)(uint64_t ns);  /* a timed sleep: plugin_wait_sleep() unless a test's */
    _Atomic uint64_t typical_ns; /* running average of waits that ended within the maximum */
    _Atomic uint64_t floor_ns;   /* the shortest of them, rising slowly (see the top) */
    _Atomic uint32_t long_share; /* running share of waits that did not, in 1/SHARE_ONE */
    /* Counts for plugin_wait_report: waits that found the work running, those of them that
     * napped, and those that slept in the driver (block). */
    _Atomic uint64_t waits, napped, blocked;
};

/* Is the work done?  Never blocks.  *done_p is written on success; a failure of the work (or of
 * the driver) is returned as an error status with err set. */
typedef tether_status_t (*plugin_wait_poll_t)(void *ctx, bool *done_p, struct tether_error *err);
/* Sleep until the work is done (in the driver, so the thread uses no CPU); return its status. */
typedef tether_status_t (*plugin_wait_block_t)(void *ctx, struct tether_error *err);

/* Set w up: mode from TETHER_WAIT (a bad value: one warning, adaptive), the monotonic clock, a
 * fresh estimate whose first window is the maximum (a program's first kernels are polled for
 * as long as any). */
void plugin_wait_init(struct plugin_wait *w);

/* The monotonic clock in nanoseconds. */
uint64_t plugin_wait_clock(void);

/* Sleeps about `ns` nanoseconds (a signal may end it early). */
void plugin_wait_sleep(uint64_t ns);

/* How long an adaptive wait polls before it blocks, from what w has learnt, in nanoseconds:
 * within [PLUGIN_WAIT_MIN_NS, PLUGIN_WAIT_MAX_NS]. */
uint64_t plugin_wait_window(const struct plugin_wait *w);

/* How long an adaptive wait naps before it polls, in nanoseconds (0: it does not); always
 * shorter than the window. */
uint64_t plugin_wait_nap(const struct plugin_wait *w);

/* Learn from one wait that took `ns` (from its first unsuccessful poll until done). */
void plugin_wait_record(struct plugin_wait *w, uint64_t ns);

/* At device shutdown, with LIBOMPTARGET_INFO's plugin bit (16): one line with w's counts and
 * what it learnt, when a wait found work running. */
struct plugin_device;
void plugin_wait_report(const struct plugin_device *dev, const struct plugin_wait *w);

/* Wait for the work poll/block look at, as w->mode says (see the top).  Returns TETHER_OK when
 * it is done, or the first error of poll or block (err set by them).  ctx goes to both. */
tether_status_t plugin_wait(struct plugin_wait *w, plugin_wait_poll_t poll,
                            plugin_wait_block_t block, void *ctx, struct tether_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_COMMON_PLUGIN_WAIT_H */
