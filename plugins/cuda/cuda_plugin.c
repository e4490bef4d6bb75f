/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_plugin.c - the CUDA backend: plugin life cycle, devices, the ops table (cuda_plugin.h).
 *
 * Environment (docs/cuda.md):
 *   LIBOMPTARGET_STACK_SIZE           per-thread stack, bytes (cuCtxSetLimit STACK_SIZE)
 *   LIBOMPTARGET_HEAP_SIZE            device malloc heap, bytes (cuCtxSetLimit MALLOC_HEAP_SIZE)
 *   LIBOMPTARGET_NUM_INITIAL_STREAMS  streams created with each device, 0 to 1024 (default 32)
 *   LIBOMPTARGET_NUM_INITIAL_EVENTS   events created with each device, 0 to 1024 (default 32)
 *   TETHER_CUDA_SCHED                 auto | spin | yield | blocking: the primary context's
 *                                     scheduling flags, set when tether activates it (default
 *                                     auto): how the driver waits inside its own calls
 *   TETHER_WAIT                       adaptive | spin | block: how tether's waits for streams and
 *                                     events go (common, plugin_wait.h; default adaptive)
 *   TETHER_CUDA_PRINTF_FIFO           bytes of CUDA's device printf buffer (driver default 1 MiB)
 *   (a limit the driver refuses is a bad value: a warning, and the driver's default stays)
 *   LIBOMPTARGET_SHARED_MEMORY_SIZE   read by common: dynamic shared memory per team
 */
#include "cuda_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_DEFAULT_INITIAL_STREAMS 32
#define CUDA_DEFAULT_INITIAL_EVENTS 32
#define CUDA_MAX_INITIAL 1024
#define CUDA_DEFAULT_THREADS 128 /* LLVM 16 NVPTX GV_Default_WG_Size */
#define CUDA_RPC_PORTS 16384
#define CUDA_DEFAULT_TEAMS 3200 /* LLVM 16 NVPTX GV_Default_Num_Teams */

extern const struct plugin_ops plugin_backend_ops;

/* ---- shared helpers -------------------------------------------------------------------------- */

tether_status_t cuda_ctx_enter(struct cuda_device *cd, struct tether_error *err)
{
    return CUDA_CALL(cd->drv, err, cuCtxSetCurrent, cd->ctx);
}

void cuda_log_teardown(struct cuda_device *cd, CUresult result, const char *call)
{
    struct tether_error err;

    if (result == CUDA_SUCCESS) {
        return;
    }
    cuda_driver_check(cd->drv, result, call, &err);
    /* At process exit the driver may be torn down before us: nothing is left to release. */
    plugin_log(cd->base.plugin, &cd->base,
               result == CUDA_ERROR_DEINITIALIZED ? PLUGIN_LOG_DEBUG : PLUGIN_LOG_WARN, "%s",
               err.msg);
}

/* ---- plugin ------------------------------------------------------------------------------- */

static tether_status_t cuda_plugin_create(struct plugin **plugin_p, struct tether_error *err)
{
    struct cuda_plugin *cp;
    struct cuda_driver *drv = NULL;
    tether_status_t rc;
    CUresult res;
    int count = 0;

    cp = calloc(1, sizeof(*cp));
    if (cp == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "CUDA plugin");
    }
    cp->base.ops = &plugin_backend_ops;
    rc = cuda_driver_open(NULL, &drv, err);
    if (rc == TETHER_ERR_NO_DRIVER) {
        /* No CUDA on this machine: not an error (the host plugin still works). */
        char why[TETHER_ERROR_MSG_MAX];

        snprintf(why, sizeof(why), "%s", err->msg);
        plugin_error_set(err, TETHER_OK, "%s; the CUDA plugin has 0 devices", why);
        *plugin_p = &cp->base;
        return TETHER_OK;
    }
    if (rc != TETHER_OK) {
        goto free_plugin;
    }
    drv->plugin = &cp->base;
    cp->drv = drv;
    res = drv->cuInit(0);
    if (res == CUDA_ERROR_NO_DEVICE) {
        plugin_error_set(err, TETHER_OK,
                         "the CUDA driver (%s) sees no GPU; the CUDA plugin has 0 devices",
                         drv->library);
        *plugin_p = &cp->base;
        return TETHER_OK;
    }
    rc = cuda_driver_check(drv, res, "cuInit", err);
    if (rc != TETHER_OK) {
        goto close_driver;
    }
    rc = CUDA_CALL(drv, err, cuDriverGetVersion, &cp->driver_version);
    if (rc != TETHER_OK) {
        goto close_driver;
    }
    rc = CUDA_CALL(drv, err, cuDeviceGetCount, &count);
    if (rc != TETHER_OK) {
        goto close_driver;
    }
    if (count > 0) {
        cp->cc_major = calloc((size_t)count, sizeof(int));
        cp->cc_minor = calloc((size_t)count, sizeof(int));
        if (cp->cc_major == NULL || cp->cc_minor == NULL) {
            rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "device table of %d", count);
            goto free_tables;
        }
    }
    for (int i = 0; i < count; i++) {
        CUdevice d;

        rc = CUDA_CALL(drv, err, cuDeviceGet, &d, i);
        if (rc == TETHER_OK) {
            rc = CUDA_CALL(drv, err, cuDeviceGetAttribute, &cp->cc_major[i],
                           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
        }
        if (rc == TETHER_OK) {
            rc = CUDA_CALL(drv, err, cuDeviceGetAttribute, &cp->cc_minor[i],
                           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
        }
        if (rc != TETHER_OK) {
            goto free_tables;
        }
    }
    cp->base.num_devices = count;
    plugin_log(&cp->base, NULL, PLUGIN_LOG_INFO, "CUDA driver %d.%d (%s), %d device(s)",
               cp->driver_version / 1000, cp->driver_version % 1000 / 10, drv->library, count);
    *plugin_p = &cp->base;
    return TETHER_OK;

free_tables:
    free(cp->cc_major);
    free(cp->cc_minor);
close_driver:
    cuda_driver_close(drv);
free_plugin:
    free(cp);
    return rc;
}

static void cuda_plugin_destroy(struct plugin *plugin)
{
    struct cuda_plugin *cp = cuda_plugin_of(plugin);

    /* The driver stays loaded: CUDA registers its own exit handlers, and unloading it under
     * them at process exit is not safe.  Only our own memory goes. */
    cuda_driver_free(cp->drv);
    free(cp->cc_major);
    free(cp->cc_minor);
    free(cp);
}

/* "sm_90" -> 9, 0 (the last digit is the minor); "sm_90a" also sets *exact_p. */
static bool cuda_parse_arch(const char *arch, int *major_p, int *minor_p, bool *exact_p)
{
    const char *p = arch + 3;
    int digits = 0, value = 0;

    if (strncmp(arch, "sm_", 3) != 0) {
        return false;
    }
    while (*p >= '0' && *p <= '9' && digits < 4) {
        value = value * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits < 2 || (*p != '\0' && (p[0] < 'a' || p[0] > 'z' || p[1] != '\0'))) {
        return false;
    }
    *major_p = value / 10;
    *minor_p = value % 10;
    *exact_p = *p != '\0';
    return true;
}

/* LLVM 16's rule: an sm_XY image runs when EVERY device has major X and minor >= Y. */
static bool cuda_image_compatible(struct plugin *plugin, const struct plugin_image *image)
{
    struct cuda_plugin *cp = cuda_plugin_of(plugin);
    int major, minor;
    bool exact;

    if (image->arch == NULL || image->arch[0] == '\0') {
        return true; /* unknown: let the driver decide at load time */
    }
    if (!cuda_parse_arch(image->arch, &major, &minor, &exact)) {
        plugin_image_refused(
            plugin, "the program's image for arch '%s' is not for CUDA (not sm_XY)", image->arch);
        return false;
    }
    for (int i = 0; i < plugin->num_devices; i++) {
        if (cp->cc_major[i] != major || cp->cc_minor[i] < minor ||
            (exact && cp->cc_minor[i] != minor)) {
            plugin_image_refused(plugin,
                                 "the program's image for %s does not run on device %d (sm_%d%d); "
                                 "build it with --offload-arch=sm_%d%d",
                                 image->arch, i, cp->cc_major[i], cp->cc_minor[i], cp->cc_major[i],
                                 cp->cc_minor[i]);
            return false;
        }
    }
    return true;
}

/* ---- devices ---------------------------------------------------------------------------- */

static unsigned int cuda_sched_flags(void)
{
    static const char *const names[] = {"auto", "spin", "yield", "blocking", NULL};
    static const unsigned int flags[] = {CU_CTX_SCHED_AUTO, CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD,
                                         CU_CTX_SCHED_BLOCKING_SYNC};

    return flags[plugin_env_choice("TETHER_CUDA_SCHED", names, 0)];
}

static tether_status_t cuda_attr(struct cuda_device *cd, CUdevice_attribute attr, int *value_p,
                                 struct tether_error *err)
{
    return CUDA_CALL(cd->drv, err, cuDeviceGetAttribute, value_p, attr, cd->cu_dev);
}

/* Apply one limit knob when it is set.  The value in force (the driver's default, or what user
 * CUDA code set) is the knob's default: a bad value, or one the driver refuses, leaves it, with
 * one warning saying so. */
static void cuda_env_limit(struct cuda_device *cd, const char *name, CUlimit limit)
{
    struct tether_error local;
    size_t now = 0;
    int64_t value;

    if (plugin_env_str(name) == NULL) {
        return;
    }
    if (cd->drv->cuCtxGetLimit(&now, limit) != CUDA_SUCCESS || now > (size_t)INT64_MAX) {
        now = 0; /* unknown: a bad value then reads as 0, which the driver refuses or takes */
    }
    value = plugin_env_int(name, (int64_t)now, 0, INT64_MAX);
    if ((size_t)value == now) {
        return;
    }
    if (CUDA_CALL(cd->drv, &local, cuCtxSetLimit, limit, (size_t)value) != TETHER_OK) {
        plugin_env_warn(name, "%s=%s is refused by the driver (%s); using %zu", name,
                        plugin_env_str(name), local.msg, now);
    }
}

static uint32_t cuda_env_count(const char *name, uint32_t def)
{
    return (uint32_t)plugin_env_int(name, def, 0, CUDA_MAX_INITIAL);
}

static void cuda_device_release(struct cuda_device *cd)
{
    struct cuda_driver *drv = cd->drv;

    if (cd->ctx != NULL) {
        cuda_log_teardown(cd, drv->cuDevicePrimaryCtxRelease(cd->cu_dev),
                          cuda_driver_symbol_names[CUDA_SLOT_cuDevicePrimaryCtxRelease]);
    }
    free(cd);
}

static tether_status_t cuda_device_create(struct plugin *plugin, int32_t id,
                                          struct plugin_device **dev_p, struct tether_error *err)
{
    struct cuda_plugin *cp = cuda_plugin_of(plugin);
    struct cuda_driver *drv = cp->drv;
    struct cuda_device *cd;
    unsigned int flags = 0;
    int active = 0;
    tether_status_t rc;

    cd = calloc(1, sizeof(*cd));
    if (cd == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "CUDA device %d", (int)id);
    }
    /* Until common fills them in, log through the plugin with no device. */
    cd->base.plugin = plugin;
    cd->base.id = id;
    cd->drv = drv;
    rc = CUDA_CALL(drv, err, cuDeviceGet, &cd->cu_dev, (int)id);
    if (rc != TETHER_OK) {
        goto release;
    }
    rc = CUDA_CALL(drv, err, cuDevicePrimaryCtxGetState, cd->cu_dev, &flags, &active);
    if (rc != TETHER_OK) {
        goto release;
    }
    if (!active) {
        /* Nobody (user CUDA code) made it yet: choose how host threads wait. */
        rc = CUDA_CALL(drv, err, cuDevicePrimaryCtxSetFlags, cd->cu_dev, cuda_sched_flags());
        if (rc != TETHER_OK) {
            goto release;
        }
    }
    rc = CUDA_CALL(drv, err, cuDevicePrimaryCtxRetain, &cd->ctx, cd->cu_dev);
    if (rc != TETHER_OK) {
        cd->ctx = NULL;
        goto release;
    }
    rc = cuda_ctx_enter(cd, err);
    if (rc == TETHER_OK) {
        rc = CUDA_CALL(drv, err, cuDeviceGetName, cd->name, (int)sizeof(cd->name), cd->cu_dev);
    }
    if (rc == TETHER_OK) {
        rc = CUDA_CALL(drv, err, cuDeviceTotalMem, &cd->total_mem, cd->cu_dev);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &cd->cc_major, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &cd->cc_minor, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &cd->sm_count, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &cd->warp_size, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &cd->max_block_x, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &cd->max_grid_x, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                       &cd->max_shared_optin, err);
    }
    if (rc == TETHER_OK) {
        rc = cuda_attr(cd, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                       &cd->host_ptr_is_dev, err);
    }
    if (rc != TETHER_OK) {
        goto release;
    }
    cuda_env_limit(cd, "LIBOMPTARGET_STACK_SIZE", CU_LIMIT_STACK_SIZE);
    cuda_env_limit(cd, "LIBOMPTARGET_HEAP_SIZE", CU_LIMIT_MALLOC_HEAP_SIZE);
    cuda_env_limit(cd, "TETHER_CUDA_PRINTF_FIFO", CU_LIMIT_PRINTF_FIFO_SIZE);
    /* Streams and events common makes with the device, so that the first target regions do not
     * pay for them. */
    cd->initial_streams =
        cuda_env_count("LIBOMPTARGET_NUM_INITIAL_STREAMS", CUDA_DEFAULT_INITIAL_STREAMS);
    cd->initial_events =
        cuda_env_count("LIBOMPTARGET_NUM_INITIAL_EVENTS", CUDA_DEFAULT_INITIAL_EVENTS);
    plugin_wait_init(&cd->wait);
    *dev_p = &cd->base;
    return TETHER_OK;

