/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_pinned_random.c - thousands of random lock/unlock/register/unregister/lookup sequences,
 * each result compared with a deliberately simple reference model (an unsorted array searched
 * linearly).  The address space is small (64 units of 64 bytes), so overlaps, containment and
 * touching ranges are frequent.  Pin failures and "already pinned outside tether" answers are
 * injected at random.  Usage: test_pinned_random [seed] [sequences].
 */
#include "pinned_test.h"

#include <inttypes.h>

#define UNIT ((uintptr_t)64)
#define UNITS 64
#define SPACE ((uintptr_t)0x500000000000)
#define MAX_MODEL 256
#define OPS_PER_SEQUENCE 150

struct model_entry {
    uintptr_t start, end, dev;
    size_t refs;
    bool external, registered;
};

/* How often each outcome was seen, to prove the sequences reach every rule. */
enum {
    SEEN_PIN,
    SEEN_REF,
    SEEN_OVERLAP,
    SEEN_PIN_FAIL,
    SEEN_EXTERNAL,
    SEEN_UNPIN,
    SEEN_NOT_FOUND,
    SEEN_BUSY,
    SEEN_REGISTER,
    SEEN_UNREGISTER,
    SEEN_HIT,
    SEEN_MISS,
    SEEN_COUNT
};
static const char *seen_name[SEEN_COUNT] = {"pin",      "ref",        "overlap",    "pin-fail",
                                            "external", "unpin",      "not-found",  "busy",
                                            "register", "unregister", "lookup-hit", "lookup-miss"};
static long seen[SEEN_COUNT];

struct model {
    struct model_entry e[MAX_MODEL];
    size_t n;
};

static struct model_entry *model_containing(struct model *m, uintptr_t p)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].start <= p && p < m->e[i].end)
            return &m->e[i];
    return NULL;
}

static size_t model_overlapping(struct model *m, uintptr_t s, uintptr_t e, struct model_entry **hit)
{
    size_t count = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->e[i].start < e && s < m->e[i].end) {
            *hit = &m->e[i];
            count++;
        }
    }
    return count;
}

static void model_remove(struct model *m, struct model_entry *x)
{
    *x = m->e[--m->n];
}

static void model_add(struct model *m, struct model_entry x)
{
    m->e[m->n++] = x;
}

/* The map's snapshot must list exactly the model's entries (in address order). */
static bool same_state(const struct pinned_map *map, struct model *m)
{
    size_t n;
    struct pinned_entry_info *v = test_snapshot(map, &n);
    bool ok = n == m->n && pinned_map_count(map) == m->n;
    for (size_t i = 0; ok && i < n; i++) {
        if (i > 0 && (uintptr_t)v[i - 1].base + v[i - 1].size > (uintptr_t)v[i].base)
            ok = false; /* unsorted or overlapping */
        struct model_entry *x = model_containing(m, (uintptr_t)v[i].base);
        ok = ok && x && x->start == (uintptr_t)v[i].base && x->end - x->start == v[i].size &&
             x->dev == (uintptr_t)v[i].dev_ptr && x->refs == v[i].refs &&
             x->external == v[i].external && x->registered == v[i].registered;
    }
    free(v);
    return ok;
}

