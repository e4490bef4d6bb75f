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
    uint32_t env_shared_mem;  /* LIBOMPTARGET_SHARED_MEMORY_SIZE, read once */
    atomic_int global_offset; /* -1: not known yet */
    void *probe_target;       /* the process-wide probe address, NULL: probing off */
    struct plugin_slot *slots;
    pthread_mutex_t seen_lock;
    struct plugin_seen_image *seen;
};

/* Internal helpers shared by common's files. */

/* Run a pinned-map call on behalf of `dev`: the map's pin/unpin callbacks reach the backend
 * through this device (any device of the plugin will do for a portable registration, but the one
 * the user named is the natural choice). */
void plugin_pin_device_set(struct plugin_device *dev);
void plugin_device_teardown(struct plugin_device *dev);
tether_status_t plugin_async_acquire(struct plugin_device *dev, struct tgt_async_info *async,
                                     struct plugin_async **pa_p, struct tether_error *err);
void plugin_loaded_release(struct plugin_device *dev, struct plugin_loaded *loaded);
const char *plugin_seen_arch(struct plugin *plugin, const struct tgt_device_image *image,
                             bool *known_p);

/* Device allocations kept for reuse (plugin_pool.c).  create: at device init (reads
 * LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD and TETHER_ALLOC_CACHE_BYTES); destroy: at teardown,
 * before the backend's device_destroy (gives cached blocks back).  alloc: a DEVICE allocation,
 * from the cache when its class has a block.  free: false when `ptr` is not the pool's (the
 * caller frees it), else true with the status in *rc_p. */
struct plugin_pool;
tether_status_t plugin_pool_create(struct plugin_device *dev, struct tether_error *err);
void plugin_pool_destroy(struct plugin_device *dev);
tether_status_t plugin_pool_alloc(struct plugin_device *dev, size_t size, void **ptr_p,
                                  struct tether_error *err);
bool plugin_pool_free(struct plugin_device *dev, void *ptr, tether_status_t *rc_p,
                      struct tether_error *err);

/* RPC hooks (plugin_rpc.c). */
tether_status_t plugin_rpc_attach(struct plugin_device *dev, struct plugin_loaded *loaded,
                                  struct tether_error *err);
void plugin_rpc_detach(struct plugin_device *dev);
/* Refuses (with the reason in err) a kernel started from a user RPC handler of the device, and a
 * GPU kernel in a fork child; restarts the device's servers in a host fork child. */
tether_status_t plugin_rpc_launch_begin(struct plugin_device *dev, struct tether_error *err);
void plugin_rpc_launch_end(struct plugin_device *dev, uint32_t count);

#endif /* TETHER_COMMON_PLUGIN_STATE_H */
