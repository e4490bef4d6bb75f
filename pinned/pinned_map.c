/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * pinned_map.c - the ref-counted map of pinned host ranges (see pinned_map.h for the contract and
 * docs/pinned-memory.md for the design).
 *
 * Two views of the same map:
 *
 *  - The writer view, `ents`: a sorted array of every entry, including ranges whose pin() is in
 *    flight (PM_PENDING) and ranges whose unpin() is in flight (PM_UNPINNING).  These reservations
 *    keep ranges from overlapping while a driver call runs without the mutex.  Only touched under
 *    `mutex`.
 *
 *  - The reader view: a snapshot of the PM_LIVE entries as sorted arrays (start[], and end/dev
 *    pairs), read by lookups without any lock.  There are two snapshot buffers: `cur`, published
 *    through an atomic pointer, and `other`, which a writer rewrites and then publishes (a
 *    "seqcount latch").  Each buffer carries a version that is odd while it is being rewritten; a
 *    reader loads cur, the version, searches, and re-checks the version: if it changed the reader
 *    may have seen a half-written buffer, and it retries.  Readers never write shared memory.
 *    Every access to snapshot contents is atomic (relaxed/acquire/release, never a fence), so the
 *    protocol is race-free under the C11 model and ThreadSanitizer checks it exactly.
 *
 *    Buffers are never freed while the map lives: a slow reader may still hold one.  When a buffer
 *    is too small the writer allocates two bigger ones and moves the old pair to `retired`, freed
 *    by pinned_map_destroy().  Capacities double, so retired memory is less than the live pair.
 *
 *    `other` always holds the state of `cur` minus one operation (`last_op`), so a publish applies
 *    last_op and then the new operation to `other`: O(entries after the position), not O(n).
 *
 * Writers (lock, unlock, register, unregister) serialise on `mutex`.  pin() and unpin() run with
 * the mutex dropped; `cond` is broadcast whenever a reservation resolves, and a writer that meets
 * an overlapping reservation waits on it and then re-examines the map.
 */
#include "pinned_map.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_CACHE_LINE 64
#define PM_MIN_CAP 16

enum pm_state {
    PM_PENDING,   /* pin() in flight: invisible to lookups, blocks overlapping writers */
    PM_LIVE,      /* visible to lookups */
    PM_UNPINNING, /* unpin() in flight: already invisible to lookups, blocks overlapping writers */
};

/* Writer view of one entry: [start, end), end > start. */
struct pm_entry {
    uintptr_t start;
    uintptr_t end;
    void *dev_ptr;
    size_t refs;
    enum pm_state state;
    bool external;
    bool registered;
};

struct pm_tail {
    _Atomic uintptr_t end;
    _Atomic uintptr_t dev;
};

/* Reader view: one snapshot buffer.  cap, start and tail never change after creation. */
struct pm_snap {
    _Atomic size_t version; /* odd while a writer rewrites this buffer */
    _Atomic size_t n;       /* number of entries (a reader clamps it to cap) */
    size_t cap;
    _Atomic uintptr_t *start; /* cap entry starts, ascending */
    struct pm_tail *tail;     /* cap (end, dev_ptr) pairs */
    struct pm_snap *next;     /* retired list (writer only) */
};

enum pm_op_kind { PM_OP_NONE, PM_OP_INSERT, PM_OP_REMOVE };

/* One change of the reader view, replayed on the other buffer. */
struct pm_op {
    enum pm_op_kind kind;
    size_t pos;
    uintptr_t start;
    uintptr_t end;
    uintptr_t dev;
};

struct pinned_map {
    /* Read by every lookup: alone on its cache line, written only by publishes. */
    alignas(PM_CACHE_LINE) _Atomic(struct pm_snap *) cur;

    /* Writer state: everything below is protected by mutex. */
    alignas(PM_CACHE_LINE) pthread_mutex_t mutex;
    pthread_cond_t cond; /* broadcast when a PM_PENDING/PM_UNPINNING entry resolves */
    const struct pinned_ops *ops;
    void *ctx;
    struct pm_entry *ents; /* sorted by start, never overlapping */
    size_t n_ents;
    size_t cap_ents;
    struct pm_snap *other; /* the unpublished buffer: cur's state minus last_op */
    struct pm_op last_op;
    struct pm_snap *retired; /* buffers a reader may still hold, freed at destroy */
};

