/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test_dev_wait.c - the device library's first-poll delay rule (rpc/device/device_wait.h),
 * checked on the host: its steps, and its behaviour against a model of the link measured on
 * H200 machines (a first poll issued too early finds nothing and the call pays a round trip
 * more; one issued just a little early finds the answer but waits; the server misses a few
 * percent of polls whatever the delay).  The model's figures are cycles of a 1.98 GHz SM. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../../rpc/device/device_wait.h"
#include "tcheck.h"

#define RTT 2600u /* a poll that finds the answer at once */
#define SLOW 400u /* polls issued up to this much before the edge find the answer, late */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 53);
}

struct link {
    uint32_t edge;     /* cycles after the request from which a first poll is in time */
    double background; /* share of polls the server misses whatever the delay */
    uint32_t jitter;   /* cycles a poll in time may take beyond the round trip */
};

/* One first poll `delay` cycles after the request: whether it found the answer, how long it
 * took, and what the call paid beyond a poll in time (cycles). */
static bool poll_once(const struct link *l, uint64_t delay, uint64_t *took_p, uint64_t *extra_p)
{
    if (uniform() < l->background || delay + SLOW < l->edge) {
        *took_p = RTT;
        *extra_p = RTT; /* the next poll, a round trip later */
        return false;
    }
    uint64_t late = delay < l->edge ? (l->edge - delay) * 2 : 0;
    /* Polls in time take a round trip give or take a few hundred cycles, and now and then one
     * is 300 cycles quicker than the rest. */
    uint64_t jitter = (uint64_t)(uniform() * l->jitter);
    *took_p = RTT + late + jitter - (uniform() < 0.01 ? 300 : 0);
    *extra_p = late;
    return true;
}

struct run {
    double cost;    /* mean delay + extra per call, cycles */
    double missed;  /* share of calls whose first poll found nothing */
    uint32_t state; /* the port's wait state at the end */
};

/* The rule before this one, for comparison: every call polls at the delay and steps it. */
static uint32_t old_next(uint32_t state, bool hit, uint64_t took)
{
    uint32_t units = state & 511u, fast = state >> 9;
    uint64_t t = took / 64;
    uint32_t poll = t == 0 ? 1u : t > 127 ? 127u : (uint32_t)t;
    if (!hit) {
        units += 8;
    } else if (fast != 0 && poll > fast + 6) {
        units += 8;
        fast += fast < 127;
    } else {
        units -= units > 0;
        fast = fast == 0 || poll < fast ? poll : fast;
    }
    return (units > 511 ? 511 : units) | fast << 9;
}

/* `calls` calls on one port; old: the rule before this one. */
static struct run simulate(const struct link *l, uint32_t state, int calls, bool old)
{
    struct run r = {0, 0, 0};
    for (int seq = 0; seq < calls; seq++) {
        bool explore = dev_wait_explores((uint32_t)seq & 0xffu);
        uint64_t delay = old ? (uint64_t)(state & 511u) * 8 : dev_wait_cycles(state, explore), took,
                 extra;
        bool hit = poll_once(l, delay, &took, &extra);
        state = old ? old_next(state, hit, took) : dev_wait_next(state, explore, hit, took);
        r.cost += (double)(delay + extra);
        r.missed += !hit;
    }
    r.cost /= calls;
    r.missed /= calls;
    r.state = state;
    return r;
}

static uint32_t edge_units(uint32_t state)
{
    return state & DEV_WAIT_MAX;
}

static void test_steps(void)
{
    uint32_t fast = 40u << 9;
    /* Exploring: a miss moves the edge up by DEV_WAIT_UP, a hit in time down by one. */
    CHECKF(edge_units(dev_wait_next(fast | 100, true, false, RTT)) == 100 + DEV_WAIT_UP, "up");
    CHECKF(edge_units(dev_wait_next(fast | 100, true, true, 40 * DEV_RTT_UNIT)) == 99, "down");
    /* A hit slower than the fastest poll plus the margin was too early. */
    uint64_t slow = (40 + DEV_RTT_MARGIN + 1) * DEV_RTT_UNIT;
    CHECKF(edge_units(dev_wait_next(fast | 100, true, true, slow)) == 100 + DEV_WAIT_UP, "late");
    /* Other calls move the edge never; a slow hit raises the fastest poll by one. */
    CHECKF(edge_units(dev_wait_next(fast | 100, false, false, RTT)) == 100, "normal miss");
    CHECKF(edge_units(dev_wait_next(fast | 100, false, true, 40 * DEV_RTT_UNIT)) == 100,
           "normal hit");
    CHECKF(dev_wait_next(fast | 100, false, true, slow) == (41u << 9 | 100), "normal slow hit");
    /* They wait the margin longer; the edge stays within its bits. */
    CHECKF(dev_wait_cycles(100, false) ==
               dev_wait_cycles(100, true) + (uint64_t)DEV_WAIT_MARGIN * DEV_WAIT_UNIT,
           "margin");
    CHECKF(edge_units(dev_wait_next(DEV_WAIT_MAX, true, false, RTT)) == DEV_WAIT_MAX, "cap");
    CHECKF(edge_units(dev_wait_next(0, true, true, RTT)) == 0, "floor");
    /* The fastest poll is kept, and the first one sets it. */
    CHECKF(dev_wait_next(0, false, true, 30 * DEV_RTT_UNIT) >> 9 == 30, "first fast");
    CHECKF(dev_wait_next(fast, false, true, 35 * DEV_RTT_UNIT) >> 9 == 35, "faster");
    CHECKF(dev_wait_explores(0) && !dev_wait_explores(1) && dev_wait_explores(DEV_EXPLORE),
           "one call in DEV_EXPLORE explores");
}

