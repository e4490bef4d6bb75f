/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_state.h - common's private state behind struct plugin and struct plugin_device.
 *
 * Only the .c files of common/ include this.  Locking: each device has one mutex (`lock`) guarding
 * its pools and image list; it is never held across a backend call that may block on the device.
 * Device slots are published with release stores and read with acquire loads (plugin_device_peek
 * never locks).
 */
#ifndef TETHER_COMMON_PLUGIN_STATE_H
#define TETHER_COMMON_PLUGIN_STATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "pinned_map.h"
#include "plugin_core.h"

#define PLUGIN_KERNEL_MAGIC 0x6b65726eu /* "kern" */

/* An AsyncInfo->Queue: a backend queue plus what common tracks about the work on it. */
struct plugin_async {
    struct plugin_queue *queue; /* the backend's queue */
    uint32_t launches;          /* kernels enqueued since the last completion (RPC accounting) */
};

/* An image loaded on a device, with the target table handed to libomptarget. */
struct plugin_loaded {
    const struct tgt_device_image *tgt_image;
    struct plugin_module *module;
    struct plugin_kernel *kernels; /* list through kernel->next */
    struct tgt_offload_entry *entries;
    struct tgt_target_table table;
    bool rpc; /* image has PLUGIN_RPC_CLIENT_SYMBOL */
    struct plugin_loaded *next;
};

/* An image accepted by plugin_image_valid, with the arch it came with. */
struct plugin_seen_image {
    const struct tgt_device_image *tgt_image;
    char *arch; /* NULL: unknown */
    struct plugin_seen_image *next;
};

/* The AsyncInfo of an interop object (`#pragma omp interop init(targetsync: ...)`): its Queue is
 * the backend's NATIVE stream, which the program reads with omp_get_interop_ptr(omp_ipr_targetsync)
 * and gives to libraries (cuBLAS, hipBLAS).  libomptarget 16 never hands it back to the plugin
 * (it has no call to release it), so the device keeps each one until teardown. */
struct plugin_interop {
    struct tgt_async_info async; /* first: libomptarget holds &async */
    struct plugin_queue *queue;
    struct plugin_interop *next;
};

struct plugin_device_state {
    pthread_mutex_t lock;
    struct plugin_async **queues; /* free pool */
    size_t num_queues, cap_queues;
    struct plugin_event **events; /* free pool */
    size_t num_events, cap_events;
    struct plugin_loaded *loaded;
    size_t num_loaded;
    char name[96];
    atomic_uint_fast64_t kernels_running; /* launched and not known complete (RPC) */
    void *rpc;                            /* RPC server state, owned by plugin_rpc.c */
    struct plugin_pool *pool;             /* cached device allocations (plugin_pool.c) */
    struct plugin_interop *interops;      /* every interop AsyncInfo handed out, until teardown */
    struct plugin_stage *stage;           /* staging buffers (plugin_stage.c); NULL: no staging */
};

struct plugin_slot {
    pthread_mutex_t lock;                 /* serialises creation of this device */
    struct plugin_device *_Atomic device; /* published once created */
};

struct plugin_state {
    const char *name;
    /* ONE pinned map per plugin (per driver), not per device: a CUDA registration (PORTABLE) is
     * valid for every device and an HSA lock with no agent list covers every agent, so locking a
     * range through device 1 that device 0 already pinned must add a reference, not pin twice,
     * and unlocking through one device must not unpin what another still uses.  See
     * docs/pinned-memory.md. */
    struct pinned_map *pinned;
    atomic_uint info_flags;
    bool debug;
    int64_t requires_flags;
    /* OMP_TEAMS_THREAD_LIMIT, OMP_TEAM_LIMIT, OMP_NUM_TEAMS, read once */
    struct plugin_launch_env launch_env;
    uint32_t env_shared_mem;  /* LIBOMPTARGET_SHARED_MEMORY_SIZE, read once */
    atomic_int global_offset; /* -1: not known yet */
    void *probe_target;       /* the process-wide probe address, NULL: probing off */
    struct plugin_slot *slots;
    pthread_mutex_t seen_lock;
    struct plugin_seen_image *seen;
};

/* Internal helpers shared by common's files. */

/* plugin_env.c: TETHER_DEBUG (or LLVM's LIBOMPTARGET_DEBUG) and the LIBOMPTARGET_INFO mask. */
bool plugin_env_debug(void);
uint32_t plugin_env_info(void);
/* plugin_log.c: OMP_TARGET_OFFLOAD=MANDATORY; remember why a backend has no device (said when
 * the program's image for it finds none, plugin_image_unserved). */
bool plugin_offload_mandatory(void);
void plugin_absent_record(const struct plugin_ops *ops, const char *why);

