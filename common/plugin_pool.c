/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_pool.c - device allocations kept for reuse, by size class.
 *
 * libomptarget 16 allocates device memory for the mapped variables of every target region and
 * frees it when the region ends, and leaves caching to the plugin.  A cuMemFree waits for the
 * device and costs tens of microseconds: without a cache, an H200 target region that maps one
 * scalar took 126 us against 11 us for an empty one.  So device allocations of at most
 * `max_size` bytes (LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD, LLVM's knob; default 4 MiB; 0 turns
 * the cache off) come from power-of-two classes of 256 bytes and up: a freed block goes on its
 * class's free list and the next allocation of that class takes it without a driver call.  At
 * most `cap` bytes (TETHER_ALLOC_CACHE_BYTES, default 256 MiB) wait on the lists; beyond that a
 * free goes to the driver.  When the driver is out of memory, the cached blocks are released
 * and the allocation is tried once more.  Larger allocations go straight to the backend.
 *
 * Every DEVICE and SHARED allocation of the device, in use or cached, is in an open-addressing
 * table (pointer -> class, or "never cached" with its kind, and whether it waits on a free list),
 * so a free knows what a pointer is whatever kind libomptarget passes with it, and a pointer that
 * is not a live allocation (freed already, or never one) is refused instead of being freed twice
 * or handed out twice.  Reuse is safe because libomptarget frees a region's memory only after the
 * region's queue has been synchronised (and omp_target_free's caller promises the same).  One
 * mutex per device.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_state.h"

#define POOL_MIN_SHIFT 8u /* 256 bytes: what cuMemAlloc aligns to anyway */
#define POOL_CLASSES 32u
#define POOL_DEFAULT_MAX ((int64_t)4 << 20)
#define POOL_DEFAULT_CAP ((int64_t)256 << 20)
#define POOL_EMPTY ((uintptr_t)0)
#define POOL_GONE ((uintptr_t)1) /* a deleted table entry */
/* A table entry's cls: a class (< POOL_CLASSES), or a block that is never cached; POOL_IDLE is
 * added while a cached block waits on its free list. */
#define POOL_DEVICE_UNCACHED 0x7eu
#define POOL_SHARED 0x7fu
#define POOL_IDLE 0x80u

struct plugin_pool {
    pthread_mutex_t lock;
    size_t max_size; /* largest size cached; 0: no cache */
    size_t cap;      /* most bytes waiting on the free lists */
    size_t cached;   /* bytes waiting on the free lists */
    struct {
        void **v;
        size_t n, cap;
    } free[POOL_CLASSES];
    uintptr_t *keys; /* POOL_EMPTY, POOL_GONE or a block's address */
    uint8_t *cls;
    size_t slots, used; /* used counts POOL_GONE entries too */
    uint64_t hits, misses;
};

static unsigned pool_class(size_t size)
{
    unsigned c = 0;
    while (((size_t)1 << (c + POOL_MIN_SHIFT)) < size)
        c++;
    return c;
}

static size_t pool_class_size(unsigned c)
{
    return (size_t)1 << (c + POOL_MIN_SHIFT);
}

static size_t pool_hash(uintptr_t key, size_t slots)
{
    key ^= key >> 29;
    key *= (uintptr_t)0xbf58476d1ce4e5b9ull;
    key ^= key >> 32;
    return (size_t)key & (slots - 1);
}

/* The slot of `key`, or SIZE_MAX. */
static size_t pool_find(const struct plugin_pool *p, uintptr_t key)
{
    if (p->slots == 0)
        return SIZE_MAX;
    for (size_t i = pool_hash(key, p->slots), n = 0; n < p->slots;
         i = (i + 1) & (p->slots - 1), n++) {
        if (p->keys[i] == key)
            return i;
        if (p->keys[i] == POOL_EMPTY)
            return SIZE_MAX;
    }
    return SIZE_MAX;
}

