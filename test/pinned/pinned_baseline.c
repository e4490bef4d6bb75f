/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* pinned_baseline.c - the baselines of bench_pinned (see pinned_baseline.h). */
#include "pinned_baseline.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

/* Ranges compare equal when they overlap: with non-overlapping keys, tfind of a query range
 * returns the one entry it overlaps, if any. */
static int range_cmp(const void *a, const void *b)
{
    const struct base_range *x = a, *y = b;
    if (x->end <= y->start)
        return -1;
    if (x->start >= y->end)
        return 1;
    return 0;
}

static void nothing(void *p)
{
    (void)p;
}

void rwlock_tree_init(struct rwlock_tree *t, const struct base_range *ranges, size_t n)
{
    pthread_rwlock_init(&t->lock, NULL);
    t->root = NULL;
    t->n = n;
    t->nodes = malloc((n ? n : 1) * sizeof(*t->nodes));
    if (!t->nodes)
        abort();
    memcpy(t->nodes, ranges, n * sizeof(*ranges));
    for (size_t i = 0; i < n; i++)
        tsearch(&t->nodes[i], &t->root, range_cmp);
}

void rwlock_tree_fini(struct rwlock_tree *t)
{
    tdestroy(t->root, nothing);
    free(t->nodes);
    pthread_rwlock_destroy(&t->lock);
}

static struct base_range *tree_find(struct rwlock_tree *t, uintptr_t p, size_t size)
{
    struct base_range key = {.start = p, .end = p + (size ? size : 1)};
    void *node = tfind(&key, &t->root, range_cmp);
    if (!node)
        return NULL;
    struct base_range *r = *(struct base_range **)node;
    return r->start <= key.start && key.end <= r->end ? r : NULL;
}

bool rwlock_tree_lookup(struct rwlock_tree *t, uintptr_t p, size_t size, uintptr_t *dev_p)
{
    pthread_rwlock_rdlock(&t->lock);
    struct base_range *r = tree_find(t, p, size);
    if (r)
        *dev_p = r->dev + (p - r->start);
    pthread_rwlock_unlock(&t->lock);
    return r != NULL;
}

bool rwlock_tree_ref(struct rwlock_tree *t, uintptr_t p, size_t size, uintptr_t *dev_p)
{
    pthread_rwlock_wrlock(&t->lock);
    struct base_range *r = tree_find(t, p, size);
    if (r) {
        r->refs++;
        *dev_p = r->dev + (p - r->start);
    }
    pthread_rwlock_unlock(&t->lock);
    return r != NULL;
}

bool rwlock_tree_unref(struct rwlock_tree *t, uintptr_t p)
{
    pthread_rwlock_wrlock(&t->lock);
    struct base_range *r = tree_find(t, p, 1);
    if (r)
        r->refs--;
    pthread_rwlock_unlock(&t->lock);
    return r != NULL;
}

bool rwlock_tree_insert(struct rwlock_tree *t, struct base_range *r)
{
    pthread_rwlock_wrlock(&t->lock);
    void *node = tsearch(r, &t->root, range_cmp);
    bool ok = node && *(struct base_range **)node == r;
    pthread_rwlock_unlock(&t->lock);
    return ok;
}

void rwlock_tree_remove(struct rwlock_tree *t, struct base_range *r)
{
    pthread_rwlock_wrlock(&t->lock);
    tdelete(r, &t->root, range_cmp);
    pthread_rwlock_unlock(&t->lock);
}

void sorted_array_init(struct sorted_array *a, const struct base_range *ranges, size_t n)
{
    a->n = n;
    a->v = malloc((n ? n : 1) * sizeof(*a->v));
    a->starts = malloc((n ? n : 1) * sizeof(*a->starts));
    if (!a->v || !a->starts)
        abort();
    memcpy(a->v, ranges, n * sizeof(*ranges));
    for (size_t i = 0; i < n; i++)
        a->starts[i] = ranges[i].start;
}

void sorted_array_fini(struct sorted_array *a)
{
    free(a->v);
    free(a->starts);
}

bool sorted_array_lookup(const struct sorted_array *a, uintptr_t p, size_t size, uintptr_t *dev_p)
{
    /* First range that ends after p. */
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == a->n)
        return false;
    const struct base_range *r = &a->v[lo];
    size_t len = size ? size : 1;
    if (r->start > p || len > r->end - p)
        return false;
    *dev_p = r->dev + (p - r->start);
    return true;
}

bool sorted_array_lookup_bfree(const struct sorted_array *a, uintptr_t p, size_t size,
                               uintptr_t *dev_p)
{
    size_t n = a->n, lo = 0;
    if (n == 0)
        return false;
    while (n > 1) {
        size_t half = n / 2;
        lo = a->starts[lo + half] <= p ? lo + half : lo;
        n -= half;
    }
    const struct base_range *r = &a->v[lo];
    size_t len = size ? size : 1;
    if (r->start > p || p >= r->end || len > r->end - p)
        return false;
    *dev_p = r->dev + (p - r->start);
    return true;
}