release:
    cuda_device_release(cd);
    return rc;
}

static void cuda_device_destroy(struct plugin_device *dev)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct tether_error err;

    plugin_wait_report(dev, &cd->wait);
    if (cuda_ctx_enter(cd, &err) != TETHER_OK) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG, "at shutdown: %s", err.msg);
    }
    cuda_device_release(cd);
}

static tether_status_t cuda_device_limits(struct plugin_device *dev,
                                          struct plugin_device_limits *limits_p,
                                          struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_driver *drv = cd->drv;
    int domain = 0, bus = 0, slot = 0;

    (void)err;
    limits_p->warp_size = (uint32_t)cd->warp_size;
    limits_p->max_threads = (uint32_t)cd->max_block_x;
    limits_p->max_teams = (uint32_t)cd->max_grid_x;
    limits_p->default_threads = CUDA_DEFAULT_THREADS;
    limits_p->default_teams = CUDA_DEFAULT_TEAMS;
    limits_p->initial_queues = cd->initial_streams;
    limits_p->initial_events = cd->initial_events;
    /* Each NVIDIA thread calls on its own home port (docs/rpc-services.md): with 4096 ports
     * the 16896 threads of a 132 x 128 printf shared ports and printed at 0.98 M lines/s on an
     * H200, with 16384 at 2.05 M lines/s (CUDA's printf: 1.98).  A port of one lane: 1 MiB of
     * pinned memory for the buffers (32 lanes would be 32 MiB, 31 of them never used). */
    limits_p->rpc_ports = CUDA_RPC_PORTS;
    limits_p->rpc_lanes = 1;
    /* Where the GPU sits, for the RPC server thread's placement and print_device_info; left ""
     * where the driver cannot tell.  CUDA has no attribute for the PCI function: a GPU's is 0. */
    if (drv->cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, cd->cu_dev) ==
            CUDA_SUCCESS &&
        drv->cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, cd->cu_dev) ==
            CUDA_SUCCESS &&
        drv->cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, cd->cu_dev) ==
            CUDA_SUCCESS) {
        snprintf(limits_p->pci_bus_id, sizeof(limits_p->pci_bus_id), "%04x:%02x:%02x.0",
                 (unsigned)domain, (unsigned)bus, (unsigned)slot);
    }
    /* Pageable host memory (HMM on x86 with the open kernel modules, ATS on Grace): what a
     * program with `requires unified_shared_memory` needs.  Unreadable: unknown. */
    int pageable = 0;
    if (drv->cuDeviceGetAttribute(&pageable, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
                                  cd->cu_dev) == CUDA_SUCCESS) {
        limits_p->host_access =
            pageable != 0 ? PLUGIN_HOST_ACCESS_PAGEABLE : PLUGIN_HOST_ACCESS_PINNED;
        if (pageable == 0)
            limits_p->host_access_why = "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: the "
                                        "driver has no HMM or ATS here";
    }
    return TETHER_OK;
}

