/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_stage.c - large copies between pageable host memory and a device through pinned
 * staging buffers, the host side of each chunk spread over helper threads (plugin_state.h).
 *
 * A driver copies pageable memory through staging buffers of its own, with one thread (CUDA on an
 * H200 machine: 6-8 GB/s host to device and 13-16 GB/s back, against 55 GB/s from pinned memory).
 * Here a copy of at least TETHER_STAGE_MIN bytes (default 1 MiB) from or to memory the driver
 * does not know (the backend's host_pageable says so) goes through STAGE_BUFS pinned buffers of
 * STAGE_CHUNK bytes per device, made with the backend's alloc(HOST): host to device, chunk k is
 * copied into buffer k % STAGE_BUFS by the caller and TETHER_COPY_THREADS helper threads
 * (default 3) while the DMA engine moves chunk k - 1; device to host, the DMA of chunk
 * k + STAGE_BUFS - 1 runs while the threads copy chunk k out.  Each buffer has an event of the
 * backend, recorded after its last DMA: a buffer is written only after that event, whichever
 * queue and copy recorded it.  A device's buffers serve one copy at a time; a copy that finds them
 * taken, or that cannot allocate them, goes to the backend as it is.  TETHER_STAGE=0 turns it off.
 * The older names TETHER_CUDA_STAGE, TETHER_CUDA_STAGE_MIN and TETHER_CUDA_COPY_THREADS are read
 * too (the new name wins when both are set).  CUDA on an H200, 1 GiB: 27.9-31.1 GB/s to the device
 * and 23.3-27.1 back with 3 helpers, against the driver's 7.8-8.0 and 15.0-16.4 (docs/cuda.md).
 */
#include "plugin_state.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAGE_CHUNK ((size_t)8 << 20)
#define STAGE_BUFS 3
#define STAGE_MIN_DEFAULT ((size_t)1 << 20)
#define STAGE_THREADS_DEFAULT 3
#define STAGE_THREADS_MAX 16
#define STAGE_D2H_THREADS_MIN 2
/* Below this a chunk is copied by the caller alone (waking helpers costs more). */
#define STAGE_SPLIT_MIN ((size_t)1 << 20)

/* A device's buffers and their events. */
struct plugin_stage {
    pthread_mutex_t lock; /* held by the one copy using the buffers */
    void *buf[STAGE_BUFS];
    struct plugin_event *done[STAGE_BUFS]; /* recorded after each buffer's last DMA */
    bool used[STAGE_BUFS];                 /* done[i] recorded and not yet waited for */
    bool failed;                           /* the backend refused them: not tried again */
};

/* ---- helper threads: one memcpy split into parts -------------------------------------------- */

static struct {
    pthread_once_t once;
    pthread_mutex_t job_lock; /* one job at a time */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned threads; /* helpers started */
    pthread_t tids[STAGE_THREADS_MAX];
    uint64_t gen; /* bumped per job (and to stop) */
    unsigned pending;
    bool stop;
    char *dst;
    const char *src;
    size_t len;
    unsigned parts;
    bool enabled;    /* TETHER_STAGE */
    size_t min_size; /* TETHER_STAGE_MIN */
} pool = {.once = PTHREAD_ONCE_INIT,
          .job_lock = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .go = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

/* Part `i` of `parts` of the current job, in whole cache lines. */
static void pool_part(char *dst, const char *src, size_t len, unsigned parts, unsigned i)
{
    size_t per = (len / parts + 63) & ~(size_t)63;
    size_t lo = (size_t)i * per;
    if (lo >= len)
        return;
    size_t n = len - lo < per ? len - lo : per;
    memcpy(dst + lo, src + lo, n);
}

static void *pool_main(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg; /* 1..threads: part 0 is the caller's */
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.gen == seen && !pool.stop)
            pthread_cond_wait(&pool.go, &pool.mu);
        if (pool.stop)
            break;
        seen = pool.gen;
        char *dst = pool.dst;
        const char *src = pool.src;
        size_t len = pool.len;
        unsigned parts = pool.parts;
        pthread_mutex_unlock(&pool.mu);
        if (me < parts)
            pool_part(dst, src, len, parts, me);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0)
            pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static void pool_start(void)
{
    pool.enabled = plugin_env_bool(plugin_env_pick("TETHER_STAGE", "TETHER_CUDA_STAGE"), true);
    pool.min_size =
        (size_t)plugin_env_int(plugin_env_pick("TETHER_STAGE_MIN", "TETHER_CUDA_STAGE_MIN"),
                               (int64_t)STAGE_MIN_DEFAULT, 0, INT64_MAX);
    long want =
        (long)plugin_env_int(plugin_env_pick("TETHER_COPY_THREADS", "TETHER_CUDA_COPY_THREADS"),
                             STAGE_THREADS_DEFAULT, 0, STAGE_THREADS_MAX);
    /* Helpers may run on any core the process may use, not only where the thread that made the
     * first large copy is bound (OMP_PROC_BIND binds the initial thread to one core, and helpers
     * sharing it would copy slower than the driver).  The kernel keeps the set within the
     * process's cpuset. */
    pthread_attr_t attr;
    bool spread = pthread_attr_init(&attr) == 0;
    if (spread) {
        cpu_set_t all;
        long cpus = sysconf(_SC_NPROCESSORS_CONF);
        CPU_ZERO(&all);
        for (long c = 0; c < cpus && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &all);
        spread = pthread_attr_setaffinity_np(&attr, sizeof(all), &all) == 0;
    }
    for (long i = 0; i < want; i++) {
        void *arg = (void *)(uintptr_t)(i + 1);
        if (pthread_create(&pool.tids[i], spread ? &attr : NULL, pool_main, arg) != 0 &&
            (!spread || pthread_create(&pool.tids[i], NULL, pool_main, arg) != 0))
            break;
        pool.threads++;
    }
    if (spread)
        pthread_attr_destroy(&attr);
}

/* memcpy, by the caller and the helper threads together when it is worth it. */
static void pool_copy(void *dst, const void *src, size_t len)
{
    pthread_once(&pool.once, pool_start);
    if (pool.threads == 0 || len < STAGE_SPLIT_MIN || pthread_mutex_trylock(&pool.job_lock) != 0) {
        memcpy(dst, src, len);
        return;
    }
    unsigned parts = pool.threads + 1;
    pthread_mutex_lock(&pool.mu);
    pool.dst = dst;
    pool.src = src;
    pool.len = len;
    pool.parts = parts;
    pool.pending = pool.threads;
    pool.gen++;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    pool_part(dst, src, len, parts, 0);
    pthread_mutex_lock(&pool.mu);
    while (pool.pending != 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.job_lock);
}

void plugin_stage_shutdown(void)
{
    pthread_mutex_lock(&pool.mu);
    pool.stop = true;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    for (unsigned i = 0; i < pool.threads; i++)
        pthread_join(pool.tids[i], NULL);
    pool.threads = 0;
}

/* ---- a device's buffers -----------------------------------------------------------------------
 */

tether_status_t plugin_stage_create(struct plugin_device *dev, struct tether_error *err)
{
    struct plugin_stage *st;

    if (dev->plugin->ops->host_pageable == NULL) {
        return TETHER_OK; /* the backend never asks for staging */
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "staging state");
    }
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return plugin_error_set(err, TETHER_ERR_INTERNAL, "pthread_mutex_init failed");
    }
    dev->state->stage = st;
    return TETHER_OK;
}