static bool pool_insert(struct plugin_pool *p, uintptr_t key, unsigned c)
{
    if (2 * (p->used + 1) > p->slots) {
        /* Sized for the live entries (deleted ones are dropped here), not for the old size: with
         * allocations coming and going the table stays as large as the most it held at once. */
        size_t live = 0, slots = 256;
        for (size_t i = 0; i < p->slots; i++)
            live += p->keys[i] > POOL_GONE;
        while (slots < 4 * (live + 1))
            slots *= 2;
        uintptr_t *keys = calloc(slots, sizeof(*keys));
        uint8_t *cls = calloc(slots, sizeof(*cls));
        if (keys == NULL || cls == NULL) {
            free(keys);
            free(cls);
            return false;
        }
        size_t used = 0;
        for (size_t i = 0; i < p->slots; i++) {
            if (p->keys[i] <= POOL_GONE)
                continue;
            size_t j = pool_hash(p->keys[i], slots);
            while (keys[j] != POOL_EMPTY)
                j = (j + 1) & (slots - 1);
            keys[j] = p->keys[i];
            cls[j] = p->cls[i];
            used++;
        }
        free(p->keys);
        free(p->cls);
        p->keys = keys;
        p->cls = cls;
        p->slots = slots;
        p->used = used;
    }
    size_t i = pool_hash(key, p->slots);
    while (p->keys[i] > POOL_GONE)
        i = (i + 1) & (p->slots - 1);
    if (p->keys[i] == POOL_EMPTY)
        p->used++;
    p->keys[i] = key;
    p->cls[i] = (uint8_t)c;
    return true;
}

tether_status_t plugin_pool_create(struct plugin_device *dev, struct tether_error *err)
{
    struct plugin_pool *p = calloc(1, sizeof(*p));
    if (p == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "device allocation cache");
    }
    int64_t max =
        plugin_env_int("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", POOL_DEFAULT_MAX, 0, INT64_MAX);
    int64_t cap = plugin_env_int("TETHER_ALLOC_CACHE_BYTES", POOL_DEFAULT_CAP, 0, INT64_MAX);
    size_t top = pool_class_size(POOL_CLASSES - 1);
    p->max_size = max <= 0 ? 0 : (uint64_t)max > top ? top : (size_t)max;
    p->cap = cap <= 0 ? 0 : (size_t)cap;
    if (p->cap == 0)
        p->max_size = 0;
    dev->state->pool = p;
    return TETHER_OK;
}

/* Gives every cached block back to the backend (lock held). */
static void pool_release_cached(struct plugin_device *dev, struct plugin_pool *p)
{
    struct tether_error ignored;
    for (unsigned c = 0; c < POOL_CLASSES; c++) {
        for (size_t k = 0; k < p->free[c].n; k++) {
            void *ptr = p->free[c].v[k];
            size_t i = pool_find(p, (uintptr_t)ptr);
            if (i != SIZE_MAX)
                p->keys[i] = POOL_GONE;
            dev->plugin->ops->free(dev, ptr, PLUGIN_ALLOC_DEVICE, &ignored);
        }
        p->free[c].n = 0;
    }
    p->cached = 0;
}

void plugin_pool_destroy(struct plugin_device *dev)
{
    struct plugin_pool *p = dev->state->pool;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    pool_release_cached(dev, p);
    pthread_mutex_unlock(&p->lock);
    if (p->hits + p->misses != 0 && plugin_info_enabled(dev->plugin, PLUGIN_INFO_PLUGIN)) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                   "device allocations of up to %zu bytes: %llu from the cache, %llu from the "
                   "driver",
                   p->max_size, (unsigned long long)p->hits, (unsigned long long)p->misses);
    }
    for (unsigned c = 0; c < POOL_CLASSES; c++)
        free(p->free[c].v);
    free(p->keys);
    free(p->cls);
    pthread_mutex_destroy(&p->lock);
    free(p);
    dev->state->pool = NULL;
}

/* Marks the table entry of a block taken from or put on a free list (lock held). */
static void pool_set_idle(struct plugin_pool *p, void *ptr, bool idle)
{
    size_t i = pool_find(p, (uintptr_t)ptr);
    if (i != SIZE_MAX)
        p->cls[i] = (uint8_t)(idle ? p->cls[i] | POOL_IDLE : p->cls[i] & ~POOL_IDLE);
}

