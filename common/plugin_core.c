/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_core.c - the plugin and its devices: the ops-table checks, plugin creation and
 * destruction, the device table with lazy per-device init and teardown, the pinned map's
 * callbacks, device descriptions (see plugin_core.h).
 */
#include "plugin_state.h"
#include "plugin_jit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- plugin ----------------------------------------------------------------------------- */

/* Required slots, checked by name so a bad table is reported precisely. */
static tether_status_t check_ops(const struct plugin_ops *ops, struct tether_error *err)
{
#define REQUIRE_(slot)                                                                             \
    if (ops->slot == NULL) {                                                                       \
        return plugin_error_set(err, TETHER_ERR_INVALID, "backend ops: required slot %s is NULL",  \
                                #slot);                                                            \
    }
    if (ops == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "no backend ops table");
    }
    if (ops->version != PLUGIN_OPS_VERSION) {
        return plugin_error_set(err, TETHER_ERR_INVALID,
                                "backend ops version %u, common expects %u", (unsigned)ops->version,
                                (unsigned)PLUGIN_OPS_VERSION);
    }
    REQUIRE_(name)
    REQUIRE_(plugin_create)
    REQUIRE_(plugin_destroy)
    REQUIRE_(device_create)
    REQUIRE_(device_destroy)
    REQUIRE_(device_limits)
    REQUIRE_(alloc)
    REQUIRE_(free)
    REQUIRE_(memcpy_h2d)
    REQUIRE_(memcpy_d2h)
    REQUIRE_(queue_create)
    REQUIRE_(queue_destroy)
    REQUIRE_(queue_sync)
    REQUIRE_(queue_query)
    REQUIRE_(module_load)
    REQUIRE_(module_unload)
    REQUIRE_(global_lookup)
    REQUIRE_(kernel_lookup)
    REQUIRE_(kernel_release)
    REQUIRE_(launch)
#undef REQUIRE_
    {
        int events = !!ops->event_create + !!ops->event_destroy + !!ops->event_record +
                     !!ops->event_wait + !!ops->event_sync;

        if (events != 0 && events != 5) {
            return plugin_error_set(err, TETHER_ERR_INVALID,
                                    "backend ops: event slots must be all set or all NULL");
        }
        if ((ops->host_register == NULL) != (ops->host_unregister == NULL) ||
            (ops->shared_alloc == NULL) != (ops->shared_free == NULL)) {
            return plugin_error_set(err, TETHER_ERR_INVALID,
                                    "backend ops: host_register/unregister and "
                                    "shared_alloc/free come in pairs");
        }
        if (ops->host_pageable != NULL && events == 0) {
            return plugin_error_set(err, TETHER_ERR_INVALID,
                                    "backend ops: host_pageable needs the event slots (staging "
                                    "waits for its buffers with events)");
        }
    }
    return TETHER_OK;
}

static const struct pinned_ops plugin_pinned_ops;

tether_status_t plugin_create(const struct plugin_ops *ops, struct plugin **plugin_p,
                              struct tether_error *err)
{
    struct plugin_state *state;
    struct plugin *plugin = NULL;
    tether_status_t rc;
    int32_t n;

    rc = check_ops(ops, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    state = calloc(1, sizeof(*state));
    if (state == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "plugin state");
    }
    state->name = ops->name;
    atomic_init(&state->info_flags, plugin_env_info());
    state->debug = plugin_env_debug();
    state->env_shared_mem =
        (uint32_t)plugin_env_int("LIBOMPTARGET_SHARED_MEMORY_SIZE", 0, 0, UINT32_MAX);
    plugin_launch_env_read(&state->launch_env);
    atomic_init(&state->global_offset, -1);
    if (pthread_mutex_init(&state->seen_lock, NULL) != 0) {
        rc = plugin_error_set(err, TETHER_ERR_INTERNAL, "pthread_mutex_init failed");
        goto free_state;
    }
    rc = ops->plugin_create(&plugin, err);
    if (rc != TETHER_OK) {
        char why[TETHER_ERROR_MSG_MAX];

        if (snprintf(why, sizeof(why), "its start failed: %s", err->msg) >= (int)sizeof(why)) {
            why[sizeof(why) - 1] = '\0';
        }
        plugin_absent_record(ops, why);
        goto destroy_seen_lock;
    }
    plugin->ops = ops;
    plugin->state = state;
    n = plugin->num_devices;
    if (n < 0) {
        rc = plugin_error_set(err, TETHER_ERR_INTERNAL, "backend reported %d devices", (int)n);
        goto destroy_backend;
    }
    if (n == 0) {
        /* No driver or no device: not an error; said at info level, and again if the program
         * has an image for this plugin while offloading is mandatory. */
        const char *why = err->msg[0] != '\0' ? err->msg : "the backend found no device";

        plugin_log(plugin, NULL, PLUGIN_LOG_INFO, "%s", why);
        plugin_absent_record(ops, why);
        err->msg[0] = '\0';
    }
    if (n > 0) {
        state->slots = calloc((size_t)n, sizeof(*state->slots));
        if (state->slots == NULL) {
            rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "device table of %d", (int)n);
            goto destroy_backend;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        pthread_mutex_init(&state->slots[i].lock, NULL);
        atomic_init(&state->slots[i].device, NULL);
    }
    rc = pinned_map_create(&plugin_pinned_ops, plugin, &state->pinned);
    if (rc != TETHER_OK) {
        plugin_error_set(err, rc, "cannot create the pinned map");
        goto destroy_slots;
    }
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "plugin ready, %d device(s)", (int)n);
    *plugin_p = plugin;
    return TETHER_OK;

