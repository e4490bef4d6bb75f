/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/fault_ops.h - an ops-table wrapper that fails backend call N (style rule 12).
 *
 * fault_ops forwards every slot to an inner backend table (the host backend in these tests).
 * Each "acquiring" call (one that creates something or does work: create, limits, alloc, memcpy,
 * register, queue/event work, module/global/kernel lookup, launch) is numbered; the call whose
 * number equals fault_state.fail_at returns TETHER_ERR_DRIVER with "injected failure" instead of
 * reaching the backend.  Releasing calls (free, unregister, destroy, unload, release) never fail,
 * as real drivers' cleanup cannot be undone either.  The wrapper counts live backend objects so a
 * test can prove that every cleanup path released what it acquired.  Counters are atomic: the
 * wrapper may be used from several threads (with fail_at = 0).
 */
#ifndef TETHER_TEST_FAULT_OPS_H
#define TETHER_TEST_FAULT_OPS_H

#include <stdatomic.h>

#include "plugin.h"

struct fault_state {
    const struct plugin_ops *inner;
    atomic_long calls;           /* acquiring calls made so far */
    long fail_at;                /* 1-based number of the call to fail; 0: never */
    tether_status_t fail_status; /* what the failing call returns (TETHER_OK: TETHER_ERR_DRIVER) */
    atomic_long failed;          /* failures injected */
    /* live objects, by kind */
    atomic_long plugins, devices, modules, kernels, queues, events, allocs, registers;
    atomic_long launches;
    atomic_long syncs; /* queue_sync calls */
    /* when set, the launch slot calls this instead of the inner backend's launch */
    tether_status_t (*launch_hook)(const struct plugin_launch *launch);
    /* the device ids the last host_register and host_unregister were called with (-1: none) */
    atomic_int register_dev, unregister_dev;
};

extern struct fault_state fault;
extern const struct plugin_ops fault_ops;

/* Start a new run over `inner` failing call fail_at (0: none). */
void fault_reset(const struct plugin_ops *inner, long fail_at);
/* Sum of live objects of every kind (0 after a clean shutdown). */
long fault_live(void);
/* Print the live counts to stderr (diagnostics). */
void fault_dump(const char *what);

#endif /* TETHER_TEST_FAULT_OPS_H */
