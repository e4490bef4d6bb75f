/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * pinned_map.h - a ref-counted map of pinned (page-locked) host ranges.
 *
 * Role: the one record of which host ranges are pinned for a driver, with how
 * many users each has, and the device-accessible address of each.  It is
 * independent of any driver: the backend supplies pin/unpin as callbacks
 * (struct pinned_ops).  Design notes and the reasoning behind the rules are in
 * docs/pinned-memory.md.
 *
 * Invariants every call may assume:
 *  - Entries never overlap.  Each entry is [base, base + size) with size > 0
 *    and base + size not wrapping past the end of the address space.
 *  - Every entry has at least one reference.  An entry's device-accessible
 *    address for a host pointer p inside it is dev_ptr + (p - base).
 *  - An entry is one of: pinned by tether (pin() returned external = false;
 *    unpinned with its base when its last reference goes), externally pinned
 *    (pin() returned external = true; counted, never unpinned by the map), or
 *    registered (pinned_map_register(); never unpinned by the map, removed by
 *    pinned_map_unregister()).
 *
 * The rules (issue 3):
 *  - lock(ptr, size): a range that touches no entry is pinned through
 *    ops->pin, inserted with one reference, and its device-accessible pointer
 *    returned.  A range fully inside an entry adds one reference to that entry
 *    and returns the entry's device pointer plus the offset; no callback.  A
 *    range that extends an entry, straddles two, or overlaps one from below is
 *    TETHER_ERR_OVERLAP: nothing pinned, map unchanged.  NULL or size 0 is
 *    TETHER_ERR_INVALID.
 *  - unlock(ptr): ptr anywhere inside an entry drops one reference; at zero the
 *    range is unpinned (with the entry's base pointer) and removed.  An unknown
 *    pointer is TETHER_ERR_NOT_FOUND and changes nothing.
 *  - lookup(ptr, size): the device-accessible address for a range fully inside
 *    one entry, or "not pinned".
 *
 * Thread safety and locking:
 *  - Every function may be called from any number of threads at once, except
 *    pinned_map_destroy(), which must be the last call on the map.
 *  - pinned_map_lookup() and pinned_map_count() take no lock and never wait:
 *    they read a snapshot of the live entries published through an atomic
 *    pointer, write no shared memory, and retry only if a writer rewrote the
 *    very buffer they were reading (two republishes during one lookup).
 *    Entries that are being pinned (pin() in flight) or unpinned are never
 *    visible to lookups.
 *  - Writers (lock/unlock/register/unregister) are serialised by one internal
 *    mutex, but ops->pin and ops->unpin are always called WITHOUT it held, so a
 *    slow driver call never blocks lookups, nor locks of other ranges.  A lock
 *    of a range whose pin or unpin is in flight waits for that call to finish
 *    and then proceeds on the outcome: two threads racing to lock the same new
 *    range end with one pin() and two references.
 *  - Callbacks must not call back into the same map.
 *
 * Errors: every failure returns a negative tether_status_t and, when err is
 * not NULL, a one-line message naming the range and the entry it conflicts
 * with.  Output parameters (_p) are written only on success.
 */
#ifndef TETHER_PINNED_MAP_H
#define TETHER_PINNED_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "tether/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backend callbacks: how a range is pinned/unpinned by the driver.  Called WITHOUT any map lock
 * held that lookups wait for.  Each gets two contexts: `ctx`, the map's own (pinned_map_create),
 * and `call_ctx`, the one the caller of the map function that led to the callback passed (e.g.
 * the device a lock was asked through; destroy passes its own).  The map never reads either. */
struct pinned_ops {
    /* Pin [ptr, ptr+size) for pinned_map_lock(..., call_ctx, ...).  On success write the
     * device-accessible pointer for ptr to *dev_ptr_p and set *external_p to true when the driver
     * reports the memory was already pinned outside tether (e.g.
     * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED); such an entry is counted but never unpinned by
     * the map. On failure return a negative status and write a message to err (may be NULL).  The
     * map then leaves no entry behind and returns that status to the caller of
     * pinned_map_lock(). */
    tether_status_t (*pin)(void *ctx, void *call_ctx, void *ptr, size_t size, void **dev_ptr_p,
                           bool *external_p, struct tether_error *err);
    /* Unpin a range previously pinned by pin(): base is the entry's host base pointer, size its
     * size. Called exactly once per successful pin() that did not report external, when the last
     * reference goes (pinned_map_unlock's call_ctx) or from pinned_map_destroy() (its call_ctx).
     * A failure is reported to the caller of pinned_map_unlock(); the entry is removed from the
     * map all the same (it cannot be used again). */
    tether_status_t (*unpin)(void *ctx, void *call_ctx, void *base, size_t size,
                             struct tether_error *err);
};

struct pinned_map;

/* Create an empty map.  ops is borrowed (must outlive the map); ctx is passed to every callback
 * as its first argument.
 * Returns TETHER_ERR_INVALID when ops, ops->pin, ops->unpin or map_p is NULL, TETHER_ERR_NO_MEMORY
 * when allocation fails.  *map_p is written only on success. */
tether_status_t pinned_map_create(const struct pinned_ops *ops, void *ctx,
                                  struct pinned_map **map_p);
/* Destroy: unpins every entry still pinned by tether (not external/registered ones; unpin gets
 * call_ctx), frees the map.  Must be the last call on the map: no other thread may be inside any
 * pinned_map_* call.  NULL is accepted and does nothing. */
void pinned_map_destroy(struct pinned_map *map, void *call_ctx);

/* lock: the rules of issue 3 (new range -> pin(ctx, call_ctx, ...), refs=1; fully inside an entry
 * -> refs+1, no callback, returns entry dev ptr + offset; extends/straddles/overlaps-from-below ->
 * TETHER_ERR_OVERLAP, nothing changes; NULL or size 0 -> TETHER_ERR_INVALID). *dev_ptr_p written
 * only on success. Other returns: TETHER_ERR_INVALID when ptr + size wraps; TETHER_ERR_NO_MEMORY;
 * whatever pin() returned when it fails (no entry is left, nothing stays pinned).  May block while
 * a pin() or unpin() of an overlapping range is in flight on another thread. */
tether_status_t pinned_map_lock(struct pinned_map *map, void *ptr, size_t size, void *call_ctx,
                                void **dev_ptr_p, struct tether_error *err);
/* unlock: ptr anywhere inside an entry drops one reference; at zero the range is unpinned (with its
 * base; unpin gets call_ctx) and removed. Unknown ptr -> TETHER_ERR_NOT_FOUND, nothing changes. A
 * registered entry is never removed by unlock: its own reference belongs to
 * pinned_map_unregister(), so unlock of a registered entry holding a single reference is
 * TETHER_ERR_BUSY.  When unpin() fails its status is returned, and the entry is gone from the map
 * anyway. */
tether_status_t pinned_map_unlock(struct pinned_map *map, void *ptr, void *call_ctx,
                                  struct tether_error *err);

/* register: memory the plugin allocated already pinned (omp target alloc host). Adds an entry with
 * one reference whose memory is never unpinned by the map (so register and unregister reach no
 * callback and take no call_ctx). Any overlap with an entry ->
 * TETHER_ERR_OVERLAP. NULL ptr or size 0 -> TETHER_ERR_INVALID.  Users may then lock sub-ranges of
 * it (refs + 1 each). */
tether_status_t pinned_map_register(struct pinned_map *map, void *ptr, size_t size, void *dev_ptr,
                                    struct tether_error *err);
/* unregister: ptr must be the base of a registered entry; TETHER_ERR_BUSY if users locked
 * sub-ranges of it (references > 1), TETHER_ERR_NOT_FOUND if not a registered entry's base. Removes
 * the entry. */
tether_status_t pinned_map_unregister(struct pinned_map *map, void *ptr, struct tether_error *err);

/* lookup: true and *dev_ptr_p = device-accessible address when [ptr, ptr+size) lies fully inside
 * one entry; false otherwise (nothing written). Lock-free on the read path; safe from any thread at
 * any time. size 0 is treated as 1 (the byte at ptr).  dev_ptr_p may be NULL (a pure "is it pinned"
 * test). */
bool pinned_map_lookup(const struct pinned_map *map, const void *ptr, size_t size,
                       void **dev_ptr_p);

/* Diagnostics: number of entries, and an iteration snapshot for LIBOMPTARGET_INFO-style dumps. */
size_t pinned_map_count(const struct pinned_map *map);

/* One entry as seen by pinned_map_snapshot(). */
struct pinned_entry_info {
    void *base;      /* host base pointer */
    size_t size;     /* bytes */
    void *dev_ptr;   /* device-accessible pointer for base */
    size_t refs;     /* references (users) */
    bool external;   /* pinned outside tether: never unpinned by the map */
    bool registered; /* added by pinned_map_register() */
};

/* Copy up to max entries, in ascending base order, into out (may be NULL when max is 0); returns
 * the total number of entries, which may exceed max.  A consistent snapshot: takes the writer mutex
 * briefly (never waits for a driver call). */
size_t pinned_map_snapshot(const struct pinned_map *map, struct pinned_entry_info *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_PINNED_MAP_H */