/* From a fresh port the edge is found, and most calls then poll in time. */
static void test_converges(void)
{
    struct link l = {1200, 0.03, 256};
    struct run r = simulate(&l, 0, 40000, false);
    uint32_t e = edge_units(r.state) * DEV_WAIT_UNIT;
    CHECKF(e + SLOW >= l.edge && e <= l.edge + 256, "edge %u cycles, link's %u", e, l.edge);
    CHECKF(r.missed < l.background + 0.03, "%.1f%% first polls found nothing", 100 * r.missed);
    printf("test_dev_wait: edge %u cycles (link %u), %.1f%% missed, %.0f cycles per call "
           "beyond a poll in time\n",
           e, l.edge, 100 * r.missed, r.cost);
}

/* The server's own misses do not push the delay up without bound. */
static void test_background_bounded(void)
{
    struct link l = {800, 0.06, 256};
    struct run r = simulate(&l, 0, 100000, false);
    uint32_t e = edge_units(r.state) * DEV_WAIT_UNIT;
    CHECKF(e <= l.edge + 512, "edge %u cycles with 6%% background misses, link's %u", e, l.edge);
}

/* A slower server or handler is followed between explorations, and a faster one again. */
static void test_follows(void)
{
    struct link l = {600, 0.03, 256};
    struct run r = simulate(&l, 0, 10000, false);
    l.edge = 2600;
    r = simulate(&l, r.state, 600, false);
    uint32_t e = edge_units(r.state) * DEV_WAIT_UNIT;
    CHECKF(e + SLOW >= l.edge, "after 600 calls the edge is %u cycles, link's %u", e, l.edge);
    l.edge = 600;
    r = simulate(&l, r.state, 40000, false);
    e = edge_units(r.state) * DEV_WAIT_UNIT;
    CHECKF(e <= l.edge + 256, "back down: edge %u cycles, link's %u", e, l.edge);
}

/* After something pushed the edge to its cap, it comes back: one unit per exploration, within
 * eight thousand calls (20 ms of back-to-back calls).  (The rule before came back eight times
 * faster, but a burst of misses pushed it up eight times further.) */
static void test_recovers(void)
{
    struct link l = {600, 0.03, 256};
    struct run r = simulate(&l, DEV_WAIT_MAX | 40u << 9, 8000, false);
    uint32_t e = edge_units(r.state) * DEV_WAIT_UNIT;
    CHECKF(e <= l.edge + 512, "8000 calls after the cap the edge is %u cycles, link's %u", e,
           l.edge);
}

/* What the rule is for: less paid per call than the rule before it. */
static void test_cheaper_than_every_call(void)
{
    for (uint32_t edge = 400; edge <= 2000; edge += 400) {
        struct link l = {edge, 0.03, 256};
        struct run every = simulate(&l, 0, 60000, true);
        struct run now = simulate(&l, 0, 60000, false);
        CHECKF(now.cost < every.cost, "edge %u: %.0f cycles per call against %.0f", edge, now.cost,
               every.cost);
        CHECKF(now.missed <= every.missed + 0.005, "edge %u: %.1f%% missed against %.1f%%", edge,
               100 * now.missed, 100 * every.missed);
        printf("test_dev_wait: edge %u: %.0f cycles per call (%.1f%% missed), the rule before "
               "%.0f (%.1f%%)\n",
               edge, now.cost, 100 * now.missed, every.cost, 100 * every.missed);
    }
}

int main(void)
{
    test_steps();
    test_converges();
    test_background_bounded();
    test_follows();
    test_recovers();
    test_cheaper_than_every_call();
    return tcheck_exit("test_dev_wait");
}
