/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin.h - the backend contract of tether's plugins.
 *
 * Role: common/ implements the libomptarget 16 plugin ABI (__tgt_rtl_*) once.  A backend (host,
 * cuda, amdgpu) supplies only primitives, through ONE const table of function pointers,
 * `struct plugin_ops`, defined in the backend as
 *
 *     const struct plugin_ops plugin_backend_ops = { .version = PLUGIN_OPS_VERSION, ... };
 *
 * and linked into its plugin with tether_add_plugin() (common/CMakeLists.txt).  Everything generic
 * lives in common/: argument checks, the device table and lazy per-device init, image validation
 * (OffloadBinary/ELF, e_machine, arch), LLVM bitcode images compiled at load time (the backend only
 * turns the compiler's output into its image: ops->jit), the target table, the device
 * environment, the pinned map (lock/unlock and transfers), queue and event pools, synchronous
 * calls, grid/block computation, logging and LIBOMPTARGET_INFO messages, error messages that name
 * device, call and cause, the RPC hooks.
 *
 * Objects.  The backend allocates its objects and embeds the generic object FIRST, then gets back
 * to its own type with container_of():
 *
 *     struct cuda_device { struct plugin_device base; CUdevice dev; CUcontext ctx; ... };
 *     struct cuda_device *cd = container_of(dev, struct cuda_device, base);
 *
 *   struct plugin        <- plugin_create()     one per loaded plugin library
 *   struct plugin_device <- device_create()     one per device, created lazily on first use
 *   struct plugin_module <- module_load()       one per (device, image)
 *   struct plugin_kernel <- kernel_lookup()     one per (module, kernel entry)
 *   struct plugin_queue, struct plugin_event    opaque: completed by each backend (e.g. a CUstream
 *                                               wrapper); common only stores and hands them back.
 * Fields of the generic objects are written by common (after the creating slot returns) and may be
 * read by the backend; the backend never writes them except where a slot says so.
 *
 * Invariants every slot may assume:
 *  - Arguments were validated by common: devices exist and were created, sizes are > 0, pointers
 *    are non-NULL, kinds are in range, kernels and modules belong to the device passed.
 *  - TARGET_ALLOC_DEFAULT never reaches a backend: common maps it to PLUGIN_ALLOC_DEVICE.
 *  - `err` is never NULL.  On failure a slot returns a negative tether_status_t and writes one line
 *    to err->msg naming the driver call and the driver's own error string (plugin_error_set());
 *    common prefixes it with the plugin, device and ABI call, and prints/logs it.  The slot that
 *    fails cleans up what it did itself; output parameters (_p) are written only on success.
 *  - Optional slots may be NULL; common checks each at exactly one call site and then either
 *    falls back (documented per slot) or reports TETHER_ERR_UNSUPPORTED.  Slots marked "group"
 *    are all set or all NULL.
 *  - Every copy and launch gets a queue (never NULL) and only enqueues its work.  A synchronous
 *    libomptarget call (data_submit, data_retrieve, data_exchange, a launch without AsyncInfo)
 *    and common's own writes (device environment, globals) take a queue from common's pool,
 *    which common then synchronises (queue_sync) and gives back: queue_sync is the one place a
 *    backend waits for its queues' work.
 *
 * Thread safety: libomptarget calls the ABI from many threads at once (host threads, hidden helper
 * threads for nowait, the RPC server thread).  Every slot except plugin_create/plugin_destroy and
 * device_create/device_destroy may be called concurrently, for the same or different devices,
 * from any thread; the backend makes its own context current on the calling thread where the
 * driver needs it (CUDA: cuCtxSetCurrent) and protects its own mutable state.  Common serialises
 * device_create/device_destroy per device, and never calls plugin_destroy while another slot runs.
 * Common never holds one of its locks while calling a slot that may block on the device (memcpy,
 * launch, sync), so a slow driver never blocks lookups or other devices.
 *
 * Memory model: PLUGIN_ALLOC_HOST memory is page-locked host memory the device can access at the
 * SAME address (UVA: true for CUDA and HSA); common registers it in the plugin's pinned map.
 * host_register() may return a device-accessible address different from the host address (HSA
 * agent pointers); common hands that address back to the backend in transfers (`host_dev`).
 *
 * Design notes (life cycle, global vs local device ids, the probe, RPC): docs/plugin-interface.md.
 */
#ifndef TETHER_COMMON_PLUGIN_H
#define TETHER_COMMON_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a slot is added, removed or changes meaning.  plugin_create() in common refuses
 * a table whose version differs (an old backend built against a new common). */
#define PLUGIN_OPS_VERSION 7

#ifndef container_of
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#endif

struct plugin_state;        /* common-private, per plugin */
struct plugin_device_state; /* common-private, per device */
struct plugin_queue;        /* backend-defined: an in-order stream of work */
struct plugin_event;        /* backend-defined: a marker recorded on a queue */

/* Kinds of allocation, numerically equal to libomptarget's TargetAllocTy. */
enum plugin_alloc_kind {
    PLUGIN_ALLOC_DEVICE = 0, /* device memory, only the device accesses it */
    PLUGIN_ALLOC_HOST = 1,   /* page-locked host memory, device-accessible at the same address */
    PLUGIN_ALLOC_SHARED = 2, /* managed/unified memory, migrates between host and device */
    PLUGIN_ALLOC_DEFAULT = 3 /* what mapping uses; common turns it into PLUGIN_ALLOC_DEVICE */
};

/* Kernel execution modes, as stored in the image symbol <kernel>_exec_mode (OMPTgtExecModeFlags).
 */
enum plugin_exec_mode {
    PLUGIN_EXEC_GENERIC = 1,
    PLUGIN_EXEC_SPMD = 2,
    PLUGIN_EXEC_GENERIC_SPMD = 3
};

/* Log levels for plugin_log(). ERROR and WARN always print; INFO prints when LIBOMPTARGET_INFO
 * has PLUGIN_INFO_PLUGIN set or TETHER_DEBUG is set; DEBUG only with TETHER_DEBUG. */
enum plugin_log_level {
    PLUGIN_LOG_ERROR = 0,
    PLUGIN_LOG_WARN = 1,
    PLUGIN_LOG_INFO = 2,
    PLUGIN_LOG_DEBUG = 3
};

/* LIBOMPTARGET_INFO bits (include/Debug.h of libomptarget 16) that tether's plugins honour. */
#define PLUGIN_INFO_MAPPING_CHANGED 0x08u /* pinned-map changes: lock, unlock, host alloc */
#define PLUGIN_INFO_PLUGIN 0x10u          /* device init, image load, kernel launch geometry */
#define PLUGIN_INFO_DATA_TRANSFER 0x20u   /* transfers: pinned or pageable path */

/* The plugin: backends embed it first in their own plugin-wide struct. */
struct plugin {
    const struct plugin_ops *ops; /* set by common; a backend may set it in plugin_create so
                                     that its own log lines there carry its name */
    int32_t num_devices;          /* set by the backend in plugin_create(); 0 is allowed */
    struct plugin_state *state;   /* common-private */
};

/* Limits of a device, reported once by device_limits(); common computes grid and block from them
 * exactly as LLVM 16's nextgen plugins do (docs/plugin-interface.md, "Launch geometry"). */
struct plugin_device_limits {
    uint32_t warp_size;       /* lanes per warp/wavefront: 32 (NVIDIA), 64 (AMD), 1 (host) */
    uint32_t max_threads;     /* most threads per team (block dim x) */
    uint32_t max_teams;       /* most teams per launch (grid dim x) */
    uint32_t default_threads; /* threads when the program gives no thread_limit (128 NVIDIA) */
    uint32_t default_teams;   /* teams when neither num_teams nor a trip count is known (3200) */
    uint32_t rpc_ports;       /* RPC ports per image by default; 0: common's choice (64, or 4 x
                                 CPUs, on the host; 4096 on GPUs) */
    uint32_t rpc_lanes;       /* lanes of a port (buffers per port): the most lanes of a device
                                 call; 0: warp_size (32 on the host, whose wide calls use all) */
    /* The device's PCI address as sysfs names it under /sys/bus/pci/devices: lower-case hex
     * "dddd:bb:dd.f" (domain, bus, device, function), NUL-terminated; "" when unknown (the host,
     * or a driver that cannot tell).  Common places the device's RPC server thread on the cores
     * local to it (docs/rpc-services.md section 8). */
    char pci_bus_id[32];
    /* Whether kernels can dereference any host address, pageable memory included (HMM or ATS):
     * `#pragma omp requires unified_shared_memory` needs it, since libomptarget 16 then passes
     * host pointers for mapped data.  PLUGIN_HOST_ACCESS_*; UNKNOWN (0) says nothing. */
    uint32_t host_access;
    const char *host_access_why; /* static text: where host_access comes from, for messages */
    /* Queues and events common creates with the device into its pools, so that the first target
     * regions do not pay for them (CUDA: LIBOMPTARGET_NUM_INITIAL_STREAMS and _EVENTS); 0: made
     * on first use.  Events only where the backend has the event group. */
    uint32_t initial_queues;
    uint32_t initial_events;
};

enum plugin_host_access {
    PLUGIN_HOST_ACCESS_UNKNOWN = 0,
    PLUGIN_HOST_ACCESS_PAGEABLE = 1, /* any host address */
    PLUGIN_HOST_ACCESS_PINNED = 2,   /* only pinned or registered host memory */
};

/* A device: backends embed it first in their own device struct. */
struct plugin_device {
    struct plugin *plugin;              /* set by common */
    int32_t id;                         /* plugin-local id, 0..num_devices-1; set by common */
    struct plugin_device_limits limits; /* set by common from device_limits() */
    struct plugin_device_state *state;  /* common-private */
};

/* A device image as the backend sees it: the bytes libomptarget handed over with any OffloadBinary
 * wrapper removed, already checked to be an ELF of ops->elf_machine.  (One exception:
 * image_compatible also sees the LLVM bitcode images that ops->jit accepts, whose arch is then the
 * only field worth reading; module_load gets the ELF that ops->jit->link made of them.) */
struct plugin_image {
    const void *start; /* first byte of the ELF; 8-byte aligned not guaranteed */
    size_t size;       /* bytes */
    const char *arch; /* OffloadBinary arch ("sm_90", "gfx90a", "" for x86_64) or NULL if unknown */
};

/* A loaded image on one device. */
struct plugin_module {
    struct plugin_device *dev; /* set by common */
};

/* A kernel of a loaded module.  Its address is what the target table hands to libomptarget and
 * what libomptarget hands back to launch_kernel. */
struct plugin_kernel {
    uint32_t magic;            /* set by common: guards against foreign entry pointers */
    uint8_t exec_mode;         /* set by common from <name>_exec_mode in the image (SPMD if none) */
    uint32_t max_threads;      /* set by the backend in kernel_lookup(): per-kernel thread limit,
                                  0 = the device's limits.max_threads */
    struct plugin_module *mod; /* set by common */
    const char *name;          /* set by common: the entry name (owned by the host table) */
    struct plugin_kernel *next; /* common-private: the module's list of kernels */
};

/* One kernel launch, fully resolved by common. */
struct plugin_launch {
    uint32_t num_teams;      /* grid dim x, 1..limits.max_teams */
    uint32_t num_threads;    /* block dim x, 1..min(limits.max_threads, kernel max_threads) */
    uint32_t dyn_shared_mem; /* dynamic shared (group) memory per team, bytes */
    uint32_t num_args;       /* number of kernel parameters */
    void **args;             /* num_args pointer-sized parameter VALUES: (char *)TgtArgs[i] +
                                TgtOffsets[i] */
    void **arg_ptrs;         /* num_args pointers to them, arg_ptrs[i] == &args[i]: what CUDA's
                                kernelParams and libffi's argument values take */
    uint64_t tripcount;      /* loop trip count clang computed, 0 if unknown (informational) */
};

/* Key/value emitter for device_info(): prints one "  key: value" line of print_device_info. */
typedef void (*plugin_info_emit_t)(void *ctx, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* LLVM bitcode images (clang -fopenmp-target-jit), for plugin_ops.jit.  Common accepts such an
 * image at is_valid_binary when its triple's architecture is `triple` and refusal is NULL; at
 * load_binary it compiles the bitcode for the device's cpu() (once per image and cpu name, kept
 * until shutdown) and hands the output to link(); what link() returns goes on as the image
 * (module_load, symbol reads), so it must be an ELF of elf_machine.  docs/plugin-interface.md,
 * "JIT images". */
struct plugin_jit_ops {
    /* The triple architecture of the bitcode this backend runs: "nvptx64", "amdgcn", "x86_64".
     * A bitcode image for another triple is not this backend's. */
    const char *triple;
    /* NULL when the backend runs such images.  Otherwise the reason it cannot, as a clause
     * ("needs ..."): common refuses those images with it (once at LIBOMPTARGET_INFO, on stderr
     * under OMP_TARGET_OFFLOAD=MANDATORY), and cpu and link are never called. */
    const char *refusal;
    /* Required unless refusal.  The LLVM cpu name to compile for on this device ("sm_90"),
     * NUL-terminated into buf (len bytes). */
    void (*cpu)(struct plugin_device *dev, char *buf, size_t len);
    /* Required unless refusal.  Turn what LLVM emitted for the device (nvptx64: PTX text;
     * others: an object file), or the user's LIBOMPTARGET_JIT_REPLACEMENT_OBJECT, into the
     * image: malloc'ed bytes in *image_p (the caller frees them), their size in *size_p.  code
     * is followed by a NUL byte that size does not count.  Called with no common lock but the
     * JIT cache's held. */
    tether_status_t (*link)(struct plugin_device *dev, const void *code, size_t size,
                            void **image_p, size_t *size_p, struct tether_error *err);
};

/*
 * The ops table.  One `const` instance per backend, designated initializers, slots in this order.
 * Each slot: what it does, when common calls it, what it may assume, what to return.
 */
struct plugin_ops {
    /* Must be PLUGIN_OPS_VERSION. */
    uint32_t version;
    /* Short name used in library and message prefixes: "x86_64", "cuda", "amdgpu". */
    const char *name;
    /* e_machine of the images this backend runs: EM_X86_64 (62), EM_CUDA (190), EM_AMDGPU (224).
     * common accepts an image only if it is an ELF (64-bit, little endian) with this e_machine. */
    uint16_t elf_machine;

    /* ---- plugin life cycle ---------------------------------------------------------------- */

    /* Required.  Called once, from __tgt_rtl_init_plugin (libomptarget's constructor).  Allocate
     * the backend's plugin struct (zeroed, struct plugin first), load the driver (dlopen),
     * initialise it and count devices into (*plugin_p)->num_devices.  A missing driver or no
     * device is NOT an error: return TETHER_OK with num_devices = 0 and the reason in err->msg
     * ("no CUDA driver (...); the CUDA plugin has 0 devices"), which common prints at info level
     * and repeats as a warning when a program's image for this backend then finds no device while
     * offloading is mandatory.  Any other failure: a warning-worthy error status with the
     * driver's message; common then reports zero devices.  Must not create per-device contexts
     * (that is device_create, lazily).  Set
     * (*plugin_p)->ops = &plugin_backend_ops first if you log here (messages name the backend). */
    tether_status_t (*plugin_create)(struct plugin **plugin_p, struct tether_error *err);
    /* Required.  Called once at shutdown after every device was destroyed; frees what
     * plugin_create allocated (and dlcloses the driver if it wants to). Cannot fail. */
    void (*plugin_destroy)(struct plugin *plugin);

    /* Optional.  Extra image check after common's ELF/e_machine checks, e.g. CUDA: arch "sm_XY"
     * runs on every device (same major, minor >= image's).  image->arch may be NULL (unknown: be
     * permissive) or "" (no arch given).  NULL slot: every image of elf_machine is accepted. */
    bool (*image_compatible)(struct plugin *plugin, const struct plugin_image *image);

    /* ---- devices --------------------------------------------------------------------------- */

    /* Required.  Lazily, on the first use of device `id` (__tgt_rtl_init_device, or any call that
     * needs the device).  Allocate the backend device (struct plugin_device first), create its
     * context/queues-to-be.  Common serialises calls for one id. */
    tether_status_t (*device_create)(struct plugin *plugin, int32_t id,
                                     struct plugin_device **dev_p, struct tether_error *err);
    /* Required.  At shutdown, after common released every module, queue, event, pinned range and
     * allocation it knows of on this device.  Frees the backend device. Cannot fail. */
    void (*device_destroy)(struct plugin_device *dev);
    /* Required.  Right after device_create: fill the device's launch limits and its PCI address
     * (*limits_p arrives zeroed: a pci_bus_id the driver cannot tell stays "", which is not an
     * error). */
    tether_status_t (*device_limits)(struct plugin_device *dev,
                                     struct plugin_device_limits *limits_p,
                                     struct tether_error *err);
    /* Optional.  A short one-line description for messages and tether_device_query(), e.g.
     * "NVIDIA H200 (sm_90)".  NULL slot: "<name> device <id>". */
    void (*device_name)(struct plugin_device *dev, char *buf, size_t len);
    /* Optional.  print_device_info: call emit(ctx, key, fmt, ...) once per property.  Common
     * prints the header and the generic properties (limits, pinned ranges) itself. */
    void (*device_info)(struct plugin_device *dev, plugin_info_emit_t emit, void *ctx);
    /* Optional.  Called on a thread before that thread first uses the device outside an ABI call
     * (the RPC server thread).  CUDA: cuCtxSetCurrent.  NULL: nothing to do. */
    tether_status_t (*thread_attach)(struct plugin_device *dev, struct tether_error *err);

    /* ---- memory ---------------------------------------------------------------------------- */

    /* Required.  Allocate size (> 0) bytes of `kind` (DEVICE, HOST or SHARED; never DEFAULT).
     * Unsupported kind: TETHER_ERR_UNSUPPORTED.  Must not wait for running kernels (the RPC
     * server may call it while a kernel runs).  Common registers HOST memory in the pinned map. */
    tether_status_t (*alloc)(struct plugin_device *dev, size_t size, enum plugin_alloc_kind kind,
                             void **ptr_p, struct tether_error *err);
    /* Required.  Free what alloc() returned with the same kind.  Common already removed HOST
     * memory from the pinned map (and refused the free if users still lock part of it). */
    tether_status_t (*free)(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                            struct tether_error *err);

    /* Required.  Host to device copy of size (> 0) bytes.  host_dev is the device-accessible
     * address of `src` when src..src+size lies in a pinned/registered range (from the pinned
     * map, or common's staging buffers), NULL when src is pageable.  Enqueue on queue (never
     * NULL) and return: the copy is complete when the queue is synchronised, and the host memory
     * stays valid until then.  A backend that cannot copy pageable memory asynchronously (host_dev
     * NULL) copies it synchronously; either is correct.  Large pageable copies reach it staged
     * when it has host_pageable (below). */
    tether_status_t (*memcpy_h2d)(struct plugin_device *dev, void *dst, const void *src,
                                  size_t size, const void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err);
    /* Required.  Device to host; same rules, host_dev describes dst. */
    tether_status_t (*memcpy_d2h)(struct plugin_device *dev, void *dst, const void *src,
                                  size_t size, void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err);
    /* Optional.  Device to device, possibly between two devices of this plugin (src_dev may equal
     * dst_dev); queue belongs to dst_dev (never NULL).  NULL slot: libomptarget is told devices
     * cannot exchange data and stages through the host. */
    tether_status_t (*memcpy_d2d)(struct plugin_device *dst_dev, void *dst,
                                  struct plugin_device *src_dev, const void *src, size_t size,
                                  struct plugin_queue *queue, struct tether_error *err);

    /* Optional, pair.  Page-lock [ptr, ptr+size) for the device (the pinned map's pin callback;
     * called only for the FIRST user of a range, never under a common lock).  Write the
     * device-accessible address of ptr; set *external_p when the driver says the memory was
     * already pinned outside tether (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED): such ranges are
     * counted but never unregistered.  host_unregister(base, size) undoes one host_register.  NULL
     * slots: pinning is the identity (device address = host address, nothing to undo). */
    tether_status_t (*host_register)(struct plugin_device *dev, void *ptr, size_t size,
                                     void **dev_ptr_p, bool *external_p, struct tether_error *err);
    tether_status_t (*host_unregister)(struct plugin_device *dev, void *base, size_t size,
                                       struct tether_error *err);
    /* Optional (needs the event group).  True when [ptr, ptr+size) is host memory the driver does
     * not know: not registered or pinned through it, not its own allocation (CUDA:
     * cuPointerGetAttribute fails on it; HSA: hsa_amd_pointer_info says unknown).  Common then
     * copies large transfers of it through pinned staging buffers of its own (alloc HOST, events,
     * helper threads: common/plugin_stage.c), which reach memcpy_* with host_dev set.  Asked
     * only for pageable copies of at least TETHER_STAGE_MIN bytes, never under a common lock.
     * NULL: no staging. */
    bool (*host_pageable)(struct plugin_device *dev, const void *ptr, size_t size);

    /* ---- queues (required, all four) ------------------------------------------------------ */
    /* An in-order stream of work.  Common pools queues per device: queue_create is called only
     * when the pool is empty (and limits.initial_queues times at device init), queue_destroy at
     * shutdown or after a failed sync.  A backend whose device has no engine to overlap with
     * (the host) completes work at enqueue and keeps the first error for queue_sync. */

    tether_status_t (*queue_create)(struct plugin_device *dev, struct plugin_queue **queue_p,
                                    struct tether_error *err);
    void (*queue_destroy)(struct plugin_device *dev, struct plugin_queue *queue);
    /* Block until everything enqueued so far completed; return the first error of that work.
     * The backend's one wait for a queue: synchronous calls and libomptarget's synchronize both
     * end here.  A backend that has to wait does it through plugin_wait() (plugin_wait.h), which
     * polls and then blocks as TETHER_WAIT says. */
    tether_status_t (*queue_sync)(struct plugin_device *dev, struct plugin_queue *queue,
                                  struct tether_error *err);
    /* Never blocks: *done_p = true when everything enqueued so far completed (or failed: then
     * return the error).  Used for nowait and by the RPC layer to poll. */
    tether_status_t (*queue_query)(struct plugin_device *dev, struct plugin_queue *queue,
                                   bool *done_p, struct tether_error *err);

    /* ---- events (group: all five or none) --------------------------------------------------- */
    /* Used by libomptarget for atomic map transfers, and by common's staging of pageable copies.
     * NULL group: the event calls succeed as no-ops, which is correct only for a backend whose
     * queues complete work at enqueue. */

    tether_status_t (*event_create)(struct plugin_device *dev, struct plugin_event **event_p,
                                    struct tether_error *err);
    void (*event_destroy)(struct plugin_device *dev, struct plugin_event *event);
    /* Record: the event completes when the work enqueued on queue so far completes. */
    tether_status_t (*event_record)(struct plugin_device *dev, struct plugin_event *event,
                                    struct plugin_queue *queue, struct tether_error *err);
    /* Wait: work enqueued on queue after this call starts only after the event completed. */
    tether_status_t (*event_wait)(struct plugin_device *dev, struct plugin_event *event,
                                  struct plugin_queue *queue, struct tether_error *err);
    /* Block the calling thread until the event completed (an unrecorded event is complete);
     * through plugin_wait() like queue_sync. */
    tether_status_t (*event_sync)(struct plugin_device *dev, struct plugin_event *event,
                                  struct tether_error *err);

    /* ---- images and kernels ----------------------------------------------------------------- */

    /* Required.  Load the image on the device (cuModuleLoadDataEx; host: memfd + dlopen).  The
     * image bytes stay valid until module_unload.  Allocate the backend module (struct
     * plugin_module first). */
    tether_status_t (*module_load)(struct plugin_device *dev, const struct plugin_image *image,
                                   struct plugin_module **module_p, struct tether_error *err);
    /* Required.  At shutdown, after common released every kernel of the module. Cannot fail. */
    void (*module_unload)(struct plugin_device *dev, struct plugin_module *module);
    /* Required.  Device address and size of the global `name` in the module.  Not present:
     * TETHER_ERR_NOT_FOUND (common decides whether that is an error; for the device environment
     * it is not).  size_p receives 0 when the driver does not know the size. */
    tether_status_t (*global_lookup)(struct plugin_device *dev, struct plugin_module *module,
                                     const char *name, void **addr_p, size_t *size_p,
                                     struct tether_error *err);
    /* Required.  Find kernel `name`; allocate the backend kernel (struct plugin_kernel first) and
     * set its max_threads (0 = device limit).  Not present: TETHER_ERR_NOT_FOUND. */
    tether_status_t (*kernel_lookup)(struct plugin_device *dev, struct plugin_module *module,
                                     const char *name, struct plugin_kernel **kernel_p,
                                     struct tether_error *err);
    /* Required.  Free a kernel from kernel_lookup (at shutdown or when a load fails midway). */
    void (*kernel_release)(struct plugin_device *dev, struct plugin_kernel *kernel);
    /* Required.  Launch with the geometry common computed: enqueue on queue (never NULL) and
     * return. */
    tether_status_t (*launch)(struct plugin_device *dev, struct plugin_kernel *kernel,
                              const struct plugin_launch *launch, struct plugin_queue *queue,
                              struct tether_error *err);

    /* Optional.  What the backend does with LLVM bitcode images (clang -fopenmp-target-jit),
     * which common compiles at load time through libLLVM (plugin_jit.h); see struct
     * plugin_jit_ops.  NULL: bitcode images are refused quietly, like any image that is no ELF of
     * elf_machine. */
    const struct plugin_jit_ops *jit;

    /* ---- interop --------------------------------------------------------------------------- */

    /* Optional.  What `#pragma omp interop init(...)` hands the program for this device: the
     * native device handle (CUDA: the CUdevice ordinal; HSA: the hsa_agent_t handle), the native
     * context (CUDA: the primary CUcontext; NULL where there is none) and, when queue is non-NULL,
     * the queue's native stream (CUDA: its CUstream; HSA: its hsa_queue_t *, created now if the
     * queue has none yet).  Outputs the caller does not ask for are NULL.  NULL slot: interop
     * objects for this backend are refused (omp_interop_none), as LLVM 16's host plugin does. */
    tether_status_t (*interop_info)(struct plugin_device *dev, struct plugin_queue *queue,
                                    void **device_p, void **context_p, void **stream_p,
                                    struct tether_error *err);

    /* ---- RPC support (used by common/plugin_rpc.c; see docs/plugin-interface.md, "RPC") ------ */
    /* The RPC server needs: memory both sides see (alloc PLUGIN_ALLOC_HOST, or the pair below),
     * writing the client into a device global (global_lookup + memcpy_h2d, done by common; a
     * backend may copy it further, rpc_client_copy), knowing when kernels run (common counts
     * launches and queue completions itself), and a thread that may use the device
     * (thread_attach). */

    /* Optional, pair.  Memory shared by host and device for RPC mailboxes and buffers, when it
     * must differ from PLUGIN_ALLOC_HOST (e.g. fine-grained/coherent pools on AMD).  Writes the
     * host address and the device address (may be equal).  NULL: common uses alloc(HOST), with
     * the device address equal to the host address. */
    tether_status_t (*shared_alloc)(struct plugin_device *dev, size_t size, void **host_p,
                                    void **dev_p, struct tether_error *err);
    void (*shared_free)(struct plugin_device *dev, void *host);
    /* Optional.  Called right after common wrote the RPC client into the module's client global
     * (`client`: the server library's bytes of it, `size` of them, unchanged), before any kernel
     * of the module runs, and again whenever common rewrites it: a backend whose device code
     * reads (part of) the client from somewhere else too copies it there, enqueued on queue
     * (never NULL; common synchronises it, and `client` stays valid until then).  CUDA: the
     * client's fixed part into the image's __tether_rpc_client_const, in constant memory.  NULL:
     * the device reads the client global only. */
    tether_status_t (*rpc_client_copy)(struct plugin_device *dev, struct plugin_module *module,
                                       const void *client, size_t size, struct plugin_queue *queue,
                                       struct tether_error *err);
};

/* ---- services common offers backends -------------------------------------------------------- */

/* Print a message prefixed "tether (<ops->name>): " (and "device N: " when dev is non-NULL) to
 * stderr if the level is enabled (see enum plugin_log_level).  plugin/dev may be NULL. */
void plugin_log(const struct plugin *plugin, const struct plugin_device *dev,
                enum plugin_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Write a formatted one-line message into err (no-op if err is NULL).  Returns status, so a slot
 * can `return plugin_error_set(err, TETHER_ERR_DRIVER, "cuMemAlloc: %s", str);`. */
tether_status_t plugin_error_set(struct tether_error *err, tether_status_t status, const char *fmt,
                                 ...) __attribute__((format(printf, 3, 4)));

/* True when the program requires unified_shared_memory (libomptarget's requires flags) and the
 * device reports PLUGIN_HOST_ACCESS_PINNED: kernels will fault on the host pointers of mapped
 * data.  Common warns once at the device's init_device; backends add it to fault messages. */
bool plugin_usm_unreachable(const struct plugin_device *dev);

/* The target region an OpenMP kernel name stands for, for messages about the kernel:
 * "the target region in main at line 27" (C++ functions demangled when the C++ runtime is in
 * the process), or "kernel <name>" for a name not of clang's form.  Never fails. */
void plugin_region_describe(const char *kernel, char *buf, size_t len);

/* Say why image_compatible refuses an image (e.g. "image for sm_80 does not run on device 0
 * (sm_90)"): an info line (LIBOMPTARGET_INFO & 0x10), or a warning when
 * OMP_TARGET_OFFLOAD=MANDATORY, where libomptarget then stops without naming the cause.  Each
 * message once per process. */
void plugin_image_refused(struct plugin *plugin, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* True when LIBOMPTARGET_INFO (or __tgt_rtl_set_info_flag) has any of `bits`, or TETHER_DEBUG
 * is on (it prints every info message). */
bool plugin_info_enabled(const struct plugin *plugin, uint32_t bits);

/* Environment knobs.  Every knob tether reads goes through these (or their rpc/server
 * equivalents, which are the same code: rpc/server/rpc_env.h), so every knob follows one rule:
 * unset or "" gives the default silently; a bad value (not a whole number, trailing characters,
 * outside [min, max], not a boolean, not one of the choices) gives the default and ONE warning
 * per knob per process naming the knob, the value and what is used instead; never an abort.
 * Numbers are decimal or 0x-hexadecimal; booleans are numbers (0 off, above 0 on) or
 * true/false/yes/no/on/off. */
int64_t plugin_env_int(const char *name, int64_t def, int64_t min, int64_t max);
bool plugin_env_bool(const char *name, bool def);
/* Index in the NULL-terminated `choices` (any case), or def. */
int plugin_env_choice(const char *name, const char *const *choices, int def);
/* TETHER_WAIT (adaptive, spin, block): the index of its word, as enum plugin_wait_mode
 * (plugin_wait.h) and the RPC server thread read it. */
int plugin_env_wait(void);
/* The text of a knob the caller checks itself; NULL when unset or "". */
const char *plugin_env_str(const char *name);
/* Which of tether's name and LLVM's name of one knob to read (tether's when both are set; a
 * warning when they differ). */
const char *plugin_env_pick(const char *name, const char *llvm_name);
/* Warn once per process about knob `name` (for values the caller checks itself). */
void plugin_env_warn(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* TETHER_COMMON_PLUGIN_H */
