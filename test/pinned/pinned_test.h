/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * pinned_test.h - helpers shared by the pinned-map tests: a fake driver (checks: tcheck.h).
 *
 * The callbacks' call_ctx, when not NULL, is a struct fake_range that the range pinned or unpinned
 * must lie in (a test passes the range a caller works on); the fake counts the calls where it
 * does not in call_ctx_errors, which every test expects to stay 0, and keeps the last call_ctx.
 *
 * The fake driver behaves like cuMemHostRegister/Unregister: pinning a range that overlaps one it
 * already pinned fails ("already registered"), unpinning needs the exact base and size.  Those
 * failures are also counted in driver_errors, which every test expects to stay 0: the map must
 * never ask for them.  Device pointers are host + FAKE_DEV_OFFSET, so the right device pointer of
 * any host address is known whatever entry it lies in.
 */
#ifndef TETHER_TEST_PINNED_TEST_H
#define TETHER_TEST_PINNED_TEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinned_map.h"
#include "tcheck.h"

#define FAKE_DEV_OFFSET ((uintptr_t)1 << 44)

struct fake_range {
    uintptr_t start;
    uintptr_t end;
};

struct fake_driver {
    pthread_mutex_t mutex;
    struct fake_range *pinned; /* ranges this driver has pinned */
    size_t n_pinned;
    size_t cap_pinned;
    struct fake_range foreign[8]; /* "pinned outside tether": pin reports external */
    size_t n_foreign;

    atomic_long pin_calls;
    atomic_long unpin_calls;
    atomic_long pins_ok;         /* successful pins that did not report external */
    atomic_long driver_errors;   /* requests a real driver would reject: must stay 0 */
    atomic_long in_flight;       /* pin/unpin calls running now */
    atomic_long call_ctx_errors; /* a callback whose call_ctx names a range not holding its own */
    void *_Atomic last_call_ctx; /* call_ctx of the last pin or unpin */

    atomic_long fail_pin_at;    /* fail the Nth pin call (1-based); 0: never */
    atomic_long fail_pin_every; /* fail every Nth pin call; 0: never */
    atomic_int fail_next_pin;   /* fail the next pin call (then cleared) */
    atomic_int fail_unpin;      /* unpin returns an error (after really unpinning) */

    /* Optional hooks called inside pin/unpin before the driver acts, without its mutex. */
    void (*pin_hook)(struct fake_driver *drv, uintptr_t ptr, size_t size);
    void (*unpin_hook)(struct fake_driver *drv, uintptr_t ptr, size_t size);
    void *hook_arg;
};

extern const struct pinned_ops fake_ops;

void fake_init(struct fake_driver *drv);
void fake_fini(struct fake_driver *drv);
/* Mark [start, start+size) as pinned by someone else (pin() inside it reports external). */
void fake_add_foreign(struct fake_driver *drv, uintptr_t start, size_t size);
/* Number of ranges the fake driver holds pinned for tether now. */
size_t fake_pinned_count(struct fake_driver *drv);

/* Map entries, in order, into a malloc'ed array; *n_p is the count. */
struct pinned_entry_info *test_snapshot(const struct pinned_map *map, size_t *n_p);
bool test_snapshots_equal(const struct pinned_entry_info *a, size_t na,
                          const struct pinned_entry_info *b, size_t nb);

/* xorshift64* */
static inline uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif /* TETHER_TEST_PINNED_TEST_H */
