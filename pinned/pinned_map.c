/*
 * pinned_map.c - FIRST DRAFT: one mutex, sorted array, pin under the mutex.
 * Correct semantics, not the final concurrency design (see pinned_map.h).
 */
#include "pinned_map.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct draft_entry {
    uintptr_t start, end;
    void *dev_ptr;
    size_t refs;
    bool external, registered;
};

struct pinned_map {
    const struct pinned_ops *ops;
    void *ctx;
    pthread_mutex_t mutex;
    struct draft_entry *v;
    size_t n, cap;
};

static void set_err(struct tether_error *err, const char *fmt, uintptr_t a, size_t b)
{
    if (err)
        snprintf(err->msg, sizeof(err->msg), fmt, (void *)a, b);
}

tether_status_t pinned_map_create(const struct pinned_ops *ops, void *ctx,
                                  struct pinned_map **map_p)
{
    if (!ops || !ops->pin || !ops->unpin || !map_p)
        return TETHER_ERR_INVALID;
    struct pinned_map *m = calloc(1, sizeof(*m));
    if (!m)
        return TETHER_ERR_NO_MEMORY;
    m->ops = ops;
    m->ctx = ctx;
    pthread_mutex_init(&m->mutex, NULL);
    *map_p = m;
    return TETHER_OK;
}

void pinned_map_destroy(struct pinned_map *map)
{
    if (!map)
        return;
    for (size_t i = 0; i < map->n; i++)
        if (!map->v[i].external && !map->v[i].registered)
            map->ops->unpin(map->ctx, (void *)map->v[i].start, map->v[i].end - map->v[i].start,
                            NULL);
    pthread_mutex_destroy(&map->mutex);
    free(map->v);
    free(map);
}

/* first index with end > p */
static size_t find(const struct pinned_map *m, uintptr_t p)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static tether_status_t insert(struct pinned_map *m, size_t i, struct draft_entry e)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        void *v = realloc(m->v, cap * sizeof(*m->v));
        if (!v)
            return TETHER_ERR_NO_MEMORY;
        m->v = v;
        m->cap = cap;
    }
    memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
    m->v[i] = e;
    m->n++;
    return TETHER_OK;
}

static tether_status_t add(struct pinned_map *map, void *ptr, size_t size, void *dev, bool reg,
                           void **dev_ptr_p, struct tether_error *err)
{
    uintptr_t s = (uintptr_t)ptr, e = s + size;
    if (!ptr || !size || e < s) {
        set_err(err, "invalid range [%p, +%zu)", s, size);
        return TETHER_ERR_INVALID;
    }
    tether_status_t st = TETHER_OK;
    pthread_mutex_lock(&map->mutex);
    size_t i = find(map, s);
    if (i < map->n && map->v[i].start < e) {
        struct draft_entry *en = &map->v[i];
        if (!reg && en->start <= s && e <= en->end) {
            en->refs++;
            *dev_ptr_p = (char *)en->dev_ptr + (s - en->start);
        } else {
            set_err(err, "range [%p, +%zu) overlaps a locked range", s, size);
            st = TETHER_ERR_OVERLAP;
        }
        goto out;
    }
    bool ext = reg;
    if (!reg) {
        st = map->ops->pin(map->ctx, ptr, size, &dev, &ext, err);
        if (st != TETHER_OK)
            goto out;
    }
    st = insert(map, i, (struct draft_entry){s, e, dev, 1, ext, reg});
    if (st != TETHER_OK) {
        if (!reg && !ext)
            map->ops->unpin(map->ctx, ptr, size, NULL);
        goto out;
    }
    if (dev_ptr_p)
        *dev_ptr_p = dev;
out:
    pthread_mutex_unlock(&map->mutex);
    return st;
}

tether_status_t pinned_map_lock(struct pinned_map *map, void *ptr, size_t size, void **dev_ptr_p,
                                struct tether_error *err)
{
    return add(map, ptr, size, NULL, false, dev_ptr_p, err);
}

tether_status_t pinned_map_register(struct pinned_map *map, void *ptr, size_t size, void *dev_ptr,
                                    struct tether_error *err)
{
    return add(map, ptr, size, dev_ptr, true, NULL, err);
}

static tether_status_t drop(struct pinned_map *map, void *ptr, bool reg, struct tether_error *err)
{
    uintptr_t p = (uintptr_t)ptr;
    tether_status_t st = TETHER_OK;
    pthread_mutex_lock(&map->mutex);
    size_t i = find(map, p);
    if (i == map->n || map->v[i].start > p ||
        (reg && (!map->v[i].registered || map->v[i].start != p))) {
        set_err(err, "pointer %p is not in any locked range%.0zu", p, 0);
        st = TETHER_ERR_NOT_FOUND;
        goto out;
    }
    struct draft_entry *en = &map->v[i];
    if (en->refs == 1 && en->registered != reg) {
        set_err(err, "range at %p still in use (refs %zu)", en->start, en->refs);
        st = TETHER_ERR_BUSY;
        goto out;
    }
    if (reg && en->refs > 1) {
        set_err(err, "range at %p still in use (refs %zu)", en->start, en->refs);
        st = TETHER_ERR_BUSY;
        goto out;
    }
    if (--en->refs == 0) {
        struct draft_entry e = *en;
        memmove(en, en + 1, (map->n - i - 1) * sizeof(*en));
        map->n--;
        if (!e.external && !e.registered)
            st = map->ops->unpin(map->ctx, (void *)e.start, e.end - e.start, err);
    }
out:
    pthread_mutex_unlock(&map->mutex);
    return st;
}

tether_status_t pinned_map_unlock(struct pinned_map *map, void *ptr, struct tether_error *err)
{
    return drop(map, ptr, false, err);
}

tether_status_t pinned_map_unregister(struct pinned_map *map, void *ptr, struct tether_error *err)
{
    return drop(map, ptr, true, err);
}

bool pinned_map_lookup(const struct pinned_map *map, const void *ptr, size_t size, void **dev_ptr_p)
{
    struct pinned_map *m = (struct pinned_map *)map;
    uintptr_t s = (uintptr_t)ptr, e = s + (size ? size : 1);
    bool hit = false;
    pthread_mutex_lock(&m->mutex);
    size_t i = find(m, s);
    if (e > s && i < m->n && m->v[i].start <= s && e <= m->v[i].end) {
        if (dev_ptr_p)
            *dev_ptr_p = (char *)m->v[i].dev_ptr + (s - m->v[i].start);
        hit = true;
    }
    pthread_mutex_unlock(&m->mutex);
    return hit;
}

size_t pinned_map_count(const struct pinned_map *map)
{
    struct pinned_map *m = (struct pinned_map *)map;
    pthread_mutex_lock(&m->mutex);
    size_t n = m->n;
    pthread_mutex_unlock(&m->mutex);
    return n;
}

size_t pinned_map_snapshot(const struct pinned_map *map, struct pinned_entry_info *out, size_t max)
{
    struct pinned_map *m = (struct pinned_map *)map;
    pthread_mutex_lock(&m->mutex);
    size_t n = m->n;
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = (struct pinned_entry_info){(void *)m->v[i].start, m->v[i].end - m->v[i].start,
                                            m->v[i].dev_ptr,       m->v[i].refs,
                                            m->v[i].external,      m->v[i].registered};
    pthread_mutex_unlock(&m->mutex);
    return n;
}
