/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/common/fault_ops.c - see fault_ops.h. */
#include "fault_ops.h"

#include <stdio.h>

struct fault_state fault;

void fault_reset(const struct plugin_ops *inner, long fail_at)
{
    fault.inner = inner;
    atomic_store(&fault.calls, 0);
    fault.fail_at = fail_at;
    fault.fail_status = TETHER_OK;
    atomic_store(&fault.failed, 0);
    atomic_store(&fault.plugins, 0);
    atomic_store(&fault.devices, 0);
    atomic_store(&fault.modules, 0);
    atomic_store(&fault.kernels, 0);
    atomic_store(&fault.queues, 0);
    atomic_store(&fault.events, 0);
    atomic_store(&fault.allocs, 0);
    atomic_store(&fault.registers, 0);
    atomic_store(&fault.launches, 0);
    atomic_store(&fault.syncs, 0);
    fault.launch_hook = NULL;
    atomic_store(&fault.register_dev, -1);
    atomic_store(&fault.unregister_dev, -1);
}

long fault_live(void)
{
    return atomic_load(&fault.plugins) + atomic_load(&fault.devices) + atomic_load(&fault.modules) +
           atomic_load(&fault.kernels) + atomic_load(&fault.queues) + atomic_load(&fault.events) +
           atomic_load(&fault.allocs) + atomic_load(&fault.registers);
}

void fault_dump(const char *what)
{
    fprintf(stderr,
            "%s: live plugins %ld devices %ld modules %ld kernels %ld queues %ld events %ld "
            "allocs %ld registers %ld\n",
            what, atomic_load(&fault.plugins), atomic_load(&fault.devices),
            atomic_load(&fault.modules), atomic_load(&fault.kernels), atomic_load(&fault.queues),
            atomic_load(&fault.events), atomic_load(&fault.allocs), atomic_load(&fault.registers));
}

/* Number this acquiring call; true when it is the one to fail. */
static bool fault_hit(void)
{
    long n = atomic_fetch_add(&fault.calls, 1) + 1;

    if (fault.fail_at != 0 && n == fault.fail_at) {
        atomic_fetch_add(&fault.failed, 1);
        return true;
    }
    return false;
}

#define FAULT_POINT(slot)                                                                          \
    do {                                                                                           \
        if (fault_hit()) {                                                                         \
            return plugin_error_set(                                                               \
                err, fault.fail_status != TETHER_OK ? fault.fail_status : TETHER_ERR_DRIVER,       \
                "injected failure in %s (call %ld)", #slot, fault.fail_at);                        \
        }                                                                                          \
    } while (0)

static tether_status_t f_plugin_create(struct plugin **plugin_p, struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(plugin_create);
    rc = fault.inner->plugin_create(plugin_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.plugins, 1);
    }
    return rc;
}

static void f_plugin_destroy(struct plugin *plugin)
{
    atomic_fetch_sub(&fault.plugins, 1);
    fault.inner->plugin_destroy(plugin);
}

static bool f_image_compatible(struct plugin *plugin, const struct plugin_image *image)
{
    return fault.inner->image_compatible == NULL || fault.inner->image_compatible(plugin, image);
}

static tether_status_t f_device_create(struct plugin *plugin, int32_t id,
                                       struct plugin_device **dev_p, struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(device_create);
    rc = fault.inner->device_create(plugin, id, dev_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.devices, 1);
    }
    return rc;
}

static void f_device_destroy(struct plugin_device *dev)
{
    atomic_fetch_sub(&fault.devices, 1);
    fault.inner->device_destroy(dev);
}

static tether_status_t f_device_limits(struct plugin_device *dev,
                                       struct plugin_device_limits *limits_p,
                                       struct tether_error *err)
{
    FAULT_POINT(device_limits);
    return fault.inner->device_limits(dev, limits_p, err);
}

static void f_device_name(struct plugin_device *dev, char *buf, size_t len)
{
    if (fault.inner->device_name != NULL) {
        fault.inner->device_name(dev, buf, len);
    }
}

