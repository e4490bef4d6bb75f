/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_abi.c - the __tgt_rtl_* entry points libomptarget 16.0.6 looks up, and tether's
 * exported public API.  Compiled into each plugin by tether_add_plugin() (never into the static
 * library), with the backend's table `plugin_backend_ops`.
 *
 * Each entry point is a thin wrapper: find the device, call one plugin_core.h function, and on
 * failure print one message naming plugin, device, call and cause, then return OFFLOAD_FAIL.
 * Internal calls never go through these exported names (they are static helpers or hidden
 * common functions, and the plugin links with -Bsymbolic), so another plugin loaded with
 * RTLD_GLOBAL cannot interpose them.
 *
 * Life cycle: __tgt_rtl_init_plugin creates the plugin once; __tgt_rtl_deinit_plugin is called by
 * libomptarget 16 at every __tgt_unregister_lib and is therefore a no-op; the plugin is destroyed
 * by this library's destructor at process exit, after the program's own destructors (which may
 * still run device destructor kernels) have finished, and only when no other thread still
 * offloads (see "shutdown" below).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin_state.h"
#include "tether/rpc.h"

#define TGT_EXPORT __attribute__((visibility("default")))

extern const struct plugin_ops plugin_backend_ops;

static struct plugin *abi_plugin;
static pthread_once_t abi_once = PTHREAD_ONCE_INIT;

/* The host entry table of the library libomptarget is registering right now (set by
 * __tgt_rtl_register_lib, cleared by the next call that is not part of the registration).
 * libomptarget 16's registerLib offers EVERY image registered so far, again, for the new library,
 * and would give the new library's table an older library's image (its "Host and Target tables
 * mismatch", constructors registered twice).  While a registration is in progress,
 * is_valid_binary accepts only images whose entries are the new library's.  See
 * docs/plugin-interface.md, "Several libraries". */
static struct tgt_offload_entry *_Atomic abi_registering;
static atomic_bool abi_registering_set;

/* Any call outside a registration ends it. */
static void abi_registration_end(void)
{
    if (atomic_load_explicit(&abi_registering_set, memory_order_relaxed)) {
        atomic_store(&abi_registering_set, false);
    }
}

/* The probe address all tether plugins of a process share (see plugin_query.c).  Large enough
 * that a non-tether plugin copying a probe into it, treating it as device memory, harms nothing. */
TGT_EXPORT unsigned char tether_rtl_probe_target[512];

/* ---- shutdown ---------------------------------------------------------------------------
 * exit() runs the destructor while other threads may be inside an entry point (a target region
 * running on the host plugin, a transfer) or between two calls of a region.  Every entry point
 * that touches the plugin passes a gate (ABI_GATE: counted in abi_calls until it returns).  The
 * destructor waits until no call of another thread is inside and no kernel is left to
 * synchronise; calls go on meanwhile (the rest of a region in flight: its synchronisation,
 * copies back, frees).  Then:
 *  - when another thread was inside, or came meanwhile, the process still offloads on other
 *    threads: nothing is destroyed (the process's end reclaims it all; the RPC threads go on
 *    serving) and every later call goes on.  Making them wait would hang the exit: libomp's
 *    destructor, which runs after this one, waits for its hidden helper threads, which run
 *    `nowait` regions;
 *  - otherwise the plugin is destroyed (RPC stopped, images unloaded, devices released); a call
 *    that comes meanwhile waits for that, then fails with "called after the plugin shut down".
 * So no call touches freed state, and the regions in flight end (with their output) before the
 * process does.  The exiting thread's own calls, calls nested in a call already inside (the
 * probe reaches data_submit through libomptarget) and calls from a user RPC handler never wait.
 * exit() inside a user RPC handler destroys nothing: the region that made the call waits for the
 * handler.
 */
enum abi_phase {
    ABI_OPEN,     /* no exit yet */
    ABI_DRAINING, /* the destructor waits for the calls of other threads */
    ABI_KEPT,     /* other threads offload: nothing destroyed, every call goes on */
    ABI_TEARING,  /* the plugin is being destroyed; new calls wait, then fail */
    ABI_DOWN,     /* destroyed: calls fail */
};
static pthread_mutex_t abi_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t abi_gate_cv = PTHREAD_COND_INITIALIZER; /* a call left, or a new phase */
static enum abi_phase abi_phase;                              /* under abi_gate_lock */
static bool abi_late;                    /* a call came while draining (under abi_gate_lock) */
static atomic_uint abi_calls;            /* calls inside, all threads */
static atomic_bool abi_closing;          /* DRAINING or TEARING: calls take the slow path */
static _Thread_local unsigned abi_depth; /* calls this thread is inside */
static _Thread_local bool abi_closer;    /* this thread runs the destructor */

