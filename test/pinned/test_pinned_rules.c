/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_pinned_rules.c - one test per rule of pinned_map.h, with the fake driver counting calls.
 * Host addresses are made up: the map never touches the memory it records.
 */
#include "pinned_test.h"

#define KIB ((uintptr_t)1024)
#define BASE ((uintptr_t)0x7f0000100000)

static struct fake_driver drv;
static struct pinned_map *map;
static struct tether_error err;

static void setup(void)
{
    fake_init(&drv);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    memset(&err, 0, sizeof(err));
}

/* Destroying the map must leave the fake driver with nothing pinned and no rejected request. */
static void teardown(void)
{
    pinned_map_destroy(map, NULL);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(atomic_load(&drv.call_ctx_errors), 0);
    CHECK_EQ(atomic_load(&drv.pins_ok), atomic_load(&drv.unpin_calls));
    fake_fini(&drv);
}

static tether_status_t lock(uintptr_t p, size_t size, uintptr_t *dev_p)
{
    void *dev = (void *)0xdead;
    tether_status_t st = pinned_map_lock(map, (void *)p, size, NULL, &dev, &err);
    if (st != TETHER_OK)
        CHECK(dev == (void *)0xdead); /* written only on success */
    if (dev_p)
        *dev_p = (uintptr_t)dev;
    return st;
}

static tether_status_t unlock(uintptr_t p)
{
    return pinned_map_unlock(map, (void *)p, NULL, &err);
}

static size_t refs_of(uintptr_t base)
{
    size_t n;
    struct pinned_entry_info *v = test_snapshot(map, &n);
    size_t refs = 0;
    for (size_t i = 0; i < n; i++)
        if ((uintptr_t)v[i].base == base)
            refs = v[i].refs;
    free(v);
    return refs;
}

static bool lookup(uintptr_t p, size_t size, uintptr_t *dev_p)
{
    void *dev = (void *)0xdead;
    bool hit = pinned_map_lookup(map, (void *)p, size, &dev);
    if (!hit)
        CHECK(dev == (void *)0xdead);
    if (dev_p)
        *dev_p = (uintptr_t)dev;
    return hit;
}

static void test_create_args(void)
{
    struct pinned_map *m = NULL;
    struct pinned_ops no_unpin = {.pin = fake_ops.pin};
    CHECK_EQ(pinned_map_create(NULL, NULL, &m), TETHER_ERR_INVALID);
    CHECK_EQ(pinned_map_create(&no_unpin, NULL, &m), TETHER_ERR_INVALID);
    CHECK_EQ(pinned_map_create(&fake_ops, NULL, NULL), TETHER_ERR_INVALID);
    CHECK(m == NULL);
    pinned_map_destroy(NULL, NULL);
}

static void test_lock_new_range(void)
{
    setup();
    uintptr_t dev;
    CHECK_EQ(pinned_map_count(map), 0);
    CHECK(!lookup(BASE, 1, NULL));
    CHECK_EQ(lock(BASE, 4 * KIB, &dev), TETHER_OK);
    CHECK_EQ(dev, BASE + FAKE_DEV_OFFSET);
    CHECK_EQ(atomic_load(&drv.pin_calls), 1);
    CHECK_EQ(fake_pinned_count(&drv), 1);
    CHECK_EQ(pinned_map_count(map), 1);
    CHECK_EQ(refs_of(BASE), 1);
    CHECK(lookup(BASE, 4 * KIB, &dev));
    CHECK_EQ(dev, BASE + FAKE_DEV_OFFSET);
    teardown();
}

static void test_lock_inside_adds_reference(void)
{
    setup();
    uintptr_t dev;
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 100, 200, &dev), TETHER_OK);
    CHECK_EQ(dev, BASE + 100 + FAKE_DEV_OFFSET);
    CHECK_EQ(lock(BASE, 4 * KIB, &dev), TETHER_OK); /* the same range again */
    CHECK_EQ(dev, BASE + FAKE_DEV_OFFSET);
    CHECK_EQ(lock(BASE + 4 * KIB - 1, 1, &dev), TETHER_OK); /* the last byte */
    CHECK_EQ(dev, BASE + 4 * KIB - 1 + FAKE_DEV_OFFSET);
    CHECK_EQ(atomic_load(&drv.pin_calls), 1);
    CHECK_EQ(refs_of(BASE), 4);
    CHECK_EQ(pinned_map_count(map), 1);
    teardown();
}

