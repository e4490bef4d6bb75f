/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_exec.c - streams as queues, events, modules, kernels and launches (cuda_plugin.h).
 */
#include "cuda_plugin.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_image.h"
#include "tether/rpc.h"
#include "../../rpc/device_client.h"

#define CUDA_STATIC_SHARED_LIMIT (48u * 1024) /* dynamic shared memory without opting in */
#define CUDA_JIT_LOG_BYTES 1024
#define CUDA_JIT_ERROR_LOG_BUFFER 5            /* CUjit_option values (cuda.h) */
#define CUDA_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6 /* in: capacity; out: bytes written */

/* ---- queues --------------------------------------------------------------------------------- */

tether_status_t cuda_queue_create(struct plugin_device *dev, struct plugin_queue **queue_p,
                                  struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct plugin_queue *q;
    tether_status_t rc;

    q = malloc(sizeof(*q));
    if (q == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "queue");
    }
    rc = cuda_ctx_enter(cd, err);
    if (rc == TETHER_OK) {
        rc = CUDA_CALL(cd->drv, err, cuStreamCreate, &q->stream, CU_STREAM_NON_BLOCKING);
    }
    if (rc != TETHER_OK) {
        goto free_queue;
    }
    rc = CUDA_CALL(cd->drv, err, cuEventCreate, &q->done, CUDA_EVENT_FLAGS);
    if (rc != TETHER_OK) {
        goto destroy_stream;
    }
    atomic_init(&q->last_kernel, NULL);
    atomic_init(&q->pending, false);
    *queue_p = q;
    return TETHER_OK;

destroy_stream:
    cuda_log_teardown(cd, cd->drv->cuStreamDestroy(q->stream),
                      cuda_driver_symbol_names[CUDA_SLOT_cuStreamDestroy]);
free_queue:
    free(q);
    return rc;
}

/* Interop: the ordinal as CUdevice (LLVM's convention), the primary context, made current on the
 * calling thread so that a library the program hands these to finds it, and the queue's stream. */
tether_status_t cuda_interop_info(struct plugin_device *dev, struct plugin_queue *queue,
                                  void **device_p, void **context_p, void **stream_p,
                                  struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_ctx_enter(cd, err);

    if (rc != TETHER_OK) {
        return rc;
    }
    if (device_p != NULL) {
        *device_p = (void *)(intptr_t)cd->cu_dev;
    }
    if (context_p != NULL) {
        *context_p = cd->ctx;
    }
    if (stream_p != NULL) {
        *stream_p = queue != NULL ? queue->stream : NULL;
    }
    return TETHER_OK;
}

/* What a failure message says about a kernel: "in the target region in main at line 27" (or
 * "in kernel <name>" for a name clang did not make). */
static void cuda_kernel_what(const char *prefix, const char *kernel, char *buf, size_t len)
{
    char region[TETHER_ERROR_MSG_MAX];

    plugin_region_describe(kernel, region, sizeof(region));
    if (snprintf(buf, len, "%s%s", prefix, region) >= (int)len) {
        buf[len - 1] = '\0'; /* a long name: cut */
    }
}

/* Common destroys a queue at shutdown or after its work failed: never reuse its stream. */
void cuda_queue_destroy(struct plugin_device *dev, struct plugin_queue *queue)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct tether_error err;

    if (cuda_ctx_enter(cd, &err) == TETHER_OK) {
        cuda_log_teardown(cd, cd->drv->cuEventDestroy(queue->done),
                          cuda_driver_symbol_names[CUDA_SLOT_cuEventDestroy]);
        cuda_log_teardown(cd, cd->drv->cuStreamDestroy(queue->stream),
                          cuda_driver_symbol_names[CUDA_SLOT_cuStreamDestroy]);
    }
    free(queue);
}

/* ---- waits: the primitives of common's plugin_wait() ------------------------------------- */

/* What a wait for a stream or an event polls and blocks on; res is the driver's last answer. */
struct cuda_waiter {
    const struct cuda_driver *drv;
    struct plugin_queue *queue; /* a stream's wait */
    CUevent event;              /* an event's wait; the queue's `done` for a stream's */
    CUresult res;
};

