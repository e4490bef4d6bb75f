/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* common/plugin_memory.c - allocation kinds, transfers, lock/unlock (see plugin_core.h). */
#include "plugin_state.h"

#include <stdint.h>
#include <stdlib.h>

static const char *kind_name(int32_t kind)
{
    switch (kind) {
    case PLUGIN_ALLOC_DEVICE:
        return "device";
    case PLUGIN_ALLOC_HOST:
        return "host";
    case PLUGIN_ALLOC_SHARED:
        return "shared";
    case PLUGIN_ALLOC_DEFAULT:
        return "default";
    default:
        return "invalid";
    }
}

/* TargetAllocTy -> the kind a backend sees (DEFAULT becomes DEVICE). */
static tether_status_t backend_kind(int32_t kind, enum plugin_alloc_kind *kind_p,
                                    struct tether_error *err)
{
    switch (kind) {
    case PLUGIN_ALLOC_DEVICE:
    case PLUGIN_ALLOC_DEFAULT:
        *kind_p = PLUGIN_ALLOC_DEVICE;
        return TETHER_OK;
    case PLUGIN_ALLOC_HOST:
        *kind_p = PLUGIN_ALLOC_HOST;
        return TETHER_OK;
    case PLUGIN_ALLOC_SHARED:
        *kind_p = PLUGIN_ALLOC_SHARED;
        return TETHER_OK;
    default:
        return plugin_error_set(err, TETHER_ERR_INVALID, "allocation kind %d is not one of 0..3",
                                (int)kind);
    }
}

tether_status_t plugin_data_alloc(struct plugin_device *dev, int64_t size, int32_t kind,
                                  void **ptr_p, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    enum plugin_alloc_kind bkind = PLUGIN_ALLOC_DEVICE;
    struct tether_error ignored;
    tether_status_t rc;
    void *ptr = NULL;

    rc = backend_kind(kind, &bkind, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (size <= 0 || (uint64_t)size > SIZE_MAX) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "size %lld", (long long)size);
    }
    if (bkind == PLUGIN_ALLOC_HOST) {
        rc = ops->alloc(dev, (size_t)size, bkind, &ptr, err);
    } else {
        rc = plugin_pool_alloc(dev, (size_t)size, bkind, &ptr, err);
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    if (ptr == NULL) {
        return plugin_error_set(err, TETHER_ERR_INTERNAL, "backend alloc returned NULL");
    }
    if (bkind == PLUGIN_ALLOC_HOST) {
        rc = pinned_map_register(dev->plugin->state->pinned, ptr, (size_t)size, ptr, err);
        if (rc != TETHER_OK) {
            goto free_ptr;
        }
        plugin_info_log(dev->plugin, dev, PLUGIN_INFO_MAPPING_CHANGED,
                        "host allocation %p (%lld bytes) registered as pinned", ptr,
                        (long long)size);
    }
    *ptr_p = ptr;
    return TETHER_OK;

free_ptr:
    ops->free(dev, ptr, bkind, &ignored);
    return rc;
}

/* Frees ptr when it is a live DEVICE or SHARED allocation of any device of the plugin (through
 * the device that made it); false when none of them made it. */
static bool delete_recorded(struct plugin_device *dev, void *ptr, tether_status_t *rc_p,
                            struct tether_error *err)
{
    if (plugin_pool_free(dev, ptr, rc_p, err)) {
        return true;
    }
    for (int32_t id = 0; id < dev->plugin->num_devices; id++) {
        struct plugin_device *other = plugin_device_peek(dev->plugin, id);

        if (other != NULL && other != dev && plugin_pool_free(other, ptr, rc_p, err)) {
            return true;
        }
    }
    return false;
}

/* The kind libomptarget passes is not trusted (libomptarget 16's omp_target_free passes DEFAULT
 * for every kind): host memory is known by being the base of a registered range of the pinned
 * map, device and shared memory by the pool's record of live allocations. */
tether_status_t plugin_data_delete(struct plugin_device *dev, void *ptr, int32_t kind,
                                   struct tether_error *err)
{
    struct pinned_map *pinned = dev->plugin->state->pinned;
    enum plugin_alloc_kind bkind = PLUGIN_ALLOC_DEVICE;
    tether_status_t rc;

    rc = backend_kind(kind, &bkind, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (ptr == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL pointer (%s memory)",
                                kind_name(kind));
    }
    if (pinned_map_lookup(pinned, ptr, 1, NULL)) {
        rc = pinned_map_unregister(pinned, ptr, err);
        if (rc == TETHER_OK) {
            return dev->plugin->ops->free(dev, ptr, PLUGIN_ALLOC_HOST, err);
        }
        if (rc != TETHER_ERR_NOT_FOUND) {
            return rc; /* host memory that is still locked: nothing freed */
        }
    }
    if (delete_recorded(dev, ptr, &rc, err)) {
        return rc;
    }
    return plugin_error_set(err, TETHER_ERR_NOT_FOUND,
                            "%p (%s memory) is not a live allocation of this plugin's devices: "
                            "freed already, or a pointer inside an allocation; nothing freed",
                            ptr, kind_name(kind));
}

static tether_status_t check_copy(const void *a, const void *b, int64_t size,
                                  struct tether_error *err)
{
    if (size < 0 || (uint64_t)size > SIZE_MAX) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "size %lld", (long long)size);
    }
    if (size > 0 && (a == NULL || b == NULL)) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL pointer in a copy of %lld bytes",
                                (long long)size);
    }
    return TETHER_OK;
}

static void log_transfer(struct plugin_device *dev, const char *dir, const void *hst, int64_t size,
                         const void *host_dev, const struct tgt_async_info *async)
{
    plugin_info_log(dev->plugin, dev, PLUGIN_INFO_DATA_TRANSFER, "%s %lld bytes, host %p %s, %s",
                    dir, (long long)size, hst, host_dev ? "pinned" : "pageable",
                    async ? "queued" : "synchronous");
}