/* ---- messages ------------------------------------------------------------------------------- */

static void pm_err(struct tether_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void pm_err(struct tether_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

static const char *pm_state_str(const struct pm_entry *e)
{
    switch (e->state) {
    case PM_PENDING:
        return "being pinned";
    case PM_UNPINNING:
        return "being unpinned";
    case PM_LIVE:
        break;
    }
    if (e->registered)
        return "registered";
    return e->external ? "externally pinned" : "locked";
}

/* ---- snapshot buffers ----------------------------------------------------------------------- */

static struct pm_snap *pm_snap_alloc(size_t cap)
{
    size_t head = (sizeof(struct pm_snap) + PM_CACHE_LINE - 1) / PM_CACHE_LINE * PM_CACHE_LINE;
    size_t starts = cap * sizeof(_Atomic uintptr_t);
    size_t bytes = head + starts + cap * sizeof(struct pm_tail);
    bytes = (bytes + PM_CACHE_LINE - 1) / PM_CACHE_LINE * PM_CACHE_LINE;
    char *mem = aligned_alloc(PM_CACHE_LINE, bytes);
    if (!mem)
        return NULL;
    struct pm_snap *s = (struct pm_snap *)mem;
    atomic_init(&s->version, 0);
    atomic_init(&s->n, 0);
    s->cap = cap;
    s->start = (_Atomic uintptr_t *)(mem + head);
    s->tail = (struct pm_tail *)(mem + head + starts);
    s->next = NULL;
    return s;
}

/* Fill an unpublished buffer with the live entries of the writer view. */
static void pm_snap_fill(struct pm_snap *s, const struct pinned_map *map)
{
    size_t n = 0;
    for (size_t i = 0; i < map->n_ents; i++) {
        const struct pm_entry *e = &map->ents[i];
        if (e->state != PM_LIVE)
            continue;
        atomic_store_explicit(&s->start[n], e->start, memory_order_relaxed);
        atomic_store_explicit(&s->tail[n].end, e->end, memory_order_relaxed);
        atomic_store_explicit(&s->tail[n].dev, (uintptr_t)e->dev_ptr, memory_order_relaxed);
        n++;
    }
    atomic_store_explicit(&s->n, n, memory_order_relaxed);
}

/*
 * Writer-side edits of a buffer that readers may be searching.  Every store is a release store:
 * a reader whose acquire load sees any of them also sees the odd version stored before, so its
 * final version check fails and it retries.
 */
static void pm_snap_move(struct pm_snap *s, size_t to, size_t from)
{
    uintptr_t start = atomic_load_explicit(&s->start[from], memory_order_relaxed);
    uintptr_t end = atomic_load_explicit(&s->tail[from].end, memory_order_relaxed);
    uintptr_t dev = atomic_load_explicit(&s->tail[from].dev, memory_order_relaxed);
    atomic_store_explicit(&s->start[to], start, memory_order_release);
    atomic_store_explicit(&s->tail[to].end, end, memory_order_release);
    atomic_store_explicit(&s->tail[to].dev, dev, memory_order_release);
}

static void pm_snap_apply(struct pm_snap *s, const struct pm_op *op)
{
    size_t n = atomic_load_explicit(&s->n, memory_order_relaxed);
    switch (op->kind) {
    case PM_OP_NONE:
        return;
    case PM_OP_INSERT:
        for (size_t i = n; i > op->pos; i--)
            pm_snap_move(s, i, i - 1);
        atomic_store_explicit(&s->start[op->pos], op->start, memory_order_release);
        atomic_store_explicit(&s->tail[op->pos].end, op->end, memory_order_release);
        atomic_store_explicit(&s->tail[op->pos].dev, op->dev, memory_order_release);
        atomic_store_explicit(&s->n, n + 1, memory_order_release);
        return;
    case PM_OP_REMOVE:
        for (size_t i = op->pos; i + 1 < n; i++)
            pm_snap_move(s, i, i + 1);
        atomic_store_explicit(&s->n, n - 1, memory_order_release);
        return;
    }
}

/* Index of the first snapshot entry whose start is >= p (writer side, on cur). */
static size_t pm_snap_lower_bound(const struct pm_snap *s, uintptr_t p)
{
    size_t lo = 0, hi = atomic_load_explicit(&s->n, memory_order_relaxed);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (atomic_load_explicit(&s->start[mid], memory_order_relaxed) < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Make the change visible to lookups: rewrite `other`, publish it, keep cur as the next other. */
static void pm_publish(struct pinned_map *map, struct pm_op op)
{
    struct pm_snap *cur = atomic_load_explicit(&map->cur, memory_order_relaxed);
    struct pm_snap *next = map->other;
    size_t version = atomic_load_explicit(&next->version, memory_order_relaxed);

    atomic_store_explicit(&next->version, version + 1, memory_order_release);
    pm_snap_apply(next, &map->last_op);
    pm_snap_apply(next, &op);
    atomic_store_explicit(&next->version, version + 2, memory_order_release);
    atomic_store_explicit(&map->cur, next, memory_order_release);
    map->other = cur;
    map->last_op = op;
}

static void pm_publish_insert(struct pinned_map *map, const struct pm_entry *e)
{
    struct pm_snap *cur = atomic_load_explicit(&map->cur, memory_order_relaxed);
    struct pm_op op = {.kind = PM_OP_INSERT,
                       .pos = pm_snap_lower_bound(cur, e->start),
                       .start = e->start,
                       .end = e->end,
                       .dev = (uintptr_t)e->dev_ptr};
    pm_publish(map, op);
}

static void pm_publish_remove(struct pinned_map *map, const struct pm_entry *e)
{
    struct pm_snap *cur = atomic_load_explicit(&map->cur, memory_order_relaxed);
    struct pm_op op = {.kind = PM_OP_REMOVE, .pos = pm_snap_lower_bound(cur, e->start)};
    pm_publish(map, op);
}

/*
 * Make room for one more entry in the writer view and in both snapshot buffers, before anything
 * changes, so that no later step of an operation can fail.  Buffers hold at least as many slots
 * as the writer view has entries (live or not), so a publish never needs memory.
 */
static tether_status_t pm_reserve(struct pinned_map *map)
{
    size_t need = map->n_ents + 1;
    if (need > map->cap_ents) {
        size_t cap = map->cap_ents ? 2 * map->cap_ents : PM_MIN_CAP;
        struct pm_entry *ents = realloc(map->ents, cap * sizeof(*ents));
        if (!ents)
            return TETHER_ERR_NO_MEMORY;
        map->ents = ents;
        map->cap_ents = cap;
    }
    struct pm_snap *cur = atomic_load_explicit(&map->cur, memory_order_relaxed);
    if (need <= cur->cap)
        return TETHER_OK;

    size_t cap = 2 * cur->cap;
    while (cap < need)
        cap *= 2;
    struct pm_snap *a = pm_snap_alloc(cap);
    struct pm_snap *b = pm_snap_alloc(cap);
    if (!a || !b) {
        free(a);
        free(b);
        return TETHER_ERR_NO_MEMORY;
    }
    pm_snap_fill(a, map);
    pm_snap_fill(b, map);
    atomic_store_explicit(&map->cur, a, memory_order_release);
    cur->next = map->retired;
    map->other->next = cur;
    map->retired = map->other;
    map->other = b;
    map->last_op = (struct pm_op){.kind = PM_OP_NONE};
    return TETHER_OK;
}

/* ---- writer view ---------------------------------------------------------------------------- */

/* Index of the first entry that ends after p (the only one that can contain p). */
static size_t pm_find(const struct pinned_map *map, uintptr_t p)
{
    size_t n = map->n_ents, lo = 0;
    if (n == 0)
        return 0;
    while (n > 1) { /* branch-free: ends ascend, find the first one > p */
        size_t half = n / 2;
        lo = map->ents[lo + half - 1].end <= p ? lo + half : lo;
        n -= half;
    }
    return lo + (map->ents[lo].end <= p);
}

/* The entry containing p, or NULL. */
static struct pm_entry *pm_find_containing(struct pinned_map *map, uintptr_t p)
{
    size_t i = pm_find(map, p);
    if (i < map->n_ents && map->ents[i].start <= p)
        return &map->ents[i];
    return NULL;
}

/* The entry whose base is exactly start (any state), or NULL. */
static struct pm_entry *pm_find_base(struct pinned_map *map, uintptr_t start)
{
    struct pm_entry *e = pm_find_containing(map, start);
    return e && e->start == start ? e : NULL;
}

/* Insert e at its sorted position; pm_reserve() must have made room. */
static struct pm_entry *pm_insert(struct pinned_map *map, const struct pm_entry *e)
{
    size_t i = pm_find(map, e->start);
    memmove(&map->ents[i + 1], &map->ents[i], (map->n_ents - i) * sizeof(*map->ents));
    map->ents[i] = *e;
    map->n_ents++;
    return &map->ents[i];
}

static void pm_erase(struct pinned_map *map, struct pm_entry *e)
{
    size_t i = (size_t)(e - map->ents);
    memmove(&map->ents[i], &map->ents[i + 1], (map->n_ents - i - 1) * sizeof(*map->ents));
    map->n_ents--;
}

/*
 * Describe how [s, e) conflicts with the first entry it overlaps (index i) into err.  Called only
 * when the range overlaps at least one entry without lying inside it.
 */
static void pm_describe_overlap(const struct pinned_map *map, const char *what, uintptr_t s,
                                uintptr_t e, size_t i, struct tether_error *err)
{
    const struct pm_entry *a = &map->ents[i];
    const struct pm_entry *b =
        i + 1 < map->n_ents && map->ents[i + 1].start < e ? &map->ents[i + 1] : NULL;
    size_t size = e - s;

    if (b) {
        pm_err(err,
               "%s [%p, +%zu) straddles %s range [%p, +%zu) (refs %zu) and %s range [%p, +%zu) "
               "(refs %zu)",
               what, (void *)s, size, pm_state_str(a), (void *)a->start, a->end - a->start, a->refs,
               pm_state_str(b), (void *)b->start, b->end - b->start, b->refs);
        return;
    }
    const char *how;
    if (s < a->start)
        how = e > a->end ? "covers" : "overlaps from below";
    else if (e > a->end)
        how = "extends";
    else
        how = "lies inside"; /* register only: any overlap is an error */
    pm_err(err, "%s [%p, +%zu) %s %s range [%p, +%zu) (refs %zu)", what, (void *)s, size, how,
           pm_state_str(a), (void *)a->start, a->end - a->start, a->refs);
}

static bool pm_range_valid(const char *what, void *ptr, size_t size, struct tether_error *err)
{
    uintptr_t s = (uintptr_t)ptr;
    if (!ptr || size == 0) {
        pm_err(err, "%s [%p, +%zu): %s", what, ptr, size,
               !ptr ? "NULL pointer" : "size 0 is not a range");
        return false;
    }
    if (size > UINTPTR_MAX - s) {
        pm_err(err, "%s [%p, +%zu): range wraps past the end of the address space", what, ptr,
               size);
        return false;
    }
    return true;
}

/* ---- public API ----------------------------------------------------------------------------- */

tether_status_t pinned_map_create(const struct pinned_ops *ops, void *ctx,
                                  struct pinned_map **map_p)
{
    if (!ops || !ops->pin || !ops->unpin || !map_p)
        return TETHER_ERR_INVALID;

    struct pinned_map *map = aligned_alloc(PM_CACHE_LINE, sizeof(*map));
    if (!map)
        goto fail;
    memset(map, 0, sizeof(*map));
    struct pm_snap *a = pm_snap_alloc(PM_MIN_CAP);
    if (!a)
        goto fail_map;
    map->other = pm_snap_alloc(PM_MIN_CAP);
    if (!map->other)
        goto fail_a;
    if (pthread_mutex_init(&map->mutex, NULL) != 0)
        goto fail_other;
    if (pthread_cond_init(&map->cond, NULL) != 0)
        goto fail_mutex;
    atomic_init(&map->cur, a);
    map->ops = ops;
    map->ctx = ctx;
    map->last_op = (struct pm_op){.kind = PM_OP_NONE};
    *map_p = map;
    return TETHER_OK;

fail_mutex:
    pthread_mutex_destroy(&map->mutex);
fail_other:
    free(map->other);
fail_a:
    free(a);
fail_map:
    free(map);
fail:
    return TETHER_ERR_NO_MEMORY;
}

void pinned_map_destroy(struct pinned_map *map, void *call_ctx)
{
    if (!map)
        return;
    for (size_t i = 0; i < map->n_ents; i++) {
        struct pm_entry *e = &map->ents[i];
        if (e->state == PM_LIVE && !e->external && !e->registered)
            map->ops->unpin(map->ctx, call_ctx, (void *)e->start, e->end - e->start, NULL);
    }
    struct pm_snap *s = map->retired;
    while (s) {
        struct pm_snap *next = s->next;
        free(s);
        s = next;
    }
    free(atomic_load_explicit(&map->cur, memory_order_relaxed));
    free(map->other);
    free(map->ents);
    pthread_cond_destroy(&map->cond);
    pthread_mutex_destroy(&map->mutex);
    free(map);
}

tether_status_t pinned_map_lock(struct pinned_map *map, void *ptr, size_t size, void *call_ctx,
                                void **dev_ptr_p, struct tether_error *err)
{
    if (!map || !dev_ptr_p) {
        pm_err(err, "lock [%p, +%zu): NULL %s", ptr, size, !map ? "map" : "dev_ptr_p");
        return TETHER_ERR_INVALID;
    }
    if (!pm_range_valid("lock", ptr, size, err))
        return TETHER_ERR_INVALID;

    uintptr_t s = (uintptr_t)ptr, e = s + size;
    tether_status_t status;
    pthread_mutex_lock(&map->mutex);
    for (;;) {
        size_t i = pm_find(map, s);
        struct pm_entry *hit = i < map->n_ents && map->ents[i].start < e ? &map->ents[i] : NULL;
        if (!hit)
            break;
        if (hit->state != PM_LIVE) {
            /* A driver call on an overlapping range is in flight: its outcome decides. */
            pthread_cond_wait(&map->cond, &map->mutex);
            continue;
        }
        if (hit->start <= s && e <= hit->end) {
            hit->refs++;
            *dev_ptr_p = (char *)hit->dev_ptr + (s - hit->start);
            pthread_mutex_unlock(&map->mutex);
            return TETHER_OK;
        }
        pm_describe_overlap(map, "lock", s, e, i, err);
        status = TETHER_ERR_OVERLAP;
        goto out_unlock;
    }

    /* A new range: reserve it, pin it without the mutex, then finish or roll back. */
    status = pm_reserve(map);
    if (status != TETHER_OK) {
        pm_err(err, "lock [%p, +%zu): out of memory growing the map past %zu entries", ptr, size,
               map->n_ents);
        goto out_unlock;
    }
    pm_insert(map, &(struct pm_entry){.start = s, .end = e, .state = PM_PENDING});
    pthread_mutex_unlock(&map->mutex);

    void *dev_ptr = NULL;
    bool external = false;
    struct tether_error pin_err = {.msg = "no message from the backend"};
    status = map->ops->pin(map->ctx, call_ctx, ptr, size, &dev_ptr, &external, &pin_err);

    pthread_mutex_lock(&map->mutex);
    struct pm_entry *pending = pm_find_base(map, s);
    if (status != TETHER_OK) {
        pm_erase(map, pending);
        pm_err(err, "lock [%p, +%zu): pin failed (%s): %s", ptr, size, tether_status_str(status),
               pin_err.msg);
    } else {
        pending->dev_ptr = dev_ptr;
        pending->external = external;
        pending->refs = 1;
        pending->state = PM_LIVE;
        pm_publish_insert(map, pending);
        *dev_ptr_p = dev_ptr;
    }
    pthread_cond_broadcast(&map->cond);
out_unlock:
    pthread_mutex_unlock(&map->mutex);
    return status;
}

tether_status_t pinned_map_unlock(struct pinned_map *map, void *ptr, void *call_ctx,
                                  struct tether_error *err)
{
    if (!map) {
        pm_err(err, "unlock %p: NULL map", ptr);
        return TETHER_ERR_INVALID;
    }
    tether_status_t status = TETHER_OK;
    pthread_mutex_lock(&map->mutex);
    struct pm_entry *e = pm_find_containing(map, (uintptr_t)ptr);
    if (!e || e->state != PM_LIVE) {
        if (e)
            pm_err(err, "unlock %p: range [%p, +%zu) is %s, not locked", ptr, (void *)e->start,
                   e->end - e->start, pm_state_str(e));
        else
            pm_err(err, "unlock %p: not inside any locked range", ptr);
        status = TETHER_ERR_NOT_FOUND;
        goto out_unlock;
    }
    if (e->registered && e->refs == 1) {
        pm_err(err,
               "unlock %p: registered range [%p, +%zu) has no locks (refs 1); it is removed by "
               "unregister",
               ptr, (void *)e->start, e->end - e->start);
        status = TETHER_ERR_BUSY;
        goto out_unlock;
    }
    if (--e->refs > 0)
        goto out_unlock;

    /* Last reference: lookups stop finding it first, then the driver unpins it. */
    pm_publish_remove(map, e);
    if (e->external) {
        pm_erase(map, e);
        goto out_unlock;
    }
    e->state = PM_UNPINNING;
    uintptr_t base = e->start;
    size_t size = e->end - e->start;
    pthread_mutex_unlock(&map->mutex);

    struct tether_error unpin_err = {.msg = "no message from the backend"};
    status = map->ops->unpin(map->ctx, call_ctx, (void *)base, size, &unpin_err);
    if (status != TETHER_OK)
        pm_err(err, "unlock %p: unpin of [%p, +%zu) failed (%s): %s", ptr, (void *)base, size,
               tether_status_str(status), unpin_err.msg);

    pthread_mutex_lock(&map->mutex);
    pm_erase(map, pm_find_base(map, base));
    pthread_cond_broadcast(&map->cond);
out_unlock:
    pthread_mutex_unlock(&map->mutex);
    return status;
}

tether_status_t pinned_map_register(struct pinned_map *map, void *ptr, size_t size, void *dev_ptr,
                                    struct tether_error *err)
{
    if (!map) {
        pm_err(err, "register [%p, +%zu): NULL map", ptr, size);
        return TETHER_ERR_INVALID;
    }
    if (!pm_range_valid("register", ptr, size, err))
        return TETHER_ERR_INVALID;

    uintptr_t s = (uintptr_t)ptr, e = s + size;
    tether_status_t status;
    pthread_mutex_lock(&map->mutex);
    for (;;) {
        size_t i = pm_find(map, s);
        if (i == map->n_ents || map->ents[i].start >= e)
            break;
        bool waiting = false;
        for (size_t j = i; j < map->n_ents && map->ents[j].start < e; j++)
            waiting |= map->ents[j].state != PM_LIVE;
        if (waiting) {
            pthread_cond_wait(&map->cond, &map->mutex);
            continue;
        }
        pm_describe_overlap(map, "register", s, e, i, err);
        status = TETHER_ERR_OVERLAP;
        goto out_unlock;
    }
    status = pm_reserve(map);
    if (status != TETHER_OK) {
        pm_err(err, "register [%p, +%zu): out of memory growing the map past %zu entries", ptr,
               size, map->n_ents);
        goto out_unlock;
    }
    struct pm_entry *added = pm_insert(map, &(struct pm_entry){.start = s,
                                                               .end = e,
                                                               .dev_ptr = dev_ptr,
                                                               .refs = 1,
                                                               .state = PM_LIVE,
                                                               .external = true,
                                                               .registered = true});
    pm_publish_insert(map, added);
out_unlock:
    pthread_mutex_unlock(&map->mutex);
    return status;
}

tether_status_t pinned_map_unregister(struct pinned_map *map, void *ptr, struct tether_error *err)
{
    if (!map) {
        pm_err(err, "unregister %p: NULL map", ptr);
        return TETHER_ERR_INVALID;
    }
    tether_status_t status = TETHER_OK;
    pthread_mutex_lock(&map->mutex);
    struct pm_entry *e = pm_find_containing(map, (uintptr_t)ptr);
    if (!e || e->state != PM_LIVE || !e->registered || e->start != (uintptr_t)ptr) {
        if (e)
            pm_err(err,
                   "unregister %p: not the base of a registered range (inside %s range [%p, "
                   "+%zu))",
                   ptr, pm_state_str(e), (void *)e->start, e->end - e->start);
        else
            pm_err(err, "unregister %p: not inside any registered range", ptr);
        status = TETHER_ERR_NOT_FOUND;
        goto out_unlock;
    }
    if (e->refs > 1) {
        pm_err(err, "unregister %p: registered range [%p, +%zu) still has %zu lock(s) on it", ptr,
               (void *)e->start, e->end - e->start, e->refs - 1);
        status = TETHER_ERR_BUSY;
        goto out_unlock;
    }
    pm_publish_remove(map, e);
    pm_erase(map, e);
out_unlock:
    pthread_mutex_unlock(&map->mutex);
    return status;
}

bool pinned_map_lookup(const struct pinned_map *map, const void *ptr, size_t size, void **dev_ptr_p)
{
    uintptr_t p = (uintptr_t)ptr;
    size_t len = size ? size : 1;
    if (len > UINTPTR_MAX - p)
        return false;

    for (;;) {
        const struct pm_snap *s = atomic_load_explicit(&map->cur, memory_order_acquire);
        size_t version = atomic_load_explicit(&s->version, memory_order_acquire);
        if (version & 1)
            continue; /* a writer is reusing it; cur has moved on */
        size_t n = atomic_load_explicit(&s->n, memory_order_acquire);
        if (n > s->cap)
            n = s->cap; /* torn read of a buffer being rewritten: the version check retries */

        bool hit = false;
        uintptr_t dev = 0;
        if (n > 0) {
            /* Branch-free search for the last start <= p. */
            const _Atomic uintptr_t *start = s->start;
            size_t lo = 0;
            while (n > 1) {
                size_t half = n / 2;
                uintptr_t key = atomic_load_explicit(&start[lo + half], memory_order_acquire);
                lo = key <= p ? lo + half : lo;
                n -= half;
            }
            uintptr_t base = atomic_load_explicit(&start[lo], memory_order_acquire);
            uintptr_t end = atomic_load_explicit(&s->tail[lo].end, memory_order_acquire);
            dev = atomic_load_explicit(&s->tail[lo].dev, memory_order_acquire);
            hit = base <= p && p < end && len <= end - p;
            dev += p - base;
        }
        if (atomic_load_explicit(&s->version, memory_order_relaxed) != version)
            continue;
        if (hit && dev_ptr_p)
            *dev_ptr_p = (void *)dev;
        return hit;
    }
}

size_t pinned_map_count(const struct pinned_map *map)
{
    for (;;) {
        const struct pm_snap *s = atomic_load_explicit(&map->cur, memory_order_acquire);
        size_t version = atomic_load_explicit(&s->version, memory_order_acquire);
        size_t n = atomic_load_explicit(&s->n, memory_order_acquire);
        if (!(version & 1) && atomic_load_explicit(&s->version, memory_order_relaxed) == version)
            return n;
    }
}

size_t pinned_map_snapshot(const struct pinned_map *map, struct pinned_entry_info *out, size_t max)
{
    struct pinned_map *m = (struct pinned_map *)map; /* the mutex is not part of the value */
    size_t n = 0;
    pthread_mutex_lock(&m->mutex);
    for (size_t i = 0; i < m->n_ents; i++) {
        const struct pm_entry *e = &m->ents[i];
        if (e->state != PM_LIVE)
            continue;
        if (n < max)
            out[n] = (struct pinned_entry_info){.base = (void *)e->start,
                                                .size = e->end - e->start,
                                                .dev_ptr = e->dev_ptr,
                                                .refs = e->refs,
                                                .external = e->external,
                                                .registered = e->registered};
        n++;
    }
    pthread_mutex_unlock(&m->mutex);
    return n;
}