destroy_slots:
    for (int32_t i = 0; i < n; i++) {
        pthread_mutex_destroy(&state->slots[i].lock);
    }
    free(state->slots);
destroy_backend:
    plugin->state = NULL;
    ops->plugin_destroy(plugin);
destroy_seen_lock:
    pthread_mutex_destroy(&state->seen_lock);
free_state:
    free(state);
    return rc;
}

void plugin_destroy(struct plugin *plugin)
{
    struct plugin_state *state;
    struct plugin_seen_image *seen;

    if (plugin == NULL) {
        return;
    }
    state = plugin->state;
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "shutting down");
    /* Unpin what tether still holds while the devices (and their contexts) still exist, through
     * the first live one: a registration is valid for every device (docs/pinned-memory.md).
     * Without a live device nothing was ever pinned. */
    pinned_map_destroy(state->pinned, plugin_device_first(plugin));
    state->pinned = NULL;
    for (int32_t i = 0; i < plugin->num_devices; i++) {
        struct plugin_device *dev = plugin_device_peek(plugin, i);

        if (dev != NULL) {
            plugin_device_teardown(dev);
        }
        pthread_mutex_destroy(&state->slots[i].lock);
    }
    free(state->slots);
    plugin_stage_shutdown(); /* the copy threads, now that no device copies */
    plugin_jit_shutdown();   /* the JIT images, now that no module uses them */
    seen = state->seen;
    while (seen != NULL) {
        struct plugin_seen_image *next = seen->next;

        free(seen->arch);
        free(seen);
        seen = next;
    }
    pthread_mutex_destroy(&state->seen_lock);
    plugin->state = NULL;
    plugin->ops->plugin_destroy(plugin);
    free(state);
}

void plugin_set_info_flags(struct plugin *plugin, uint32_t flags)
{
    atomic_store_explicit(&plugin->state->info_flags, flags, memory_order_relaxed);
}

void plugin_set_requires(struct plugin *plugin, int64_t flags)
{
    plugin->state->requires_flags = flags;
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "requires flags 0x%" PRIx64, (uint64_t)flags);
}

bool plugin_usm_unreachable(const struct plugin_device *dev)
{
    return (dev->plugin->state->requires_flags & TGT_REQ_UNIFIED_SHARED_MEMORY) != 0 &&
           dev->limits.host_access == PLUGIN_HOST_ACCESS_PINNED;
}

/* ---- devices ---------------------------------------------------------------------------- */

/* Pinned-map callbacks: the backend's host_register/host_unregister, or the identity.  The map
 * belongs to the plugin (ctx); call_ctx is the device whose call reached the map. */
static tether_status_t pin_cb(void *ctx, void *call_ctx, void *ptr, size_t size, void **dev_ptr_p,
                              bool *external_p, struct tether_error *err)
{
    const struct plugin_ops *ops = ((struct plugin *)ctx)->ops;
    struct plugin_device *dev = call_ctx;
    struct tether_error local;

    if (ops->host_register == NULL) {
        *dev_ptr_p = ptr;
        *external_p = false;
        return TETHER_OK;
    }
    return ops->host_register(dev, ptr, size, dev_ptr_p, external_p, err ? err : &local);
}

static tether_status_t unpin_cb(void *ctx, void *call_ctx, void *base, size_t size,
                                struct tether_error *err)
{
    const struct plugin_ops *ops = ((struct plugin *)ctx)->ops;
    struct plugin_device *dev = call_ctx;
    struct tether_error local;

    if (ops->host_unregister == NULL || dev == NULL) {
        return TETHER_OK; /* identity pinning, or no device ever pinned anything */
    }
    return ops->host_unregister(dev, base, size, err ? err : &local);
}