/* `depth` is this thread's abi_depth (one thread-local lookup per call, not two). */
static void abi_leave(unsigned **depth)
{
    (**depth)--;
    atomic_fetch_sub(&abi_calls, 1);
    if (atomic_load(&abi_closing)) {
        pthread_mutex_lock(&abi_gate_lock);
        pthread_cond_broadcast(&abi_gate_cv);
        pthread_mutex_unlock(&abi_gate_lock);
    }
}

/* A call while the destructor runs: noted while it drains, held while it destroys. */
static void abi_enter_closing(void)
{
    pthread_mutex_lock(&abi_gate_lock);
    if (abi_phase == ABI_DRAINING) {
        abi_late = true;
    } else if (abi_phase == ABI_TEARING) {
        atomic_fetch_sub(&abi_calls, 1);
        pthread_cond_broadcast(&abi_gate_cv);
        while (abi_phase == ABI_TEARING) {
            pthread_cond_wait(&abi_gate_cv, &abi_gate_lock);
        }
        atomic_fetch_add(&abi_calls, 1); /* DOWN: abi_plugin is NULL, the call fails */
    }
    pthread_mutex_unlock(&abi_gate_lock);
}

static unsigned *abi_enter(void)
{
    unsigned *depth = &abi_depth;

    ++*depth;
    atomic_fetch_add(&abi_calls, 1);
    if (atomic_load(&abi_closing) && !abi_closer && *depth == 1 &&
        tether_rpc_server_current() == NULL) {
        abi_enter_closing();
    }
    return depth;
}

/* First line of an entry point: passes the gate, and leaves it on every return. */
#define ABI_GATE() __attribute__((cleanup(abi_leave), unused)) unsigned *abi_gate_ = abi_enter()

/* Ends the wait of the calls at the gate in `phase` (KEPT or DOWN). */
static void abi_phase_set(enum abi_phase phase)
{
    pthread_mutex_lock(&abi_gate_lock);
    abi_phase = phase;
    if (phase == ABI_KEPT) {
        atomic_store(&abi_closing, false);
    }
    pthread_cond_broadcast(&abi_gate_cv);
    pthread_mutex_unlock(&abi_gate_lock);
}

/* fork(): in a child the other threads' calls did not come along (only this thread's are
 * inside), and a GPU's driver context stays with the parent (CUDA and HSA cannot be used in a
 * fork child): every call on such a device fails with the reason, and the destructor leaves the
 * plugin alone.  Devices whose kernels are threads of this process (the host backend, warp size
 * 1) work in the child; their RPC servers start again there (plugin_rpc.c). */
static bool abi_in_child;
static pid_t abi_pid; /* the process that created the plugin */

static void abi_forked(void)
{
    struct plugin *plugin = abi_plugin;

    atomic_store(&abi_calls, abi_depth);
    abi_in_child = true;
    /* Nor did their kernels: none is left to synchronise here (see abi_close). */
    for (int32_t i = 0; plugin != NULL && i < plugin->num_devices; i++) {
        struct plugin_device *dev = plugin_device_peek(plugin, i);

        if (dev != NULL) {
            atomic_store(&dev->state->kernels_running, 0);
        }
    }
}

static bool abi_child_refuses(const struct plugin_device *dev)
{
    return abi_in_child && dev->limits.warp_size > 1;
}

/* True in a fork child when a device the parent used is a GPU. */
static bool abi_child_holds_gpu(struct plugin *plugin)
{
    for (int32_t i = 0; abi_in_child && i < plugin->num_devices; i++) {
        struct plugin_device *dev = plugin_device_peek(plugin, i);

        if (dev != NULL && abi_child_refuses(dev)) {
            return true;
        }
    }
    return false;
}

/* Kernels launched and not yet known complete, on all devices (the synchronisation that ends
 * them, and drains their RPC calls, is still to come). */