void plugin_stage_destroy(struct plugin_device *dev)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_stage *st = dev->state->stage;
    struct tether_error ignored;

    if (st == NULL) {
        return;
    }
    for (int i = 0; i < STAGE_BUFS; i++) {
        if (st->done[i] != NULL)
            ops->event_destroy(dev, st->done[i]);
        if (st->buf[i] != NULL)
            ops->free(dev, st->buf[i], PLUGIN_ALLOC_HOST, &ignored);
    }
    pthread_mutex_destroy(&st->lock);
    free(st);
    dev->state->stage = NULL;
}

/* The buffers and events, on first use; false (for good) when the backend refuses them. */
static bool stage_ready(struct plugin_device *dev, struct plugin_stage *st)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct tether_error ignored;

    if (st->buf[STAGE_BUFS - 1] != NULL)
        return true;
    if (st->failed)
        return false;
    for (int i = 0; i < STAGE_BUFS; i++) {
        if (st->buf[i] == NULL &&
            ops->alloc(dev, STAGE_CHUNK, PLUGIN_ALLOC_HOST, &st->buf[i], &ignored) != TETHER_OK) {
            st->buf[i] = NULL;
            st->failed = true;
        }
        if (st->done[i] == NULL && ops->event_create(dev, &st->done[i], &ignored) != TETHER_OK) {
            st->done[i] = NULL;
            st->failed = true;
        }
    }
    if (st->failed)
        plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG,
                   "staging buffers refused: pageable copies go to the backend as they are");
    return !st->failed;
}

/* Whether a copy of `size` bytes at host address `host` goes through the staging buffers, given
 * at least `helpers` helper threads; on true the caller holds the stage's lock. */
