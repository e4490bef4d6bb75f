/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_pinned_concurrent.c - the map under concurrent lock, unlock, register and lookup (also run
 * under ThreadSanitizer).
 *
 *  - race: threads lock the same new range at once while pin is slow: one pin, N references;
 *    unlocking from all threads at once: one unpin.
 *  - pin_does_not_block: while a pin is stalled in the driver, lookups, locks of other ranges
 *    and diagnostics all complete, and the pending range is not visible to lookups.
 *  - unpin_window: while an unpin is stalled, the range is invisible and a lock of the same
 *    range waits for the unpin to finish before pinning again (the fake driver would reject a
 *    pin of a range it still holds).
 *  - failed_pin_waiter: a thread waiting on a pin that fails retries and pins itself.
 *  - republish: lookups stay right while a writer keeps inserting and removing entries in the
 *    middle of the snapshot.
 *  - stress: threads lock/unlock/register/lookup overlapping shared ranges and private ones while
 *    pins fail now and then and a reader thread checks every lookup it makes; the final state is
 *    checked against what each thread holds, and pins and unpins balance exactly.
 *
 * No wait here is bounded by time (a loaded machine may stall any thread for long): a map that
 * blocks where it must not hangs the test until ctest's hang guard ends it, and a wait that has
 * lasted 10 s says what it waits for.
 */
#include "pinned_test.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#define K ((uintptr_t)4096)
#define R ((uintptr_t)0x400000000000)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Wait until *flag becomes nonzero; after 10 s, say once what is awaited (`what`). */
static void wait_flag(atomic_int *flag, const char *what)
{
    for (int i = 0; !atomic_load(flag); i++) {
        if (i == 10000)
            fprintf(stderr, "still waiting after 10 s: %s\n", what);
        sleep_ms(1);
    }
}

static void wait_in_flight(struct fake_driver *drv, long n)
{
    for (int i = 0; atomic_load(&drv->in_flight) != n; i++) {
        if (i == 10000)
            fprintf(stderr, "still waiting after 10 s for %ld driver call(s) in flight (now %ld)\n",
                    n, (long)atomic_load(&drv->in_flight));
        sleep_ms(1);
    }
}

/* ---- race ----------------------------------------------------------------------------------- */

enum { RACE_THREADS = 4, RACE_ROUNDS = 5 };

struct race_arg {
    struct pinned_map *map;
    pthread_barrier_t *barrier;
    tether_status_t lock_status, unlock_status;
    uintptr_t dev;
};

static void slow_pin_hook(struct fake_driver *drv, uintptr_t ptr, size_t size)
{
    (void)drv, (void)ptr, (void)size;
    sleep_ms(20);
}

static void *race_thread(void *p)
{
    struct race_arg *a = p;
    void *dev = NULL;
    pthread_barrier_wait(a->barrier);
    a->lock_status = pinned_map_lock(a->map, (void *)R, 64 * K, NULL, &dev, NULL);
    a->dev = (uintptr_t)dev;
    pthread_barrier_wait(a->barrier); /* main checks the state here */
    pthread_barrier_wait(a->barrier);
    a->unlock_status = pinned_map_unlock(a->map, (void *)(R + 100), NULL, NULL);
    return NULL;
}

static void test_race(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    fake_init(&drv);
    drv.pin_hook = slow_pin_hook;
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, RACE_THREADS + 1);
        pthread_t th[RACE_THREADS];
        struct race_arg args[RACE_THREADS];
        for (int i = 0; i < RACE_THREADS; i++) {
            args[i] = (struct race_arg){.map = map, .barrier = &barrier};
            pthread_create(&th[i], NULL, race_thread, &args[i]);
        }
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        struct pinned_entry_info info;
        CHECK_EQ(pinned_map_snapshot(map, &info, 1), 1);
        CHECK_EQ(info.refs, RACE_THREADS);
        CHECK_EQ(atomic_load(&drv.pin_calls), round + 1);
        pthread_barrier_wait(&barrier);
        for (int i = 0; i < RACE_THREADS; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ(args[i].lock_status, TETHER_OK);
            CHECK_EQ(args[i].unlock_status, TETHER_OK);
            CHECK_EQ(args[i].dev, R + FAKE_DEV_OFFSET);
        }
        CHECK_EQ(atomic_load(&drv.unpin_calls), round + 1);
        CHECK_EQ(pinned_map_count(map), 0);
        pthread_barrier_destroy(&barrier);
    }
    pinned_map_destroy(map, NULL);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    fake_fini(&drv);
}

