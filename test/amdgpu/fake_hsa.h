/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_hsa.h - the test hooks of fake_hsa.c (the fake libhsa-runtime64.so.1), shared with the
 * tests that dlsym them.  Counters are totals since the library was loaded; "live" ones go up on
 * create and down on destroy, so a clean shutdown brings them back to zero.
 */
#ifndef TETHER_TEST_FAKE_HSA_H
#define TETHER_TEST_FAKE_HSA_H

#include <stdint.h>

struct fake_stats {
    long inits, shutdowns;
    long live_allocs, live_locks, live_signals, live_queues, live_executables, live_readers;
    long lock_calls; /* successful hsa_amd_memory_lock calls */
    long copies, dispatches, barriers;
    long misuse;            /* calls the plugin should never make (each also printed) */
    long injected_failures; /* FAKE_HSA_FAIL / fake_hsa_set_fail hits */
    /* hsa_signal_wait_scacquire calls, and those of them that found the condition unmet and
     * waited (in HSA_WAIT_STATE_BLOCKED: slept) */
    long signal_waits, signal_waits_slept;
};

/* The last kernel dispatch the fake packet processor ran. */
struct fake_dispatch {
    char kernel[256];
    uint16_t setup;
    uint16_t workgroup_size[3];
    uint32_t grid_size[3];
    uint32_t group_segment_size, private_segment_size;
    uint32_t kernarg_size;
    uint8_t kernarg[512];
};

typedef void (*fake_hsa_stats_fn)(struct fake_stats *out);
typedef void (*fake_hsa_last_dispatch_fn)(struct fake_dispatch *out);
/* name NULL: clear every injected failure; otherwise fail the nth call (1-based) from now. */
typedef void (*fake_hsa_set_fail_fn)(const char *name, int nth);

#endif /* TETHER_TEST_FAKE_HSA_H */