/* A poll's or block's driver answer: done (CUDA_SUCCESS), not yet (NOT_READY), or the error. */
static tether_status_t cuda_wait_check(struct cuda_waiter *w, CUresult res,
                                       enum cuda_driver_slot slot, bool *done_p,
                                       struct tether_error *err)
{
    w->res = res;
    if (res == CUDA_ERROR_NOT_READY && done_p != NULL) {
        *done_p = false;
        return TETHER_OK;
    }
    if (res == CUDA_SUCCESS && done_p != NULL) {
        *done_p = true;
    }
    return cuda_driver_check(w->drv, res, cuda_driver_symbol_names[slot], err);
}

static tether_status_t cuda_stream_poll(void *ctx, bool *done_p, struct tether_error *err)
{
    struct cuda_waiter *w = ctx;

    return cuda_wait_check(w, w->drv->cuStreamQuery(w->queue->stream), CUDA_SLOT_cuStreamQuery,
                           done_p, err);
}

/* Sleep until the stream's work is done: its blocking-sync event recorded behind that work. */
static tether_status_t cuda_stream_block(void *ctx, struct tether_error *err)
{
    struct cuda_waiter *w = ctx;
    tether_status_t rc = cuda_wait_check(w, w->drv->cuEventRecord(w->event, w->queue->stream),
                                         CUDA_SLOT_cuEventRecord, NULL, err);

    return rc != TETHER_OK ? rc
                           : cuda_wait_check(w, w->drv->cuEventSynchronize(w->event),
                                             CUDA_SLOT_cuEventSynchronize, NULL, err);
}

static tether_status_t cuda_event_poll(void *ctx, bool *done_p, struct tether_error *err)
{
    struct cuda_waiter *w = ctx;

    return cuda_wait_check(w, w->drv->cuEventQuery(w->event), CUDA_SLOT_cuEventQuery, done_p, err);
}

static tether_status_t cuda_event_block(void *ctx, struct tether_error *err)
{
    struct cuda_waiter *w = ctx;

    return cuda_wait_check(w, w->drv->cuEventSynchronize(w->event), CUDA_SLOT_cuEventSynchronize,
                           NULL, err);
}

/* After a stream was found complete: the driver writes the device's CUDA printf output at a
 * synchronising call, which a wait that polled to its end never made. */
static tether_status_t cuda_stream_flush(struct cuda_device *cd, struct plugin_queue *queue,
                                         struct tether_error *err)
{
    if (!atomic_load(&cd->driver_printf)) {
        return TETHER_OK;
    }
    return cuda_driver_check(cd->drv, cd->drv->cuStreamSynchronize(queue->stream),
                             cuda_driver_symbol_names[CUDA_SLOT_cuStreamSynchronize], err);
}

/* The one wait for a stream: every synchronous call, libomptarget's synchronize and a pageable
 * copy behind pending work end here.  A stream carries its context, so none needs to be made
 * current for these calls (and the slot that enqueued a synchronous call's work made it current
 * on this thread already). */
tether_status_t cuda_stream_wait(struct cuda_device *cd, struct plugin_queue *queue,
                                 struct tether_error *err)
{
    struct cuda_waiter w = {.drv = cd->drv, .queue = queue, .event = queue->done};
    const char *kernel = atomic_load(&queue->last_kernel);
    char what[TETHER_ERROR_MSG_MAX] = "in queued work";
    tether_status_t rc = plugin_wait(&cd->wait, cuda_stream_poll, cuda_stream_block, &w, err);

