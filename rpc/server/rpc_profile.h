/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_profile.h - call timing, in the profiling build only.
 *
 * A build configured with -DTETHER_RPC_PROFILE=ON compiles the server library (and whatever
 * links its static archive, the plugins) with TETHER_RPC_PROFILE=1.  In such a build, a server
 * created while TETHER_RPC_TIMING is on times each call from its open to its close, the gap
 * between a call's close and the next call's open on the same port (the device's side of a round
 * trip), for calls the server thread saw on a hot port the time from seeing them to their open
 * and to the answer's head stored (the server's turnaround), the time in the services and inside
 * the server's handle, and the sweeps that found no call.  The clock is the time stamp counter on
 * x86-64 (18 ns a read in the GPU machines' VMs, against 39 ns for clock_gettime; several reads
 * per call), calibrated against CLOCK_MONOTONIC over 2 ms when the server is created, else
 * CLOCK_MONOTONIC.  Its reads slow the server a little, so the figures are upper bounds.
 *
 * Every other build has none of it: the hooks in rpc_internal.h are empty, and TETHER_RPC_TIMING
 * set gives one warning saying that the build does not time calls.
 *
 * Thread safety: srv_timing_read may be called from any thread at any time.
 */
#ifndef TETHER_RPC_PROFILE_H
#define TETHER_RPC_PROFILE_H

#include <stdint.h>

#include "tether/rpc.h"

#if TETHER_RPC_PROFILE

/* A server's timing so far (all zero when TETHER_RPC_TIMING was off at its creation). */
struct srv_timing {
    uint64_t timed_calls;    /* calls timed */
    uint64_t serve_ns;       /* their total time from the server's open to its close */
    uint64_t gaps;           /* calls that followed a call on the same port */
    uint64_t gap_ns;         /* their total time from that call's close to their open */
    uint64_t seen;           /* calls the thread saw waiting while it watched the hot ports */
    uint64_t seen_ns;        /* their total time from seen to open */
    uint64_t seen_answered;  /* of those, answered */
    uint64_t seen_answer_ns; /* their total time from seen to the answer's head stored */
    uint64_t service_ns;     /* total time in the services (formatting, heap, user handlers) */
    uint64_t handle_ns;      /* total time inside the server's handle */
    uint64_t sweeps;         /* sweeps over the ports that found no call */
};

/* Reads srv's timing into *timing_p, in nanoseconds. */
void srv_timing_read(tether_rpc_server_t *srv, struct srv_timing *timing_p);

#endif /* TETHER_RPC_PROFILE */

#endif /* TETHER_RPC_PROFILE_H */