static long run_sequence(uint64_t seed, long *ops_done)
{
    uint64_t rng = seed;
    struct fake_driver drv;
    struct pinned_map *map;
    struct model m = {.n = 0};
    struct tether_error err;
    long failures_before = tcheck_failures();

    fake_init(&drv);
    /* Units 48..55 are "pinned by someone else": pins inside them report external. */
    fake_add_foreign(&drv, SPACE + 48 * UNIT, 8 * UNIT);
    CHECK_EQ(pinned_map_create(&fake_ops, &drv, &map), TETHER_OK);

    for (int op = 0; op < OPS_PER_SEQUENCE; op++) {
        uint64_t r = test_rand(&rng);
        uintptr_t u = r % UNITS;
        uintptr_t len = 1 + (r >> 8) % 12;
        uintptr_t s = SPACE + u * UNIT + ((r >> 16) % 4 == 0 ? (r >> 20) % UNIT : 0);
        size_t size = len * UNIT - ((r >> 24) % 3 == 0 ? (r >> 28) % UNIT : 0);
        uintptr_t e = s + size;
        bool fail_pin = (r >> 36) % 8 == 0;
        long pins_before = atomic_load(&drv.pin_calls);
        long unpins_before = atomic_load(&drv.unpin_calls);
        long pins_expected = 0, unpins_expected = 0;
        unsigned kind = (r >> 40) % 16;
        tether_status_t got, want;
        (*ops_done)++;

        if (kind < 7) { /* lock */
            struct model_entry *hit = NULL;
            size_t overlaps = model_overlapping(&m, s, e, &hit);
            uintptr_t want_dev = 0;
            if (overlaps == 0) {
                pins_expected = 1;
                if (fail_pin) {
                    want = TETHER_ERR_DRIVER;
                    seen[SEEN_PIN_FAIL]++;
                } else {
                    bool external = s >= SPACE + 48 * UNIT && e <= SPACE + 56 * UNIT;
                    seen[external ? SEEN_EXTERNAL : SEEN_PIN]++;
                    model_add(&m,
                              (struct model_entry){s, e, s + FAKE_DEV_OFFSET, 1, external, false});
                    want = TETHER_OK;
                    want_dev = s + FAKE_DEV_OFFSET;
                }
            } else if (overlaps == 1 && hit->start <= s && e <= hit->end) {
                hit->refs++;
                want = TETHER_OK;
                seen[SEEN_REF]++;
                want_dev = hit->dev + (s - hit->start);
            } else {
                want = TETHER_ERR_OVERLAP;
                seen[SEEN_OVERLAP]++;
            }
            atomic_store(&drv.fail_next_pin, fail_pin);
            void *dev = NULL;
            got = pinned_map_lock(map, (void *)s, size, NULL, &dev, &err);
            atomic_store(&drv.fail_next_pin, 0);
            CHECK_EQ(got, want);
            if (got == TETHER_OK && want == TETHER_OK)
                CHECK_EQ((uintptr_t)dev, want_dev);
            if (got == TETHER_ERR_OVERLAP)
                CHECK_MSG(err.msg, "lock [0x", "refs");
        } else if (kind < 12) { /* unlock, usually at a pointer inside an entry */
            uintptr_t p = s;
            if (m.n && (r >> 44) % 4 != 0) {
                struct model_entry *x = &m.e[(r >> 48) % m.n];
                p = x->start + (r >> 52) % (x->end - x->start);
            }
            struct model_entry *x = model_containing(&m, p);
            if (!x) {
                want = TETHER_ERR_NOT_FOUND;
                seen[SEEN_NOT_FOUND]++;
            } else if (x->registered && x->refs == 1) {
                want = TETHER_ERR_BUSY;
                seen[SEEN_BUSY]++;
            } else {
                want = TETHER_OK;
                if (--x->refs == 0) {
                    unpins_expected = !x->external;
                    seen[SEEN_UNPIN] += unpins_expected;
                    model_remove(&m, x);
                }
            }
            got = pinned_map_unlock(map, (void *)p, NULL, &err);
            CHECK_EQ(got, want);
        } else if (kind < 13) { /* register */
            struct model_entry *hit = NULL;
            uintptr_t dev = 0x9000000 + s;
            if (model_overlapping(&m, s, e, &hit)) {
                want = TETHER_ERR_OVERLAP;
            } else {
                want = TETHER_OK;
                seen[SEEN_REGISTER]++;
                model_add(&m, (struct model_entry){s, e, dev, 1, true, true});
            }
            got = pinned_map_register(map, (void *)s, size, (void *)dev, &err);
            CHECK_EQ(got, want);
        } else if (kind < 14) { /* unregister, usually at a base */
            uintptr_t p = s;
            if (m.n && (r >> 44) % 4 != 0)
                p = m.e[(r >> 48) % m.n].start;
            struct model_entry *x = model_containing(&m, p);
            if (!x || !x->registered || x->start != p) {
                want = TETHER_ERR_NOT_FOUND;
            } else if (x->refs > 1) {
                want = TETHER_ERR_BUSY;
            } else {
                want = TETHER_OK;
                seen[SEEN_UNREGISTER]++;
                model_remove(&m, x);
            }
            got = pinned_map_unregister(map, (void *)p, &err);
            CHECK_EQ(got, want);
        } else { /* lookups of a few ranges around s */
            for (int k = 0; k < 4; k++) {
                uintptr_t q = s + k * 37;
                size_t qsize = (size_t)(k * 50);
                struct model_entry *x = model_containing(&m, q);
                size_t eff = qsize ? qsize : 1;
                bool want_hit = x && q + eff <= x->end;
                void *dev = NULL;
                bool hit = pinned_map_lookup(map, (void *)q, qsize, &dev);
                seen[want_hit ? SEEN_HIT : SEEN_MISS]++;
                CHECK_EQ(hit, want_hit);
                if (hit && want_hit)
                    CHECK_EQ((uintptr_t)dev, x->dev + (q - x->start));
            }
        }
        CHECK_EQ(atomic_load(&drv.pin_calls) - pins_before, pins_expected);
        CHECK_EQ(atomic_load(&drv.unpin_calls) - unpins_before, unpins_expected);
        CHECK(same_state(map, &m));
        if (tcheck_failures() != failures_before) {
            fprintf(stderr, "sequence with seed 0x%" PRIx64 " diverged at op %d (kind %u)\n", seed,
                    op, kind);
            break;
        }
    }
    pinned_map_destroy(map, NULL);
    CHECK_EQ(fake_pinned_count(&drv), 0);
    CHECK_EQ(atomic_load(&drv.driver_errors), 0);
    CHECK_EQ(atomic_load(&drv.pins_ok), atomic_load(&drv.unpin_calls));
    fake_fini(&drv);
    return tcheck_failures() - failures_before;
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x7e7e7e7e12345ULL;
    long sequences = argc > 2 ? strtol(argv[2], NULL, 0) : 3000;
    long ops = 0;
    for (long i = 0; i < sequences; i++) {
        uint64_t s = seed + (uint64_t)i * 0x9E3779B97F4A7C15ULL;
        if (run_sequence(s ? s : 1, &ops))
            break;
    }
    printf("test_pinned_random: %ld sequences, %ld operations compared with the model\n", sequences,
           ops);
    for (int k = 0; k < SEEN_COUNT; k++) {
        printf("  %s: %ld\n", seen_name[k], seen[k]);
        CHECK(seen[k] > 0 || sequences < 100);
    }
    return tcheck_exit("test_pinned_random");
}
