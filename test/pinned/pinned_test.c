/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* pinned_test.c - the fake driver of pinned_test.h. */
#include "pinned_test.h"

/* A callback's call_ctx: remembered; when not NULL, the range it names must hold [s, e). */
static void fake_note_call_ctx(struct fake_driver *drv, void *call_ctx, uintptr_t s, uintptr_t e)
{
    const struct fake_range *want = call_ctx;

    atomic_store(&drv->last_call_ctx, call_ctx);
    if (want != NULL && !(want->start <= s && e <= want->end))
        atomic_fetch_add(&drv->call_ctx_errors, 1);
}

static tether_status_t fake_pin(void *ctx, void *call_ctx, void *ptr, size_t size, void **dev_ptr_p,
                                bool *external_p, struct tether_error *err)
{
    struct fake_driver *drv = ctx;
    uintptr_t s = (uintptr_t)ptr, e = s + size;
    long call = atomic_fetch_add(&drv->pin_calls, 1) + 1;
    fake_note_call_ctx(drv, call_ctx, s, e);
    long every = atomic_load(&drv->fail_pin_every);
    atomic_fetch_add(&drv->in_flight, 1);

    if (drv->pin_hook)
        drv->pin_hook(drv, s, size);

    tether_status_t status = TETHER_OK;
    if (call == atomic_load(&drv->fail_pin_at) || (every && call % every == 0) ||
        atomic_exchange(&drv->fail_next_pin, 0)) {
        if (err)
            snprintf(err->msg, sizeof(err->msg), "injected failure of pin call %ld", call);
        status = TETHER_ERR_DRIVER;
        goto out;
    }

    pthread_mutex_lock(&drv->mutex);
    for (size_t i = 0; i < drv->n_foreign; i++) {
        if (drv->foreign[i].start <= s && e <= drv->foreign[i].end) {
            pthread_mutex_unlock(&drv->mutex);
            *dev_ptr_p = (void *)(s + FAKE_DEV_OFFSET);
            *external_p = true;
            goto out;
        }
    }
    for (size_t i = 0; i < drv->n_pinned; i++) {
        if (drv->pinned[i].start < e && s < drv->pinned[i].end) {
            pthread_mutex_unlock(&drv->mutex);
            atomic_fetch_add(&drv->driver_errors, 1);
            if (err)
                snprintf(err->msg, sizeof(err->msg), "fake driver: [%p, +%zu) already registered",
                         ptr, size);
            status = TETHER_ERR_DRIVER;
            goto out;
        }
    }
    if (drv->n_pinned == drv->cap_pinned) {
        drv->cap_pinned = drv->cap_pinned ? 2 * drv->cap_pinned : 64;
        drv->pinned = realloc(drv->pinned, drv->cap_pinned * sizeof(*drv->pinned));
        if (!drv->pinned)
            abort();
    }
    drv->pinned[drv->n_pinned++] = (struct fake_range){s, e};
    pthread_mutex_unlock(&drv->mutex);
    atomic_fetch_add(&drv->pins_ok, 1);
    *dev_ptr_p = (void *)(s + FAKE_DEV_OFFSET);
    *external_p = false;
out:
    atomic_fetch_sub(&drv->in_flight, 1);
    return status;
}

static tether_status_t fake_unpin(void *ctx, void *call_ctx, void *base, size_t size,
                                  struct tether_error *err)
{
    struct fake_driver *drv = ctx;
    uintptr_t s = (uintptr_t)base;
    fake_note_call_ctx(drv, call_ctx, s, s + size);
    atomic_fetch_add(&drv->unpin_calls, 1);
    atomic_fetch_add(&drv->in_flight, 1);
    if (drv->unpin_hook)
        drv->unpin_hook(drv, s, size);

    tether_status_t status = TETHER_OK;
    pthread_mutex_lock(&drv->mutex);
    size_t i = 0;
    while (i < drv->n_pinned && !(drv->pinned[i].start == s && drv->pinned[i].end == s + size))
        i++;
    if (i == drv->n_pinned) {
        pthread_mutex_unlock(&drv->mutex);
        atomic_fetch_add(&drv->driver_errors, 1);
        if (err)
            snprintf(err->msg, sizeof(err->msg), "fake driver: [%p, +%zu) is not registered", base,
                     size);
        status = TETHER_ERR_DRIVER;
        goto out;
    }
    drv->pinned[i] = drv->pinned[--drv->n_pinned];
    pthread_mutex_unlock(&drv->mutex);
    if (atomic_load(&drv->fail_unpin)) {
        if (err)
            snprintf(err->msg, sizeof(err->msg), "injected unpin failure");
        status = TETHER_ERR_DRIVER;
    }
out:
    atomic_fetch_sub(&drv->in_flight, 1);
    return status;
}

const struct pinned_ops fake_ops = {.pin = fake_pin, .unpin = fake_unpin};

void fake_init(struct fake_driver *drv)
{
    memset(drv, 0, sizeof(*drv));
    pthread_mutex_init(&drv->mutex, NULL);
}

void fake_fini(struct fake_driver *drv)
{
    free(drv->pinned);
    pthread_mutex_destroy(&drv->mutex);
}

void fake_add_foreign(struct fake_driver *drv, uintptr_t start, size_t size)
{
    drv->foreign[drv->n_foreign++] = (struct fake_range){start, start + size};
}

size_t fake_pinned_count(struct fake_driver *drv)
{
    pthread_mutex_lock(&drv->mutex);
    size_t n = drv->n_pinned;
    pthread_mutex_unlock(&drv->mutex);
    return n;
}

struct pinned_entry_info *test_snapshot(const struct pinned_map *map, size_t *n_p)
{
    for (;;) {
        size_t n = pinned_map_snapshot(map, NULL, 0);
        struct pinned_entry_info *v = calloc(n + 1, sizeof(*v));
        if (!v)
            abort();
        size_t got = pinned_map_snapshot(map, v, n + 1);
        if (got <= n + 1) {
            *n_p = got;
            return v;
        }
        free(v);
    }
}

bool test_snapshots_equal(const struct pinned_entry_info *a, size_t na,
                          const struct pinned_entry_info *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        if (a[i].base != b[i].base || a[i].size != b[i].size || a[i].dev_ptr != b[i].dev_ptr ||
            a[i].refs != b[i].refs || a[i].external != b[i].external ||
            a[i].registered != b[i].registered)
            return false;
    }
    return true;
}