static void cuda_device_name(struct plugin_device *dev, char *buf, size_t len)
{
    struct cuda_device *cd = cuda_device_of(dev);

    snprintf(buf, len, "%s (sm_%d%d)", cd->name, cd->cc_major, cd->cc_minor);
}

static void cuda_device_info(struct plugin_device *dev, plugin_info_emit_t emit, void *ctx)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_plugin *cp = cuda_plugin_of(dev->plugin);
    struct cuda_driver *drv = cd->drv;
    static const struct {
        const char *key;
        CUdevice_attribute attr;
    } attrs[] = {
        {"Multiprocessors", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
        {"Max threads per multiprocessor", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
        {"Shared memory per block", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
        {"Shared memory per block (opt-in)", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
        {"Registers per block", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
        {"L2 cache bytes", CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
        {"Clock rate kHz", CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
        {"Memory clock kHz", CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE},
        {"Memory bus width bits", CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
        {"ECC enabled", CU_DEVICE_ATTRIBUTE_ECC_ENABLED},
        {"Unified addressing", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
        {"Managed memory", CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
        {"Concurrent kernels", CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS},
        {"Pageable memory access", CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS},
    };
    size_t free_mem = 0, total_mem = 0, limit = 0;
    struct tether_error err;

    emit(ctx, "CUDA driver", "%d.%d (%s)", cp->driver_version / 1000,
         cp->driver_version % 1000 / 10, drv->library);
    emit(ctx, "Compute capability", "%d.%d", cd->cc_major, cd->cc_minor);
    if (cuda_ctx_enter(cd, &err) != TETHER_OK) {
        emit(ctx, "Error", "%s", err.msg);
        return;
    }
    if (drv->cuMemGetInfo(&free_mem, &total_mem) == CUDA_SUCCESS) {
        emit(ctx, "Global memory", "%zu MiB (%zu MiB free)", total_mem >> 20, free_mem >> 20);
    }
    if (drv->cuDeviceGetUuid != NULL) {
        CUuuid uuid;

        if (drv->cuDeviceGetUuid(&uuid, cd->cu_dev) == CUDA_SUCCESS) {
            const unsigned char *u = (const unsigned char *)uuid.bytes;

            emit(ctx, "UUID",
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                 u[14], u[15]);
        }
    }
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        int value;

        if (drv->cuDeviceGetAttribute(&value, attrs[i].attr, cd->cu_dev) == CUDA_SUCCESS) {
            emit(ctx, attrs[i].key, "%d", value);
        }
    }
    if (drv->cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS) {
        emit(ctx, "Stack bytes per thread", "%zu", limit);
    }
    if (drv->cuCtxGetLimit(&limit, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS) {
        emit(ctx, "Device malloc heap bytes", "%zu", limit);
    }
    if (drv->cuCtxGetLimit(&limit, CU_LIMIT_PRINTF_FIFO_SIZE) == CUDA_SUCCESS) {
        emit(ctx, "Device printf buffer bytes", "%zu", limit);
    }
    emit(ctx, "Pinning", "%s", "cuMemHostRegister (PORTABLE | DEVICEMAP), ref-counted map");
}

static tether_status_t cuda_thread_attach(struct plugin_device *dev, struct tether_error *err)
{
    return cuda_ctx_enter(cuda_device_of(dev), err);
}

/* ---- the table ---------------------------------------------------------------------------- */

const struct plugin_ops plugin_backend_ops = {
    .version = PLUGIN_OPS_VERSION,
    .name = "cuda",
    .elf_machine = 190, /* EM_CUDA */
    .plugin_create = cuda_plugin_create,
    .plugin_destroy = cuda_plugin_destroy,
    .image_compatible = cuda_image_compatible,
    .device_create = cuda_device_create,
    .device_destroy = cuda_device_destroy,
    .device_limits = cuda_device_limits,
    .device_name = cuda_device_name,
    .device_info = cuda_device_info,
    .thread_attach = cuda_thread_attach,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .memcpy_h2d = cuda_memcpy_h2d,
    .memcpy_d2h = cuda_memcpy_d2h,
    .memcpy_d2d = cuda_memcpy_d2d,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .host_pageable = cuda_host_pageable,
    .queue_create = cuda_queue_create,
    .queue_destroy = cuda_queue_destroy,
    .queue_sync = cuda_queue_sync,
    .queue_query = cuda_queue_query,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_sync = cuda_event_sync,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .global_lookup = cuda_global_lookup,
    .kernel_lookup = cuda_kernel_lookup,
    .kernel_release = cuda_kernel_release,
    .launch = cuda_launch,
    .jit = &cuda_jit_ops,
    .interop_info = cuda_interop_info,
    .rpc_client_copy = cuda_rpc_client_copy,
};