static const struct pinned_ops plugin_pinned_ops = {
    .pin = pin_cb,
    .unpin = unpin_cb,
};

/* Replace limits the backend left 0 by safe values (a backend bug, but never divide by 0), and
 * make sure the PCI address is a string. */
static void limits_sanitize(struct plugin_device_limits *l)
{
    if (l->warp_size == 0) {
        l->warp_size = 1;
    }
    if (l->max_threads == 0) {
        l->max_threads = 1;
    }
    if (l->max_teams == 0) {
        l->max_teams = 1;
    }
    if (l->default_threads == 0 || l->default_threads > l->max_threads) {
        l->default_threads = l->max_threads;
    }
    if (l->default_teams == 0) {
        l->default_teams = 1;
    }
    l->pci_bus_id[sizeof(l->pci_bus_id) - 1] = '\0';
}

static tether_status_t device_init(struct plugin *plugin, int32_t id, struct plugin_device **dev_p,
                                   struct tether_error *err)
{
    const struct plugin_ops *ops = plugin->ops;
    struct plugin_device_state *state;
    struct plugin_device_limits limits;
    struct plugin_device *dev = NULL;
    tether_status_t rc;

    state = calloc(1, sizeof(*state));
    if (state == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "device state");
    }
    if (pthread_mutex_init(&state->lock, NULL) != 0) {
        rc = plugin_error_set(err, TETHER_ERR_INTERNAL, "pthread_mutex_init failed");
        goto free_state;
    }
    atomic_init(&state->kernels_running, 0);
    rc = ops->device_create(plugin, id, &dev, err);
    if (rc != TETHER_OK) {
        goto destroy_lock;
    }
    dev->plugin = plugin;
    dev->id = id;
    dev->state = state;
    memset(&limits, 0, sizeof(limits));
    rc = ops->device_limits(dev, &limits, err);
    if (rc != TETHER_OK) {
        goto destroy_device;
    }
    limits_sanitize(&limits);
    dev->limits = limits;
    rc = plugin_pool_create(dev, err);
    if (rc != TETHER_OK) {
        goto destroy_device;
    }
    rc = plugin_async_prefill(dev, err);
    if (rc != TETHER_OK) {
        goto destroy_pools;
    }
    rc = plugin_stage_create(dev, err);
    if (rc != TETHER_OK) {
        goto destroy_pools;
    }
    if (ops->device_name != NULL) {
        ops->device_name(dev, state->name, sizeof(state->name));
    }
    if (state->name[0] == '\0') {
        snprintf(state->name, sizeof(state->name), "%s device %d", ops->name, (int)id);
    }
    plugin_log(plugin, dev, PLUGIN_LOG_INFO,
               "initialised %s (warp %u, max threads %u, max teams %u)", state->name,
               limits.warp_size, limits.max_threads, limits.max_teams);
    {
        const struct plugin_launch_env *env = &plugin->state->launch_env;

        if (env->teams_thread_limit != 0 || env->team_limit != 0 || env->num_teams != 0) {
            plugin_log(plugin, dev, PLUGIN_LOG_INFO,
                       "launches follow OMP_TEAMS_THREAD_LIMIT=%u OMP_TEAM_LIMIT=%u "
                       "OMP_NUM_TEAMS=%u (0: not set)",
                       env->teams_thread_limit, env->team_limit, env->num_teams);
        }
    }
    *dev_p = dev;
    return TETHER_OK;

destroy_pools:
    plugin_async_drain(dev);
    plugin_pool_destroy(dev);
destroy_device:
    dev->state = NULL;
    ops->device_destroy(dev);
destroy_lock:
    pthread_mutex_destroy(&state->lock);
free_state:
    free(state);
    return rc;
}

tether_status_t plugin_device_get(struct plugin *plugin, int32_t id, struct plugin_device **dev_p,
                                  struct tether_error *err)
{
    struct plugin_slot *slot;
    struct plugin_device *dev;
    tether_status_t rc = TETHER_OK;

    if (plugin == NULL || id < 0 || id >= plugin->num_devices) {
        return plugin_error_set(err, TETHER_ERR_NO_DEVICE, "device %d does not exist (%d device%s)",
                                (int)id, plugin ? (int)plugin->num_devices : 0,
                                plugin && plugin->num_devices == 1 ? "" : "s");
    }
    slot = &plugin->state->slots[id];
    dev = atomic_load_explicit(&slot->device, memory_order_acquire);
    if (dev != NULL) {
        *dev_p = dev;
        return TETHER_OK;
    }
    pthread_mutex_lock(&slot->lock);
    dev = atomic_load_explicit(&slot->device, memory_order_relaxed);
    if (dev == NULL) {
        rc = device_init(plugin, id, &dev, err);
        if (rc == TETHER_OK) {
            atomic_store_explicit(&slot->device, dev, memory_order_release);
        }
    }
    pthread_mutex_unlock(&slot->lock);
    if (rc == TETHER_OK) {
        *dev_p = dev;
    }
    return rc;
}