static uint64_t abi_kernels_running(struct plugin *plugin)
{
    uint64_t n = 0;

    for (int32_t i = 0; plugin != NULL && i < plugin->num_devices; i++) {
        struct plugin_device *dev = plugin_device_peek(plugin, i);

        if (dev != NULL) {
            n += atomic_load(&dev->state->kernels_running);
        }
    }
    return n;
}

/* At exit: waits until no call of another thread is inside and no kernel is left to synchronise
 * (a region's tail: its synchronisation, copies back, frees).  Returns NULL when the plugin may be
 * destroyed (the phase is then TEARING), else why it is kept (the phase is then KEPT). */
static const char *abi_close(struct plugin *plugin)
{
    struct timespec until;
    bool said = false, busy;

    abi_closer = true;
    if (tether_rpc_server_current() != NULL) {
        abi_phase_set(ABI_KEPT);
        return "exit() inside an RPC handler";
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&abi_gate_lock);
    abi_phase = ABI_DRAINING;
    atomic_store(&abi_closing, true);
    busy = atomic_load(&abi_calls) > abi_depth || abi_kernels_running(plugin) != 0;
    while (atomic_load(&abi_calls) > abi_depth || abi_kernels_running(plugin) != 0) {
        if (pthread_cond_timedwait(&abi_gate_cv, &abi_gate_lock, &until) == ETIMEDOUT && !said) {
            fprintf(stderr,
                    "tether (%s): exit waits for %u call(s) of other threads still inside the "
                    "plugin and %llu kernel(s) not yet synchronised (target regions, transfers) "
                    "to finish\n",
                    plugin_backend_ops.name, atomic_load(&abi_calls) - abi_depth,
                    (unsigned long long)abi_kernels_running(plugin));
            said = true;
        }
    }
    busy |= abi_late;
    if (!busy) {
        abi_phase = ABI_TEARING; /* a call from now on waits, and is not inside */
    }
    pthread_mutex_unlock(&abi_gate_lock);
    if (busy) {
        abi_phase_set(ABI_KEPT);
        return "other threads offload while the process exits";
    }
    if (plugin != NULL && abi_child_holds_gpu(plugin)) {
        abi_phase_set(ABI_KEPT);
        return "a fork child: the GPU driver's state is the parent's";
    }
    return NULL;
}

/* libomptarget 16's destructor dlcloses every plugin.  At exit other threads may still be in
 * this library: the RPC server threads, and calls that go on after the destructor kept the plugin
 * (see "shutdown").  Unmapping its code under them crashed them, so the library is made one that
 * stays loaded (as LLVM's C++ plugins are, through their unique symbols). */
static void abi_pin_library(void)
{
    Dl_info self;

    if (dladdr((void *)abi_pin_library, &self) == 0 || self.dli_fname == NULL) {
        plugin_log(NULL, NULL, PLUGIN_LOG_DEBUG, "could not keep the plugin loaded: no dladdr");
    } else if (dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) == NULL) {
        plugin_log(NULL, NULL, PLUGIN_LOG_DEBUG, "could not keep the plugin loaded: %s", dlerror());
    }
}

static void abi_init_once(void)
{
    struct tether_error err = {{0}};
    struct plugin *plugin = NULL;
    tether_status_t rc;
    void *target;

    rc = plugin_create(&plugin_backend_ops, &plugin, &err);
    if (rc != TETHER_OK) {
        plugin_report(NULL, -1, "init_plugin", rc, &err);
        return;
    }
    abi_pid = getpid();
    pthread_atfork(NULL, NULL, abi_forked);
    abi_pin_library();
    target = dlsym(RTLD_DEFAULT, "tether_rtl_probe_target");
    if (target == NULL) {
        target = tether_rtl_probe_target;
    }
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "probe address %p", target);
    plugin_probe_bind(plugin, target);
    abi_plugin = plugin;
}

static struct plugin *abi_get(void)
{
    pthread_once(&abi_once, abi_init_once);
    return abi_plugin;
}

__attribute__((destructor)) static void abi_fini(void)
{
    struct plugin *plugin = abi_plugin;
    const char *kept = abi_close(plugin);

    if (kept != NULL) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG,
                   "%s: the plugin is left as it is to the end of the process", kept);
        return;
    }
    abi_plugin = NULL;
    plugin_destroy(plugin);
    abi_phase_set(ABI_DOWN);
}

