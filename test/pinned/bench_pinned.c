/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * bench_pinned.c - lookup rate of pinned_map against its baselines, measured in the same run.
 *
 * For maps of 16, 1024 and 65536 entries and 1 thread, 2 threads and every online core:
 *   lookup_n<N>_t<T>_rwlock_tree   the baseline: tsearch tree under a pthread_rwlock
 *   lookup_n<N>_t<T>               pinned_map_lookup (ratio vs the rwlock tree)
 *   lookup_n<N>_t1_sorted_array    the single-thread speed limit: binary search, no lock
 *   lookup_n<N>_t1_vs_sorted       pinned_map_lookup, 1 thread (ratio vs the sorted array)
 *   lookup_n<N>_t1_sorted_array_bfree, lookup_n<N>_t1_vs_sorted_bfree: the same against the
 *                                  branch-free search pinned_map uses, without its protocol
 * then lookups while one writer thread keeps locking and unlocking new ranges (each a republish
 * of the map; a write lock in the tree), and the cost of lock+unlock of a sub-range.
 *
 * Every figure prints as `name: value unit (ratio x vs baseline)`; ratio = value / baseline value
 * (for times, below 1 is faster).  Queries are random ranges inside random entries, one in eight a
 * miss (in a gap between entries); the three structures must agree on every query before any
 * timing starts (exit status 1 otherwise).
 *
 * Usage: bench_pinned [--quick] [--seconds S]   (--quick: short runs, for the smoke test)
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pinned_baseline.h"
#include "pinned_map.h"

#define DEV_OFFSET ((uintptr_t)1 << 44)
#define SPACE ((uintptr_t)0x100000000000)
#define PAGE ((uintptr_t)4096)
#define N_QUERIES (1u << 16)

static double seconds_per_figure = 0.25;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A backend that pins nothing: the map's own cost only. */
static tether_status_t noop_pin(void *ctx, void *call_ctx, void *ptr, size_t size, void **dev_ptr_p,
                                bool *external_p, struct tether_error *err)
{
    (void)ctx, (void)call_ctx, (void)size, (void)err;
    *dev_ptr_p = (void *)((uintptr_t)ptr + DEV_OFFSET);
    *external_p = false;
    return TETHER_OK;
}

static tether_status_t noop_unpin(void *ctx, void *call_ctx, void *base, size_t size,
                                  struct tether_error *err)
{
    (void)ctx, (void)call_ctx, (void)base, (void)size, (void)err;
    return TETHER_OK;
}

static const struct pinned_ops noop_ops = {.pin = noop_pin, .unpin = noop_unpin};

struct query {
    uintptr_t p;
    size_t size;
    uintptr_t want; /* expected device address, 0 for a miss */
};

struct world {
    size_t n;
    struct base_range *ranges;
    struct pinned_map *map;
    struct rwlock_tree tree;
    struct sorted_array array;
    struct query *q;
    uintptr_t spare; /* an address past every entry, for the writer */
};

enum impl { IMPL_MAP, IMPL_TREE, IMPL_ARRAY, IMPL_ARRAY_BFREE };

