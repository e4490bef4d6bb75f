/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda_sim.h - the counters of fake_cuda_sim.c's simulated GPU, exported as
 * `fake_cuda_sim_stats`: the driver calls the plugin made, for the tests to read through dlsym
 * (test_plugin_sim.c, test_jit_sim.c).  Fields are only ever appended.
 */
#ifndef TETHER_TEST_FAKE_CUDA_SIM_H
#define TETHER_TEST_FAKE_CUDA_SIM_H

#include <stddef.h>

struct fake_cuda_sim_stats {
    int inits, ctx_retains, ctx_releases, ctx_set_current;
    int registers, unregisters, register_failures;
    int allocs, frees, host_allocs, host_frees, managed_allocs;
    int h2d, d2h, d2d, launches, modules_loaded, modules_unloaded;
    int streams_created, streams_destroyed, events_created, events_destroyed;
    unsigned last_grid, last_block, last_shared, primary_flags;
    size_t stack_limit, heap_limit;
    /* calls of every entry point fake_cuda_sim.c defines, and of some of them by name */
    int calls, stream_syncs, stream_queries, stream_waits, event_records, event_syncs;
    int pointer_queries;
    /* FAKE_CUDA_SIM_KERNEL_US: cuEventQuery calls; answers CUDA_ERROR_NOT_READY of cuStreamQuery
     * and cuEventQuery (work still running); synchronisations that found work running and slept
     * (cuEventSynchronize of a CU_EVENT_BLOCKING_SYNC event), or spun (any other) */
    int event_queries, not_ready, slept, spun;
};

#endif /* TETHER_TEST_FAKE_CUDA_SIM_H */