    if (rc == TETHER_OK) {
        rc = cuda_stream_flush(cd, queue, err);
    }
    if (rc == TETHER_OK) {
        atomic_store(&queue->last_kernel, NULL);
        atomic_store(&queue->pending, false);
        return TETHER_OK;
    }
    /* Keep the driver's words first, then the likely cause of a fault where the program requires
     * unified shared memory this device does not have, then which work failed (last: a long name
     * is what gets cut). */
    if (kernel != NULL) {
        cuda_kernel_what("in work queued with ", kernel, what, sizeof(what));
    }
    {
        char msg[TETHER_ERROR_MSG_MAX];

        snprintf(msg, sizeof(msg), "%s", err->msg);
        plugin_error_set(err, rc, "%s%s; %s", msg,
                         w.res == CUDA_ERROR_ILLEGAL_ADDRESS && plugin_usm_unreachable(&cd->base)
                             ? " (the program requires unified_shared_memory, which this device "
                               "cannot serve: see the warning at its initialisation)"
                             : "",
                         what);
    }
    return rc;
}

tether_status_t cuda_queue_sync(struct plugin_device *dev, struct plugin_queue *queue,
                                struct tether_error *err)
{
    return cuda_stream_wait(cuda_device_of(dev), queue, err);
}

tether_status_t cuda_queue_query(struct plugin_device *dev, struct plugin_queue *queue,
                                 bool *done_p, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_ctx_enter(cd, err);
    CUresult res;

    if (rc != TETHER_OK) {
        return rc;
    }
    res = cd->drv->cuStreamQuery(queue->stream);
    if (res == CUDA_ERROR_NOT_READY) {
        *done_p = false;
        return TETHER_OK;
    }
    rc = cuda_driver_check(cd->drv, res, cuda_driver_symbol_names[CUDA_SLOT_cuStreamQuery], err);
    if (rc == TETHER_OK) {
        rc = cuda_stream_flush(cd, queue, err);
    }
    if (rc == TETHER_OK) {
        atomic_store(&queue->last_kernel, NULL);
        atomic_store(&queue->pending, false);
        *done_p = true;
    } else if (atomic_load(&queue->last_kernel) != NULL) {
        char what[TETHER_ERROR_MSG_MAX], msg[TETHER_ERROR_MSG_MAX];

        cuda_kernel_what("in work queued with ", atomic_load(&queue->last_kernel), what,
                         sizeof(what));
        snprintf(msg, sizeof(msg), "%s", err->msg);
        plugin_error_set(err, rc, "%s; %s", msg, what);
    }
    return rc;
}

/* ---- events ----------------------------------------------------------------------------- */

tether_status_t cuda_event_create(struct plugin_device *dev, struct plugin_event **event_p,
                                  struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct plugin_event *ev;
    tether_status_t rc;

    ev = malloc(sizeof(*ev));
    if (ev == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "event");
    }
    rc = cuda_ctx_enter(cd, err);
    if (rc == TETHER_OK) {
        rc = CUDA_CALL(cd->drv, err, cuEventCreate, &ev->event, CUDA_EVENT_FLAGS);
    }
    if (rc != TETHER_OK) {
        free(ev);
        return rc;
    }
    *event_p = ev;
    return TETHER_OK;
}

void cuda_event_destroy(struct plugin_device *dev, struct plugin_event *event)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct tether_error err;

    if (cuda_ctx_enter(cd, &err) == TETHER_OK) {
        cuda_log_teardown(cd, cd->drv->cuEventDestroy(event->event),
                          cuda_driver_symbol_names[CUDA_SLOT_cuEventDestroy]);
    }
    free(event);
}

tether_status_t cuda_event_record(struct plugin_device *dev, struct plugin_event *event,
                                  struct plugin_queue *queue, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_ctx_enter(cd, err);

    return rc != TETHER_OK ? rc
                           : CUDA_CALL(cd->drv, err, cuEventRecord, event->event, queue->stream);
}

tether_status_t cuda_event_wait(struct plugin_device *dev, struct plugin_event *event,
                                struct plugin_queue *queue, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_ctx_enter(cd, err);

    if (rc == TETHER_OK) {
        rc = CUDA_CALL(cd->drv, err, cuStreamWaitEvent, queue->stream, event->event, 0);
    }
    if (rc == TETHER_OK) {
        atomic_store(&queue->pending, true);
    }
    return rc;
}

