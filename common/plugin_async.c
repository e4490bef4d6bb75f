/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_async.c - queue and event pools, the queue of each call (an AsyncInfo's, or one
 * of a synchronous call's own that is synchronised at its end), synchronize/query_async, events,
 * interop (see plugin_core.h).
 */
#include "plugin_state.h"

#include <stdlib.h>

static bool has_events(const struct plugin *plugin)
{
    return plugin->ops->event_create != NULL;
}

/* Grow a pointer array so one more element fits. */
static bool grow(void ***arr, size_t *cap, size_t need)
{
    void **n;
    size_t c;

    if (need <= *cap) {
        return true;
    }
    c = *cap ? *cap * 2 : 8;
    n = realloc(*arr, c * sizeof(**arr));
    if (n == NULL) {
        return false;
    }
    *arr = n;
    *cap = c;
    return true;
}

/* Give an event to the device's pool, or destroy it when the pool cannot grow; true when pooled. */
static bool event_put(struct plugin_device *dev, struct plugin_event *ev)
{
    struct plugin_device_state *st = dev->state;
    bool pooled = false;

    pthread_mutex_lock(&st->lock);
    if (grow((void ***)&st->events, &st->cap_events, st->num_events + 1)) {
        st->events[st->num_events++] = ev;
        pooled = true;
    }
    pthread_mutex_unlock(&st->lock);
    if (!pooled) {
        dev->plugin->ops->event_destroy(dev, ev);
    }
    return pooled;
}

/* A queue from the device's pool, or a new one when the pool is empty. */
static tether_status_t queue_take(struct plugin_device *dev, struct plugin_async **pa_p,
                                  struct tether_error *err)
{
    struct plugin_device_state *st = dev->state;
    struct plugin_async *pa = NULL;
    struct plugin_queue *queue = NULL;
    tether_status_t rc;

    pthread_mutex_lock(&st->lock);
    if (st->num_queues > 0) {
        pa = st->queues[--st->num_queues];
    }
    pthread_mutex_unlock(&st->lock);
    if (pa == NULL) {
        pa = calloc(1, sizeof(*pa));
        if (pa == NULL) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "queue record");
        }
        rc = dev->plugin->ops->queue_create(dev, &queue, err);
        if (rc != TETHER_OK) {
            free(pa);
            return rc;
        }
        pa->queue = queue;
    }
    pa->launches = 0;
    *pa_p = pa;
    return TETHER_OK;
}

tether_status_t plugin_async_acquire(struct plugin_device *dev, struct tgt_async_info *async,
                                     struct plugin_async **pa_p, struct tether_error *err)
{
    struct plugin_async *pa = async->Queue;
    tether_status_t rc;

    if (pa == NULL) {
        rc = queue_take(dev, &pa, err);
        if (rc != TETHER_OK) {
            return rc;
        }
        async->Queue = pa;
    }
    *pa_p = pa;
    return TETHER_OK;
}

/* Give a completed queue back to the pool (or destroy it when it failed). */
static void async_release(struct plugin_device *dev, struct plugin_async *pa, bool failed)
{
    struct plugin_device_state *st = dev->state;
    bool pooled = false;

    if (pa->launches != 0) {
        plugin_rpc_launch_end(dev, pa->launches);
        pa->launches = 0;
    }
    if (!failed) {
        pthread_mutex_lock(&st->lock);
        if (grow((void ***)&st->queues, &st->cap_queues, st->num_queues + 1)) {
            st->queues[st->num_queues++] = pa;
            pooled = true;
        }
        pthread_mutex_unlock(&st->lock);
    }
    if (!pooled) {
        dev->plugin->ops->queue_destroy(dev, pa->queue);
        free(pa);
    }
}

tether_status_t plugin_queue_begin(struct plugin_device *dev, struct tgt_async_info *async,
                                   struct plugin_async **pa_p, struct tether_error *err)
{
    return async != NULL ? plugin_async_acquire(dev, async, pa_p, err) : queue_take(dev, pa_p, err);
}

tether_status_t plugin_queue_end(struct plugin_device *dev, struct tgt_async_info *async,
                                 struct plugin_async *pa, tether_status_t rc,
                                 struct tether_error *err)
{
    if (async != NULL) {
        return rc;
    }
    if (rc == TETHER_OK) {
        rc = dev->plugin->ops->queue_sync(dev, pa->queue, err);
    }
    async_release(dev, pa, rc != TETHER_OK);
    return rc;
}

tether_status_t plugin_async_prefill(struct plugin_device *dev, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    tether_status_t rc;

    for (uint32_t i = 0; i < dev->limits.initial_queues; i++) {
        struct plugin_async *pa = calloc(1, sizeof(*pa));

        if (pa == NULL) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "queue record");
        }
        rc = ops->queue_create(dev, &pa->queue, err);
        if (rc != TETHER_OK) {
            free(pa);
            return rc;
        }
        async_release(dev, pa, false);
    }
    for (uint32_t i = 0; has_events(dev->plugin) && i < dev->limits.initial_events; i++) {
        struct plugin_event *ev;

        rc = ops->event_create(dev, &ev, err);
        if (rc != TETHER_OK) {
            return rc;
        }
        if (!event_put(dev, ev)) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "event pool");
        }
    }
    return TETHER_OK;
}