/* Device `id` of this plugin, or NULL after printing why. */
static struct plugin_device *abi_device(int32_t id, const char *call)
{
    struct tether_error err = {{0}};
    struct plugin *plugin = abi_get();
    struct plugin_device *dev = NULL;
    tether_status_t rc;

    abi_registration_end();
    if (plugin == NULL) {
        fprintf(stderr, "tether (%s): %s: %s\n", plugin_backend_ops.name, call,
                atomic_load(&abi_closing) ? "called after the plugin shut down at exit"
                                          : "plugin failed to initialise");
        return NULL;
    }
    rc = plugin_device_get(plugin, id, &dev, &err);
    if (rc == TETHER_OK && abi_child_refuses(dev)) {
        rc = plugin_error_set(&err, TETHER_ERR_UNSUPPORTED,
                              "this process (%d) is a child that process %d created with fork(); "
                              "a %s device cannot be used in a fork() child (the driver's context "
                              "stays with the parent): offload from the parent, or exec() in the "
                              "child",
                              (int)getpid(), (int)abi_pid, plugin_backend_ops.name);
    }
    if (rc != TETHER_OK && abi_in_child && dev == NULL) {
        size_t n = strlen(err.msg);

        snprintf(err.msg + n, sizeof(err.msg) - n, " (in a fork() child of process %d)",
                 (int)abi_pid);
    }
    if (rc != TETHER_OK) {
        plugin_report(plugin, id, call, rc, &err);
        return NULL;
    }
    return dev;
}

static int32_t abi_result(int32_t id, const char *call, tether_status_t rc,
                          const struct tether_error *err)
{
    if (rc == TETHER_OK) {
        return TGT_OFFLOAD_SUCCESS;
    }
    plugin_report(abi_plugin, id, call, rc, err);
    return TGT_OFFLOAD_FAIL;
}

