/*
 * rpc/device/device_wait.h - when a GPU thread first polls for its call's answer.
 *
 * One poll of host memory is a round trip over the link (about 1.3 us on an H200), and an
 * answer that lands in host memory just after a poll read the line is seen only one round trip
 * later.  A thread cannot shorten that second round trip: its strong loads of host memory do
 * not overlap, so a second poll in flight, of the same line or another, costs a round trip of
 * its own (test/cuda/probe/poll_window.cu).  So the first poll waits, after the request, for a
 * delay learnt per port.  What it is learnt from (test/cuda/probe/rpc_phases, H200 machines):
 *   - A poll issued less than about 100 ns after the request is slow, not empty: it finds the
 *     answer, but takes up to 0.7 us longer than a round trip.  A later poll that still comes
 *     too early finds nothing, and the call pays a round trip more.
 *   - Polls that find nothing come at 2-5% of calls whatever the delay: the server thread was
 *     busy elsewhere.
 *   - Where early polls start depends on the process (with a fixed delay of 320 cycles, one
 *     process's calls found the answer at the first poll 93% of the time, another's 20%), so
 *     the delay has to be learnt, and learning costs.  The rule this library had before stepped
 *     down on every hit and up by DEV_WAIT_UP on every miss, so it settled where one first poll
 *     in DEV_WAIT_UP + 1 came too early: 10.5% of calls paid the extra round trip, 0.12 us per
 *     call on average.
 * So a port keeps the edge E where first polls start to come too early, and learns it from one
 * call in DEV_EXPLORE only (its seq a multiple of DEV_EXPLORE), which polls first at E: a miss
 * there, or a hit slower than the port's fastest poll by more than DEV_RTT_MARGIN units
 * (issued too early, it waited), moves E up by DEV_WAIT_UP; a hit in time moves it down by one.
 * Every other call polls first at E + DEV_WAIT_MARGIN, where it rarely comes too early, and
 * moves nothing: counting its slow hits as early (polls in time vary by a few hundred cycles)
 * drove E up to its cap (seen on an H200: 3.05 us round trips), and counting its misses (the
 * server's own, a few percent at any delay) let E drift up where those come at 6%
 * (test/services/test_dev_wait.c models both).  A slower server or handler is followed by the
 * explorations alone: a 1 us slower one within about 250 calls.  A slow hit of any call raises
 * the fastest poll by a unit, a faster hit lowers it to its own time.  Units: DEV_WAIT_UNIT SM
 * cycles.
 *
 * The port's user bits (rpc_port_user): 0..8 E in units (at most DEV_WAIT_MAX, about 2 us: a
 * slow handler costs at most that much more than polling at once), 9..15 the port's fastest
 * first poll in units of DEV_RTT_UNIT cycles (0: none yet).  Plain C, so that host tests can
 * check the rule (test/services/test_dev_wait.c).
 */
#ifndef TETHER_DEVICE_WAIT_H
#define TETHER_DEVICE_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#ifndef DEV_WAIT_UNIT /* rpc_phases builds variants */
#define DEV_WAIT_UNIT 8u
#endif
#ifndef DEV_WAIT_UP
#define DEV_WAIT_UP 8u
#endif
#ifndef DEV_EXPLORE
#define DEV_EXPLORE 8u
#endif
#ifndef DEV_WAIT_MARGIN
#define DEV_WAIT_MARGIN 8u
#endif
#define DEV_WAIT_MAX 511u
#define DEV_RTT_UNIT 64u
#define DEV_RTT_MAX 127u
#ifndef DEV_RTT_MARGIN
#define DEV_RTT_MARGIN 6u
#endif

/* Does the call of this seq (rpc_port_seq) explore? */
static inline bool dev_wait_explores(uint32_t seq)
{
    return seq % DEV_EXPLORE == 0;
}

/* SM cycles between the request and the first poll. */
static inline uint64_t dev_wait_cycles(uint32_t user, bool explore)
{
    uint32_t units = (user & DEV_WAIT_MAX) + (explore ? 0u : DEV_WAIT_MARGIN);
    return (uint64_t)units * DEV_WAIT_UNIT;
}

/* The port's next user bits after a first poll that found the answer (`hit`) or not, and took
 * `took` SM cycles. */
static inline uint32_t dev_wait_next(uint32_t user, bool explore, bool hit, uint64_t took)
{
    uint32_t units = user & DEV_WAIT_MAX, fast = (user >> 9) & DEV_RTT_MAX;
    uint64_t t = took / DEV_RTT_UNIT;
    uint32_t poll = t == 0 ? 1u : t > DEV_RTT_MAX ? DEV_RTT_MAX : (uint32_t)t;
    bool slow = hit && fast != 0 && poll > fast + DEV_RTT_MARGIN;
    if (explore)
        units = !hit || slow ? units + DEV_WAIT_UP : units - (units > 0);
    if (slow)
        fast += fast < DEV_RTT_MAX; /* the fastest poll may have been a lucky one */
    else if (hit && (fast == 0 || poll < fast))
        fast = poll;
    if (units > DEV_WAIT_MAX)
        units = DEV_WAIT_MAX;
    return units | fast << 9;
}

/* dev_wait_next for a first poll that found the answer, in two steps: dev_wait_plan before the
 * poll, while the caller waits for its delay anyway, and dev_wait_hit after it, a few
 * instructions on the call's path instead of the whole rule (H200: about 60 cycles less). */
struct dev_wait_plan {
    uint32_t slow_after; /* a poll of more units than this was slow (UINT32_MAX: none can be) */
    uint32_t slow_bits;  /* the next user bits after a slow hit */
    uint32_t hit_units;  /* the edge after a hit in time */
    uint32_t fast_cap;   /* the fastest poll after a hit in time is min(poll, fast_cap) */
};

static inline struct dev_wait_plan dev_wait_plan(uint32_t user, bool explore)
{
    uint32_t units = user & DEV_WAIT_MAX, fast = (user >> 9) & DEV_RTT_MAX;
    uint32_t up = units + DEV_WAIT_UP > DEV_WAIT_MAX ? DEV_WAIT_MAX : units + DEV_WAIT_UP;
    struct dev_wait_plan plan;
    plan.slow_after = fast == 0 ? UINT32_MAX : fast + DEV_RTT_MARGIN;
    plan.slow_bits = (explore ? up : units) | (fast + (fast < DEV_RTT_MAX)) << 9;
    plan.hit_units = explore ? units - (units > 0) : units;
    plan.fast_cap = fast == 0 ? DEV_RTT_MAX : fast;
    return plan;
}

/* dev_wait_next(user, explore, true, took) for the plan of (user, explore). */
static inline uint32_t dev_wait_hit(const struct dev_wait_plan *plan, uint64_t took)
{
    uint64_t t = took / DEV_RTT_UNIT;
    uint32_t poll = t == 0 ? 1u : t > DEV_RTT_MAX ? DEV_RTT_MAX : (uint32_t)t;
    if (poll > plan->slow_after)
        return plan->slow_bits;
    return plan->hit_units | (poll < plan->fast_cap ? poll : plan->fast_cap) << 9;
}

#endif /* TETHER_DEVICE_WAIT_H */