/* ---- pin_does_not_block --------------------------------------------------------------------- */

static atomic_int release_flag;
static atomic_uintptr_t stall_ptr;

static void stall_hook(struct fake_driver *drv, uintptr_t ptr, size_t size)
{
    (void)drv, (void)size;
    if (ptr == atomic_load(&stall_ptr))
        wait_flag(&release_flag, "the stalled driver call's release (is the map blocked on it?)");
}

struct lock_arg {
    struct pinned_map *map;
    uintptr_t ptr;
    size_t size;
    tether_status_t status;
    atomic_int done;
};

static void *lock_thread(void *p)
{
    struct lock_arg *a = p;
    void *dev;
    a->status = pinned_map_lock(a->map, (void *)a->ptr, a->size, NULL, &dev, NULL);
    atomic_store(&a->done, 1);
    return NULL;
}

static void *unlock_thread(void *p)
{
    struct lock_arg *a = p;
    a->status = pinned_map_unlock(a->map, (void *)a->ptr, NULL, NULL);
    atomic_store(&a->done, 1);
    return NULL;
}

static void test_pin_does_not_block(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    void *dev;
    fake_init(&drv);
    drv.pin_hook = stall_hook;
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    CHECK_EQ(pinned_map_lock(map, (void *)R, 16 * K, NULL, &dev, NULL), TETHER_OK);

    atomic_store(&release_flag, 0);
    atomic_store(&stall_ptr, R + 64 * K);
    struct lock_arg a = {.map = map, .ptr = R + 64 * K, .size = 64 * K};
    pthread_t th;
    pthread_create(&th, NULL, lock_thread, &a);
    wait_in_flight(&drv, 1);

    /* All of this runs while the pin is stalled. */
    CHECK(pinned_map_lookup(map, (void *)(R + K), K, &dev));
    CHECK(!pinned_map_lookup(map, (void *)(R + 64 * K), 1, NULL)); /* pending: not pinned */
    CHECK_EQ(pinned_map_count(map), 1);
    CHECK_EQ(pinned_map_snapshot(map, NULL, 0), 1);
    CHECK_EQ(pinned_map_lock(map, (void *)(R + K), K, NULL, &dev, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_unlock(map, (void *)(R + K), NULL, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_lock(map, (void *)(R + 256 * K), K, NULL, &dev, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_unlock(map, (void *)(R + 256 * K), NULL, NULL), TETHER_OK);
    CHECK_EQ(pinned_map_unlock(map, (void *)(R + 64 * K), NULL, NULL), TETHER_ERR_NOT_FOUND);
    CHECK_EQ(atomic_load(&a.done), 0);

    atomic_store(&release_flag, 1);
    pthread_join(th, NULL);
    CHECK_EQ(a.status, TETHER_OK);
    CHECK(pinned_map_lookup(map, (void *)(R + 64 * K), 1, NULL));
    CHECK_EQ(pinned_map_count(map), 2);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

/* ---- unpin_window --------------------------------------------------------------------------- */

static void test_unpin_window(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    void *dev;
    fake_init(&drv);
    drv.unpin_hook = stall_hook;
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    CHECK_EQ(pinned_map_lock(map, (void *)R, 16 * K, NULL, &dev, NULL), TETHER_OK);

    atomic_store(&release_flag, 0);
    atomic_store(&stall_ptr, R);
    struct lock_arg u = {.map = map, .ptr = R + K};
    struct lock_arg w = {.map = map, .ptr = R + K, .size = K};
    pthread_t tu, tw;
    pthread_create(&tu, NULL, unlock_thread, &u);
    wait_in_flight(&drv, 1);
    CHECK(!pinned_map_lookup(map, (void *)(R + K), 1, NULL)); /* gone before the unpin */
    CHECK_EQ(pinned_map_count(map), 0);
    CHECK_EQ(pinned_map_unlock(map, (void *)R, NULL, NULL), TETHER_ERR_NOT_FOUND);
    CHECK_EQ(pinned_map_register(map, (void *)(R + 32 * K), K, (void *)1, NULL), TETHER_OK);
    pthread_create(&tw, NULL, lock_thread, &w);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&w.done), 0); /* waits for the unpin */
    CHECK_EQ(atomic_load(&drv.pin_calls), 1);

    atomic_store(&release_flag, 1);
    pthread_join(tu, NULL);
    pthread_join(tw, NULL);
    CHECK_EQ(u.status, TETHER_OK);
    CHECK_EQ(w.status, TETHER_OK);
    CHECK_EQ(atomic_load(&drv.pin_calls), 2);
    CHECK_EQ(atomic_load(&drv.unpin_calls), 1);
    CHECK(pinned_map_lookup(map, (void *)(R + K), K, NULL));
    CHECK_EQ(pinned_map_unregister(map, (void *)(R + 32 * K), NULL), TETHER_OK);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

/* ---- failed_pin_waiter ---------------------------------------------------------------------- */

static void test_failed_pin_waiter(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    fake_init(&drv);
    drv.pin_hook = slow_pin_hook;
    atomic_store(&drv.fail_pin_at, 1);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    struct lock_arg x = {.map = map, .ptr = R, .size = 8 * K};
    struct lock_arg y = {.map = map, .ptr = R + K, .size = K};
    pthread_t tx, ty;
    pthread_create(&tx, NULL, lock_thread, &x);
    wait_in_flight(&drv, 1);
    pthread_create(&ty, NULL, lock_thread, &y);
    pthread_join(tx, NULL);
    pthread_join(ty, NULL);
    CHECK_EQ(x.status, TETHER_ERR_DRIVER);
    CHECK_EQ(y.status, TETHER_OK);
    CHECK_EQ(atomic_load(&drv.pin_calls), 2);
    struct pinned_entry_info info;
    CHECK_EQ(pinned_map_snapshot(map, &info, 1), 1);
    CHECK_EQ((uintptr_t)info.base, R + K);
    CHECK_EQ(info.size, K);
    CHECK_EQ(info.refs, 1);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

/* ---- republish ------------------------------------------------------------------------------ */

/*
 * Lookups racing with republishes: stable entries sit in the even slots, and a writer keeps
 * locking and unlocking ranges in the odd slots (each one an insert or removal in the middle of
 * the snapshot, shifting what follows).  Readers must find every stable entry every time, at the
 * right device address, and anything else they find must be right too.
 */
enum { REPUBLISH_SLOTS = 256, REPUBLISH_WRITES = 60000, REPUBLISH_READERS = 2 };
#define SLOT(i) (R + 0x20000000 + (uintptr_t)(i)*2 * K)

static atomic_int republish_done;

static void *republish_reader(void *p)
{
    struct pinned_map *map = p;
    uint64_t rng = (uint64_t)(uintptr_t)&rng;
    long misses = 0, wrong = 0, rounds = 0;
    while (!atomic_load_explicit(&republish_done, memory_order_relaxed) || rounds < 1000) {
        uint64_t r = test_rand(&rng);
        size_t slot = r % REPUBLISH_SLOTS;
        uintptr_t q = SLOT(slot) + (r >> 20) % (K - 64);
        void *dev = NULL;
        bool hit = pinned_map_lookup(map, (void *)q, 64, &dev);
        if (slot % 2 == 0 && !hit)
            misses++;
        if (hit && (uintptr_t)dev != q + FAKE_DEV_OFFSET)
            wrong++;
        rounds++;
    }
    CHECK_EQ(misses, 0);
    CHECK_EQ(wrong, 0);
    return NULL;
}

static void test_republish(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    void *dev;
    fake_init(&drv);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);
    for (size_t i = 0; i < REPUBLISH_SLOTS; i += 2)
        CHECK_EQ(pinned_map_lock(map, (void *)SLOT(i), K, NULL, &dev, NULL), TETHER_OK);
    atomic_store(&republish_done, 0);
    pthread_t th[REPUBLISH_READERS];
    for (int i = 0; i < REPUBLISH_READERS; i++)
        pthread_create(&th[i], NULL, republish_reader, map);
    uint64_t rng = 5;
    bool held[REPUBLISH_SLOTS] = {false};
    for (int i = 0; i < REPUBLISH_WRITES; i++) {
        size_t slot = 2 * (test_rand(&rng) % (REPUBLISH_SLOTS / 2)) + 1;
        if (held[slot])
            CHECK_EQ(pinned_map_unlock(map, (void *)SLOT(slot), NULL, NULL), TETHER_OK);
        else
            CHECK_EQ(pinned_map_lock(map, (void *)SLOT(slot), K, NULL, &dev, NULL), TETHER_OK);
        held[slot] = !held[slot];
    }
    atomic_store(&republish_done, 1);
    for (int i = 0; i < REPUBLISH_READERS; i++)
        pthread_join(th[i], NULL);
    pinned_map_destroy(map, NULL);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    fake_fini(&drv);
}

/* ---- stress --------------------------------------------------------------------------------- */

enum { STRESS_THREADS = 4, STRESS_OPS = 20000, MAX_HELD = 48, SHARED_REGIONS = 8 };
#define REGION (16 * K)
#define PRIVATE(t) (R + ((uintptr_t)(t) + 1) * 0x10000000)

struct held {
    uintptr_t ptr;
    size_t size;
    bool registered;
};

struct stress_arg {
    struct pinned_map *map;
    int id;
    struct held held[MAX_HELD];
    size_t n_held;
    long locks_ok, overlaps, pin_failures, lookups;
};

static atomic_int stop_readers;
static atomic_long reader_hits;

/* The REGION holding p: every entry lies in one, so it is the call_ctx of a lock or unlock of p
 * (the fake driver checks that each pin and unpin gets its own caller's). */
static struct fake_range region_of(uintptr_t p)
{
    uintptr_t base = R + (p - R) / REGION * REGION;
    return (struct fake_range){base, base + REGION};
}

static void stress_release(struct stress_arg *a, size_t i)
{
    struct held *h = &a->held[i];
    struct fake_range region = region_of(h->ptr);
    if (h->registered)
        CHECK_EQ(pinned_map_unregister(a->map, (void *)h->ptr, NULL), TETHER_OK);
    else
        CHECK_EQ(pinned_map_unlock(a->map, (void *)(h->ptr + h->size / 2), &region, NULL),
                 TETHER_OK);
    a->held[i] = a->held[--a->n_held];
}

static void *stress_thread(void *p)
{
    struct stress_arg *a = p;
    uint64_t rng = 0x1234567 + (uint64_t)a->id * 7919;
    struct tether_error err;
    for (int op = 0; op < STRESS_OPS; op++) {
        uint64_t r = test_rand(&rng);
        unsigned kind = r % 10;
        if ((kind < 4 || a->n_held == 0) && a->n_held < MAX_HELD) {
            /* Lock a shared range (often overlapping others' entries) or a private one. */
            bool shared = (r >> 8) % 3 != 0;
            uintptr_t base = shared ? R + ((r >> 12) % SHARED_REGIONS) * REGION
                                    : PRIVATE(a->id) + ((r >> 12) % 64) * REGION;
            uintptr_t off = shared ? ((r >> 20) % 4) * K : 0;
            size_t size = shared ? (1 + (r >> 24) % 4) * K : REGION;
            if (off + size > REGION)
                size = REGION - off;
            void *dev;
            struct fake_range region = region_of(base);
            tether_status_t st =
                pinned_map_lock(a->map, (void *)(base + off), size, &region, &dev, &err);
            if (st == TETHER_OK) {
                CHECK_EQ((uintptr_t)dev, base + off + FAKE_DEV_OFFSET);
                a->held[a->n_held++] = (struct held){base + off, size, false};
                a->locks_ok++;
            } else if (st == TETHER_ERR_OVERLAP) {
                CHECK(shared); /* private ranges are whole regions: never conflict */
                a->overlaps++;
            } else {
                CHECK_EQ(st, TETHER_ERR_DRIVER);
                CHECK_MSG(err.msg, "pin failed");
                a->pin_failures++;
            }
        } else if (kind < 5 && a->n_held < MAX_HELD) {
            /* Register a private range (distinct from the locked private ones). */
            uintptr_t base = PRIVATE(a->id) + 0x1000000 + ((r >> 12) % 16) * REGION;
            tether_status_t st = pinned_map_register(a->map, (void *)base, REGION,
                                                     (void *)(base + FAKE_DEV_OFFSET), NULL);
            CHECK(st == TETHER_OK || st == TETHER_ERR_OVERLAP);
            if (st == TETHER_OK)
                a->held[a->n_held++] = (struct held){base, REGION, true};
        } else if (kind < 8) {
            stress_release(a, (r >> 8) % a->n_held);
        } else if (a->n_held) {
            /* Whatever this thread holds must be found, at the right address. */
            struct held *h = &a->held[(r >> 8) % a->n_held];
            void *dev = NULL;
            CHECK(pinned_map_lookup(a->map, (void *)h->ptr, h->size, &dev));
            CHECK_EQ((uintptr_t)dev, h->ptr + FAKE_DEV_OFFSET);
            a->lookups++;
        }
    }
    return NULL;
}

static void *reader_thread(void *p)
{
    struct pinned_map *map = p;
    uint64_t rng = 99;
    long hits = 0;
    while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
        uint64_t r = test_rand(&rng);
        int t = (int)(r % (STRESS_THREADS + 1));
        uintptr_t q = (t == STRESS_THREADS ? R : PRIVATE(t)) + (r >> 8) % (64 * REGION);
        void *dev = NULL;
        if (pinned_map_lookup(map, (void *)q, 512, &dev)) {
            CHECK_EQ((uintptr_t)dev, q + FAKE_DEV_OFFSET);
            hits++;
        }
    }
    atomic_fetch_add(&reader_hits, hits);
    return NULL;
}

static void test_stress(void)
{
    struct fake_driver drv;
    struct pinned_map *map;
    fake_init(&drv);
    atomic_store(&drv.fail_pin_every, 7);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);

    static struct stress_arg args[STRESS_THREADS];
    pthread_t th[STRESS_THREADS], reader;
    atomic_store(&stop_readers, 0);
    pthread_create(&reader, NULL, reader_thread, map);
    for (int i = 0; i < STRESS_THREADS; i++) {
        args[i] = (struct stress_arg){.map = map, .id = i};
        pthread_create(&th[i], NULL, stress_thread, &args[i]);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);

    /* Final state: every held lock lies in one entry; references add up; the driver holds
     * exactly the map's own pinned entries. */
    size_t n;
    struct pinned_entry_info *v = test_snapshot(map, &n);
    size_t held_total = 0, refs_total = 0, own = 0;
    long locks = 0, overlaps = 0, failures = 0, lookups = 0;
    for (int t = 0; t < STRESS_THREADS; t++) {
        struct stress_arg *a = &args[t];
        held_total += a->n_held;
        locks += a->locks_ok, overlaps += a->overlaps, failures += a->pin_failures;
        lookups += a->lookups;
        for (size_t i = 0; i < a->n_held; i++) {
            size_t in = 0;
            for (size_t k = 0; k < n; k++)
                in += (uintptr_t)v[k].base <= a->held[i].ptr &&
                      a->held[i].ptr + a->held[i].size <= (uintptr_t)v[k].base + v[k].size;
            CHECK_EQ(in, 1);
        }
    }
    for (size_t k = 0; k < n; k++) {
        CHECK(v[k].refs >= 1);
        refs_total += v[k].refs;
        own += !v[k].external;
        if (k)
            CHECK((uintptr_t)v[k - 1].base + v[k - 1].size <= (uintptr_t)v[k].base);
    }
    CHECK_EQ(refs_total, held_total);
    CHECK_EQ(fake_pinned_count(&drv), own);
    free(v);

    for (int t = 0; t < STRESS_THREADS; t++)
        while (args[t].n_held)
            stress_release(&args[t], args[t].n_held - 1);
    atomic_store(&stop_readers, 1);
    pthread_join(reader, NULL);

    CHECK_EQ(pinned_map_count(map), 0);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    CHECK_EQ(atomic_load(&drv.pins_ok), atomic_load(&drv.unpin_calls));
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(atomic_load(&drv.call_ctx_errors), 0);
    CHECK(atomic_load(&drv.last_call_ctx) != NULL);
    CHECK(locks > 1000 && overlaps > 0 && failures > 0);
    printf("stress: %ld locks, %ld overlap errors, %ld injected pin failures, %ld pins, %ld "
           "unpins, %ld checked lookups, %ld reader hits\n",
           locks, overlaps, failures, atomic_load(&drv.pins_ok), atomic_load(&drv.unpin_calls),
           lookups, atomic_load(&reader_hits));
    pinned_map_destroy(map, NULL);
    fake_fini(&drv);
}

int main(void)
{
    test_race();
    test_pin_does_not_block();
    test_unpin_window();
    test_failed_pin_waiter();
    test_republish();
    test_stress();
    return tcheck_exit("test_pinned_concurrent");
}