/* Report a failed call; the call's description is formatted only then. */
__attribute__((format(printf, 4, 5))) static int32_t
abi_fail(int32_t id, tether_status_t rc, const struct tether_error *err, const char *fmt, ...)
{
    char call[192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(call, sizeof(call), fmt, ap);
    va_end(ap);
    plugin_report(abi_plugin, id, call, rc, err);
    return TGT_OFFLOAD_FAIL;
}

/* ---- plugin ----------------------------------------------------------------------------- */

TGT_EXPORT int32_t __tgt_rtl_init_plugin(void)
{
    abi_get();
    return TGT_OFFLOAD_SUCCESS; /* zero devices is reported by number_of_devices */
}

TGT_EXPORT int32_t __tgt_rtl_deinit_plugin(void)
{
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_number_of_devices(void)
{
    ABI_GATE();
    struct plugin *plugin = abi_get();

    return plugin ? plugin->num_devices : 0;
}

/* An image of another library offered during a registration (see abi_registering). */
static bool abi_foreign_image(const struct tgt_device_image *image)
{
    if (image == NULL || !atomic_load(&abi_registering_set) ||
        image->EntriesBegin == atomic_load(&abi_registering)) {
        return false;
    }
    plugin_log(abi_plugin, NULL, PLUGIN_LOG_DEBUG,
               "image %p belongs to an earlier library; not registering it again",
               image->ImageStart);
    return true;
}

TGT_EXPORT int32_t __tgt_rtl_register_lib(struct tgt_bin_desc *desc)
{
    if (desc != NULL) {
        atomic_store(&abi_registering, desc->HostEntriesBegin);
        atomic_store(&abi_registering_set, true);
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_unregister_lib(struct tgt_bin_desc *desc)
{
    (void)desc;
    abi_registration_end();
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_is_valid_binary(void *image)
{
    ABI_GATE();
    if (abi_foreign_image(image)) {
        return 0;
    }
    return plugin_image_valid(abi_get(), image, NULL);
}

TGT_EXPORT int32_t __tgt_rtl_is_valid_binary_info(void *image, struct tgt_image_info *info)
{
    ABI_GATE();
    if (abi_foreign_image(image)) {
        return 0;
    }
    return plugin_image_valid(abi_get(), image, info ? info->Arch : NULL);
}

TGT_EXPORT int64_t __tgt_rtl_init_requires(int64_t flags)
{
    ABI_GATE();
    struct plugin *plugin = abi_get();

    abi_registration_end();
    if (plugin != NULL) {
        plugin_set_requires(plugin, flags);
    }
    return flags;
}

TGT_EXPORT void __tgt_rtl_set_info_flag(uint32_t flags)
{
    ABI_GATE();
    struct plugin *plugin = abi_get();

    abi_registration_end();
    if (plugin != NULL) {
        plugin_set_info_flags(plugin, flags);
    }
}

TGT_EXPORT int32_t __tgt_rtl_init_device(int32_t id)
{
    ABI_GATE();
    struct plugin_device *dev = abi_device(id, "init_device");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    /* libomptarget 16 calls init_requires, then init_device, once per device. */
    if (plugin_usm_unreachable(dev)) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_WARN,
                   "the program requires unified_shared_memory, but this device cannot reach "
                   "pageable host memory (%s): a kernel that uses the host pointers libomptarget "
                   "passes for mapped data will fault with an illegal address; map with the "
                   "`close` modifier, or allocate with omp_target_alloc or "
                   "llvm_omp_target_alloc_shared",
                   dev->limits.host_access_why != NULL ? dev->limits.host_access_why
                                                       : "the backend says so");
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_deinit_device(int32_t id)
{
    (void)id; /* devices live until the plugin is destroyed; libomptarget 16 never calls this */
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT void __tgt_rtl_print_device_info(int32_t id)
{
    ABI_GATE();
    struct plugin *plugin = abi_get();

    abi_registration_end();
    if (plugin != NULL) {
        plugin_print_device_info(plugin, id);
    }
}

TGT_EXPORT struct tgt_target_table *__tgt_rtl_load_binary(int32_t id,
                                                          struct tgt_device_image *image)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "load_binary");
    struct tgt_target_table *table = NULL;
    tether_status_t rc;

    if (dev == NULL) {
        return NULL;
    }
    rc = plugin_image_load(dev, image, &table, &err);
    if (rc != TETHER_OK) {
        char call[64];

        snprintf(call, sizeof(call), "load_binary(image %p)", image ? image->ImageStart : NULL);
        abi_result(id, call, rc, &err);
        return NULL;
    }
    return table;
}

/* ---- memory ----------------------------------------------------------------------------- */

TGT_EXPORT void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host_ptr, int32_t kind)
{
    ABI_GATE();
    static const char *const kinds[] = {"device", "host", "shared", "default"};
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "data_alloc");
    tether_status_t rc;
    void *ptr = NULL;

    (void)host_ptr;
    if (dev == NULL) {
        return NULL;
    }
    rc = plugin_data_alloc(dev, size, kind, &ptr, &err);
    if (rc != TETHER_OK) {
        char call[96];

        snprintf(call, sizeof(call), "data_alloc(%lld bytes, %s memory)", (long long)size,
                 kind >= 0 && kind <= 3 ? kinds[kind] : "invalid");
        abi_result(id, call, rc, &err);
        return NULL;
    }
    return ptr;
}

TGT_EXPORT int32_t __tgt_rtl_data_delete(int32_t id, void *ptr, int32_t kind)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "data_delete");
    tether_status_t rc;

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_delete(dev, ptr, kind, &err);
    if (rc != TETHER_OK) {
        return abi_fail(id, rc, &err, "data_delete(%p)", ptr);
    }
    return TGT_OFFLOAD_SUCCESS;
}

static int32_t abi_submit(int32_t id, void *tgt, void *hst, int64_t size,
                          struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin *plugin = abi_get();
    struct plugin_device *dev;
    tether_status_t rc;

    if (plugin_probe_is(plugin, tgt)) {
        return abi_result(id, "probe", plugin_probe_answer(plugin, id, hst, size, &err), &err);
    }
    dev = abi_device(id, "data_submit");
    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_submit(dev, tgt, hst, size, async, &err);
    if (rc != TETHER_OK) {
        return abi_fail(id, rc, &err, "data_submit(device %p <- host %p, %lld bytes)", tgt, hst,
                        (long long)size);
    }
    return TGT_OFFLOAD_SUCCESS;
}

