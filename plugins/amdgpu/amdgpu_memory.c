/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_memory.c - memory of the AMDGPU backend: pools, pinning, copies, kernarg blocks (see
 * amdgpu_backend.h for which pool serves which kind).
 *
 * Copies use hsa_amd_memory_async_copy with the device's agent on both sides (the agent reaches
 * device memory and the agent pointer of locked host memory), a completion signal and the
 * stream's previous signal as dependency.  Host memory that is not in the pinned map (host_dev
 * NULL) is locked for the copy alone and unlocked when the stream finds the copy complete.
 */
#include <stdlib.h>
#include <string.h>

#include "amdgpu_backend.h"

/* ---- allocation ------------------------------------------------------------------------------ */

tether_status_t amdgpu_alloc(struct plugin_device *pdev, size_t size, enum plugin_alloc_kind kind,
                             void **ptr_p, struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_plugin *ap = dev->ap;
    hsa_amd_memory_pool_t pool;
    bool share; /* make it accessible to every GPU agent */
    void *ptr = NULL;
    tether_status_t st;

    switch (kind) {
    case PLUGIN_ALLOC_DEVICE:
        pool = dev->device_pool;
        share = ap->num_gpus > 1; /* so peer devices can copy from and to it */
        break;
    case PLUGIN_ALLOC_HOST:
    case PLUGIN_ALLOC_SHARED:
        pool = ap->host_pool;
        share = true;
        break;
    default:
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED, "allocation kind %d", (int)kind);
    }
    st = amdgpu_check(dev, ap->hsa.hsa_amd_memory_pool_allocate(pool, size, 0, &ptr),
                      kind == PLUGIN_ALLOC_DEVICE ? "hsa_amd_memory_pool_allocate(device pool)"
                                                  : "hsa_amd_memory_pool_allocate(host pool)",
                      err);
    if (st != TETHER_OK)
        return st;
    if (share) {
        st = amdgpu_check(
            dev, ap->hsa.hsa_amd_agents_allow_access((uint32_t)ap->num_gpus, ap->gpus, NULL, ptr),
            "hsa_amd_agents_allow_access", err);
        if (st != TETHER_OK)
            goto free_memory;
    }
    *ptr_p = ptr;
    return TETHER_OK;

free_memory:
    ap->hsa.hsa_amd_memory_pool_free(ptr);
    return st;
}

tether_status_t amdgpu_free(struct plugin_device *pdev, void *ptr, enum plugin_alloc_kind kind,
                            struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);

    (void)kind;
    return amdgpu_check(dev, dev->ap->hsa.hsa_amd_memory_pool_free(ptr), "hsa_amd_memory_pool_free",
                        err);
}

/* ---- pinning ----------------------------------------------------------------------------- */

/* The plugin's lock containing [ptr, ptr + size), or NULL (lock_mu held). */
static struct amdgpu_lock *amdgpu_lock_find(struct amdgpu_plugin *ap, const void *ptr, size_t size)
{
    uintptr_t p = (uintptr_t)ptr;

    for (struct amdgpu_lock *l = ap->locks; l != NULL; l = l->next) {
        uintptr_t b = (uintptr_t)l->host;

        if (p >= b && p - b <= l->size && size <= l->size - (p - b))
            return l;
    }
    return NULL;
}

tether_status_t amdgpu_lock_acquire(struct amdgpu_device *dev, void *ptr, size_t size,
                                    void **agent_p, struct amdgpu_lock **lock_p,
                                    struct tether_error *err)
{
    struct amdgpu_plugin *ap = dev->ap;
    struct amdgpu_lock *l, *mine;
    void *agent = NULL;
    tether_status_t st;

    pthread_mutex_lock(&ap->lock_mu);
    l = amdgpu_lock_find(ap, ptr, size);
    if (l != NULL) {
        l->refs++;
        *agent_p = (char *)l->agent + ((char *)ptr - (char *)l->host);
        *lock_p = l;
    }
    pthread_mutex_unlock(&ap->lock_mu);
    if (l != NULL)
        return TETHER_OK;