static bool stage_take(struct plugin_device *dev, const void *host, size_t size, unsigned helpers)
{
    struct plugin_stage *st = dev->state->stage;

    if (st == NULL)
        return false;
    pthread_once(&pool.once, pool_start);
    if (!pool.enabled || pool.threads < helpers || size < pool.min_size || size < STAGE_SPLIT_MIN)
        return false;
    /* Memory the driver knows (registered, pinned by it, its own) goes its own way. */
    if (!dev->plugin->ops->host_pageable(dev, host, size))
        return false;
    if (pthread_mutex_trylock(&st->lock) != 0)
        return false;
    if (!stage_ready(dev, st)) {
        pthread_mutex_unlock(&st->lock);
        return false;
    }
    return true;
}

/* Wait until buffer i's last DMA is over. */
static tether_status_t stage_wait(struct plugin_device *dev, struct plugin_stage *st, int i,
                                  struct tether_error *err)
{
    if (!st->used[i])
        return TETHER_OK;
    tether_status_t rc = dev->plugin->ops->event_sync(dev, st->done[i], err);
    if (rc == TETHER_OK)
        st->used[i] = false;
    return rc;
}

static tether_status_t stage_mark(struct plugin_device *dev, struct plugin_stage *st, int i,
                                  struct plugin_queue *queue, struct tether_error *err)
{
    st->used[i] = true; /* whatever the record's result: wait before the next write */
    return dev->plugin->ops->event_record(dev, st->done[i], queue, err);
}

bool plugin_stage_h2d(struct plugin_device *dev, void *dst, const void *src, size_t size,
                      struct plugin_queue *queue, tether_status_t *rc_p, struct tether_error *err)
{
    if (!stage_take(dev, src, size, 0))
        return false;
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_stage *st = dev->state->stage;
    tether_status_t rc = TETHER_OK;
    size_t k = 0;
    for (size_t off = 0; off < size && rc == TETHER_OK; off += STAGE_CHUNK, k++) {
        int i = (int)(k % STAGE_BUFS);
        size_t n = size - off < STAGE_CHUNK ? size - off : STAGE_CHUNK;
        rc = stage_wait(dev, st, i, err);
        if (rc != TETHER_OK)
            break;
        pool_copy(st->buf[i], (const char *)src + off, n);
        rc = ops->memcpy_h2d(dev, (char *)dst + off, st->buf[i], n, st->buf[i], queue, err);
        if (rc == TETHER_OK)
            rc = stage_mark(dev, st, i, queue, err);
    }
    pthread_mutex_unlock(&st->lock);
    *rc_p = rc;
    return true;
}

bool plugin_stage_d2h(struct plugin_device *dev, void *dst, const void *src, size_t size,
                      struct plugin_queue *queue, tether_status_t *rc_p, struct tether_error *err)
{
    /* CUDA's own device-to-host path copies out of its staging about as fast as the caller and
     * one helper do (H200: 15-16 GB/s against 14.5-15.4): stage from two helpers. */
    if (!stage_take(dev, dst, size, STAGE_D2H_THREADS_MIN))
        return false;
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_stage *st = dev->state->stage;
    size_t chunks = (size + STAGE_CHUNK - 1) / STAGE_CHUNK;
    tether_status_t rc = TETHER_OK;
    /* The DMA of chunk k into buffer k % STAGE_BUFS. */
    for (size_t k = 0; k < chunks && k < STAGE_BUFS && rc == TETHER_OK; k++) {
        size_t off = k * STAGE_CHUNK;
        size_t n = size - off < STAGE_CHUNK ? size - off : STAGE_CHUNK;
        int i = (int)k;
        rc = stage_wait(dev, st, i, err);
        if (rc == TETHER_OK)
            rc = ops->memcpy_d2h(dev, st->buf[i], (const char *)src + off, n, st->buf[i], queue,
                                 err);
        if (rc == TETHER_OK)
            rc = stage_mark(dev, st, i, queue, err);
    }
    for (size_t k = 0; k < chunks && rc == TETHER_OK; k++) {
        size_t off = k * STAGE_CHUNK;
        size_t n = size - off < STAGE_CHUNK ? size - off : STAGE_CHUNK;
        int i = (int)(k % STAGE_BUFS);
        rc = stage_wait(dev, st, i, err);
        if (rc != TETHER_OK)
            break;
        pool_copy((char *)dst + off, st->buf[i], n);
        size_t next = k + STAGE_BUFS;
        if (next < chunks) {
            size_t noff = next * STAGE_CHUNK;
            size_t nn = size - noff < STAGE_CHUNK ? size - noff : STAGE_CHUNK;
            rc = ops->memcpy_d2h(dev, st->buf[i], (const char *)src + noff, nn, st->buf[i], queue,
                                 err);
            if (rc == TETHER_OK)
                rc = stage_mark(dev, st, i, queue, err);
        }
    }
    pthread_mutex_unlock(&st->lock);
    *rc_p = rc;
    return true;
}