static int32_t abi_retrieve(int32_t id, void *hst, void *tgt, int64_t size,
                            struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "data_retrieve");
    tether_status_t rc;

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_retrieve(dev, hst, tgt, size, async, &err);
    if (rc != TETHER_OK) {
        return abi_fail(id, rc, &err, "data_retrieve(host %p <- device %p, %lld bytes)", hst, tgt,
                        (long long)size);
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_data_submit(int32_t id, void *tgt, void *hst, int64_t size)
{
    return abi_submit(id, tgt, hst, size, NULL);
}

TGT_EXPORT int32_t __tgt_rtl_data_submit_async(int32_t id, void *tgt, void *hst, int64_t size,
                                               struct tgt_async_info *async)
{
    return abi_submit(id, tgt, hst, size, async);
}

TGT_EXPORT int32_t __tgt_rtl_data_retrieve(int32_t id, void *hst, void *tgt, int64_t size)
{
    return abi_retrieve(id, hst, tgt, size, NULL);
}

TGT_EXPORT int32_t __tgt_rtl_data_retrieve_async(int32_t id, void *hst, void *tgt, int64_t size,
                                                 struct tgt_async_info *async)
{
    return abi_retrieve(id, hst, tgt, size, async);
}

TGT_EXPORT int32_t __tgt_rtl_is_data_exchangable(int32_t src_id, int32_t dst_id)
{
    ABI_GATE();
    struct plugin *plugin = abi_get();

    return plugin != NULL && src_id >= 0 && dst_id >= 0 && src_id < plugin->num_devices &&
           dst_id < plugin->num_devices && plugin_data_exchangeable(plugin);
}

static int32_t abi_exchange(int32_t src_id, void *src, int32_t dst_id, void *dst, int64_t size,
                            struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *src_dev = abi_device(src_id, "data_exchange");
    struct plugin_device *dst_dev = abi_device(dst_id, "data_exchange");
    tether_status_t rc;

    if (src_dev == NULL || dst_dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_exchange(src_dev, src, dst_dev, dst, size, async, &err);
    if (rc != TETHER_OK) {
        return abi_fail(dst_id, rc, &err, "data_exchange(device %d %p -> device %d %p, %lld bytes)",
                        (int)src_id, src, (int)dst_id, dst, (long long)size);
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_data_exchange(int32_t src_id, void *src, int32_t dst_id, void *dst,
                                           int64_t size)
{
    return abi_exchange(src_id, src, dst_id, dst, size, NULL);
}

TGT_EXPORT int32_t __tgt_rtl_data_exchange_async(int32_t src_id, void *src, int32_t dst_id,
                                                 void *dst, int64_t size,
                                                 struct tgt_async_info *async)
{
    return abi_exchange(src_id, src, dst_id, dst, size, async);
}

/* data_lock/data_unlock receive the GLOBAL OpenMP device number (libomptarget 16). */
static struct plugin_device *abi_global_device(int32_t global, const char *call)
{
    struct tether_error err = {{0}};
    struct plugin *plugin = abi_get();
    tether_status_t rc;
    int32_t local;

    if (plugin == NULL) {
        return NULL;
    }
    rc = plugin_global_to_local(plugin, global, &local, &err);
    if (rc != TETHER_OK) {
        plugin_report(plugin, -1, call, rc, &err);
        return NULL;
    }
    return abi_device(local, call);
}

TGT_EXPORT int32_t __tgt_rtl_data_lock(int32_t global, void *ptr, int64_t size, void **locked)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_global_device(global, "data_lock");
    tether_status_t rc;
    void *dev_ptr = NULL;

    if (dev == NULL || locked == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_lock(dev, ptr, size, &dev_ptr, &err);
    if (rc != TETHER_OK) {
        return abi_fail(dev->id, rc, &err, "data_lock(%p, %lld bytes)", ptr, (long long)size);
    }
    *locked = dev_ptr;
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_data_unlock(int32_t global, void *ptr)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_global_device(global, "data_unlock");
    tether_status_t rc;

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_data_unlock(dev, ptr, &err);
    if (rc != TETHER_OK) {
        return abi_fail(dev->id, rc, &err, "data_unlock(%p)", ptr);
    }
    return TGT_OFFLOAD_SUCCESS;
}

/* ---- launch, queues, events ------------------------------------------------------------- */

TGT_EXPORT int32_t __tgt_rtl_launch_kernel(int32_t id, void *entry, void **tgt_args,
                                           ptrdiff_t *tgt_offsets,
                                           const struct tgt_kernel_args *kargs,
                                           struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "launch_kernel");
    tether_status_t rc;

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_launch_kernel(dev, entry, tgt_args, tgt_offsets, kargs, async, &err);
    if (rc != TETHER_OK) {
        char call[192];
        const struct plugin_kernel *k = entry;

        snprintf(call, sizeof(call), "launch_kernel(%s)",
                 rc == TETHER_ERR_INVALID || k == NULL ? "?" : k->name);
        return abi_result(id, call, rc, &err);
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_synchronize(int32_t id, struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "synchronize");

    if (dev == NULL) {
        if (async != NULL) {
            async->Queue = NULL;
        }
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "synchronize", plugin_async_sync(dev, async, &err), &err);
}

TGT_EXPORT int32_t __tgt_rtl_query_async(int32_t id, struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "query_async");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "query_async", plugin_async_query(dev, async, &err), &err);
}

TGT_EXPORT int32_t __tgt_rtl_create_event(int32_t id, void **event)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "create_event");
    tether_status_t rc;
    void *ev = NULL;

    if (dev == NULL || event == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_event_create(dev, &ev, &err);
    if (rc == TETHER_OK) {
        *event = ev;
    }
    return abi_result(id, "create_event", rc, &err);
}

TGT_EXPORT int32_t __tgt_rtl_record_event(int32_t id, void *event, struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "record_event");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "record_event", plugin_event_record(dev, event, async, &err), &err);
}