    mine = calloc(1, sizeof(*mine));
    if (mine == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    /* the runtime call is slow: never under lock_mu */
    st = amdgpu_check(dev, ap->hsa.hsa_amd_memory_lock(ptr, size, NULL, 0, &agent),
                      "hsa_amd_memory_lock", err);
    if (st != TETHER_OK) {
        free(mine);
        return st;
    }
    mine->host = ptr;
    mine->size = size;
    mine->agent = agent;
    mine->refs = 1;
    pthread_mutex_lock(&ap->lock_mu);
    mine->next = ap->locks;
    ap->locks = mine;
    pthread_mutex_unlock(&ap->lock_mu);
    *agent_p = agent;
    *lock_p = mine;
    return TETHER_OK;
}

tether_status_t amdgpu_lock_release(struct amdgpu_device *dev, struct amdgpu_lock *lock,
                                    struct tether_error *err)
{
    struct amdgpu_plugin *ap = dev->ap;
    struct amdgpu_lock **pp;
    bool last = false;
    tether_status_t st;

    pthread_mutex_lock(&ap->lock_mu);
    if (--lock->refs == 0) {
        for (pp = &ap->locks; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == lock) {
                *pp = lock->next;
                break;
            }
        }
        last = true;
    }
    pthread_mutex_unlock(&ap->lock_mu);
    if (!last)
        return TETHER_OK;
    st = amdgpu_check(dev, ap->hsa.hsa_amd_memory_unlock(lock->host), "hsa_amd_memory_unlock", err);
    if (st != TETHER_OK)
        plugin_log(&ap->base, &dev->base, PLUGIN_LOG_WARN, "%s (host %p, %zu bytes)", err->msg,
                   lock->host, lock->size);
    free(lock);
    return st;
}

/* The agent pointer of host range [ptr, ptr + size), locking it when needed.  Memory the runtime
 * knows and we did not lock is used as it is: locked by someone else (its agent pointer) or
 * allocated from an HSA pool (its own address); *lock_p is then NULL and *external_p true.
 * Otherwise *lock_p is our hold (amdgpu_lock_acquire: joining our own lock when the range lies in
 * one, e.g. a transfer in flight, else a new hsa_amd_memory_lock). */
/* True when this plugin locked a range holding [ptr, ptr + size); otherwise *info_p is what the
 * runtime knows of ptr (type HSA_EXT_POINTER_TYPE_UNKNOWN when it knows nothing). */
static bool amdgpu_host_info(struct amdgpu_plugin *ap, const void *ptr, size_t size,
                             hsa_amd_pointer_info_t *info_p)
{
    bool ours;

    pthread_mutex_lock(&ap->lock_mu);
    ours = amdgpu_lock_find(ap, ptr, size) != NULL;
    pthread_mutex_unlock(&ap->lock_mu);
    memset(info_p, 0, sizeof(*info_p));
    info_p->size = sizeof(*info_p);
    if (!ours &&
        ap->hsa.hsa_amd_pointer_info(ptr, info_p, NULL, NULL, NULL) != HSA_STATUS_SUCCESS) {
        memset(info_p, 0, sizeof(*info_p));
        info_p->type = HSA_EXT_POINTER_TYPE_UNKNOWN;
    }
    return ours;
}

static tether_status_t amdgpu_host_access(struct amdgpu_device *dev, void *ptr, size_t size,
                                          void **agent_p, struct amdgpu_lock **lock_p,
                                          bool *external_p, struct tether_error *err)
{
    hsa_amd_pointer_info_t info;

    if (!amdgpu_host_info(dev->ap, ptr, size, &info)) {
        uintptr_t p = (uintptr_t)ptr, base = (uintptr_t)info.hostBaseAddress;

        if (info.type == HSA_EXT_POINTER_TYPE_LOCKED && p >= base && p - base <= info.sizeInBytes &&
            size <= info.sizeInBytes - (p - base)) {
            *agent_p = (char *)info.agentBaseAddress + (p - base);
            *lock_p = NULL;
            *external_p = true;
            return TETHER_OK;
        }
        if (info.type == HSA_EXT_POINTER_TYPE_HSA) {
            *agent_p = ptr;
            *lock_p = NULL;
            *external_p = true;
            return TETHER_OK;
        }
    }
    *external_p = false;
    return amdgpu_lock_acquire(dev, ptr, size, agent_p, lock_p, err);
}

tether_status_t amdgpu_host_register(struct plugin_device *pdev, void *ptr, size_t size,
                                     void **dev_ptr_p, bool *external_p, struct tether_error *err)
{
    struct amdgpu_lock *lock;

    /* the hold stays in the plugin's lock table until host_unregister */
    return amdgpu_host_access(amdgpu_device_of(pdev), ptr, size, dev_ptr_p, &lock, external_p, err);
}

