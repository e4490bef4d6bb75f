/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_plugin.h - the CUDA backend's objects, shared by its files (private to plugins/cuda).
 *
 * Role: the primitives of common/plugin.h for NVIDIA GPUs through the CUDA driver API
 * (cuda_driver.h).  Split by subject: cuda_plugin.c (plugin, devices, the ops table),
 * cuda_memory.c (allocation kinds, copies, pinning), cuda_exec.c (streams, events, modules,
 * kernels, launch).  Design notes: docs/cuda.md.
 *
 * Invariants:
 *  - Each device uses its PRIMARY context, retained in device_create and released in
 *    device_destroy.  Every slot that calls the driver first makes that context current on the
 *    calling thread (cuda_ctx_enter), so any thread may call any slot.
 *  - A queue is one stream, created CU_STREAM_NON_BLOCKING: no implicit synchronisation with the
 *    legacy default stream (user CUDA code in the same process does not serialise with us), and
 *    nothing uses the legacy default stream.  Every copy and launch comes with a queue (common
 *    pools them, synchronous calls included); cuda_stream_wait is the one place the backend waits
 *    for a stream (queue_sync, and a pageable copy behind pending work), cuda_event_sync the one
 *    for an event: both through common's plugin_wait() (poll, then sleep; plugin_wait.h).
 *
 * Locking: everything in the backend objects is written before the object is published to common
 * and read-only afterwards, except cuda_kernel.dyn_shared_set and the queue's last_kernel and
 * pending (atomics).
 */
#ifndef TETHER_CUDA_PLUGIN_H
#define TETHER_CUDA_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>

#include "cuda_driver.h"
#include "plugin.h"
#include "plugin_wait.h"

/* The plugin: the driver and what plugin_create learnt about each device. */
struct cuda_plugin {
    struct plugin base;
    struct cuda_driver *drv;
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
    int *cc_major;      /* compute capability of each device, for image_compatible() */
    int *cc_minor;
};

/* A device: primary context, attributes. */
struct cuda_device {
    struct plugin_device base;
    struct cuda_driver *drv;
    CUdevice cu_dev;
    CUcontext ctx;
    char name[128];
    int cc_major, cc_minor;
    int sm_count, warp_size, max_block_x, max_grid_x;
    int max_shared_optin; /* bytes of dynamic shared memory a kernel may opt into */
    int host_ptr_is_dev;  /* registered host memory has the same address on the device */
    size_t total_mem;
    uint32_t initial_streams; /* LIBOMPTARGET_NUM_INITIAL_STREAMS, for common's queue pool */
    uint32_t initial_events;  /* LIBOMPTARGET_NUM_INITIAL_EVENTS, for common's event pool */
    struct plugin_wait wait;  /* how threads wait for this device (TETHER_WAIT) */
    /* A loaded image calls CUDA's own printf (vprintf undefined in it): its output waits in the
     * driver's buffer until a synchronising call, so a wait that ends by polling also makes one
     * (cuda_stream_flush), and the lines appear in program order, as under LLVM's plugin. */
    atomic_bool driver_printf;
};

/* A queue of common's contract: one CUDA stream. */
struct plugin_queue {
    CUstream stream;
    /* Recorded on the stream when a wait must sleep: CU_EVENT_BLOCKING_SYNC, so that
     * cuEventSynchronize blocks the thread whatever the context's scheduling flags say. */
    CUevent done;
    /* Name of the last kernel launched on the stream since it was last found complete, for the
     * message when the stream's work fails (a fault surfaces at the next synchronisation). */
    _Atomic(const char *) last_kernel;
    /* Work was enqueued since the stream was last found complete (a pageable copy waits for it
     * first: cuda_memory.c). */
    atomic_bool pending;
};

/* An event: one CUDA event (timing disabled; blocking sync, so that a wait for it can sleep). */
struct plugin_event {
    CUevent event;
};

struct cuda_module {
    struct plugin_module base;
    CUmodule module;
};

struct cuda_kernel {
    struct plugin_kernel base;
    CUfunction func;
    _Atomic uint32_t dyn_shared_set; /* dynamic shared memory opted into so far (> 48 KiB) */
    int32_t params;                  /* parameters the kernel takes; -1: the driver cannot tell */
};

static inline struct cuda_plugin *cuda_plugin_of(struct plugin *plugin)
{
    return container_of(plugin, struct cuda_plugin, base);
}

static inline struct cuda_device *cuda_device_of(struct plugin_device *dev)
{
    return container_of(dev, struct cuda_device, base);
}