TGT_EXPORT int32_t __tgt_rtl_wait_event(int32_t id, void *event, struct tgt_async_info *async)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "wait_event");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "wait_event", plugin_event_wait(dev, event, async, &err), &err);
}

TGT_EXPORT int32_t __tgt_rtl_sync_event(int32_t id, void *event)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "sync_event");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "sync_event", plugin_event_sync(dev, event, &err), &err);
}

TGT_EXPORT int32_t __tgt_rtl_destroy_event(int32_t id, void *event)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_device(id, "destroy_event");

    if (dev == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    return abi_result(id, "destroy_event", plugin_event_destroy(dev, event, &err), &err);
}

/* ---- interop (`#pragma omp interop`) ----------------------------------------------------- */

/* libomptarget 16 passes the GLOBAL device number to both, and reads init_device_info's result
 * as a 64-bit value (rtl.h's typedef): return it at that width. */
TGT_EXPORT int64_t __tgt_rtl_init_device_info(int64_t global, struct tgt_device_info *info,
                                              const char **err_str)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_global_device((int32_t)global, "init_device_info");
    tether_status_t rc;

    if (dev == NULL || info == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_interop_device(dev, info, &err);
    if (rc != TETHER_OK) {
        if (err_str != NULL) {
            *err_str = "tether: this device offers no interop handles";
        }
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO, "interop refused: %s", err.msg);
        return TGT_OFFLOAD_FAIL;
    }
    return TGT_OFFLOAD_SUCCESS;
}

TGT_EXPORT int32_t __tgt_rtl_init_async_info(int32_t global, struct tgt_async_info **async_p)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev = abi_global_device(global, "init_async_info");
    struct tgt_async_info *async = NULL;
    tether_status_t rc;

    if (dev == NULL || async_p == NULL) {
        return TGT_OFFLOAD_FAIL;
    }
    rc = plugin_interop_async(dev, &async, &err);
    if (rc != TETHER_OK) {
        return abi_result(dev->id, "init_async_info", rc, &err);
    }
    *async_p = async;
    return TGT_OFFLOAD_SUCCESS;
}

/* ---- tether's public API ---------------------------------------------------------------- */

TGT_EXPORT int32_t tether_rtl_device_query(int32_t omp_device, struct tether_device_info *info_p)
{
    ABI_GATE();
    struct tether_error err = {{0}};
    struct plugin *plugin = abi_get();
    struct plugin_probe probe;
    tether_status_t rc;

    if (info_p == NULL) {
        return TETHER_ERR_INVALID;
    }
    if (plugin == NULL) {
        return TETHER_ERR_NOT_FOUND;
    }
    rc = plugin_probe_send(plugin, omp_device, &probe, &err);
    if (rc != TETHER_OK) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "device query: %s", err.msg);
        return rc;
    }
    if (probe.status != TETHER_OK) {
        return probe.status;
    }
    *info_p = probe.info;
    return TETHER_OK;
}
