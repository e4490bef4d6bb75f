/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_wait.h - when a GPU thread first polls for its call's answer (NVIDIA).
 *
 * One poll of host memory is a round trip over the link (about 1.3 us on an H200), and an
 * answer that lands in host memory just after a poll read the line is seen only one round trip
 * later: a thread's strong loads of host memory do not overlap, so a second poll in flight costs
 * a round trip of its own.  So the first poll waits, after the request, for a delay learnt per
 * port.  What the rule rests on (measured on H200s):
 *   - A poll issued less than about 100 ns after the request is slow, not empty: it finds the
 *     answer, but takes up to 0.7 us longer than a round trip.  A later poll that still comes
 *     too early finds nothing, and the call pays a round trip more.
 *   - Polls that find nothing come at 2-5% of calls whatever the delay: the server thread was
 *     busy elsewhere.
 *   - Where early polls start depends on the process, so the delay has to be learnt.
 * So a port keeps the edge E where first polls start to come too early, and learns it from one
 * call in DEV_EXPLORE only (its seq a multiple of DEV_EXPLORE), which polls first at E: a miss
 * there, or a hit slower than the port's fastest poll by more than DEV_RTT_MARGIN units (issued
 * too early, it waited), moves E up by DEV_WAIT_UP; a hit in time moves it down by one.  Every
 * other call polls first at E + DEV_WAIT_MARGIN, where it rarely comes too early, and moves
 * nothing (counting its slow hits or its misses, which are mostly the server's, drove E up).  A
 * slow hit of any call raises the fastest poll by a unit (one lucky poll must not hold it
 * down), a faster hit lowers it to its own time.  Units: DEV_WAIT_UNIT SM cycles.
 *
 * A port's wait state, 16 bits kept by the device library (device_nvptx.h): bits 0..8 E in units
 * (at most DEV_WAIT_MAX, about 2 us: a slow handler costs at most that much more than polling at
 * once), bits 9..15 the port's fastest first poll in units of DEV_RTT_UNIT cycles (0: none yet).
 * Plain C, so that test/rpc/device/test_dev_wait.c checks the rule on the host.
 */
#ifndef TETHER_DEVICE_WAIT_H
#define TETHER_DEVICE_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#define DEV_WAIT_UNIT 8u   /* SM cycles per unit of E */
#define DEV_WAIT_UP 8u     /* units E rises by after an early first poll */
#define DEV_EXPLORE 8u     /* one call in this many explores */
#define DEV_WAIT_MARGIN 8u /* units after E where the other calls poll first */
#define DEV_WAIT_MAX 511u
#define DEV_RTT_UNIT 64u /* SM cycles per unit of the fastest poll */
#define DEV_RTT_MAX 127u
#define DEV_RTT_MARGIN 6u /* units above the fastest poll that make a hit slow */

/* Does the call of this seq (rpc_port_seq) explore? */
static inline bool dev_wait_explores(uint32_t seq)
{
    return seq % DEV_EXPLORE == 0;
}

/* SM cycles between the request and the first poll, for wait state `state`. */
static inline uint64_t dev_wait_cycles(uint32_t state, bool explore)
{
    uint32_t units = (state & DEV_WAIT_MAX) + (explore ? 0u : DEV_WAIT_MARGIN);
    return (uint64_t)units * DEV_WAIT_UNIT;
}

/* The port's next wait state after a first poll that found the answer (`hit`) or not and took
 * `took` SM cycles. */
static inline uint32_t dev_wait_next(uint32_t state, bool explore, bool hit, uint64_t took)
{
    uint32_t units = state & DEV_WAIT_MAX, fast = (state >> 9) & DEV_RTT_MAX;
    uint64_t t = took / DEV_RTT_UNIT;
    uint32_t poll = t == 0 ? 1u : t > DEV_RTT_MAX ? DEV_RTT_MAX : (uint32_t)t;
    bool slow = hit && fast != 0 && poll > fast + DEV_RTT_MARGIN;
    if (explore)
        units = !hit || slow ? units + DEV_WAIT_UP : units - (units > 0);
    if (slow)
        fast += fast < DEV_RTT_MAX;
    else if (hit && (fast == 0 || poll < fast))
        fast = poll;
    if (units > DEV_WAIT_MAX)
        units = DEV_WAIT_MAX;
    return units | fast << 9;
}

#endif /* TETHER_DEVICE_WAIT_H */
