/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_stream.c - signals, HSA queues, streams (common's plugin_queue), events and kernel
 * launches of the AMDGPU backend (see amdgpu_backend.h for the model).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu_backend.h"

/* ---- signals ------------------------------------------------------------------------------- */

tether_status_t amdgpu_signal_get(struct amdgpu_device *dev, struct amdgpu_signal **signal_p,
                                  struct tether_error *err)
{
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    struct amdgpu_signal *signal = NULL;
    tether_status_t st;

    pthread_mutex_lock(&dev->signal_lock);
    if (dev->num_free_signals > 0)
        signal = dev->free_signals[--dev->num_free_signals];
    pthread_mutex_unlock(&dev->signal_lock);
    if (signal == NULL) {
        signal = calloc(1, sizeof(*signal));
        if (signal == NULL)
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
        st = amdgpu_check(dev, hsa->hsa_signal_create(1, 0, NULL, &signal->hsa),
                          "hsa_signal_create", err);
        if (st != TETHER_OK) {
            free(signal);
            return st;
        }
    } else {
        hsa->hsa_signal_store_relaxed(signal->hsa, 1);
    }
    atomic_store_explicit(&signal->refs, 1, memory_order_relaxed);
    *signal_p = signal;
    return TETHER_OK;
}

void amdgpu_signal_ref(struct amdgpu_signal *signal)
{
    atomic_fetch_add_explicit(&signal->refs, 1, memory_order_relaxed);
}

void amdgpu_signal_unref(struct amdgpu_device *dev, struct amdgpu_signal *signal)
{
    if (atomic_fetch_sub_explicit(&signal->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_lock(&dev->signal_lock);
    if (dev->num_free_signals == dev->cap_free_signals) {
        size_t cap = dev->cap_free_signals ? 2 * dev->cap_free_signals : 64;
        struct amdgpu_signal **a = realloc(dev->free_signals, cap * sizeof(*a));

        if (a != NULL) {
            dev->free_signals = a;
            dev->cap_free_signals = cap;
        }
    }
    if (dev->num_free_signals < dev->cap_free_signals) {
        dev->free_signals[dev->num_free_signals++] = signal;
        signal = NULL;
    }
    pthread_mutex_unlock(&dev->signal_lock);
    if (signal != NULL) { /* no room to keep it: give it back to the runtime */
        dev->ap->hsa.hsa_signal_destroy(signal->hsa);
        free(signal);
    }
}

/* ---- waits: the primitives of common's plugin_wait() ------------------------------------- */

struct amdgpu_waiter {
    struct amdgpu_device *dev;
    struct amdgpu_signal *signal;
};

/* A signal's value as a wait's answer: done below 1; a queue error or a negative value (a failed
 * operation) is the error. */
static tether_status_t amdgpu_wait_check(struct amdgpu_device *dev, hsa_signal_value_t v,
                                         bool *done_p, struct tether_error *err)
{
    int qerr = atomic_load_explicit(&dev->queue_error, memory_order_acquire);

    if (qerr != 0)
        return amdgpu_check(dev, (hsa_status_t)qerr, "GPU queue error", err);
    if (v < 0)
        return plugin_error_set(err, TETHER_ERR_DRIVER,
                                "a GPU operation failed (completion signal %lld)", (long long)v);
    *done_p = v < 1;
    return TETHER_OK;
}

static tether_status_t amdgpu_signal_poll(void *ctx, bool *done_p, struct tether_error *err)
{
    struct amdgpu_waiter *w = ctx;

    return amdgpu_wait_check(w->dev, w->dev->ap->hsa.hsa_signal_load_scacquire(w->signal->hsa),
                             done_p, err);
}

/* Sleep in the runtime until the signal drops below 1, waking every ~100 ms (wait_hint) to look
 * for a queue error. */
static tether_status_t amdgpu_signal_block(void *ctx, struct tether_error *err)
{
    struct amdgpu_waiter *w = ctx;
    const struct amdgpu_hsa *hsa = &w->dev->ap->hsa;
    bool done = false;
    tether_status_t st = TETHER_OK;

    while (st == TETHER_OK && !done)
        st = amdgpu_wait_check(
            w->dev,
            hsa->hsa_signal_wait_scacquire(w->signal->hsa, HSA_SIGNAL_CONDITION_LT, 1,
                                           w->dev->wait_hint, HSA_WAIT_STATE_BLOCKED),
            &done, err);
    return st;
}

/* Wait until signal drops below 1, or the runtime reports a queue error: poll, then sleep
 * (plugin_wait). */
static tether_status_t amdgpu_signal_wait(struct amdgpu_device *dev, struct amdgpu_signal *signal,
                                          struct tether_error *err)
{
    struct amdgpu_waiter w = {.dev = dev, .signal = signal};

    return plugin_wait(&dev->wait, amdgpu_signal_poll, amdgpu_signal_block, &w, err);
}

/* ---- HSA queues ---------------------------------------------------------------------------- */

static void amdgpu_queue_error_cb(hsa_status_t status, hsa_queue_t *source, void *data)
{
    struct amdgpu_device *dev = data;
    int expected = 0;

    (void)source;
    atomic_compare_exchange_strong(&dev->queue_error, &expected, (int)status);
}

/* The HSA queue for a new stream: round robin over num_hw_queues, created on first use. */
static tether_status_t amdgpu_hw_queue_get(struct amdgpu_device *dev, struct amdgpu_hw_queue **hq_p,
                                           struct tether_error *err)
{
    unsigned i = atomic_fetch_add_explicit(&dev->next_hw_queue, 1, memory_order_relaxed) %
                 dev->num_hw_queues;
    struct amdgpu_hw_queue *hq = &dev->hw_queues[i];
    tether_status_t st = TETHER_OK;

    pthread_mutex_lock(&dev->queue_lock);
    if (hq->queue == NULL)
        st = amdgpu_check(dev,
                          dev->ap->hsa.hsa_queue_create(dev->agent, dev->queue_packets,
                                                        HSA_QUEUE_TYPE_MULTI, amdgpu_queue_error_cb,
                                                        dev, UINT32_MAX, UINT32_MAX, &hq->queue),
                          "hsa_queue_create", err);
    pthread_mutex_unlock(&dev->queue_lock);
    if (st == TETHER_OK)
        *hq_p = hq;
    return st;
}

/* Write n built packets to consecutive slots of hq and ring its doorbell once. */
static void amdgpu_hw_queue_submit(struct amdgpu_device *dev, struct amdgpu_hw_queue *hq,
                                   const void *const *packets, const uint32_t *headers, unsigned n)
{
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    hsa_queue_t *q = hq->queue;
    uint64_t index = hsa->hsa_queue_add_write_index_relaxed(q, n);

    /* wait for room: the packet processor frees slots as it reads them */
    while (index + n - hsa->hsa_queue_load_read_index_scacquire(q) > q->size)
        sched_yield();
    for (unsigned i = 0; i < n; i++) {
        uint8_t *slot = (uint8_t *)q->base_address + ((index + i) & (q->size - 1)) * 64;

        amdgpu_aql_packet_publish(slot, packets[i], headers[i]);
    }
    hsa->hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)(index + n - 1));
}

void amdgpu_device_streams_fini(struct amdgpu_device *dev)
{
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;

    for (unsigned i = 0; i < AMDGPU_MAX_HW_QUEUES; i++) {
        if (dev->hw_queues[i].queue != NULL)
            hsa->hsa_queue_destroy(dev->hw_queues[i].queue);
        dev->hw_queues[i].queue = NULL;
    }
    for (size_t i = 0; i < dev->num_free_signals; i++) {
        hsa->hsa_signal_destroy(dev->free_signals[i]->hsa);
        free(dev->free_signals[i]);
    }
    free(dev->free_signals);
    dev->free_signals = NULL;
    dev->num_free_signals = dev->cap_free_signals = 0;
}

/* ---- streams -------------------------------------------------------------------------------- */

static tether_status_t amdgpu_stream_init(struct amdgpu_device *dev, struct plugin_queue *q)
{
    memset(q, 0, sizeof(*q));
    q->dev = dev;
    return pthread_mutex_init(&q->lock, NULL) == 0 ? TETHER_OK : TETHER_ERR_NO_MEMORY;
}

tether_status_t amdgpu_stream_reserve(struct plugin_queue *q, size_t n, struct tether_error *err)
{
    if (q->cap_pending - q->num_pending < n) {
        size_t cap = q->cap_pending ? 2 * q->cap_pending : 16;
        struct amdgpu_pending *p;

        while (cap - q->num_pending < n)
            cap *= 2;
        p = realloc(q->pending, cap * sizeof(*p));
        if (p == NULL)
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
        q->pending = p;
        q->cap_pending = cap;
    }
    return TETHER_OK;
}

void amdgpu_stream_push(struct plugin_queue *q, struct amdgpu_signal *signal, bool on_hq,
                        const struct amdgpu_pending *extra, size_t num_extra)
{
    q->pending[q->num_pending].kind = AMDGPU_PENDING_SIGNAL;
    q->pending[q->num_pending].u.signal = signal;
    q->num_pending++;
    for (size_t i = 0; i < num_extra; i++)
        q->pending[q->num_pending++] = extra[i];
    q->last = signal; /* the pending entry above holds the reference */
    q->last_on_hq = on_hq;
}

void amdgpu_pending_release(struct amdgpu_device *dev, const struct amdgpu_pending *p)
{
    switch (p->kind) {
    case AMDGPU_PENDING_SIGNAL:
        amdgpu_signal_unref(dev, p->u.signal);
        break;
    case AMDGPU_PENDING_KERNARG:
        amdgpu_kernarg_put(dev, p->u.ptr);
        break;
    case AMDGPU_PENDING_UNLOCK: {
        struct tether_error err; /* a failure is logged as a warning: the data moved */

        amdgpu_lock_release(dev, p->u.lock, &err);
        break;
    }
    }
}

/* Everything on q completed (q->lock held): release its resources. */
static void amdgpu_stream_retire(struct plugin_queue *q)
{
    for (size_t i = 0; i < q->num_pending; i++)
        amdgpu_pending_release(q->dev, &q->pending[i]);
    q->num_pending = 0;
    q->last = NULL;
    q->last_on_hq = false;
    q->last_kernel = NULL;
}

/* After q's work failed: name the last kernel it ran, "<message>; <prefix>the target region in
 * main at line 27" (a GPU fault surfaces at the next wait, whichever operation it was). */
static void amdgpu_stream_blame(struct plugin_queue *q, const char *prefix,
                                struct tether_error *err)
{
    char region[TETHER_ERROR_MSG_MAX], msg[TETHER_ERROR_MSG_MAX];
    const char *kernel;

    pthread_mutex_lock(&q->lock);
    kernel = q->last_kernel;
    pthread_mutex_unlock(&q->lock);
    if (kernel == NULL)
        return;
    plugin_region_describe(kernel, region, sizeof(region));
    snprintf(msg, sizeof(msg), "%s", err->msg);
    plugin_error_set(err, TETHER_OK, "%s; %s%s", msg, prefix, region);
}

/* The stream's first recorded failure (q->lock held), cleared. */
static tether_status_t amdgpu_stream_take_error(struct plugin_queue *q, struct tether_error *err)
{
    tether_status_t st = q->status;

    if (st != TETHER_OK) {
        *err = q->err;
        q->status = TETHER_OK;
    }
    return st;
}

static void amdgpu_stream_fini(struct plugin_queue *q)
{
    const struct amdgpu_hsa *hsa = &q->dev->ap->hsa;

    if (q->last == NULL || hsa->hsa_signal_load_scacquire(q->last->hsa) < 1)
        amdgpu_stream_retire(q);
    else
        plugin_log(&q->dev->ap->base, &q->dev->base, PLUGIN_LOG_DEBUG,
                   "stream destroyed with work in flight: %zu resources left to the runtime",
                   q->num_pending);
    free(q->pending);
    pthread_mutex_destroy(&q->lock);
}

/* q's HSA queue, assigned on first need (q->lock held). */
static tether_status_t amdgpu_stream_hq(struct plugin_queue *q, struct tether_error *err)
{
    if (q->hq != NULL)
        return TETHER_OK;
    return amdgpu_hw_queue_get(q->dev, &q->hq, err);
}

tether_status_t amdgpu_queue_create(struct plugin_device *pdev, struct plugin_queue **queue_p,
                                    struct tether_error *err)
{
    struct plugin_queue *q = malloc(sizeof(*q));

    if (q == NULL || amdgpu_stream_init(amdgpu_device_of(pdev), q) != TETHER_OK) {
        free(q);
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    }
    *queue_p = q;
    return TETHER_OK;
}

/* Interop: the agent's handle as the device (LLVM's convention), no context (HSA has none), and
 * the HSA queue the stream submits its packets to, assigned now if it had none. */
tether_status_t amdgpu_interop_info(struct plugin_device *pdev, struct plugin_queue *queue,
                                    void **device_p, void **context_p, void **stream_p,
                                    struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    tether_status_t st = TETHER_OK;

    if (device_p != NULL)
        *device_p = (void *)(uintptr_t)dev->agent.handle;
    if (context_p != NULL)
        *context_p = NULL;
    if (stream_p != NULL) {
        *stream_p = NULL;
        if (queue != NULL) {
            pthread_mutex_lock(&queue->lock);
            st = amdgpu_stream_hq(queue, err);
            if (st == TETHER_OK)
                *stream_p = queue->hq->queue;
            pthread_mutex_unlock(&queue->lock);
        }
    }
    return st;
}

void amdgpu_queue_destroy(struct plugin_device *pdev, struct plugin_queue *queue)
{
    (void)pdev;
    amdgpu_stream_fini(queue);
    free(queue);
}

/* The one wait for a stream: every synchronous call and libomptarget's synchronize end here. */
tether_status_t amdgpu_queue_sync(struct plugin_device *pdev, struct plugin_queue *q,
                                  struct tether_error *err)
{
    tether_status_t st = TETHER_OK;

    (void)pdev;
    pthread_mutex_lock(&q->lock);
    if (q->last != NULL)
        st = amdgpu_signal_wait(q->dev, q->last, err);
    if (st == TETHER_OK) {
        amdgpu_stream_retire(q);
        st = amdgpu_stream_take_error(q, err);
    }
    /* On a failed wait the resources stay pending: the device may still use them. */
    pthread_mutex_unlock(&q->lock);
    if (st != TETHER_OK)
        amdgpu_stream_blame(q, "in work queued with ", err);
    return st;
}

tether_status_t amdgpu_queue_query(struct plugin_device *pdev, struct plugin_queue *q, bool *done_p,
                                   struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    tether_status_t st = TETHER_OK;
    bool done = true;

    pthread_mutex_lock(&q->lock);
    if (q->last != NULL) {
        hsa_signal_value_t v = dev->ap->hsa.hsa_signal_load_scacquire(q->last->hsa);
        int qerr = atomic_load_explicit(&dev->queue_error, memory_order_acquire);

        if (qerr != 0)
            st = amdgpu_check(dev, (hsa_status_t)qerr, "GPU queue error", err);
        else if (v < 0)
            st = plugin_error_set(err, TETHER_ERR_DRIVER,
                                  "a GPU operation failed (completion signal %lld)", (long long)v);
        done = v < 1;
    }
    if (st == TETHER_OK && done) {
        amdgpu_stream_retire(q);
        st = amdgpu_stream_take_error(q, err);
    }
    pthread_mutex_unlock(&q->lock);
    if (st == TETHER_OK)
        *done_p = done;
    else
        amdgpu_stream_blame(q, "in work queued with ", err);
    return st;
}

/* ---- events ------------------------------------------------------------------------------- */

tether_status_t amdgpu_event_create(struct plugin_device *pdev, struct plugin_event **event_p,
                                    struct tether_error *err)
{
    struct plugin_event *ev = calloc(1, sizeof(*ev));

    (void)pdev;
    if (ev == NULL || pthread_mutex_init(&ev->lock, NULL) != 0) {
        free(ev);
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    }
    *event_p = ev;
    return TETHER_OK;
}

void amdgpu_event_destroy(struct plugin_device *pdev, struct plugin_event *ev)
{
    if (ev->signal != NULL)
        amdgpu_signal_unref(amdgpu_device_of(pdev), ev->signal);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

/* The event's signal with a new reference (NULL: nothing recorded). */
static struct amdgpu_signal *amdgpu_event_signal(struct plugin_event *ev)
{
    struct amdgpu_signal *s;

    pthread_mutex_lock(&ev->lock);
    s = ev->signal;
    if (s != NULL)
        amdgpu_signal_ref(s);
    pthread_mutex_unlock(&ev->lock);
    return s;
}

tether_status_t amdgpu_event_record(struct plugin_device *pdev, struct plugin_event *ev,
                                    struct plugin_queue *q, struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_signal *s, *old;

    (void)err;
    /* The event completes with the stream's last operation: share its signal. */
    pthread_mutex_lock(&q->lock);
    s = q->last;
    if (s != NULL)
        amdgpu_signal_ref(s);
    pthread_mutex_unlock(&q->lock);
    pthread_mutex_lock(&ev->lock);
    old = ev->signal;
    ev->signal = s;
    pthread_mutex_unlock(&ev->lock);
    if (old != NULL)
        amdgpu_signal_unref(dev, old);
    return TETHER_OK;
}

tether_status_t amdgpu_event_wait(struct plugin_device *pdev, struct plugin_event *ev,
                                  struct plugin_queue *q, struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_signal *dep = amdgpu_event_signal(ev), *done;
    struct amdgpu_pending keep;
    hsa_barrier_and_packet_t pkt;
    hsa_signal_t deps[2];
    size_t num_deps = 0;
    uint32_t header;
    const void *packets[1];
    tether_status_t st;

    if (dep == NULL)
        return TETHER_OK; /* nothing recorded: nothing to wait for */
    if (dev->ap->hsa.hsa_signal_load_scacquire(dep->hsa) < 1) {
        amdgpu_signal_unref(dev, dep); /* already complete */
        return TETHER_OK;
    }
    st = amdgpu_signal_get(dev, &done, err);
    if (st != TETHER_OK)
        goto drop_dep;
    pthread_mutex_lock(&q->lock);
    st = amdgpu_stream_hq(q, err);
    if (st == TETHER_OK)
        st = amdgpu_stream_reserve(q, 2, err);
    if (st == TETHER_OK) {
        /* a barrier packet on the stream's queue: later work starts after the event and after
         * the stream's own previous operation */
        deps[num_deps++] = dep->hsa;
        if (q->last != NULL && !q->last_on_hq)
            deps[num_deps++] = q->last->hsa;
        st = amdgpu_aql_barrier_and_build(deps, num_deps, done->hsa, &pkt, &header, err);
    }
    if (st == TETHER_OK) {
        packets[0] = &pkt;
        amdgpu_hw_queue_submit(dev, q->hq, packets, &header, 1);
        keep.kind = AMDGPU_PENDING_SIGNAL; /* the event's signal stays ours until done */
        keep.u.signal = dep;
        amdgpu_stream_push(q, done, true, &keep, 1);
    }
    pthread_mutex_unlock(&q->lock);
    if (st == TETHER_OK)
        return TETHER_OK;
    amdgpu_signal_unref(dev, done);
drop_dep:
    amdgpu_signal_unref(dev, dep);
    return st;
}

tether_status_t amdgpu_event_sync(struct plugin_device *pdev, struct plugin_event *ev,
                                  struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_signal *s = amdgpu_event_signal(ev);
    tether_status_t st;

    if (s == NULL)
        return TETHER_OK;
    st = amdgpu_signal_wait(dev, s, err);
    amdgpu_signal_unref(dev, s);
    return st;
}

/* ---- kernel launch -------------------------------------------------------------------------- */

/* Enqueue a launch of k on q (lock not held). */
static tether_status_t amdgpu_launch_on(struct amdgpu_device *dev,
                                        const struct amdgpu_loaded_kernel *k,
                                        const struct plugin_launch *launch, struct plugin_queue *q,
                                        struct tether_error *err)
{
    const struct amdgpu_kernel *meta = k->meta;
    struct amdgpu_dispatch d;
    struct amdgpu_kernarg_env env;
    struct amdgpu_pending kernarg_pending;
    struct amdgpu_signal *signal;
    hsa_kernel_dispatch_packet_t dispatch;
    hsa_barrier_and_packet_t barrier;
    const void *packets[2];
    uint32_t headers[2];
    unsigned n = 0;
    size_t size = amdgpu_kernargs_size(meta);
    void *kernarg;
    tether_status_t st;

    pthread_mutex_lock(&q->lock);
    st = amdgpu_stream_hq(q, err);
    pthread_mutex_unlock(&q->lock);
    if (st != TETHER_OK)
        return st;
    st = amdgpu_kernarg_get(dev, size, &kernarg, &kernarg_pending, err);
    if (st != TETHER_OK)
        return st;
    st = amdgpu_signal_get(dev, &signal, err);
    if (st != TETHER_OK)
        goto put_kernarg;

    memset(&d, 0, sizeof(d));
    d.kernel_object = k->kernel_object;
    d.num_groups = launch->num_teams;
    d.group_size = launch->num_threads;
    d.dynamic_lds = launch->dyn_shared_mem;
    d.group_segment_size = meta->group_segment_fixed_size + launch->dyn_shared_mem;
    d.private_segment_size = k->private_segment_size;
    d.kernarg = kernarg;
    d.completion_signal = signal->hsa;
    memset(&env, 0, sizeof(env));
    env.queue_ptr = (uint64_t)(uintptr_t)q->hq->queue;
    st = amdgpu_kernargs_pack(meta, launch->args, launch->num_args, &d, &env, kernarg, size, err);
    if (st == TETHER_OK)
        st = amdgpu_aql_dispatch_build(&d, &dispatch, &headers[1], err);
    if (st != TETHER_OK)
        goto put_signal;

    pthread_mutex_lock(&q->lock);
    st = amdgpu_stream_reserve(q, 2, err);
    if (st == TETHER_OK) {
        if (q->last != NULL && !q->last_on_hq) {
            /* the previous operation was a copy: make the kernel wait for it */
            st = amdgpu_aql_barrier_and_build(&q->last->hsa, 1, (hsa_signal_t){0}, &barrier,
                                              &headers[0], err);
            packets[n++] = &barrier;
        }
    }
    if (st == TETHER_OK) {
        packets[n] = &dispatch;
        headers[n] = headers[1];
        n++;
        amdgpu_hw_queue_submit(dev, q->hq, packets, headers, n);
        amdgpu_stream_push(q, signal, true, &kernarg_pending, 1);
        q->last_kernel = k->base.name;
    }
    pthread_mutex_unlock(&q->lock);
    if (st == TETHER_OK)
        return TETHER_OK;

put_signal:
    amdgpu_signal_unref(dev, signal);
put_kernarg:
    amdgpu_pending_release(dev, &kernarg_pending);
    return st;
}

tether_status_t amdgpu_launch(struct plugin_device *pdev, struct plugin_kernel *kernel,
                              const struct plugin_launch *launch, struct plugin_queue *queue,
                              struct tether_error *err)
{
    return amdgpu_launch_on(amdgpu_device_of(pdev),
                            container_of(kernel, struct amdgpu_loaded_kernel, base), launch, queue,
                            err);
}
