/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_memory.c - allocation kinds, host<->device and device<->device copies, pinning
 * (cuda_plugin.h).
 *
 * Copies always run on one of our non-blocking streams: the queue common passes (for a
 * synchronous copy, one it synchronises at the end of the call).
 * The CUDA driver itself recognises page-locked host memory (registered or cuMemAllocHost'd) and
 * then copies by DMA at full link speed; pageable memory is staged by the driver (large pageable
 * copies common stages itself first, through pinned buffers: cuda_host_pageable tells it which
 * memory the driver does not know).  So the host_dev hint from common's pinned map is not needed
 * to pick the fast path (with unified addressing the device-accessible address of registered
 * memory is the host address itself); it tells pageable copies, which wait for their stream
 * first (cuda_stream_wait).
 */
#include "cuda_plugin.h"

#include <stdio.h>

static CUdeviceptr cuda_dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

tether_status_t cuda_alloc(struct plugin_device *dev, size_t size, enum plugin_alloc_kind kind,
                           void **ptr_p, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_driver *drv = cd->drv;
    CUdeviceptr dptr = 0;
    void *hptr = NULL;
    tether_status_t rc;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    switch (kind) {
    case PLUGIN_ALLOC_DEVICE:
        rc = CUDA_CALL(drv, err, cuMemAlloc, &dptr, size);
        hptr = (void *)(uintptr_t)dptr;
        break;
    case PLUGIN_ALLOC_HOST:
        /* Page-locked and mapped into every context at the same address (unified addressing). */
        rc = CUDA_CALL(drv, err, cuMemHostAlloc, &hptr, size,
                       CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        break;
    case PLUGIN_ALLOC_SHARED:
        rc = CUDA_CALL(drv, err, cuMemAllocManaged, &dptr, size, CU_MEM_ATTACH_GLOBAL);
        hptr = (void *)(uintptr_t)dptr;
        break;
    default:
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED, "allocation kind %d", (int)kind);
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    *ptr_p = hptr;
    return TETHER_OK;
}

tether_status_t cuda_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                          struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    switch (kind) {
    case PLUGIN_ALLOC_DEVICE:
    case PLUGIN_ALLOC_SHARED:
        return CUDA_CALL(cd->drv, err, cuMemFree, cuda_dptr(ptr));
    case PLUGIN_ALLOC_HOST:
        return CUDA_CALL(cd->drv, err, cuMemFreeHost, ptr);
    default:
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED, "allocation kind %d", (int)kind);
    }
}

/*
 * A copy between the device and pageable host memory queued behind a running kernel waits
 * inside the driver for that kernel while holding a driver lock that cuMemAlloc needs (seen on
 * an H200, driver 580: libomptarget's cuMemcpyDtoHAsync of a mapped scalar right after the
 * launch blocked the RPC server thread's cuMemAlloc for the device heap, which the kernel was
 * waiting for: a deadlock).  So before such a copy onto a stream with work pending, wait for the
 * stream first (cuda_stream_wait: polling, then sleeping on an event, holding nothing); the copy
 * would not have started earlier anyway.  Pinned copies (host_dev known) stay asynchronous.
 */
/* Before a host<->device copy: the device's context, and for pageable host memory (no host_dev) a
 * stream with nothing pending. */
static tether_status_t cuda_host_copy_enter(struct cuda_device *cd, struct plugin_queue *queue,
                                            const void *host_dev, struct tether_error *err)
{
    tether_status_t rc = cuda_ctx_enter(cd, err);

    if (rc == TETHER_OK && host_dev == NULL && atomic_load(&queue->pending)) {
        rc = cuda_stream_wait(cd, queue, err);
    }
    return rc;
}

/* After enqueueing a copy: the stream has work pending. */
static tether_status_t cuda_copy_done(struct plugin_queue *queue, tether_status_t rc)
{
    if (rc == TETHER_OK) {
        atomic_store(&queue->pending, true);
    }
    return rc;
}

tether_status_t cuda_memcpy_h2d(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                const void *host_dev, struct plugin_queue *queue,
                                struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_host_copy_enter(cd, queue, host_dev, err);

    if (rc != TETHER_OK) {
        return rc;
    }
    rc = CUDA_CALL(cd->drv, err, cuMemcpyHtoDAsync, cuda_dptr(dst), src, size, queue->stream);
    return cuda_copy_done(queue, rc);
}