struct plugin_device *plugin_device_peek(struct plugin *plugin, int32_t id)
{
    if (plugin == NULL || id < 0 || id >= plugin->num_devices) {
        return NULL;
    }
    return atomic_load_explicit(&plugin->state->slots[id].device, memory_order_acquire);
}

struct plugin_device *plugin_device_first(struct plugin *plugin)
{
    for (int32_t i = 0; i < plugin->num_devices; i++) {
        struct plugin_device *dev = plugin_device_peek(plugin, i);

        if (dev != NULL) {
            return dev;
        }
    }
    return NULL;
}

void plugin_device_teardown(struct plugin_device *dev)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_device_state *state = dev->state;
    struct plugin_loaded *loaded;

    plugin_rpc_detach(dev);
    loaded = state->loaded;
    while (loaded != NULL) {
        struct plugin_loaded *next = loaded->next;

        plugin_loaded_release(dev, loaded);
        loaded = next;
    }
    plugin_stage_destroy(dev);
    plugin_async_drain(dev);
    while (state->interops != NULL) {
        struct plugin_interop *io = state->interops;

        state->interops = io->next;
        ops->queue_destroy(dev, io->queue);
        free(io);
    }
    plugin_pool_destroy(dev);
    pthread_mutex_destroy(&state->lock);
    dev->state = NULL;
    ops->device_destroy(dev);
    free(state);
}

/* ---- descriptions ----------------------------------------------------------------------- */

size_t plugin_pinned_count(struct plugin_device *dev)
{
    return pinned_map_count(dev->plugin->state->pinned);
}

tether_status_t plugin_device_describe(struct plugin *plugin, int32_t id,
                                       struct tether_device_info *info_p, struct tether_error *err)
{
    struct plugin_device *dev;
    struct tether_device_info info;
    tether_status_t rc;
    int32_t offset;

    rc = plugin_device_get(plugin, id, &dev, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    memset(&info, 0, sizeof(info));
    info.version = TETHER_DEVICE_INFO_VERSION;
    offset = atomic_load(&plugin->state->global_offset);
    info.omp_device = offset >= 0 ? offset + id : -1;
    info.local_id = id;
    info.plugin_devices = plugin->num_devices;
    snprintf(info.plugin, sizeof(info.plugin), "%s", plugin->ops->name);
    snprintf(info.library, sizeof(info.library), "libomptarget.rtl.%s.nextgen.so",
             plugin->ops->name);
    snprintf(info.name, sizeof(info.name), "%s", dev->state->name);
    info.pinned_ranges = pinned_map_count(dev->plugin->state->pinned);
    pthread_mutex_lock(&dev->state->lock);
    info.images_loaded = dev->state->num_loaded;
    pthread_mutex_unlock(&dev->state->lock);
    *info_p = info;
    return TETHER_OK;
}

static void emit_stdout(void *ctx, const char *key, const char *fmt, ...)
{
    va_list ap;

    (void)ctx;
    printf("    %-28s ", key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void plugin_print_device_info(struct plugin *plugin, int32_t id)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev;
    tether_status_t rc;

    rc = plugin_device_get(plugin, id, &dev, &err);
    if (rc != TETHER_OK) {
        plugin_report(plugin, id, "print_device_info", rc, &err);
        return;
    }
    printf("    tether plugin                libomptarget.rtl.%s.nextgen.so (local device %d of "
           "%d)\n",
           plugin->ops->name, (int)id, (int)plugin->num_devices);
    emit_stdout(NULL, "Device", "%s", dev->state->name);
    emit_stdout(NULL, "Warp size", "%u", dev->limits.warp_size);
    emit_stdout(NULL, "Max threads per team", "%u", dev->limits.max_threads);
    emit_stdout(NULL, "Max teams", "%u", dev->limits.max_teams);
    emit_stdout(NULL, "Default threads per team", "%u", dev->limits.default_threads);
    emit_stdout(NULL, "Default teams", "%u", dev->limits.default_teams);
    if (dev->limits.pci_bus_id[0] != '\0') {
        emit_stdout(NULL, "PCI bus id", "%s", dev->limits.pci_bus_id);
    }
    emit_stdout(NULL, "Pinned ranges", "%zu", pinned_map_count(dev->plugin->state->pinned));
    if (plugin->ops->device_info != NULL) {
        plugin->ops->device_info(dev, emit_stdout, NULL);
    }
    fflush(stdout);
}