void plugin_async_drain(struct plugin_device *dev)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_device_state *st = dev->state;

    for (size_t i = 0; i < st->num_events; i++) {
        ops->event_destroy(dev, st->events[i]);
    }
    free(st->events);
    st->events = NULL;
    st->num_events = st->cap_events = 0;
    for (size_t i = 0; i < st->num_queues; i++) {
        ops->queue_destroy(dev, st->queues[i]->queue);
        free(st->queues[i]);
    }
    free(st->queues);
    st->queues = NULL;
    st->num_queues = st->cap_queues = 0;
}

tether_status_t plugin_async_sync(struct plugin_device *dev, struct tgt_async_info *async,
                                  struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    if (async == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL AsyncInfo");
    }
    pa = async->Queue;
    if (pa == NULL) {
        return TETHER_OK;
    }
    rc = dev->plugin->ops->queue_sync(dev, pa->queue, err);
    /* libomptarget requires Queue == NULL after synchronize, success or not. */
    async->Queue = NULL;
    async_release(dev, pa, rc != TETHER_OK);
    return rc;
}

tether_status_t plugin_async_query(struct plugin_device *dev, struct tgt_async_info *async,
                                   struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;
    bool done = false;

    if (async == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL AsyncInfo");
    }
    pa = async->Queue;
    if (pa == NULL) {
        return TETHER_OK;
    }
    rc = dev->plugin->ops->queue_query(dev, pa->queue, &done, err);
    if (rc != TETHER_OK) {
        async->Queue = NULL;
        async_release(dev, pa, true);
        return rc;
    }
    if (done) {
        async->Queue = NULL;
        async_release(dev, pa, false);
    }
    return TETHER_OK;
}

/* ---- events ----------------------------------------------------------------------------- */

/* Without an event group libomptarget still gets a distinct non-NULL handle per event; it is
 * never dereferenced, and every event is complete at once: a backend without events completes
 * its work at enqueue (the host). */
static char no_event_marker;

tether_status_t plugin_event_create(struct plugin_device *dev, void **event_p,
                                    struct tether_error *err)
{
    struct plugin_device_state *st = dev->state;
    struct plugin_event *ev = NULL;
    tether_status_t rc;

    if (!has_events(dev->plugin)) {
        *event_p = &no_event_marker;
        return TETHER_OK;
    }
    pthread_mutex_lock(&st->lock);
    if (st->num_events > 0) {
        ev = st->events[--st->num_events];
    }
    pthread_mutex_unlock(&st->lock);
    if (ev == NULL) {
        rc = dev->plugin->ops->event_create(dev, &ev, err);
        if (rc != TETHER_OK) {
            return rc;
        }
    }
    *event_p = ev;
    return TETHER_OK;
}

tether_status_t plugin_event_destroy(struct plugin_device *dev, void *event,
                                     struct tether_error *err)
{
    if (event == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL event");
    }
    if (has_events(dev->plugin)) {
        event_put(dev, event);
    }
    return TETHER_OK;
}

tether_status_t plugin_event_record(struct plugin_device *dev, void *event,
                                    struct tgt_async_info *async, struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    if (event == NULL || async == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL event or AsyncInfo");
    }
    if (!has_events(dev->plugin)) {
        return TETHER_OK;
    }
    rc = plugin_async_acquire(dev, async, &pa, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    return dev->plugin->ops->event_record(dev, event, pa->queue, err);
}

tether_status_t plugin_event_wait(struct plugin_device *dev, void *event,
                                  struct tgt_async_info *async, struct tether_error *err)
{
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    if (event == NULL || async == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL event or AsyncInfo");
    }
    if (!has_events(dev->plugin)) {
        return TETHER_OK;
    }
    rc = plugin_async_acquire(dev, async, &pa, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    return dev->plugin->ops->event_wait(dev, event, pa->queue, err);
}

tether_status_t plugin_event_sync(struct plugin_device *dev, void *event, struct tether_error *err)
{
    if (event == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL event");
    }
    if (!has_events(dev->plugin)) {
        return TETHER_OK;
    }
    return dev->plugin->ops->event_sync(dev, event, err);
}

/* ---- interop ---------------------------------------------------------------------------- */

tether_status_t plugin_interop_device(struct plugin_device *dev, struct tgt_device_info *info,
                                      struct tether_error *err)
{
    void *device = NULL, *context = NULL;
    tether_status_t rc;

    if (dev->plugin->ops->interop_info == NULL) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "this backend has no native device or context to hand out");
    }
    rc = dev->plugin->ops->interop_info(dev, NULL, &device, &context, NULL, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    info->Device = device;
    info->Context = context;
    return TETHER_OK;
}

tether_status_t plugin_interop_async(struct plugin_device *dev, struct tgt_async_info **async_p,
                                     struct tether_error *err)
{
    struct plugin_device_state *st = dev->state;
    struct plugin_interop *io;
    void *stream = NULL;
    tether_status_t rc;

    if (dev->plugin->ops->interop_info == NULL) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "this backend has no native stream to hand out");
    }
    io = calloc(1, sizeof(*io));
    if (io == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "interop record");
    }
    rc = dev->plugin->ops->queue_create(dev, &io->queue, err);
    if (rc != TETHER_OK) {
        goto free_io;
    }
    rc = dev->plugin->ops->interop_info(dev, io->queue, NULL, NULL, &stream, err);
    if (rc != TETHER_OK) {
        goto destroy_queue;
    }
    io->async.Queue = stream;
    pthread_mutex_lock(&st->lock);
    io->next = st->interops;
    st->interops = io;
    pthread_mutex_unlock(&st->lock);
    *async_p = &io->async;
    return TETHER_OK;

destroy_queue:
    dev->plugin->ops->queue_destroy(dev, io->queue);
free_io:
    free(io);
    return rc;
}
