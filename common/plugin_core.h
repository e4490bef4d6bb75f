/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_core.h - the generic layer: what the ABI file (plugin_abi.c) and the unit tests
 * call.  Backends never include this header; they see only plugin.h.
 *
 * Role: every __tgt_rtl_* entry point is a thin wrapper over one function here.  These functions
 * validate arguments, find (and lazily create) devices, keep the pinned map, the queue and event
 * pools and the loaded images, and call the backend's primitives.  They never print: on failure
 * they return a negative status and write the cause to err; the ABI wrapper names the plugin,
 * device and call and prints it (plugin_report()).
 *
 * Thread safety: every function may be called concurrently from any thread, for any devices,
 * except plugin_create() and plugin_destroy(), which must not overlap any other call on the same
 * plugin.  Device creation is serialised per device; the pinned map is lock-free to read.
 *
 * Ownership: a plugin owns its devices; a device owns its modules, kernels, target tables, pinned
 * map, queues and events, all released by plugin_destroy().  Memory returned by plugin_data_alloc
 * belongs to the caller until plugin_data_delete (plugin_destroy does not free it).
 */
#ifndef TETHER_COMMON_PLUGIN_CORE_H
#define TETHER_COMMON_PLUGIN_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin.h"
#include "tgt_abi.h"
#include "tether/tether.h"

/* ---- plugin ----------------------------------------------------------------------------- */

/* Create the generic plugin over a backend's ops table: checks the table (version, required
 * slots, groups all-or-none), calls ops->plugin_create, reads LIBOMPTARGET_INFO / TETHER_DEBUG.
 * A backend reporting zero devices is a success.  On failure nothing is left allocated.
 * TETHER_ERR_INVALID for a malformed table. */
tether_status_t plugin_create(const struct plugin_ops *ops, struct plugin **plugin_p,
                              struct tether_error *err);
/* Destroy: stops RPC, releases every device's images, queues, events and pinned ranges (unpinning
 * what tether pinned), destroys devices, then the backend plugin.  NULL does nothing. */
void plugin_destroy(struct plugin *plugin);

/* Replace the info flags (LIBOMPTARGET_INFO bits) - __tgt_rtl_set_info_flag. */
void plugin_set_info_flags(struct plugin *plugin, uint32_t flags);
/* An info line (as plugin_log at PLUGIN_LOG_INFO) printed when LIBOMPTARGET_INFO has any of
 * `bits` (PLUGIN_INFO_*), each bit on its own, or TETHER_DEBUG is on. */