tether_status_t cuda_event_sync(struct plugin_device *dev, struct plugin_event *event,
                                struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_waiter w = {.drv = cd->drv, .event = event->event};
    tether_status_t rc = cuda_ctx_enter(cd, err);

    return rc != TETHER_OK ? rc
                           : plugin_wait(&cd->wait, cuda_event_poll, cuda_event_block, &w, err);
}

/* ---- modules and kernels -------------------------------------------------------------------- */

/*
 * ptxas compiles a call to `malloc`, `free`, `vprintf` or `__assertfail` as a call of CUDA's
 * system calls, which keep almost every register (R0-R3, R16-R19, R22 and up): the caller keeps
 * its values there.  A definition of one of these names compiled separately (a program's own
 * device malloc, or a device library that defines it) follows the normal convention and
 * clobbers them, which corrupts the caller at random (seen on an H100: free() got pointers that
 * were never allocated).  Such a definition is global in the linked image; under -foffload-lto
 * the program is one module and the definitions are local.  libtether-device.a defines none of
 * these names on NVIDIA (tether/device_libc.h routes the program's calls to it).  Refuse the
 * image with the fix in the message rather than run it.
 */
static tether_status_t cuda_check_syscall_names(const struct plugin_image *image,
                                                struct tether_error *err)
{
    static const char *const names[] = {"malloc", "free", "vprintf", "__assertfail"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct image_symbol sym;

        if (image_elf_symbol(image, names[i], &sym) && sym.type == STT_FUNC &&
            sym.bind != STB_LOCAL) {
            return plugin_error_set(
                err, TETHER_ERR_BAD_IMAGE,
                "the image defines a global %s(): calls to it are compiled for CUDA's "
                "system-call convention and would corrupt registers; build and link the "
                "program with -foffload-lto, or leave the definition out (libtether-device.a "
                "serves device printf, malloc and free through tether/device_libc.h)",
                names[i]);
        }
    }
    return TETHER_OK;
}

tether_status_t cuda_module_load(struct plugin_device *dev, const struct plugin_image *image,
                                 struct plugin_module **module_p, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_module *cm;
    char log[CUDA_JIT_LOG_BYTES] = "";
    CUjit_option options[] = {CUDA_JIT_ERROR_LOG_BUFFER, CUDA_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)sizeof(log)};
    void *aligned = NULL;
    const void *bytes = image->start;
    tether_status_t rc;
    CUresult res;

    rc = cuda_check_syscall_names(image, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (image_elf_undefined(image, "vprintf")) {
        atomic_store(&cd->driver_printf, true);
    }
    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    cm = calloc(1, sizeof(*cm));
    if (cm == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "module");
    }
    if ((uintptr_t)bytes % 8 != 0) {
        /* ELF readers in the driver expect natural alignment; copy a misaligned image. */
        aligned = malloc(image->size);
        if (aligned == NULL) {
            free(cm);
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "aligned copy of the image");
        }
        memcpy(aligned, bytes, image->size);
        bytes = aligned;
    }
    res = cd->drv->cuModuleLoadDataEx(&cm->module, bytes, 2, options, values);
    free(aligned);
    if (res != CUDA_SUCCESS) {
        rc = cuda_driver_check(cd->drv, res, "cuModuleLoadDataEx", err);
        if (log[0] != '\0') {
            char msg[TETHER_ERROR_MSG_MAX];

            log[strcspn(log, "\n")] = '\0';
            snprintf(msg, sizeof(msg), "%s", err->msg);
            plugin_error_set(err, rc, "%s (%s)", msg, log);
        }
        free(cm);
        return rc;
    }
    *module_p = &cm->base;
    return TETHER_OK;
}

void cuda_module_unload(struct plugin_device *dev, struct plugin_module *module)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_module *cm = container_of(module, struct cuda_module, base);
    struct tether_error err;

    if (cuda_ctx_enter(cd, &err) == TETHER_OK) {
        cuda_log_teardown(cd, cd->drv->cuModuleUnload(cm->module),
                          cuda_driver_symbol_names[CUDA_SLOT_cuModuleUnload]);
    }
    free(cm);
}

