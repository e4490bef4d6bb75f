/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_pinned_failure.c - failure injection: a fixed script of locks and unlocks is run once for
 * every N, with the fake driver's pin failing on call N.  The lock that meets the failure must
 * return the driver's status and leave the map exactly as it was (same entries, references and
 * device pointers; nothing pinned in the driver); the rest of the script must then behave as
 * without the failure, and at the end pins and unpins balance.
 */
#include "pinned_test.h"

#define B ((uintptr_t)0x600000000000)
#define K ((uintptr_t)4096)

struct step {
    bool lock; /* else unlock */
    uintptr_t ptr;
    size_t size;
};

/* Locks that pin (new ranges), locks inside ranges, unlocks to zero and re-locks. */
static const struct step script[] = {
    {true, B, 4 * K},
    {true, B + K, K},
    {true, B + 8 * K, 2 * K},
    {true, B + 16 * K, K},
    {true, B + 8 * K, K},
    {false, B + 16 * K, 0},
    {true, B + 16 * K, 2 * K},
    {true, B + 32 * K, 8 * K},
    {true, B + 33 * K, K},
    {false, B, 0},
    {false, B, 0},
    {true, B, 2 * K},
    {true, B + 4 * K, K},
    {true, B + 64 * K, K},
    {false, B + 64 * K, 0},
    {true, B + 64 * K, K},
};
#define STEPS (sizeof(script) / sizeof(script[0]))

/* Run the script; with fail_at = 0 count the pins it makes. */
static long run(long fail_at)
{
    struct fake_driver drv;
    struct pinned_map *map;
    struct tether_error err;
    long failed_lock = -1;

    fake_init(&drv);
    atomic_store(&drv.fail_pin_at, fail_at);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);

    for (size_t i = 0; i < STEPS; i++) {
        const struct step *st = &script[i];
        size_t n0, n1;
        struct pinned_entry_info *before = test_snapshot(map, &n0);
        size_t pinned0 = fake_pinned_count(&drv);
        long calls0 = atomic_load(&drv.pin_calls);

        if (!st->lock) {
            CHECK_EQ(pinned_map_unlock(map, (void *)st->ptr, NULL, &err), TETHER_OK);
            free(before);
            continue;
        }
        void *dev = (void *)1;
        tether_status_t status = pinned_map_lock(map, (void *)st->ptr, st->size, NULL, &dev, &err);
        bool failed_here = calls0 < fail_at && atomic_load(&drv.pin_calls) >= fail_at;
        if (failed_here) {
            failed_lock = (long)i;
            CHECK_EQ(status, TETHER_ERR_DRIVER);
            CHECK_MSG(err.msg, "pin failed", "injected failure of pin call");
            CHECK(dev == (void *)1);
            struct pinned_entry_info *after = test_snapshot(map, &n1);
            CHECK(test_snapshots_equal(before, n0, after, n1));
            CHECK_EQ(fake_pinned_count(&drv), pinned0);
            CHECK(!pinned_map_lookup(map, (void *)st->ptr, st->size, NULL));
            free(after);
            /* Retrying succeeds and pins again. */
            status = pinned_map_lock(map, (void *)st->ptr, st->size, NULL, &dev, &err);
        }
        CHECK_EQ(status, TETHER_OK);
        CHECK_EQ((uintptr_t)dev, st->ptr + FAKE_DEV_OFFSET);
        free(before);
    }
    CHECK(fail_at == 0 || failed_lock >= 0);

    long pins = atomic_load(&drv.pin_calls);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(atomic_load(&drv.pins_ok), atomic_load(&drv.unpin_calls));
    fake_fini(&drv);
    return pins;
}

/* A failure of the first pin of a range while other entries are live, then a clean retry. */
static void test_fail_every_other(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    fake_init(&drv);
    atomic_store(&drv.fail_pin_every, 2);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    size_t ok = 0;
    for (uintptr_t i = 0; i < 100; i++) {
        void *dev;
        tether_status_t st = pinned_map_lock(map, (void *)(B + i * K), K, NULL, &dev, NULL);
        CHECK(st == TETHER_OK || st == TETHER_ERR_DRIVER);
        ok += st == TETHER_OK;
        CHECK_EQ(pinned_map_lookup(map, (void *)(B + i * K), K, NULL), st == TETHER_OK);
    }
    CHECK_EQ(ok, 50);
    CHECK_EQ(pinned_map_count(map), 50);
    CHECK_EQ(fake_pinned_count(&drv), 50);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

int main(void)
{
    long pins = run(0);
    CHECK(pins >= 8);
    for (long n = 1; n <= pins; n++)
        run(n);
    test_fail_every_other();
    printf("test_pinned_failure: pin failure injected at each of %ld pin calls\n", pins);
    return tcheck_exit("test_pinned_failure");
}
