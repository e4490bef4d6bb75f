/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_backend.h - the AMDGPU backend's objects, shared by its .c files (not by anyone else).
 *
 * Role: fill common/plugin.h's contract with the HSA runtime.  The objects embed common's first
 * (struct amdgpu_device { struct plugin_device base; ... }) and are reached with container_of.
 *
 *   amdgpu_plugin.c   plugin and devices: hsa_init, agents, memory pools, limits, names, info,
 *                     image compatibility (target IDs), the ops table
 *   amdgpu_memory.c   alloc/free (pools), host_register (hsa_amd_memory_lock), copies
 *                     (hsa_amd_memory_async_copy), kernarg blocks
 *   amdgpu_stream.c   signals, HSA queues and AQL submission, plugin queues and events, launch
 *   amdgpu_module.c   code objects through hsa_executable, globals, kernels
 *
 * Devices are GPU agents in hsa_iterate_agents order.  Memory:
 *   PLUGIN_ALLOC_DEVICE  the agent's coarse-grained global pool;
 *   PLUGIN_ALLOC_HOST, PLUGIN_ALLOC_SHARED  the CPU agent's fine-grained pool, made accessible to
 *                        every GPU agent (same address on host and device);
 *   kernargs             the CPU agent's kernarg pool, in 64 blocks of AMDGPU_KERNARG_BLOCK bytes
 *                        carved from one allocation per device, larger ones allocated alone;
 *   pinned host memory   hsa_amd_memory_lock (the agent pointer may differ from the host one).
 *
 * Streams: a struct plugin_queue is an in-order stream.  Every operation gets a completion signal
 * (value 1, decremented to 0 by the runtime) and depends on the stream's previous one: copies
 * through hsa_amd_memory_async_copy's dependency list, kernels through a barrier-AND packet on
 * the stream's HSA queue when the previous operation was not a packet on that queue.  The AQL
 * barrier bit orders packets on one HSA queue.  Each device has AMDGPU_MAX_HW_QUEUES HSA queues
 * at most (TETHER_AMDGPU_QUEUES or LLVM's LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES, default 4), created
 * on demand and shared round-robin by streams. Resources an operation uses (its signal, kernarg
 * block, a temporary host lock) are released when the stream is found complete (queue_sync /
 * queue_query).  Every copy and launch comes with a stream from common, a synchronous call's
 * too (common synchronises it at the end of the call): amdgpu_queue_sync is the one wait for a
 * stream.
 *
 * Locking: the signal pool and the kernarg blocks have one mutex each per device; a stream has its
 * own mutex (common may use one AsyncInfo from a helper thread while another thread queries it);
 * an HSA queue is multi-producer (slots are reserved atomically); the lazy creation of HSA queues
 * takes the device's queue mutex.  No mutex is held while waiting for the device.
 */
#ifndef TETHER_AMDGPU_BACKEND_H
#define TETHER_AMDGPU_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amdgpu_aql.h"
#include "amdgpu_code_object.h"
#include "amdgpu_hsa.h"
#include "amdgpu_target.h"
#include "plugin.h"
#include "plugin_wait.h"

#define AMDGPU_MAX_HW_QUEUES 16
#define AMDGPU_DEFAULT_HW_QUEUES 4
#define AMDGPU_HW_QUEUE_PACKETS 1024u       /* default; capped by HSA_AGENT_INFO_QUEUE_MAX_SIZE */
#define AMDGPU_MAX_QUEUE_PACKETS (1u << 20) /* LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE's largest */
#define AMDGPU_KERNARG_BLOCK 1024u          /* bytes per pooled kernarg block */
#define AMDGPU_KERNARG_BLOCKS 64u           /* blocks per device */
#define AMDGPU_TEAMS_PER_CU 4               /* LLVM 16's default teams per compute unit */
#define AMDGPU_MAX_TEAMS_PER_CU 1024        /* LIBOMPTARGET_AMDGPU_TEAMS_PER_CU's largest */
#define AMDGPU_DEFAULT_THREADS 256          /* LLVM 16's AMDGPU GV_Default_WG_Size */

/* A host range this plugin locked with hsa_amd_memory_lock (for every agent), shared by whoever
 * needs it locked: a pinned-map entry (host_register) and transfers of pageable memory that lies
 * in it.  Unlocked when the last holder lets go. */
struct amdgpu_lock {
    void *host;
    size_t size;
    void *agent; /* the agent pointer of host */
    unsigned refs;
    struct amdgpu_lock *next;
};

struct amdgpu_plugin {
    struct plugin base;
    struct amdgpu_hsa hsa;
    bool hsa_up;                        /* hsa_init succeeded: hsa_shut_down at destroy */
    hsa_agent_t cpu_agent;              /* the first CPU agent */
    hsa_amd_memory_pool_t host_pool;    /* fine-grained, on the CPU agent */
    hsa_amd_memory_pool_t kernarg_pool; /* KERNARG_INIT, on the CPU agent */
    int32_t num_gpus;
    hsa_agent_t *gpus;         /* num_gpus GPU agents, device id = index */
    pthread_mutex_t lock_mu;   /* guards locks */
    struct amdgpu_lock *locks; /* ranges locked by this plugin */
};

struct amdgpu_hw_queue {
    hsa_queue_t *queue;
};

struct amdgpu_device {
    struct plugin_device base;
    struct amdgpu_plugin *ap;
    hsa_agent_t agent;
    char product[64];               /* HSA_AMD_AGENT_INFO_PRODUCT_NAME, may be "" */
    char isa[80];                   /* the agent's first ISA name */
    struct amdgpu_target_id target; /* parsed from isa */
    uint32_t wavefront_size;        /* RPC lane count too */
    uint32_t compute_units;
    uint32_t max_group_size;           /* HSA_AGENT_INFO_WORKGROUP_MAX_SIZE */
    uint32_t grid_max_x;               /* HSA_AGENT_INFO_GRID_MAX_DIM.x */
    uint32_t queue_packets;            /* packets per HSA queue */
    hsa_amd_memory_pool_t device_pool; /* coarse-grained global, ALLOC_ALLOWED */
    size_t device_pool_size;

    /* HSA queues, created on demand up to num_hw_queues */
    pthread_mutex_t queue_lock;
    uint32_t num_hw_queues;
    uint32_t hw_queues_created;
    atomic_uint next_hw_queue;
    struct amdgpu_hw_queue hw_queues[AMDGPU_MAX_HW_QUEUES];
    /* first asynchronous queue error reported by the runtime (hsa_queue_create callback) */
    atomic_int queue_error; /* hsa_status_t, 0 = none */

    uint64_t wait_hint;      /* timeout hint for hsa_signal_wait (~100 ms in timestamp ticks) */
    struct plugin_wait wait; /* how threads wait for this device (TETHER_WAIT) */

    /* completion signals no one references (value reset to 1 before reuse) */
    pthread_mutex_t signal_lock;
    struct amdgpu_signal **free_signals;
    size_t num_free_signals, cap_free_signals;

    /* kernarg blocks: one allocation of AMDGPU_KERNARG_BLOCKS * AMDGPU_KERNARG_BLOCK bytes */
    pthread_mutex_t kernarg_lock;
    uint8_t *kernarg_base; /* NULL until first use */
    uint64_t kernarg_free; /* bit i set: block i is free */
};

/* A completion signal with a reference count: a stream holds one reference for each operation
 * that uses the signal (as completion or dependency) until it finds the operation complete, an
 * event holds one while it is recorded on it.  With no reference left it goes back to the pool,
 * so a signal is never reset for reuse while a packet may still read it. */
struct amdgpu_signal {
    hsa_signal_t hsa;
    atomic_uint refs;
};

/* A resource released when the stream operation that used it completed. */
enum amdgpu_pending_kind {
    AMDGPU_PENDING_SIGNAL,  /* one reference of a signal */
    AMDGPU_PENDING_KERNARG, /* back to the kernarg blocks (or freed if allocated alone) */
    AMDGPU_PENDING_UNLOCK,  /* drop a transfer's hold on a struct amdgpu_lock */
};

struct amdgpu_pending {
    enum amdgpu_pending_kind kind;
    union {
        struct amdgpu_signal *signal;
        struct amdgpu_lock *lock;
        void *ptr;
    } u;
};

/* A stream (common's struct plugin_queue). */
struct plugin_queue {
    struct amdgpu_device *dev;
    pthread_mutex_t lock;
    struct amdgpu_hw_queue *hq; /* NULL until a kernel or event needs one */
    struct amdgpu_signal *last; /* completion signal of the last operation; NULL: none */
    bool last_on_hq;            /* the last operation was a packet on hq */
    struct amdgpu_pending *pending;
    size_t num_pending, cap_pending;
    tether_status_t status; /* first failure, reported by the next sync */
    struct tether_error err;
    const char *last_kernel; /* name of the last kernel enqueued since the stream was last found
                                complete, for the message when its work fails */
};

struct plugin_event {
    pthread_mutex_t lock;
    struct amdgpu_signal *signal; /* the recorded stream's last signal (a reference); NULL:
                                     nothing recorded, complete */
};

struct amdgpu_module {
    struct plugin_module base;
    struct amdgpu_code_object co;
    hsa_executable_t executable;
};

struct amdgpu_loaded_kernel {
    struct plugin_kernel base;
    const struct amdgpu_kernel *meta; /* in the module's code object */
    uint64_t kernel_object;
    uint32_t private_segment_size; /* fixed size, or the stack size for dynamic stacks */
};

extern const struct plugin_ops plugin_backend_ops;

static inline struct amdgpu_plugin *amdgpu_plugin_of(struct plugin *plugin)
{
    return container_of(plugin, struct amdgpu_plugin, base);
}

static inline struct amdgpu_device *amdgpu_device_of(struct plugin_device *dev)
{
    return container_of(dev, struct amdgpu_device, base);
}

/* The converter at the HSA boundary, for the backend: amdgpu_hsa_check() plus a debug log of the
 * failure (the slot that returns the status lets common report it). */
tether_status_t amdgpu_check(const struct amdgpu_device *dev, hsa_status_t status, const char *call,
                             struct tether_error *err);
/* The same before a device exists. */
tether_status_t amdgpu_plugin_check(const struct amdgpu_plugin *ap, hsa_status_t status,
                                    const char *call, struct tether_error *err);

/* ---- amdgpu_plugin.c ---- */
void amdgpu_device_name(struct plugin_device *dev, char *buf, size_t len);

/* ---- amdgpu_memory.c ---- */
tether_status_t amdgpu_alloc(struct plugin_device *dev, size_t size, enum plugin_alloc_kind kind,
                             void **ptr_p, struct tether_error *err);
tether_status_t amdgpu_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                            struct tether_error *err);
tether_status_t amdgpu_host_register(struct plugin_device *dev, void *ptr, size_t size,
                                     void **dev_ptr_p, bool *external_p, struct tether_error *err);