tether_status_t cuda_global_lookup(struct plugin_device *dev, struct plugin_module *module,
                                   const char *name, void **addr_p, size_t *size_p,
                                   struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_module *cm = container_of(module, struct cuda_module, base);
    CUdeviceptr dptr = 0;
    size_t bytes = 0;
    tether_status_t rc;
    CUresult res;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    res = cd->drv->cuModuleGetGlobal(&dptr, &bytes, cm->module, name);
    if (res == CUDA_ERROR_NOT_FOUND) {
        /* Expected for optional globals (the device environment): no log. */
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "no global %s in the image", name);
    }
    rc =
        cuda_driver_check(cd->drv, res, cuda_driver_symbol_names[CUDA_SLOT_cuModuleGetGlobal], err);
    if (rc != TETHER_OK) {
        return rc;
    }
    *addr_p = (void *)(uintptr_t)dptr;
    *size_p = bytes;
    return TETHER_OK;
}

/* plugin_ops.rpc_client_copy.  NVIDIA images of libtether-device.a read the client's fixed part
 * (everything but the port state words) from constant memory, __tether_rpc_client_const, whose
 * cache no fence of a call empties (rpc/device/device_nvptx.h): copy the client's first bytes
 * there.  An image without the symbol reads the global only. */
tether_status_t cuda_rpc_client_copy(struct plugin_device *dev, struct plugin_module *module,
                                     const void *client, size_t size, struct plugin_queue *queue,
                                     struct tether_error *err)
{
    struct tether_error lookup_err = {""};
    size_t want = tether_rpc_client_const_size();
    size_t bytes = 0;
    void *addr = NULL;
    tether_status_t rc =
        cuda_global_lookup(dev, module, TETHER_RPC_CLIENT_CONST_SYMBOL, &addr, &bytes, &lookup_err);

    if (rc == TETHER_ERR_NOT_FOUND) {
        return TETHER_OK;
    }
    if (rc != TETHER_OK) {
        return plugin_error_set(err, rc, "%s", lookup_err.msg);
    }
    if (bytes != want || want > size) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "%s is %zu bytes, this plugin's RPC server expects %zu "
                                "(libtether-device.a and plugin from different versions?)",
                                TETHER_RPC_CLIENT_CONST_SYMBOL, bytes, want);
    }
    return cuda_memcpy_h2d(dev, addr, client, want, NULL, queue, err);
}

/* The number of parameters of `func` (drivers of CUDA 12.4 and later: cuFuncGetParamInfo
 * answers CUDA_ERROR_INVALID_VALUE past the last one), or -1 where the driver cannot tell. */
static int32_t cuda_kernel_params(const struct cuda_driver *drv, CUfunction func)
{
    size_t offset, size;
    if (drv->cuFuncGetParamInfo == NULL)
        return -1;
    for (int32_t n = 0; n < 4096; n++) {
        CUresult res = drv->cuFuncGetParamInfo(func, (size_t)n, &offset, &size);
        if (res == CUDA_ERROR_INVALID_VALUE)
            return n;
        if (res != CUDA_SUCCESS)
            return -1;
    }
    return -1;
}

tether_status_t cuda_kernel_lookup(struct plugin_device *dev, struct plugin_module *module,
                                   const char *name, struct plugin_kernel **kernel_p,
                                   struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_module *cm = container_of(module, struct cuda_module, base);
    struct cuda_kernel *ck;
    int max_threads = 0;
    tether_status_t rc;
    CUresult res;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    ck = calloc(1, sizeof(*ck));
    if (ck == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "kernel %s", name);
    }
    res = cd->drv->cuModuleGetFunction(&ck->func, cm->module, name);
    if (res == CUDA_ERROR_NOT_FOUND) {
        free(ck);
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "no kernel %s in the image", name);
    }
    rc = cuda_driver_check(cd->drv, res, cuda_driver_symbol_names[CUDA_SLOT_cuModuleGetFunction],
                           err);
    if (rc == TETHER_OK) {
        /* Registers and shared memory may allow fewer threads than the device's limit. */
        rc = CUDA_CALL(cd->drv, err, cuFuncGetAttribute, &max_threads,
                       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ck->func);
    }
    if (rc != TETHER_OK) {
        free(ck);
        return rc;
    }
    ck->base.max_threads = max_threads > 0 ? (uint32_t)max_threads : 0;
    atomic_init(&ck->dyn_shared_set, 0);
    ck->params = cuda_kernel_params(cd->drv, ck->func);
    *kernel_p = &ck->base;
    return TETHER_OK;
}