/* The created device with the lowest id, NULL when none was created yet. */
struct plugin_device *plugin_device_first(struct plugin *plugin);
void plugin_device_teardown(struct plugin_device *dev);
/* The queue of an AsyncInfo, attached from the device's pool on first use. */
tether_status_t plugin_async_acquire(struct plugin_device *dev, struct tgt_async_info *async,
                                     struct plugin_async **pa_p, struct tether_error *err);
/* The queue a call puts its work on: the AsyncInfo's (plugin_async_acquire), or for a
 * synchronous call (async NULL) one from the pool for this call alone.  After enqueueing (rc: how
 * that went), plugin_queue_end synchronises such a queue (when rc is TETHER_OK) and gives it back
 * (destroys it when its work failed), and returns the first error; an AsyncInfo's queue stays
 * attached and rc is returned as it is. */
tether_status_t plugin_queue_begin(struct plugin_device *dev, struct tgt_async_info *async,
                                   struct plugin_async **pa_p, struct tether_error *err);
tether_status_t plugin_queue_end(struct plugin_device *dev, struct tgt_async_info *async,
                                 struct plugin_async *pa, tether_status_t rc,
                                 struct tether_error *err);
/* Fill the device's queue and event pools with limits.initial_queues and initial_events at init;
 * drain them (destroying every pooled queue and event) at teardown or a failed init. */
tether_status_t plugin_async_prefill(struct plugin_device *dev, struct tether_error *err);
void plugin_async_drain(struct plugin_device *dev);
/* A synchronous host-to-device write of common's own (device environment, globals, the RPC
 * client): no pinned-map lookup, no transfer log line. */
tether_status_t plugin_write_device(struct plugin_device *dev, void *dst, const void *src,
                                    size_t size, struct tether_error *err);
void plugin_loaded_release(struct plugin_device *dev, struct plugin_loaded *loaded);
const char *plugin_seen_arch(struct plugin *plugin, const struct tgt_device_image *image,
                             bool *known_p);

/* Device allocations kept for reuse, and the record of every live DEVICE and SHARED allocation
 * (plugin_pool.c).  create: at device init (reads LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD and
 * TETHER_ALLOC_CACHE_BYTES); destroy: at teardown, before the backend's device_destroy (gives
 * cached blocks back).  alloc: a DEVICE allocation (from the cache when its class has a block) or
 * a SHARED one, recorded; TETHER_ERR_NO_MEMORY, nothing allocated, when it cannot be recorded.
 * free: false when `ptr` is not a live allocation the pool recorded (nothing freed), else true
 * with the status in *rc_p (freed with the kind it was allocated with, or cached). */
struct plugin_pool;
tether_status_t plugin_pool_create(struct plugin_device *dev, struct tether_error *err);
void plugin_pool_destroy(struct plugin_device *dev);
tether_status_t plugin_pool_alloc(struct plugin_device *dev, size_t size,
                                  enum plugin_alloc_kind kind, void **ptr_p,
                                  struct tether_error *err);
bool plugin_pool_free(struct plugin_device *dev, void *ptr, tether_status_t *rc_p,
                      struct tether_error *err);

/* Large copies of pageable host memory through pinned staging buffers (plugin_stage.c), for
 * backends with host_pageable.  create: at device init (nothing is allocated until the first
 * staged copy); destroy: at teardown, before the backend's device_destroy.  h2d/d2h: false when
 * the copy is not for them (small, memory the driver knows, staging off, buffers busy or
 * refused: the caller then hands the copy to the backend as it is), else true with the copy's
 * status in *rc_p: enqueued on queue with the source read (h2d), or complete (d2h).  shutdown:
 * stop the helper threads, once, when the plugin is destroyed. */
struct plugin_stage;
tether_status_t plugin_stage_create(struct plugin_device *dev, struct tether_error *err);
void plugin_stage_destroy(struct plugin_device *dev);
bool plugin_stage_h2d(struct plugin_device *dev, void *dst, const void *src, size_t size,
                      struct plugin_queue *queue, tether_status_t *rc_p, struct tether_error *err);
bool plugin_stage_d2h(struct plugin_device *dev, void *dst, const void *src, size_t size,
                      struct plugin_queue *queue, tether_status_t *rc_p, struct tether_error *err);
void plugin_stage_shutdown(void);

/* RPC hooks (plugin_rpc.c). */
tether_status_t plugin_rpc_attach(struct plugin_device *dev, struct plugin_loaded *loaded,
                                  const struct plugin_image *image, struct tether_error *err);
void plugin_rpc_detach(struct plugin_device *dev);
/* Refuses (with the reason in err) a kernel started from a user RPC handler of the device, and a
 * GPU kernel in a fork child; restarts the device's servers in a host fork child. */
tether_status_t plugin_rpc_launch_begin(struct plugin_device *dev, struct tether_error *err);
void plugin_rpc_launch_end(struct plugin_device *dev, uint32_t count);

#endif /* TETHER_COMMON_PLUGIN_STATE_H */