static int build(struct world *w, size_t n)
{
    memset(w, 0, sizeof(*w));
    w->n = n;
    w->ranges = calloc(n, sizeof(*w->ranges));
    w->q = calloc(N_QUERIES, sizeof(*w->q));
    if (!w->ranges || !w->q)
        return -1;
    uintptr_t p = SPACE;
    for (size_t i = 0; i < n; i++) {
        p += (1 + rnd() % 16) * PAGE; /* gap */
        size_t size = (1 + rnd() % 256) * PAGE;
        w->ranges[i] = (struct base_range){p, p + size, p + DEV_OFFSET, 1};
        p += size;
    }
    w->spare = p + (1u << 20);
    if (pinned_map_create(&noop_ops, NULL, &w->map) != TETHER_OK)
        return -1;
    for (size_t i = 0; i < n; i++) {
        void *dev;
        struct tether_error err;
        if (pinned_map_lock(w->map, (void *)w->ranges[i].start,
                            w->ranges[i].end - w->ranges[i].start, NULL, &dev, &err) != TETHER_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return -1;
        }
    }
    rwlock_tree_init(&w->tree, w->ranges, n);
    sorted_array_init(&w->array, w->ranges, n);
    for (size_t i = 0; i < N_QUERIES; i++) {
        const struct base_range *r = &w->ranges[rnd() % n];
        struct query *q = &w->q[i];
        if (rnd() % 8 == 0) {
            q->p = r->start - 1 - rnd() % PAGE; /* in the gap below r */
            q->size = 1 + rnd() % 64;
            if (q->p + q->size > r->start)
                q->size = r->start - q->p;
            q->want = 0;
        } else {
            size_t len = r->end - r->start;
            size_t off = rnd() % len;
            q->p = r->start + off;
            q->size = 1 + rnd() % (len - off);
            q->want = r->dev + off;
        }
    }
    return 0;
}

static void unbuild(struct world *w)
{
    pinned_map_destroy(w->map, NULL);
    rwlock_tree_fini(&w->tree);
    sorted_array_fini(&w->array);
    free(w->ranges);
    free(w->q);
}

static bool lookup(struct world *w, enum impl impl, const struct query *q, uintptr_t *dev)
{
    switch (impl) {
    case IMPL_MAP: {
        void *d;
        bool hit = pinned_map_lookup(w->map, (void *)q->p, q->size, &d);
        *dev = (uintptr_t)d;
        return hit;
    }
    case IMPL_TREE:
        return rwlock_tree_lookup(&w->tree, q->p, q->size, dev);
    case IMPL_ARRAY:
        return sorted_array_lookup(&w->array, q->p, q->size, dev);
    case IMPL_ARRAY_BFREE:
        return sorted_array_lookup_bfree(&w->array, q->p, q->size, dev);
    }
    return false;
}

static int self_check(struct world *w)
{
    for (size_t i = 0; i < N_QUERIES; i++) {
        for (int impl = IMPL_MAP; impl <= IMPL_ARRAY_BFREE; impl++) {
            uintptr_t dev = 0;
            bool hit = lookup(w, impl, &w->q[i], &dev);
            if (hit != (w->q[i].want != 0) || (hit && dev != w->q[i].want)) {
                fprintf(stderr, "bench: impl %d wrong on query %zu (%#" PRIxPTR ", +%zu)\n", impl,
                        i, w->q[i].p, w->q[i].size);
                return -1;
            }
        }
    }
    return 0;
}

struct runner {
    pthread_t thread;
    struct world *w;
    enum impl impl;
    unsigned first;
    pthread_barrier_t *barrier;
    atomic_int *stop;
    uint64_t ops;
    double elapsed;
    uintptr_t sink;
};

static void *run_lookups(void *p)
{
    struct runner *r = p;
    const struct query *q = r->w->q;
    unsigned i = r->first;
    uint64_t ops = 0;
    uintptr_t sink = 0;
    pthread_barrier_wait(r->barrier);
    double t0 = now();
    while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
        switch (r->impl) {
        case IMPL_MAP:
            for (int k = 0; k < 1024; k++, i = (i + 1) & (N_QUERIES - 1)) {
                void *d = NULL;
                sink += pinned_map_lookup(r->w->map, (void *)q[i].p, q[i].size, &d);
                sink ^= (uintptr_t)d;
            }
            break;
        case IMPL_TREE:
            for (int k = 0; k < 1024; k++, i = (i + 1) & (N_QUERIES - 1)) {
                uintptr_t d = 0;
                sink += rwlock_tree_lookup(&r->w->tree, q[i].p, q[i].size, &d);
                sink ^= d;
            }
            break;
        case IMPL_ARRAY:
            for (int k = 0; k < 1024; k++, i = (i + 1) & (N_QUERIES - 1)) {
                uintptr_t d = 0;
                sink += sorted_array_lookup(&r->w->array, q[i].p, q[i].size, &d);
                sink ^= d;
            }
            break;
        case IMPL_ARRAY_BFREE:
            for (int k = 0; k < 1024; k++, i = (i + 1) & (N_QUERIES - 1)) {
                uintptr_t d = 0;
                sink += sorted_array_lookup_bfree(&r->w->array, q[i].p, q[i].size, &d);
                sink ^= d;
            }
            break;
        }
        ops += 1024;
    }
    r->elapsed = now() - t0;
    r->ops = ops;
    r->sink = sink;
    return NULL;
}