tether_status_t amdgpu_host_unregister(struct plugin_device *dev, void *base, size_t size,
                                       struct tether_error *err);
bool amdgpu_host_pageable(struct plugin_device *dev, const void *ptr, size_t size);
tether_status_t amdgpu_memcpy_h2d(struct plugin_device *dev, void *dst, const void *src,
                                  size_t size, const void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err);
tether_status_t amdgpu_memcpy_d2h(struct plugin_device *dev, void *dst, const void *src,
                                  size_t size, void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err);
tether_status_t amdgpu_memcpy_d2d(struct plugin_device *dst_dev, void *dst,
                                  struct plugin_device *src_dev, const void *src, size_t size,
                                  struct plugin_queue *queue, struct tether_error *err);
/* A kernarg buffer of size bytes (16-byte aligned, zeroed by the packer); *pending_p describes
 * how to give it back (amdgpu_pending_release). */
tether_status_t amdgpu_kernarg_get(struct amdgpu_device *dev, size_t size, void **buf_p,
                                   struct amdgpu_pending *pending_p, struct tether_error *err);
/* Hold [ptr, ptr + size) locked: a range inside one this plugin already locked takes a reference
 * to it; otherwise hsa_amd_memory_lock for every agent.  *agent_p: the agent pointer of ptr;
 * *lock_p: the hold to give back with amdgpu_lock_release(). */