/* Make the device's primary context current on the calling thread. */
tether_status_t cuda_ctx_enter(struct cuda_device *cd, struct tether_error *err);

/* Wait until everything enqueued on queue so far completed (plugin_wait: cuStreamQuery, then the
 * queue's blocking event); mark it idle.  A failure names the driver call and the last kernel
 * launched on the queue.  cuda_exec.c. */
tether_status_t cuda_stream_wait(struct cuda_device *cd, struct plugin_queue *queue,
                                 struct tether_error *err);

/* Flags of every event the backend creates. */
#define CUDA_EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)

/* cuda_jit.c: plugin_ops.jit (PTX from LLVM -> cubin through the driver's linker). */
extern const struct plugin_jit_ops cuda_jit_ops;

/* Slots, by file. */
tether_status_t cuda_alloc(struct plugin_device *dev, size_t size, enum plugin_alloc_kind kind,
                           void **ptr_p, struct tether_error *err);
tether_status_t cuda_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                          struct tether_error *err);
tether_status_t cuda_memcpy_h2d(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                const void *host_dev, struct plugin_queue *queue,
                                struct tether_error *err);
tether_status_t cuda_memcpy_d2h(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                void *host_dev, struct plugin_queue *queue,
                                struct tether_error *err);
tether_status_t cuda_memcpy_d2d(struct plugin_device *dst_dev, void *dst,
                                struct plugin_device *src_dev, const void *src, size_t size,
                                struct plugin_queue *queue, struct tether_error *err);
tether_status_t cuda_host_register(struct plugin_device *dev, void *ptr, size_t size,
                                   void **dev_ptr_p, bool *external_p, struct tether_error *err);
tether_status_t cuda_host_unregister(struct plugin_device *dev, void *base, size_t size,
                                     struct tether_error *err);
bool cuda_host_pageable(struct plugin_device *dev, const void *ptr, size_t size);

tether_status_t cuda_queue_create(struct plugin_device *dev, struct plugin_queue **queue_p,
                                  struct tether_error *err);
void cuda_queue_destroy(struct plugin_device *dev, struct plugin_queue *queue);
tether_status_t cuda_queue_sync(struct plugin_device *dev, struct plugin_queue *queue,
                                struct tether_error *err);
tether_status_t cuda_interop_info(struct plugin_device *dev, struct plugin_queue *queue,
                                  void **device_p, void **context_p, void **stream_p,
                                  struct tether_error *err);
tether_status_t cuda_queue_query(struct plugin_device *dev, struct plugin_queue *queue,
                                 bool *done_p, struct tether_error *err);
tether_status_t cuda_event_create(struct plugin_device *dev, struct plugin_event **event_p,
                                  struct tether_error *err);
void cuda_event_destroy(struct plugin_device *dev, struct plugin_event *event);
tether_status_t cuda_event_record(struct plugin_device *dev, struct plugin_event *event,
                                  struct plugin_queue *queue, struct tether_error *err);
tether_status_t cuda_event_wait(struct plugin_device *dev, struct plugin_event *event,
                                struct plugin_queue *queue, struct tether_error *err);
tether_status_t cuda_event_sync(struct plugin_device *dev, struct plugin_event *event,
                                struct tether_error *err);
tether_status_t cuda_module_load(struct plugin_device *dev, const struct plugin_image *image,
                                 struct plugin_module **module_p, struct tether_error *err);
void cuda_module_unload(struct plugin_device *dev, struct plugin_module *module);
tether_status_t cuda_global_lookup(struct plugin_device *dev, struct plugin_module *module,
                                   const char *name, void **addr_p, size_t *size_p,
                                   struct tether_error *err);
tether_status_t cuda_rpc_client_copy(struct plugin_device *dev, struct plugin_module *module,
                                     const void *client, size_t size, struct plugin_queue *queue,
                                     struct tether_error *err);
tether_status_t cuda_kernel_lookup(struct plugin_device *dev, struct plugin_module *module,
                                   const char *name, struct plugin_kernel **kernel_p,
                                   struct tether_error *err);
void cuda_kernel_release(struct plugin_device *dev, struct plugin_kernel *kernel);
tether_status_t cuda_launch(struct plugin_device *dev, struct plugin_kernel *kernel,
                            const struct plugin_launch *launch, struct plugin_queue *queue,
                            struct tether_error *err);

/* Log a failure that cannot be returned (destroy paths): at debug level when the driver is
 * already shutting down (process exit), as a warning otherwise. */
void cuda_log_teardown(struct cuda_device *cd, CUresult result, const char *call);

#endif /* TETHER_CUDA_PLUGIN_H */