void cuda_kernel_release(struct plugin_device *dev, struct plugin_kernel *kernel)
{
    (void)dev;
    free(container_of(kernel, struct cuda_kernel, base));
}

/* More than 48 KiB of dynamic shared memory needs an explicit opt-in per kernel. */
static tether_status_t cuda_kernel_shared(struct cuda_device *cd, struct cuda_kernel *ck,
                                          uint32_t bytes, struct tether_error *err)
{
    uint32_t set = atomic_load_explicit(&ck->dyn_shared_set, memory_order_relaxed);
    tether_status_t rc;

    if (bytes <= CUDA_STATIC_SHARED_LIMIT || bytes <= set) {
        return TETHER_OK;
    }
    if (cd->max_shared_optin > 0 && bytes > (uint32_t)cd->max_shared_optin) {
        return plugin_error_set(err, TETHER_ERR_INVALID,
                                "kernel %s: %u bytes of dynamic shared memory, the device allows "
                                "%d",
                                ck->base.name, bytes, cd->max_shared_optin);
    }
    rc = CUDA_CALL(cd->drv, err, cuFuncSetAttribute, ck->func,
                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
    if (rc == TETHER_OK) {
        /* Concurrent launches may race here; the larger value wins, and setting it twice is
         * harmless. */
        while (set < bytes &&
               !atomic_compare_exchange_weak_explicit(&ck->dyn_shared_set, &set, bytes,
                                                      memory_order_relaxed, memory_order_relaxed)) {
        }
    }
    return rc;
}

tether_status_t cuda_launch(struct plugin_device *dev, struct plugin_kernel *kernel,
                            const struct plugin_launch *launch, struct plugin_queue *queue,
                            struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_kernel *ck = container_of(kernel, struct cuda_kernel, base);
    char what[TETHER_ERROR_MSG_MAX];
    tether_status_t rc;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    /* cuLaunchKernel reads one pointer per parameter the kernel has: fewer from libomptarget
     * would have it read past the array (seen as CUDA_ERROR_INVALID_VALUE, or worse). */
    if (ck->params >= 0 && (uint32_t)ck->params != launch->num_args) {
        return plugin_error_set(err, TETHER_ERR_INVALID,
                                "kernel %s takes %d argument(s), libomptarget passed %u: the host "
                                "and device compiles of its target region disagree (a variable "
                                "the region uses in one of them only, e.g. under #ifdef "
                                "__NVPTX__)",
                                kernel->name, (int)ck->params, (unsigned)launch->num_args);
    }
    rc = cuda_kernel_shared(cd, ck, launch->dyn_shared_mem, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = CUDA_CALL(cd->drv, err, cuLaunchKernel, ck->func, launch->num_teams, 1, 1,
                   launch->num_threads, 1, 1, launch->dyn_shared_mem, queue->stream,
                   launch->arg_ptrs, NULL);
    if (rc != TETHER_OK) {
        char msg[TETHER_ERROR_MSG_MAX];

        cuda_kernel_what("in ", kernel->name, what, sizeof(what));
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return plugin_error_set(err, rc, "%s (%u teams x %u threads, %u bytes shared); %s", msg,
                                launch->num_teams, launch->num_threads, launch->dyn_shared_mem,
                                what);
    }
    atomic_store(&queue->last_kernel, kernel->name);
    atomic_store(&queue->pending, true);
    return TETHER_OK;
}