static void test_lock_overlaps_rejected(void)
{
    setup();
    CHECK_EQ(lock(BASE, 1 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE, 1 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 2 * KIB, 1 * KIB, NULL), TETHER_OK);
    size_t n0;
    struct pinned_entry_info *before = test_snapshot(map, &n0);

    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "lock [0x7f0000100000, +4096)", "straddles", "[0x7f0000100000, +1024)",
              "(refs 2)", "[0x7f0000100800, +1024)");
    CHECK_EQ(lock(BASE + 512, 1 * KIB, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "lock [0x7f0000100200, +1024) extends locked range [0x7f0000100000, +1024)",
              "(refs 2)");
    CHECK_EQ(lock(BASE + 2 * KIB - 16, 32, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "overlaps from below", "[0x7f0000100800, +1024)");
    CHECK_EQ(lock(BASE + 2 * KIB - 16, 2 * KIB, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "covers", "[0x7f0000100800, +1024)");
    CHECK_EQ(lock(BASE + 1 * KIB - 1, 2, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "extends");

    size_t n1;
    struct pinned_entry_info *after = test_snapshot(map, &n1);
    CHECK(test_snapshots_equal(before, n0, after, n1));
    CHECK_EQ(atomic_load(&drv.pin_calls), 2);
    free(before);
    free(after);

    /* Touching ranges do not overlap. */
    CHECK_EQ(lock(BASE + 1 * KIB, 1 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE - 1 * KIB, 1 * KIB, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_count(map), 4);
    CHECK_EQ(atomic_load(&drv.pin_calls), 4);
    teardown();
}

static void test_invalid_ranges(void)
{
    setup();
    CHECK_EQ(lock(0, 4 * KIB, NULL), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "NULL");
    CHECK_EQ(lock(BASE, 0, NULL), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "size 0");
    CHECK_EQ(lock(UINTPTR_MAX - 10, 100, NULL), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "wraps");
    CHECK_EQ(pinned_map_lock(map, (void *)BASE, 16, NULL, NULL, &err), TETHER_ERR_INVALID);
    CHECK_EQ(pinned_map_register(map, NULL, 16, (void *)1, &err), TETHER_ERR_INVALID);
    CHECK_EQ(pinned_map_register(map, (void *)BASE, 0, (void *)1, &err), TETHER_ERR_INVALID);
    CHECK_EQ(atomic_load(&drv.pin_calls), 0);
    CHECK_EQ(pinned_map_count(map), 0);
    /* err may be NULL */
    CHECK_EQ(pinned_map_lock(map, NULL, 16, NULL, &(void *){0}, NULL), TETHER_ERR_INVALID);
    CHECK_EQ(pinned_map_unlock(map, (void *)BASE, NULL, NULL), TETHER_ERR_NOT_FOUND);
    teardown();
}

static void test_unlock(void)
{
    setup();
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 1 * KIB, 16, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 8 * KIB, 4 * KIB, NULL), TETHER_OK);

    /* Any interior pointer drops a reference of the entry. */
    CHECK_EQ(unlock(BASE + 4 * KIB - 1), TETHER_OK);
    CHECK_EQ(refs_of(BASE), 1);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 0);
    CHECK(lookup(BASE + 10, 10, NULL));

    /* The last one unpins with the base pointer (the fake driver rejects anything else). */
    CHECK_EQ(unlock(BASE + 2 * KIB), TETHER_OK);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(pinned_map_count(map), 1);
    CHECK(!lookup(BASE + 10, 10, NULL));
    CHECK(lookup(BASE + 8 * KIB, 1, NULL));

    /* Unknown pointers change nothing. */
    size_t n0, n1;
    struct pinned_entry_info *before = test_snapshot(map, &n0);
    CHECK_EQ(unlock(BASE), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "unlock 0x7f0000100000", "not inside any locked range");
    CHECK_EQ(unlock(BASE + 12 * KIB), TETHER_ERR_NOT_FOUND); /* one past the end */
    CHECK_EQ(unlock(0), TETHER_ERR_NOT_FOUND);
    struct pinned_entry_info *after = test_snapshot(map, &n1);
    CHECK(test_snapshots_equal(before, n0, after, n1));
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
    free(before);
    free(after);

    /* The range can be locked again after its unpin: a new pin. */
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(atomic_load(&drv.pin_calls), 3);
    teardown();
}

static void test_external(void)
{
    setup();
    fake_add_foreign(&drv, BASE, 64 * KIB);
    uintptr_t dev;
    CHECK_EQ(lock(BASE + 4 * KIB, 4 * KIB, &dev), TETHER_OK);
    CHECK_EQ(dev, BASE + 4 * KIB + FAKE_DEV_OFFSET);
    CHECK_EQ(lock(BASE + 4 * KIB, 16, NULL), TETHER_OK);
    size_t n;
    struct pinned_entry_info *v = test_snapshot(map, &n);
    CHECK_EQ(n, 1);
    CHECK(v[0].external && !v[0].registered && v[0].refs == 2);
    free(v);
    CHECK(lookup(BASE + 5 * KIB, 100, NULL));
    CHECK_EQ(unlock(BASE + 4 * KIB), TETHER_OK);
    CHECK_EQ(unlock(BASE + 4 * KIB), TETHER_OK);
    CHECK_EQ(pinned_map_count(map), 0);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 0); /* never unpinned by us */
    CHECK(!lookup(BASE + 5 * KIB, 100, NULL));

    /* Destroy leaves external entries alone, unpins our own. */
    CHECK_EQ(lock(BASE + 16 * KIB, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 64 * KIB, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(atomic_load(&drv.pins_ok), 1);
    teardown();
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
}

/* Each callback gets the call_ctx of the call that led to it: the lock that pins, the unlock that
 * drops the last reference, destroy; a lock or unlock that reaches no callback passes its own to
 * nobody. */
static void test_call_ctx(void)
{
    struct fake_range a = {BASE, BASE + 64 * KIB}, b = {BASE, BASE + 64 * KIB};
    struct fake_range c = {BASE, BASE + 64 * KIB}, d = {BASE, BASE + 64 * KIB};
    void *dev;

    setup();
    CHECK_EQ(pinned_map_lock(map, (void *)BASE, 16 * KIB, &a, &dev, &err), TETHER_OK);
    CHECK(atomic_load(&drv.last_call_ctx) == &a);
    CHECK_EQ(pinned_map_lock(map, (void *)(BASE + KIB), KIB, &b, &dev, &err), TETHER_OK);
    CHECK(atomic_load(&drv.last_call_ctx) == &a); /* inside: no callback */
    CHECK_EQ(pinned_map_unlock(map, (void *)(BASE + KIB), &b, &err), TETHER_OK);
    CHECK(atomic_load(&drv.last_call_ctx) == &a); /* a reference left: no callback */
    CHECK_EQ(pinned_map_unlock(map, (void *)BASE, &c, &err), TETHER_OK);
    CHECK(atomic_load(&drv.last_call_ctx) == &c);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
    CHECK_EQ(pinned_map_lock(map, (void *)(BASE + 32 * KIB), KIB, &a, &dev, &err), TETHER_OK);
    pinned_map_destroy(map, &d);
    CHECK(atomic_load(&drv.last_call_ctx) == &d);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 2);
    CHECK_EQ(atomic_load(&drv.call_ctx_errors), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

static void test_register(void)
{
    setup();
    uintptr_t dev;
    uintptr_t host_dev = 0x1234000;
    CHECK_EQ(pinned_map_register(map, (void *)BASE, 64 * KIB, (void *)host_dev, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&drv.pin_calls), 0);
    CHECK(lookup(BASE + 100, 100, &dev));
    CHECK_EQ(dev, host_dev + 100);

    /* Locks of sub-ranges count on it, without the driver. */
    CHECK_EQ(lock(BASE + 4 * KIB, 4 * KIB, &dev), TETHER_OK);
    CHECK_EQ(dev, host_dev + 4 * KIB);
    CHECK_EQ(refs_of(BASE), 2);
    CHECK_EQ(lock(BASE + 60 * KIB, 8 * KIB, NULL), TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "extends registered range [0x7f0000100000, +65536)");

    /* Any overlap with an entry is an error for register. */
    CHECK_EQ(pinned_map_register(map, (void *)(BASE + KIB), KIB, (void *)1, &err),
             TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "register [0x7f0000100400, +1024) lies inside registered range");
    CHECK_EQ(lock(BASE + 64 * KIB, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_register(map, (void *)(BASE + 66 * KIB), 4 * KIB, (void *)1, &err),
             TETHER_ERR_OVERLAP);
    CHECK_MSG(err.msg, "extends locked range [0x7f0000110000, +4096)");

    /* unregister: base only, and only without locks on it. */
    CHECK_EQ(pinned_map_unregister(map, (void *)BASE, &err), TETHER_ERR_BUSY);
    CHECK_MSG(err.msg, "still has 1 lock");
    CHECK_EQ(pinned_map_unregister(map, (void *)(BASE + 1), &err), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "not the base of a registered range");
    CHECK_EQ(pinned_map_unregister(map, (void *)(BASE + 64 * KIB), &err), TETHER_ERR_NOT_FOUND);
    CHECK_EQ(pinned_map_unregister(map, (void *)(BASE + 128 * KIB), &err), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "not inside any registered range");
    CHECK_EQ(unlock(BASE + 5 * KIB), TETHER_OK);
    /* The registration's own reference is not unlock's to drop. */
    CHECK_EQ(unlock(BASE + 5 * KIB), TETHER_ERR_BUSY);
    CHECK_MSG(err.msg, "registered range [0x7f0000100000, +65536) has no locks");
    CHECK_EQ(refs_of(BASE), 1);
    CHECK_EQ(pinned_map_unregister(map, (void *)BASE, &err), TETHER_OK);
    CHECK(!lookup(BASE + 100, 1, NULL));
    CHECK_EQ(pinned_map_unregister(map, (void *)BASE, &err), TETHER_ERR_NOT_FOUND);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 0);
    CHECK_EQ(pinned_map_count(map), 1);

    /* Destroy does not unpin registered memory. */
    CHECK_EQ(pinned_map_register(map, (void *)BASE, 64 * KIB, (void *)host_dev, &err), TETHER_OK);
    teardown();
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
}

static void test_lookup(void)
{
    setup();
    uintptr_t dev;
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE + 4 * KIB, 4 * KIB, NULL), TETHER_OK);
    CHECK(lookup(BASE, 4 * KIB, &dev));
    CHECK(lookup(BASE + 4 * KIB - 1, 1, &dev));
    CHECK_EQ(dev, BASE + 4 * KIB - 1 + FAKE_DEV_OFFSET);
    CHECK(lookup(BASE + 4 * KIB - 1, 0, NULL));  /* size 0 is the byte at ptr */
    CHECK(!lookup(BASE + 4 * KIB - 1, 2, NULL)); /* spans two entries */
    CHECK(!lookup(BASE - 1, 2, NULL));
    CHECK(!lookup(BASE + 8 * KIB, 1, NULL));
    CHECK(!lookup(BASE + 4 * KIB, 4 * KIB + 1, NULL));
    CHECK(!lookup(0, 1, NULL));
    CHECK(!lookup(BASE + 10, SIZE_MAX, NULL));
    CHECK(pinned_map_lookup(map, (void *)(BASE + 1), 1, NULL));
    teardown();
}

/* Many entries, inserted out of order and removed out of order: every lookup stays right. */
static void test_many_entries(void)
{
    setup();
    enum { N = 3000 };
    uint64_t rng = 42;
    static uintptr_t order[N];
    for (size_t i = 0; i < N; i++)
        order[i] = i;
    for (size_t i = N - 1; i > 0; i--) {
        size_t j = test_rand(&rng) % (i + 1);
        uintptr_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < N; i++)
        CHECK_EQ(lock(BASE + order[i] * 8 * KIB, 4 * KIB, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_count(map), N);
    size_t n;
    struct pinned_entry_info *v = test_snapshot(map, &n);
    CHECK_EQ(n, N);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ((uintptr_t)v[i].base, BASE + i * 8 * KIB);
    free(v);
    for (size_t i = 0; i < N; i++) {
        uintptr_t dev;
        CHECK(lookup(BASE + i * 8 * KIB + 123, 100, &dev));
        CHECK_EQ(dev, BASE + i * 8 * KIB + 123 + FAKE_DEV_OFFSET);
        CHECK(!lookup(BASE + i * 8 * KIB + 5 * KIB, 1, NULL));
    }
    for (size_t i = 0; i < N; i += 2)
        CHECK_EQ(unlock(BASE + order[i] * 8 * KIB + 1), TETHER_OK);
    for (size_t i = 0; i < N; i++) {
        bool held = false;
        for (size_t k = 1; k < N; k += 2)
            held |= order[k] == i;
        CHECK_EQ(lookup(BASE + i * 8 * KIB, 4 * KIB, NULL), held);
    }
    CHECK_EQ(pinned_map_count(map), N / 2);
    CHECK_EQ(atomic_load(&drv.unpin_calls), N / 2);
    teardown();
}

static void test_unpin_failure_reported(void)
{
    setup();
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    atomic_store(&drv.fail_unpin, 1);
    CHECK_EQ(unlock(BASE), TETHER_ERR_DRIVER);
    CHECK_MSG(err.msg, "unlock 0x7f0000100000", "unpin of [0x7f0000100000, +4096) failed",
              "injected unpin failure");
    CHECK_EQ(pinned_map_count(map), 0); /* gone anyway: it cannot be used again */
    atomic_store(&drv.fail_unpin, 0);
    teardown();
}

static void test_pin_failure_message(void)
{
    setup();
    atomic_store(&drv.fail_next_pin, 1);
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_ERR_DRIVER);
    CHECK_MSG(err.msg, "lock [0x7f0000100000, +4096): pin failed", "injected failure of pin");
    CHECK_EQ(pinned_map_count(map), 0);
    CHECK(!lookup(BASE, 1, NULL));
    CHECK_EQ(lock(BASE, 4 * KIB, NULL), TETHER_OK);
    teardown();
}

static void test_snapshot_api(void)
{
    setup();
    CHECK_EQ(pinned_map_snapshot(map, NULL, 0), 0);
    CHECK_EQ(lock(BASE + 8 * KIB, KIB, NULL), TETHER_OK);
    CHECK_EQ(lock(BASE, KIB, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_register(map, (void *)(BASE + 4 * KIB), KIB, (void *)7, &err), TETHER_OK);
    struct pinned_entry_info v[2];
    CHECK_EQ(pinned_map_snapshot(map, v, 2), 3);
    CHECK_EQ((uintptr_t)v[0].base, BASE);
    CHECK_EQ((uintptr_t)v[1].base, BASE + 4 * KIB);
    CHECK(v[1].registered && v[1].dev_ptr == (void *)7 && v[1].size == KIB);
    CHECK_EQ(pinned_map_unregister(map, (void *)(BASE + 4 * KIB), &err), TETHER_OK);
    teardown();
}

int main(void)
{
    test_create_args();
    test_lock_new_range();
    test_lock_inside_adds_reference();
    test_lock_overlaps_rejected();
    test_invalid_ranges();
    test_unlock();
    test_external();
    test_register();
    test_call_ctx();
    test_lookup();
    test_many_entries();
    test_unpin_failure_reported();
    test_pin_failure_message();
    test_snapshot_api();
    return tcheck_exit("test_pinned_rules");
}