tether_status_t plugin_pool_alloc(struct plugin_device *dev, size_t size,
                                  enum plugin_alloc_kind kind, void **ptr_p,
                                  struct tether_error *err)
{
    struct plugin_pool *p = dev->state->pool;
    const struct plugin_ops *ops = dev->plugin->ops;
    bool cached = p != NULL && kind == PLUGIN_ALLOC_DEVICE && size <= p->max_size;
    unsigned c = cached                        ? pool_class(size)
                 : kind == PLUGIN_ALLOC_SHARED ? POOL_SHARED
                                               : POOL_DEVICE_UNCACHED;
    size_t bytes = cached ? pool_class_size(c) : size;
    struct tether_error ignored;
    void *ptr = NULL;
    tether_status_t rc;
    bool tracked;

    if (cached) {
        pthread_mutex_lock(&p->lock);
        if (p->free[c].n != 0) {
            ptr = p->free[c].v[--p->free[c].n];
            pool_set_idle(p, ptr, false);
            p->cached -= bytes;
            p->hits++;
            pthread_mutex_unlock(&p->lock);
            *ptr_p = ptr;
            return TETHER_OK;
        }
        p->misses++;
        pthread_mutex_unlock(&p->lock);
    }
    rc = ops->alloc(dev, bytes, kind, &ptr, err);
    if (rc == TETHER_ERR_NO_MEMORY && p != NULL) {
        pthread_mutex_lock(&p->lock);
        bool had = p->cached != 0;
        pool_release_cached(dev, p);
        pthread_mutex_unlock(&p->lock);
        if (had)
            rc = ops->alloc(dev, bytes, kind, &ptr, err);
    }
    if (rc != TETHER_OK || p == NULL || ptr == NULL) {
        if (rc == TETHER_OK)
            *ptr_p = ptr;
        return rc;
    }
    pthread_mutex_lock(&p->lock);
    tracked = pool_insert(p, (uintptr_t)ptr, c);
    pthread_mutex_unlock(&p->lock);
    if (!tracked) {
        ops->free(dev, ptr, kind, &ignored);
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "the table of the device's allocations");
    }
    *ptr_p = ptr;
    return TETHER_OK;
}

bool plugin_pool_free(struct plugin_device *dev, void *ptr, tether_status_t *rc_p,
                      struct tether_error *err)
{
    struct plugin_pool *p = dev->state->pool;
    if (p == NULL)
        return false;
    pthread_mutex_lock(&p->lock);
    size_t i = pool_find(p, (uintptr_t)ptr);
    if (i == SIZE_MAX || (p->cls[i] & POOL_IDLE) != 0) {
        pthread_mutex_unlock(&p->lock);
        return false;
    }
    unsigned c = p->cls[i];
    if (c == POOL_DEVICE_UNCACHED || c == POOL_SHARED) {
        p->keys[i] = POOL_GONE;
        pthread_mutex_unlock(&p->lock);
        *rc_p = dev->plugin->ops->free(
            dev, ptr, c == POOL_SHARED ? PLUGIN_ALLOC_SHARED : PLUGIN_ALLOC_DEVICE, err);
        return true;
    }
    size_t bytes = pool_class_size(c);
    bool keep = p->cached + bytes <= p->cap;
    if (keep && p->free[c].n == p->free[c].cap) {
        size_t cap = p->free[c].cap ? 2 * p->free[c].cap : 16;
        void **v = realloc(p->free[c].v, cap * sizeof(*v));
        if (v == NULL) {
            keep = false;
        } else {
            p->free[c].v = v;
            p->free[c].cap = cap;
        }
    }
    if (keep) {
        p->free[c].v[p->free[c].n++] = ptr;
        p->cls[i] |= POOL_IDLE;
        p->cached += bytes;
        pthread_mutex_unlock(&p->lock);
        *rc_p = TETHER_OK;
        return true;
    }
    p->keys[i] = POOL_GONE;
    pthread_mutex_unlock(&p->lock);
    *rc_p = dev->plugin->ops->free(dev, ptr, PLUGIN_ALLOC_DEVICE, err);
    return true;
}