/* What host<->device copies share: argument checks, the pinned-map lookup (host_dev is the
 * device-accessible alias of hst, NULL when pageable), the queue and the transfer log line.
 * Returns TETHER_OK with *run_p false when there is nothing to copy. */
static tether_status_t copy_prepare(struct plugin_device *dev, const void *tgt, const void *hst,
                                    int64_t size, struct tgt_async_info *async, const char *dir,
                                    void **host_dev_p, struct plugin_async **pa_p, bool *run_p,
                                    struct tether_error *err)
{
    tether_status_t rc;

    *run_p = false;
    rc = check_copy(tgt, hst, size, err);
    if (rc != TETHER_OK || size == 0) {
        return rc;
    }
    if (!pinned_map_lookup(dev->plugin->state->pinned, hst, (size_t)size, host_dev_p)) {
        *host_dev_p = NULL;
    }
    rc = plugin_queue_begin(dev, async, pa_p, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    log_transfer(dev, dir, hst, size, *host_dev_p, async);
    *run_p = true;
    return TETHER_OK;
}

tether_status_t plugin_data_submit(struct plugin_device *dev, void *tgt, const void *hst,
                                   int64_t size, struct tgt_async_info *async,
                                   struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    void *host_dev = NULL;
    bool run;
    tether_status_t rc;

    rc = copy_prepare(dev, tgt, hst, size, async, "host to device", &host_dev, &pa, &run, err);
    if (rc != TETHER_OK || !run) {
        return rc;
    }
    if (host_dev != NULL || !plugin_stage_h2d(dev, tgt, hst, (size_t)size, pa->queue, &rc, err)) {
        rc = dev->plugin->ops->memcpy_h2d(dev, tgt, hst, (size_t)size, host_dev, pa->queue, err);
    }
    return plugin_queue_end(dev, async, pa, rc, err);
}

tether_status_t plugin_data_retrieve(struct plugin_device *dev, void *hst, const void *tgt,
                                     int64_t size, struct tgt_async_info *async,
                                     struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    void *host_dev = NULL;
    bool run;
    tether_status_t rc;

    rc = copy_prepare(dev, tgt, hst, size, async, "device to host", &host_dev, &pa, &run, err);
    if (rc != TETHER_OK || !run) {
        return rc;
    }
    if (host_dev != NULL || !plugin_stage_d2h(dev, hst, tgt, (size_t)size, pa->queue, &rc, err)) {
        rc = dev->plugin->ops->memcpy_d2h(dev, hst, tgt, (size_t)size, host_dev, pa->queue, err);
    }
    return plugin_queue_end(dev, async, pa, rc, err);
}

bool plugin_data_exchangeable(const struct plugin *plugin)
{
    return plugin != NULL && plugin->ops->memcpy_d2d != NULL;
}

tether_status_t plugin_data_exchange(struct plugin_device *src_dev, const void *src,
                                     struct plugin_device *dst_dev, void *dst, int64_t size,
                                     struct tgt_async_info *async, struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    if (!plugin_data_exchangeable(dst_dev->plugin)) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "this backend has no device-to-device copy");
    }
    rc = check_copy(dst, src, size, err);
    if (rc != TETHER_OK || size == 0) {
        return rc;
    }
    rc = plugin_queue_begin(dst_dev, async, &pa, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = dst_dev->plugin->ops->memcpy_d2d(dst_dev, dst, src_dev, src, (size_t)size, pa->queue, err);
    return plugin_queue_end(dst_dev, async, pa, rc, err);
}

tether_status_t plugin_write_device(struct plugin_device *dev, void *dst, const void *src,
                                    size_t size, struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    rc = plugin_queue_begin(dev, NULL, &pa, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = dev->plugin->ops->memcpy_h2d(dev, dst, src, size, NULL, pa->queue, err);
    return plugin_queue_end(dev, NULL, pa, rc, err);
}

tether_status_t plugin_data_lock(struct plugin_device *dev, void *ptr, int64_t size,
                                 void **dev_ptr_p, struct tether_error *err)
{
    tether_status_t rc;
    void *dev_ptr = NULL;

    if (size <= 0 || (uint64_t)size > SIZE_MAX) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "size %lld", (long long)size);
    }
    rc = pinned_map_lock(dev->plugin->state->pinned, ptr, (size_t)size, dev, &dev_ptr, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (dev_ptr == NULL) {
        /* libomptarget treats NULL as failure: undo, so the count stays right. */
        struct tether_error ignored;

        pinned_map_unlock(dev->plugin->state->pinned, ptr, dev, &ignored);
        return plugin_error_set(err, TETHER_ERR_INTERNAL, "pinning %p gave a NULL device address",
                                ptr);
    }
    plugin_info_log(dev->plugin, dev, PLUGIN_INFO_MAPPING_CHANGED,
                    "locked %p (%lld bytes) -> %p, %zu range(s)", ptr, (long long)size, dev_ptr,
                    pinned_map_count(dev->plugin->state->pinned));
    *dev_ptr_p = dev_ptr;
    return TETHER_OK;
}

tether_status_t plugin_data_unlock(struct plugin_device *dev, void *ptr, struct tether_error *err)
{
    tether_status_t rc;

    rc = pinned_map_unlock(dev->plugin->state->pinned, ptr, dev, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    plugin_info_log(dev->plugin, dev, PLUGIN_INFO_MAPPING_CHANGED, "unlocked %p, %zu range(s)", ptr,
                    pinned_map_count(dev->plugin->state->pinned));
    return TETHER_OK;
}