/* One writer that keeps adding and removing a range: a republish of the map each time. */
struct writer {
    pthread_t thread;
    struct world *w;
    enum impl impl;
    atomic_int *stop;
    pthread_barrier_t *barrier;
    uint64_t ops;
};

static void *run_writer(void *p)
{
    struct writer *wr = p;
    struct world *w = wr->w;
    struct base_range r = {w->spare, w->spare + 64 * PAGE, w->spare + DEV_OFFSET, 1};
    pthread_barrier_wait(wr->barrier);
    while (!atomic_load_explicit(wr->stop, memory_order_relaxed)) {
        if (wr->impl == IMPL_MAP) {
            void *dev;
            if (pinned_map_lock(w->map, (void *)r.start, r.end - r.start, NULL, &dev, NULL) ||
                pinned_map_unlock(w->map, (void *)r.start, NULL, NULL))
                abort();
        } else {
            if (!rwlock_tree_insert(&w->tree, &r))
                abort();
            rwlock_tree_remove(&w->tree, &r);
        }
        wr->ops++;
    }
    return NULL;
}

/* Aggregate lookups per second of `threads` readers (plus one writer when with_writer). */
static double measure(struct world *w, enum impl impl, int threads, bool with_writer)
{
    struct runner *r = calloc(threads, sizeof(*r));
    pthread_barrier_t barrier;
    atomic_int stop = 0;
    struct writer wr = {.w = w, .impl = impl, .stop = &stop, .barrier = &barrier};
    pthread_barrier_init(&barrier, NULL, threads + 1 + with_writer);
    for (int i = 0; i < threads; i++) {
        r[i] = (struct runner){.w = w,
                               .impl = impl,
                               .first = (unsigned)(i * 7919u) & (N_QUERIES - 1),
                               .barrier = &barrier,
                               .stop = &stop};
        pthread_create(&r[i].thread, NULL, run_lookups, &r[i]);
    }
    if (with_writer)
        pthread_create(&wr.thread, NULL, run_writer, &wr);
    pthread_barrier_wait(&barrier);
    struct timespec ts = {(time_t)seconds_per_figure,
                          (long)((seconds_per_figure - (time_t)seconds_per_figure) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
    atomic_store(&stop, 1);
    double rate = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(r[i].thread, NULL);
        rate += r[i].ops / r[i].elapsed;
    }
    if (with_writer)
        pthread_join(wr.thread, NULL);
    pthread_barrier_destroy(&barrier);
    free(r);
    return rate;
}

static void figure(const char *name, double value, const char *unit, double base,
                   const char *base_name)
{
    printf("%s: %.2f %s (%.2fx vs %s)\n", name, value, unit, value / base, base_name);
    fflush(stdout);
}

/* ns per (lock + unlock) of a sub-range of an existing entry: no driver call. */
static void bench_lock_unlock(struct world *w)
{
    enum { ROUNDS = 1 << 20 };
    size_t rounds = seconds_per_figure < 0.1 ? ROUNDS / 16 : ROUNDS;
    double t0 = now();
    for (size_t i = 0; i < rounds; i++) {
        const struct query *q = &w->q[i & (N_QUERIES - 1)];
        if (!q->want)
            continue;
        void *dev;
        if (pinned_map_lock(w->map, (void *)q->p, q->size, NULL, &dev, NULL) != TETHER_OK ||
            pinned_map_unlock(w->map, (void *)q->p, NULL, NULL) != TETHER_OK)
            abort();
    }
    double t_map = now() - t0;
    t0 = now();
    for (size_t i = 0; i < rounds; i++) {
        const struct query *q = &w->q[i & (N_QUERIES - 1)];
        if (!q->want)
            continue;
        uintptr_t dev;
        if (!rwlock_tree_ref(&w->tree, q->p, q->size, &dev) || !rwlock_tree_unref(&w->tree, q->p))
            abort();
    }
    double t_tree = now() - t0;
    size_t hits = 0;
    for (size_t i = 0; i < rounds; i++)
        hits += w->q[i & (N_QUERIES - 1)].want != 0;
    char name[64];
    snprintf(name, sizeof(name), "lock_unlock_subrange_n%zu_t1", w->n);
    figure(name, t_map / hits * 1e9, "ns", t_tree / hits * 1e9, "rwlock_tree");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            seconds_per_figure = 0.02;
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds_per_figure = atof(argv[++i]);
    }
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    printf("cores: %d (online CPUs; 'tall' = one thread per core)\n", cores);
    printf("seconds_per_figure: %.2f s\n", seconds_per_figure);

    const size_t sizes[] = {16, 1024, 65536};
    const int threads[] = {1, 2, cores};
    const char *tname[] = {"t1", "t2", "tall"};
    for (size_t s = 0; s < 3; s++) {
        struct world w;
        if (build(&w, sizes[s]) || self_check(&w)) {
            fprintf(stderr, "bench_pinned: setup or self-check failed\n");
            return 1;
        }
        char name[96];
        for (int t = 0; t < 3; t++) {
            double tree = measure(&w, IMPL_TREE, threads[t], false);
            double map = measure(&w, IMPL_MAP, threads[t], false);
            snprintf(name, sizeof(name), "lookup_n%zu_%s_rwlock_tree", w.n, tname[t]);
            figure(name, tree / 1e6, "Mlookups/s", tree / 1e6, "rwlock_tree");
            snprintf(name, sizeof(name), "lookup_n%zu_%s", w.n, tname[t]);
            figure(name, map / 1e6, "Mlookups/s", tree / 1e6, "rwlock_tree");
            if (t == 0) {
                double array = measure(&w, IMPL_ARRAY, 1, false);
                snprintf(name, sizeof(name), "lookup_n%zu_t1_sorted_array", w.n);
                figure(name, array / 1e6, "Mlookups/s", array / 1e6, "sorted_array");
                snprintf(name, sizeof(name), "lookup_n%zu_t1_vs_sorted", w.n);
                figure(name, map / 1e6, "Mlookups/s", array / 1e6, "sorted_array");
                double bfree = measure(&w, IMPL_ARRAY_BFREE, 1, false);
                snprintf(name, sizeof(name), "lookup_n%zu_t1_sorted_array_bfree", w.n);
                figure(name, bfree / 1e6, "Mlookups/s", bfree / 1e6, "sorted_array_bfree");
                snprintf(name, sizeof(name), "lookup_n%zu_t1_vs_sorted_bfree", w.n);
                figure(name, map / 1e6, "Mlookups/s", bfree / 1e6, "sorted_array_bfree");
            }
        }
        if (sizes[s] == 1024) {
            int readers = cores > 1 ? cores - 1 : 1;
            double tree = measure(&w, IMPL_TREE, readers, true);
            double map = measure(&w, IMPL_MAP, readers, true);
            snprintf(name, sizeof(name), "lookup_n%zu_r%d_with_writer_rwlock_tree", w.n, readers);
            figure(name, tree / 1e6, "Mlookups/s", tree / 1e6, "rwlock_tree");
            snprintf(name, sizeof(name), "lookup_n%zu_r%d_with_writer", w.n, readers);
            figure(name, map / 1e6, "Mlookups/s", tree / 1e6, "rwlock_tree");
            bench_lock_unlock(&w);
        }
        if (pinned_map_count(w.map) != w.n) {
            fprintf(stderr, "bench_pinned: map lost entries\n");
            return 1;
        }
        unbuild(&w);
    }
    return 0;
}