tether_status_t amdgpu_lock_acquire(struct amdgpu_device *dev, void *ptr, size_t size,
                                    void **agent_p, struct amdgpu_lock **lock_p,
                                    struct tether_error *err);
/* Drop one hold; the last one unlocks.  A failed unlock is logged (warning) and returned. */
tether_status_t amdgpu_lock_release(struct amdgpu_device *dev, struct amdgpu_lock *lock,
                                    struct tether_error *err);
void amdgpu_kernarg_put(struct amdgpu_device *dev, void *buf);
void amdgpu_kernarg_fini(struct amdgpu_device *dev);

/* ---- amdgpu_stream.c ---- */
/* A signal (value 1, one reference) for the next operation: the caller hands it to
 * amdgpu_stream_push() once the operation is enqueued, or drops it with amdgpu_signal_unref(). */
tether_status_t amdgpu_signal_get(struct amdgpu_device *dev, struct amdgpu_signal **signal_p,
                                  struct tether_error *err);
void amdgpu_signal_ref(struct amdgpu_signal *signal);
void amdgpu_signal_unref(struct amdgpu_device *dev, struct amdgpu_signal *signal);
/* Room for n more pending resources on q (q->lock held): call before enqueueing, so that
 * amdgpu_stream_push() cannot fail once the device has the work. */
