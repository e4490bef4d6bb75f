/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * pinned_baseline.h - the two baselines bench_pinned measures pinned_map against, written the
 * plain way on purpose:
 *
 *  - rwlock_tree: an ordered tree (glibc tsearch/tfind, a red-black tree) of non-overlapping
 *    ranges under one pthread_rwlock: readers take the read lock, writers the write lock.  This is
 *    the design of LLVM's PinnedAllocationMapTy (std::set under std::shared_mutex).
 *  - sorted_array: a sorted array of ranges searched with a textbook binary search, no lock at
 *    all (only correct while nothing changes): the single-thread speed limit of a search.
 *    sorted_array_lookup_bfree is the same array searched the way pinned_map searches its
 *    snapshot (branch-free, over a separate array of starts), still without any protocol: the
 *    difference to pinned_map_lookup is the cost of making the search safe against writers.
 */
#ifndef TETHER_TEST_PINNED_BASELINE_H
#define TETHER_TEST_PINNED_BASELINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct base_range {
    uintptr_t start;
    uintptr_t end;
    uintptr_t dev;
    size_t refs;
};

struct rwlock_tree {
    pthread_rwlock_t lock;
    void *root;
    struct base_range *nodes; /* storage for the keys, n of them */
    size_t n;
};

/* ranges: n non-overlapping ranges (any order); copied. */
void rwlock_tree_init(struct rwlock_tree *t, const struct base_range *ranges, size_t n);
void rwlock_tree_fini(struct rwlock_tree *t);
bool rwlock_tree_lookup(struct rwlock_tree *t, uintptr_t p, size_t size, uintptr_t *dev_p);
/* The lock/unlock of a sub-range the LLVM way: write lock, find, adjust the reference count. */
bool rwlock_tree_ref(struct rwlock_tree *t, uintptr_t p, size_t size, uintptr_t *dev_p);
bool rwlock_tree_unref(struct rwlock_tree *t, uintptr_t p);
/* Insert/remove one range under the write lock (for the "lookups with a writer" figure). */
bool rwlock_tree_insert(struct rwlock_tree *t, struct base_range *r);
void rwlock_tree_remove(struct rwlock_tree *t, struct base_range *r);

struct sorted_array {
    struct base_range *v;
    uintptr_t *starts; /* v[i].start, for the branch-free search */
    size_t n;
};

/* ranges must be sorted by start and non-overlapping; copied. */
void sorted_array_init(struct sorted_array *a, const struct base_range *ranges, size_t n);
void sorted_array_fini(struct sorted_array *a);
bool sorted_array_lookup(const struct sorted_array *a, uintptr_t p, size_t size, uintptr_t *dev_p);
bool sorted_array_lookup_bfree(const struct sorted_array *a, uintptr_t p, size_t size,
                               uintptr_t *dev_p);

#endif /* TETHER_TEST_PINNED_BASELINE_H */