tether_status_t amdgpu_host_unregister(struct plugin_device *pdev, void *base, size_t size,
                                       struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_plugin *ap = dev->ap;
    struct amdgpu_lock *lock;

    pthread_mutex_lock(&ap->lock_mu);
    lock = amdgpu_lock_find(ap, base, size);
    pthread_mutex_unlock(&ap->lock_mu);
    if (lock == NULL)
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND,
                                "host range %p (%zu bytes) is not locked by this plugin", base,
                                size);
    return amdgpu_lock_release(dev, lock, err);
}

/* Memory neither this plugin nor anyone else locked, and not the runtime's own: what common
 * stages through its pinned buffers (instead of locking it for the copy). */
bool amdgpu_host_pageable(struct plugin_device *pdev, const void *ptr, size_t size)
{
    hsa_amd_pointer_info_t info;

    return !amdgpu_host_info(amdgpu_device_of(pdev)->ap, ptr, size, &info) &&
           info.type == HSA_EXT_POINTER_TYPE_UNKNOWN;
}

/* ---- copies ------------------------------------------------------------------------------- */

/* Enqueue one copy on q (whose lock the caller does not hold).  extra: resources released after
 * the copy completes; on failure they are released here. */
static tether_status_t amdgpu_copy(struct amdgpu_device *dev, struct plugin_queue *q, void *dst,
                                   hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                                   size_t size, const struct amdgpu_pending *extra,
                                   size_t num_extra, struct tether_error *err)
{
    struct amdgpu_signal *signal;
    hsa_status_t hs;
    tether_status_t st;

    st = amdgpu_signal_get(dev, &signal, err);
    if (st != TETHER_OK)
        goto release_extra;
    pthread_mutex_lock(&q->lock);
    st = amdgpu_stream_reserve(q, 1 + num_extra, err);
    if (st == TETHER_OK) {
        hs = dev->ap->hsa.hsa_amd_memory_async_copy(
            dst, dst_agent, src, src_agent, size, q->last != NULL ? 1 : 0,
            q->last != NULL ? &q->last->hsa : NULL, signal->hsa);
        st = amdgpu_check(dev, hs, "hsa_amd_memory_async_copy", err);
    }
    if (st == TETHER_OK)
        amdgpu_stream_push(q, signal, false, extra, num_extra);
    pthread_mutex_unlock(&q->lock);
    if (st == TETHER_OK)
        return TETHER_OK;
    amdgpu_signal_unref(dev, signal);
release_extra:
    for (size_t i = 0; i < num_extra; i++)
        amdgpu_pending_release(dev, &extra[i]);
    return st;
}

/* A host <-> device copy.  host is the host side, host_dev its agent pointer when pinned. */
static tether_status_t amdgpu_copy_host(struct amdgpu_device *dev, bool to_device, void *dst,
                                        const void *src, size_t size, const void *host_dev,
                                        struct plugin_queue *queue, struct tether_error *err)
{
    void *host = to_device ? (void *)src : dst;
    struct amdgpu_pending unlock = {.kind = AMDGPU_PENDING_UNLOCK};
    size_t num_extra = 0;

    if (host_dev == NULL) {
        /* not in the pinned map: hold it locked until the copy is known complete (or use it as
         * it is when the runtime already knows it) */
        void *agent = NULL;
        bool external;

        tether_status_t st =
            amdgpu_host_access(dev, host, size, &agent, &unlock.u.lock, &external, err);

        if (st != TETHER_OK)
            return st;
        host_dev = agent;
        num_extra = unlock.u.lock != NULL ? 1 : 0;
    }
    if (to_device)
        return amdgpu_copy(dev, queue, dst, dev->agent, host_dev, dev->agent, size, &unlock,
                           num_extra, err);
    return amdgpu_copy(dev, queue, (void *)host_dev, dev->agent, src, dev->agent, size, &unlock,
                       num_extra, err);
}

tether_status_t amdgpu_memcpy_h2d(struct plugin_device *pdev, void *dst, const void *src,
                                  size_t size, const void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err)
{
    return amdgpu_copy_host(amdgpu_device_of(pdev), true, dst, src, size, host_dev, queue, err);
}

tether_status_t amdgpu_memcpy_d2h(struct plugin_device *pdev, void *dst, const void *src,
                                  size_t size, void *host_dev, struct plugin_queue *queue,
                                  struct tether_error *err)
{
    return amdgpu_copy_host(amdgpu_device_of(pdev), false, dst, src, size, host_dev, queue, err);
}