static void f_device_info(struct plugin_device *dev, plugin_info_emit_t emit, void *ctx)
{
    emit(ctx, "Fault wrapper", "%s", "yes");
    if (fault.inner->device_info != NULL) {
        fault.inner->device_info(dev, emit, ctx);
    }
}

static tether_status_t f_alloc(struct plugin_device *dev, size_t size, enum plugin_alloc_kind kind,
                               void **ptr_p, struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(alloc);
    rc = fault.inner->alloc(dev, size, kind, ptr_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.allocs, 1);
    }
    return rc;
}

static tether_status_t f_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                              struct tether_error *err)
{
    atomic_fetch_sub(&fault.allocs, 1);
    return fault.inner->free(dev, ptr, kind, err);
}

static tether_status_t f_memcpy_h2d(struct plugin_device *dev, void *dst, const void *src,
                                    size_t size, const void *host_dev, struct plugin_queue *queue,
                                    struct tether_error *err)
{
    FAULT_POINT(memcpy_h2d);
    return fault.inner->memcpy_h2d(dev, dst, src, size, host_dev, queue, err);
}

static tether_status_t f_memcpy_d2h(struct plugin_device *dev, void *dst, const void *src,
                                    size_t size, void *host_dev, struct plugin_queue *queue,
                                    struct tether_error *err)
{
    FAULT_POINT(memcpy_d2h);
    return fault.inner->memcpy_d2h(dev, dst, src, size, host_dev, queue, err);
}

static tether_status_t f_memcpy_d2d(struct plugin_device *dst_dev, void *dst,
                                    struct plugin_device *src_dev, const void *src, size_t size,
                                    struct plugin_queue *queue, struct tether_error *err)
{
    FAULT_POINT(memcpy_d2d);
    return fault.inner->memcpy_d2d(dst_dev, dst, src_dev, src, size, queue, err);
}

static tether_status_t f_host_register(struct plugin_device *dev, void *ptr, size_t size,
                                       void **dev_ptr_p, bool *external_p, struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(host_register);
    atomic_store(&fault.register_dev, dev->id);
    rc = fault.inner->host_register(dev, ptr, size, dev_ptr_p, external_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.registers, 1);
    }
    return rc;
}

static tether_status_t f_host_unregister(struct plugin_device *dev, void *base, size_t size,
                                         struct tether_error *err)
{
    atomic_fetch_sub(&fault.registers, 1);
    atomic_store(&fault.unregister_dev, dev->id);
    return fault.inner->host_unregister(dev, base, size, err);
}

static tether_status_t f_queue_create(struct plugin_device *dev, struct plugin_queue **queue_p,
                                      struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(queue_create);
    rc = fault.inner->queue_create(dev, queue_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.queues, 1);
    }
    return rc;
}

static void f_queue_destroy(struct plugin_device *dev, struct plugin_queue *queue)
{
    atomic_fetch_sub(&fault.queues, 1);
    fault.inner->queue_destroy(dev, queue);
}

static tether_status_t f_queue_sync(struct plugin_device *dev, struct plugin_queue *queue,
                                    struct tether_error *err)
{
    FAULT_POINT(queue_sync);
    atomic_fetch_add(&fault.syncs, 1);
    return fault.inner->queue_sync(dev, queue, err);
}

static tether_status_t f_queue_query(struct plugin_device *dev, struct plugin_queue *queue,
                                     bool *done_p, struct tether_error *err)
{
    FAULT_POINT(queue_query);
    return fault.inner->queue_query(dev, queue, done_p, err);
}

static tether_status_t f_event_create(struct plugin_device *dev, struct plugin_event **event_p,
                                      struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(event_create);
    rc = fault.inner->event_create(dev, event_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.events, 1);
    }
    return rc;
}

static void f_event_destroy(struct plugin_device *dev, struct plugin_event *event)
{
    atomic_fetch_sub(&fault.events, 1);
    fault.inner->event_destroy(dev, event);
}