void plugin_info_log(const struct plugin *plugin, const struct plugin_device *dev, uint32_t bits,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Remember the requires flags (OMP_REQ_*) - __tgt_rtl_init_requires. */
void plugin_set_requires(struct plugin *plugin, int64_t flags);

/* The device with plugin-local id, creating it on first use (device_create + device_limits +
 * pinned map).  TETHER_ERR_NO_DEVICE for an id out of range.  A failed creation is retried on
 * the next call. */
tether_status_t plugin_device_get(struct plugin *plugin, int32_t id, struct plugin_device **dev_p,
                                  struct tether_error *err);
/* The device if already created, else NULL.  Never creates, never blocks. */
struct plugin_device *plugin_device_peek(struct plugin *plugin, int32_t id);

/* Map a global OpenMP device number (data_lock/data_unlock pass it) to this plugin's local id.
 * See docs/plugin-interface.md, "Global and local device ids". */
tether_status_t plugin_global_to_local(struct plugin *plugin, int32_t global, int32_t *local_p,
                                       struct tether_error *err);

/* ---- images ----------------------------------------------------------------------------- */

/* An image of another backend (e_machine `machine`, OffloadBinary arch or NULL) that this plugin
 * does not run: when the tether plugin for that machine has no device in this process, say why
 * (its plugin_create's reason), once: a warning when OMP_TARGET_OFFLOAD=MANDATORY (libomptarget
 * then stops without naming the cause), else an info line (LIBOMPTARGET_INFO & 0x10). */
void plugin_image_unserved(struct plugin *plugin, uint16_t machine, const char *arch);

/* is_valid_binary(_info): true when the image (OffloadBinary-wrapped or not) is an ELF for this
 * backend and the backend's image_compatible (if any) accepts it with this arch (NULL: unknown).
 * Remembers the arch for plugin_image_load. */
bool plugin_image_valid(struct plugin *plugin, const struct tgt_device_image *image,
                        const char *arch);
/* load_binary: load the image on the device, resolve every host entry by name (globals: device
 * address, checked size; kernels: a struct plugin_kernel), write the device environment, attach
 * RPC if the image has the client symbol.  The table stays valid until plugin_destroy. */
tether_status_t plugin_image_load(struct plugin_device *dev, const struct tgt_device_image *image,
                                  struct tgt_target_table **table_p, struct tether_error *err);

/* ---- memory ------------------------------------------------------------------------------ */

/* Allocate with a TargetAllocTy kind (0..3).  HOST memory is registered in the pinned map. */
tether_status_t plugin_data_alloc(struct plugin_device *dev, int64_t size, int32_t kind,
                                  void **ptr_p, struct tether_error *err);
/* Free what ptr is, whatever kind is passed (0..3, checked): the base of a registered pinned range
 * is HOST memory, unregistered first (TETHER_ERR_BUSY, nothing freed, if users still lock part of
 * it); a live DEVICE or SHARED allocation of any device of the plugin is freed as such; anything
 * else is TETHER_ERR_NOT_FOUND and nothing is freed (a second free, a pointer inside). */
tether_status_t plugin_data_delete(struct plugin_device *dev, void *ptr, int32_t kind,
                                   struct tether_error *err);
/* Host to device, on the AsyncInfo's queue; async NULL: synchronous (on a queue of the call's own,
 * synchronised before return). */
tether_status_t plugin_data_submit(struct plugin_device *dev, void *tgt, const void *hst,
                                   int64_t size, struct tgt_async_info *async,
                                   struct tether_error *err);
/* Device to host. */
tether_status_t plugin_data_retrieve(struct plugin_device *dev, void *hst, const void *tgt,
                                     int64_t size, struct tgt_async_info *async,
                                     struct tether_error *err);
/* Device to device (dst queue). */
tether_status_t plugin_data_exchange(struct plugin_device *src_dev, const void *src,
                                     struct plugin_device *dst_dev, void *dst, int64_t size,
                                     struct tgt_async_info *async, struct tether_error *err);
/* True when the backend copies between these devices itself. */
bool plugin_data_exchangeable(const struct plugin *plugin);

/* Lock (pin) a host range through the pinned map; *dev_ptr_p = device-accessible address. */
tether_status_t plugin_data_lock(struct plugin_device *dev, void *ptr, int64_t size,
                                 void **dev_ptr_p, struct tether_error *err);
/* Drop one reference of the locked range containing ptr. */
tether_status_t plugin_data_unlock(struct plugin_device *dev, void *ptr, struct tether_error *err);
/* Number of entries in the device's pinned map. */
size_t plugin_pinned_count(struct plugin_device *dev);

/* ---- launch, queues, events -------------------------------------------------------------- */

/* launch_kernel: entry is a kernel address from this device's target table. */
tether_status_t plugin_launch_kernel(struct plugin_device *dev, void *entry, void **tgt_args,
                                     const ptrdiff_t *tgt_offsets,
                                     const struct tgt_kernel_args *kargs,
                                     struct tgt_async_info *async, struct tether_error *err);
/* Launch limits from the environment, read once per plugin; 0 means not set.  The meaning LLVM
 * 16's CUDA and AMDGPU plugins give them (docs/plugin-interface.md, "Launch"):
 *   teams_thread_limit  OMP_TEAMS_THREAD_LIMIT: most threads per team, thread_limit clauses too
 *   team_limit          OMP_TEAM_LIMIT: most teams per launch, num_teams clauses too
 *   num_teams           OMP_NUM_TEAMS: teams of a region without num_teams (no trip-count sizing)
 */
struct plugin_launch_env {
    uint32_t teams_thread_limit;
    uint32_t team_limit;
    uint32_t num_teams;
};

/* Read the three variables (unset, unparseable or <= 0: 0; above UINT32_MAX: UINT32_MAX). */
void plugin_launch_env_read(struct plugin_launch_env *env);

/* Compute launch geometry from kernel args, device limits and the environment's limits (env may
 * be NULL: none); LLVM 16's rules; exposed for tests. */
void plugin_launch_geometry(const struct plugin_device_limits *limits,
                            const struct plugin_launch_env *env, uint32_t kernel_max_threads,
                            uint8_t exec_mode, const struct tgt_kernel_args *kargs,
                            uint32_t *teams_p, uint32_t *threads_p);

/* synchronize: wait for the AsyncInfo's queue, return it to the pool, set Queue = NULL. */
tether_status_t plugin_async_sync(struct plugin_device *dev, struct tgt_async_info *async,
                                  struct tether_error *err);
/* query_async: like sync when the work is done, otherwise leave Queue set and return OK. */
tether_status_t plugin_async_query(struct plugin_device *dev, struct tgt_async_info *async,
                                   struct tether_error *err);
/* init_device_info (interop): the device's native handle and context.  Fails with
 * TETHER_ERR_UNSUPPORTED when the backend has no interop_info slot. */
tether_status_t plugin_interop_device(struct plugin_device *dev, struct tgt_device_info *info,
                                      struct tether_error *err);
/* init_async_info (interop targetsync): a new AsyncInfo whose Queue is the native stream of a
 * queue of its own; the device owns it until teardown (libomptarget 16 never releases it). */
tether_status_t plugin_interop_async(struct plugin_device *dev, struct tgt_async_info **async_p,
                                     struct tether_error *err);

tether_status_t plugin_event_create(struct plugin_device *dev, void **event_p,
                                    struct tether_error *err);
tether_status_t plugin_event_record(struct plugin_device *dev, void *event,
                                    struct tgt_async_info *async, struct tether_error *err);
tether_status_t plugin_event_wait(struct plugin_device *dev, void *event,
                                  struct tgt_async_info *async, struct tether_error *err);
tether_status_t plugin_event_sync(struct plugin_device *dev, void *event, struct tether_error *err);
tether_status_t plugin_event_destroy(struct plugin_device *dev, void *event,
                                     struct tether_error *err);

/* ---- reporting and queries --------------------------------------------------------------- */

/* Print "tether (<name>): device <id>: <call> failed: <status text>: <err->msg>" to stderr. id
 * < 0: no device part. */
void plugin_report(const struct plugin *plugin, int32_t id, const char *call,
                   tether_status_t status, const struct tether_error *err);
/* print_device_info for local id. */
void plugin_print_device_info(struct plugin *plugin, int32_t id);
/* Fill a public device description for local id (creates the device if needed). */
tether_status_t plugin_device_describe(struct plugin *plugin, int32_t id,
                                       struct tether_device_info *info_p, struct tether_error *err);

/* ---- the probe (docs/plugin-interface.md, "Global and local device ids") ---------------- */

/* The host-side record a probe carries through omp_target_memcpy to the plugin owning a global
 * device number.  Shared by every tether plugin in a process: only append fields, bump version. */
#define PLUGIN_PROBE_MAGIC 0x74657468657250ULL /* "tetherP" */
#define PLUGIN_PROBE_VERSION 1
struct plugin_probe {
    uint64_t magic;
    uint32_t version;
    int32_t omp_device;             /* in: the global device number probed */
    int32_t answered;               /* out: 1 when a tether plugin answered */
    int32_t status;                 /* out: tether_status_t of the description */
    struct tether_device_info info; /* out */
};

/* Bind the plugin to the process's probe target (the first tether plugin's exported
 * tether_rtl_probe_target, found with dlsym); NULL disables probing (unit tests). */
void plugin_probe_bind(struct plugin *plugin, void *target);
/* True when a data_submit to `tgt` is a probe and not a transfer. */
bool plugin_probe_is(const struct plugin *plugin, const void *tgt);
/* Answer a probe that arrived on local device id: fill it, learn the global offset. */
tether_status_t plugin_probe_answer(struct plugin *plugin, int32_t id, void *hst, int64_t size,
                                    struct tether_error *err);
/* Send a probe for global device omp_device through libomptarget (omp_target_memcpy). */
tether_status_t plugin_probe_send(struct plugin *plugin, int32_t omp_device,
                                  struct plugin_probe *probe_p, struct tether_error *err);

/* ---- RPC hooks (common/plugin_rpc.c) ------------------------------------------------------ */

/* Name of the device global that marks an image as an RPC client. */
#define PLUGIN_RPC_CLIENT_SYMBOL "__tether_rpc_client"
/* After loading an image on a GPU, say once per process, under LIBOMPTARGET_INFO & 0x10, when
 * the driver rather than tether serves some of its device services: without the client
 * (`client` false), if it calls vprintf, printf, malloc or free, how to get tether's (compile
 * with tether/device_libc.h, link -ltether-device after the program's sources); with the
 * client, if it still calls vprintf (a source compiled without tether/device_libc.h).  On the
 * host an image's printf and malloc are the C library's own: nothing to say. */
void plugin_rpc_driver_services(struct plugin_device *dev, const struct plugin_image *image,
                                bool client);

#endif /* TETHER_COMMON_PLUGIN_CORE_H */