tether_status_t amdgpu_stream_reserve(struct plugin_queue *q, size_t n, struct tether_error *err);
/* Record (q->lock held, room reserved) that an operation completing `signal` was enqueued on q
 * (on_hq: as a packet on q->hq), with extra resources to release after it.  Takes over the
 * caller's reference of signal. */
void amdgpu_stream_push(struct plugin_queue *q, struct amdgpu_signal *signal, bool on_hq,
                        const struct amdgpu_pending *extra, size_t num_extra);
void amdgpu_pending_release(struct amdgpu_device *dev, const struct amdgpu_pending *p);
void amdgpu_device_streams_fini(struct amdgpu_device *dev);

tether_status_t amdgpu_interop_info(struct plugin_device *pdev, struct plugin_queue *queue,
                                    void **device_p, void **context_p, void **stream_p,
                                    struct tether_error *err);
tether_status_t amdgpu_queue_create(struct plugin_device *dev, struct plugin_queue **queue_p,
                                    struct tether_error *err);
void amdgpu_queue_destroy(struct plugin_device *dev, struct plugin_queue *queue);
tether_status_t amdgpu_queue_sync(struct plugin_device *dev, struct plugin_queue *queue,
                                  struct tether_error *err);
tether_status_t amdgpu_queue_query(struct plugin_device *dev, struct plugin_queue *queue,
                                   bool *done_p, struct tether_error *err);
tether_status_t amdgpu_event_create(struct plugin_device *dev, struct plugin_event **event_p,
                                    struct tether_error *err);
void amdgpu_event_destroy(struct plugin_device *dev, struct plugin_event *event);
tether_status_t amdgpu_event_record(struct plugin_device *dev, struct plugin_event *event,
                                    struct plugin_queue *queue, struct tether_error *err);
tether_status_t amdgpu_event_wait(struct plugin_device *dev, struct plugin_event *event,
                                  struct plugin_queue *queue, struct tether_error *err);
tether_status_t amdgpu_event_sync(struct plugin_device *dev, struct plugin_event *event,
                                  struct tether_error *err);
tether_status_t amdgpu_launch(struct plugin_device *dev, struct plugin_kernel *kernel,
                              const struct plugin_launch *launch, struct plugin_queue *queue,
                              struct tether_error *err);

/* ---- amdgpu_module.c ---- */
tether_status_t amdgpu_module_load(struct plugin_device *dev, const struct plugin_image *image,
                                   struct plugin_module **module_p, struct tether_error *err);
void amdgpu_module_unload(struct plugin_device *dev, struct plugin_module *module);
tether_status_t amdgpu_global_lookup(struct plugin_device *dev, struct plugin_module *module,
                                     const char *name, void **addr_p, size_t *size_p,
                                     struct tether_error *err);
tether_status_t amdgpu_kernel_lookup(struct plugin_device *dev, struct plugin_module *module,
                                     const char *name, struct plugin_kernel **kernel_p,
                                     struct tether_error *err);
void amdgpu_kernel_release(struct plugin_device *dev, struct plugin_kernel *kernel);

#endif /* TETHER_AMDGPU_BACKEND_H */