tether_status_t cuda_memcpy_d2h(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                void *host_dev, struct plugin_queue *queue,
                                struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc = cuda_host_copy_enter(cd, queue, host_dev, err);

    if (rc != TETHER_OK) {
        return rc;
    }
    rc = CUDA_CALL(cd->drv, err, cuMemcpyDtoHAsync, dst, cuda_dptr(src), size, queue->stream);
    return cuda_copy_done(queue, rc);
}

/* Direct access between two GPUs when the hardware allows it; otherwise the driver stages
 * cuMemcpyPeer through the host, which is still correct. */
static void cuda_try_peer(struct cuda_device *dst, struct cuda_device *src)
{
    int can = 0;
    CUresult res;

    if (dst->drv->cuDeviceCanAccessPeer(&can, dst->cu_dev, src->cu_dev) != CUDA_SUCCESS || !can) {
        return;
    }
    res = dst->drv->cuCtxEnablePeerAccess(src->ctx, 0);
    if (res != CUDA_SUCCESS && res != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        struct tether_error err;

        cuda_driver_check(dst->drv, res, "cuCtxEnablePeerAccess", &err);
        plugin_log(dst->base.plugin, &dst->base, PLUGIN_LOG_DEBUG, "peer access to device %d: %s",
                   (int)src->base.id, err.msg);
    }
}

tether_status_t cuda_memcpy_d2d(struct plugin_device *dst_dev, void *dst,
                                struct plugin_device *src_dev, const void *src, size_t size,
                                struct plugin_queue *queue, struct tether_error *err)
{
    struct cuda_device *dcd = cuda_device_of(dst_dev);
    struct cuda_device *scd = cuda_device_of(src_dev);
    tether_status_t rc;

    rc = cuda_ctx_enter(dcd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (dcd == scd) {
        rc = CUDA_CALL(dcd->drv, err, cuMemcpyDtoDAsync, cuda_dptr(dst), cuda_dptr(src), size,
                       queue->stream);
    } else {
        cuda_try_peer(dcd, scd);
        rc = CUDA_CALL(dcd->drv, err, cuMemcpyPeerAsync, cuda_dptr(dst), dcd->ctx, cuda_dptr(src),
                       scd->ctx, size, queue->stream);
    }
    return cuda_copy_done(queue, rc);
}

tether_status_t cuda_host_register(struct plugin_device *dev, void *ptr, size_t size,
                                   void **dev_ptr_p, bool *external_p, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_driver *drv = cd->drv;
    CUdeviceptr dptr = 0;
    bool external = false;
    tether_status_t rc;
    CUresult res;

    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    /* PORTABLE: pinned for every context, not just this device's; DEVICEMAP: mapped so kernels
     * may touch it directly. */
    res = drv->cuMemHostRegister(ptr, size,
                                 CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (res == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
        external = true; /* pinned by someone else (user cudaHostRegister, another device) */
    } else if (res != CUDA_SUCCESS) {
        return cuda_driver_check(drv, res, cuda_driver_symbol_names[CUDA_SLOT_cuMemHostRegister],
                                 err);
    }
    if (cd->host_ptr_is_dev) {
        /* The usual case (x86-64 Linux, unified addressing): the device uses the host address,
         * so no second driver call sits on the lock path. */
        dptr = cuda_dptr(ptr);
    } else {
        res = drv->cuMemHostGetDevicePointer(&dptr, ptr, 0);
        if (res != CUDA_SUCCESS && external) {
            /* Registered elsewhere without a mapping: transfers still run at pinned speed. */
            dptr = cuda_dptr(ptr);
        } else if (res != CUDA_SUCCESS) {
            rc = cuda_driver_check(
                drv, res, cuda_driver_symbol_names[CUDA_SLOT_cuMemHostGetDevicePointer], err);
            cuda_log_teardown(cd, drv->cuMemHostUnregister(ptr),
                              cuda_driver_symbol_names[CUDA_SLOT_cuMemHostUnregister]);
            return rc;
        }
    }
    *dev_ptr_p = (void *)(uintptr_t)dptr;
    *external_p = external;
    return TETHER_OK;
}

tether_status_t cuda_host_unregister(struct plugin_device *dev, void *base, size_t size,
                                     struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    tether_status_t rc;

    (void)size;
    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    return CUDA_CALL(cd->drv, err, cuMemHostUnregister, base);
}

/* Memory the driver knows (registered, pinned by it, managed, device) has a memory type; for any
 * other address cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE.  No context needed. */
bool cuda_host_pageable(struct plugin_device *dev, const void *ptr, size_t size)
{
    struct cuda_device *cd = cuda_device_of(dev);
    unsigned int type = 0;

    (void)size;
    return cd->drv->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          cuda_dptr(ptr)) == CUDA_ERROR_INVALID_VALUE;
}