tether_status_t amdgpu_memcpy_d2d(struct plugin_device *dst_pdev, void *dst,
                                  struct plugin_device *src_pdev, const void *src, size_t size,
                                  struct plugin_queue *queue, struct tether_error *err)
{
    struct amdgpu_device *dst_dev = amdgpu_device_of(dst_pdev);
    struct amdgpu_device *src_dev = amdgpu_device_of(src_pdev);

    return amdgpu_copy(dst_dev, queue, dst, dst_dev->agent, src, src_dev->agent, size, NULL, 0,
                       err);
}

/* ---- kernarg blocks ----------------------------------------------------------------------- */

_Static_assert(AMDGPU_KERNARG_BLOCKS == 64, "one bit per block in a uint64_t");

static bool amdgpu_kernarg_pooled(const struct amdgpu_device *dev, const void *buf)
{
    const uint8_t *p = buf;

    return dev->kernarg_base != NULL && p >= dev->kernarg_base &&
           p < dev->kernarg_base + (size_t)AMDGPU_KERNARG_BLOCKS * AMDGPU_KERNARG_BLOCK;
}

/* Allocate kernarg memory from the CPU agent's kernarg pool, visible to the device's agent. */
static tether_status_t amdgpu_kernarg_alloc(struct amdgpu_device *dev, size_t size, void **ptr_p,
                                            struct tether_error *err)
{
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    void *ptr = NULL;
    tether_status_t st;

    st = amdgpu_check(dev, hsa->hsa_amd_memory_pool_allocate(dev->ap->kernarg_pool, size, 0, &ptr),
                      "hsa_amd_memory_pool_allocate(kernarg pool)", err);
    if (st != TETHER_OK)
        return st;
    st = amdgpu_check(dev, hsa->hsa_amd_agents_allow_access(1, &dev->agent, NULL, ptr),
                      "hsa_amd_agents_allow_access(kernarg)", err);
    if (st != TETHER_OK) {
        hsa->hsa_amd_memory_pool_free(ptr);
        return st;
    }
    *ptr_p = ptr;
    return TETHER_OK;
}

tether_status_t amdgpu_kernarg_get(struct amdgpu_device *dev, size_t size, void **buf_p,
                                   struct amdgpu_pending *pending_p, struct tether_error *err)
{
    void *buf = NULL;
    tether_status_t st = TETHER_OK;

    if (size <= AMDGPU_KERNARG_BLOCK) {
        pthread_mutex_lock(&dev->kernarg_lock);
        if (dev->kernarg_base == NULL) {
            void *base;

            st = amdgpu_kernarg_alloc(dev, (size_t)AMDGPU_KERNARG_BLOCKS * AMDGPU_KERNARG_BLOCK,
                                      &base, err);
            if (st == TETHER_OK) {
                dev->kernarg_base = base;
                dev->kernarg_free = ~(uint64_t)0;
            }
        }
        if (st == TETHER_OK && dev->kernarg_free != 0) {
            unsigned i = (unsigned)__builtin_ctzll(dev->kernarg_free);

            dev->kernarg_free &= ~((uint64_t)1 << i);
            buf = dev->kernarg_base + (size_t)i * AMDGPU_KERNARG_BLOCK;
        }
        pthread_mutex_unlock(&dev->kernarg_lock);
        if (st != TETHER_OK)
            return st;
    }
    if (buf == NULL) {
        /* larger than a block, or every block in flight */
        st = amdgpu_kernarg_alloc(dev, size, &buf, err);
        if (st != TETHER_OK)
            return st;
    }
    pending_p->kind = AMDGPU_PENDING_KERNARG;
    pending_p->u.ptr = buf;
    *buf_p = buf;
    return TETHER_OK;
}

void amdgpu_kernarg_put(struct amdgpu_device *dev, void *buf)
{
    pthread_mutex_lock(&dev->kernarg_lock);
    if (amdgpu_kernarg_pooled(dev, buf)) {
        size_t i = (size_t)((uint8_t *)buf - dev->kernarg_base) / AMDGPU_KERNARG_BLOCK;

        dev->kernarg_free |= (uint64_t)1 << i;
        buf = NULL;
    }
    pthread_mutex_unlock(&dev->kernarg_lock);
    if (buf != NULL)
        dev->ap->hsa.hsa_amd_memory_pool_free(buf);
}

void amdgpu_kernarg_fini(struct amdgpu_device *dev)
{
    if (dev->kernarg_base != NULL)
        dev->ap->hsa.hsa_amd_memory_pool_free(dev->kernarg_base);
    dev->kernarg_base = NULL;
    dev->kernarg_free = 0;
}