static tether_status_t f_event_record(struct plugin_device *dev, struct plugin_event *event,
                                      struct plugin_queue *queue, struct tether_error *err)
{
    FAULT_POINT(event_record);
    return fault.inner->event_record(dev, event, queue, err);
}

static tether_status_t f_event_wait(struct plugin_device *dev, struct plugin_event *event,
                                    struct plugin_queue *queue, struct tether_error *err)
{
    FAULT_POINT(event_wait);
    return fault.inner->event_wait(dev, event, queue, err);
}

static tether_status_t f_event_sync(struct plugin_device *dev, struct plugin_event *event,
                                    struct tether_error *err)
{
    FAULT_POINT(event_sync);
    return fault.inner->event_sync(dev, event, err);
}

static tether_status_t f_module_load(struct plugin_device *dev, const struct plugin_image *image,
                                     struct plugin_module **module_p, struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(module_load);
    rc = fault.inner->module_load(dev, image, module_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.modules, 1);
    }
    return rc;
}

static void f_module_unload(struct plugin_device *dev, struct plugin_module *module)
{
    atomic_fetch_sub(&fault.modules, 1);
    fault.inner->module_unload(dev, module);
}

static tether_status_t f_global_lookup(struct plugin_device *dev, struct plugin_module *module,
                                       const char *name, void **addr_p, size_t *size_p,
                                       struct tether_error *err)
{
    FAULT_POINT(global_lookup);
    return fault.inner->global_lookup(dev, module, name, addr_p, size_p, err);
}

static tether_status_t f_kernel_lookup(struct plugin_device *dev, struct plugin_module *module,
                                       const char *name, struct plugin_kernel **kernel_p,
                                       struct tether_error *err)
{
    tether_status_t rc;

    FAULT_POINT(kernel_lookup);
    rc = fault.inner->kernel_lookup(dev, module, name, kernel_p, err);
    if (rc == TETHER_OK) {
        atomic_fetch_add(&fault.kernels, 1);
    }
    return rc;
}

static void f_kernel_release(struct plugin_device *dev, struct plugin_kernel *kernel)
{
    atomic_fetch_sub(&fault.kernels, 1);
    fault.inner->kernel_release(dev, kernel);
}

static tether_status_t f_launch(struct plugin_device *dev, struct plugin_kernel *kernel,
                                const struct plugin_launch *launch, struct plugin_queue *queue,
                                struct tether_error *err)
{
    FAULT_POINT(launch);
    atomic_fetch_add(&fault.launches, 1);
    if (fault.launch_hook != NULL) {
        return fault.launch_hook(launch);
    }
    return fault.inner->launch(dev, kernel, launch, queue, err);
}

const struct plugin_ops fault_ops = {
    .version = PLUGIN_OPS_VERSION,
    .name = "x86_64",
    .elf_machine = 62,
    .plugin_create = f_plugin_create,
    .plugin_destroy = f_plugin_destroy,
    .image_compatible = f_image_compatible,
    .device_create = f_device_create,
    .device_destroy = f_device_destroy,
    .device_limits = f_device_limits,
    .device_name = f_device_name,
    .device_info = f_device_info,
    .alloc = f_alloc,
    .free = f_free,
    .memcpy_h2d = f_memcpy_h2d,
    .memcpy_d2h = f_memcpy_d2h,
    .memcpy_d2d = f_memcpy_d2d,
    .host_register = f_host_register,
    .host_unregister = f_host_unregister,
    .queue_create = f_queue_create,
    .queue_destroy = f_queue_destroy,
    .queue_sync = f_queue_sync,
    .queue_query = f_queue_query,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_wait = f_event_wait,
    .event_sync = f_event_sync,
    .module_load = f_module_load,
    .module_unload = f_module_unload,
    .global_lookup = f_global_lookup,
    .kernel_lookup = f_kernel_lookup,
    .kernel_release = f_kernel_release,
    .launch = f_launch,
};
