/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_heap.c - test_rpc_host's malloc and malloc-burst: the device heap
 * under concurrency with data checked, tens of MiB live, reuse, realloc, FREE while a kernel runs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_rpc_host.h"

/* ---- malloc/free ------------------------------------------------------------------------ */

struct heap_arg {
    int t;
    int rounds;
    size_t live_target; /* bytes each thread keeps live */
    atomic_int *failures;
    size_t max_size; /* 0: the mix below; else sizes 1..max_size (a GPU-like burst) */
};

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *heap_thread(void *arg)
{
    struct heap_arg *a = arg;
    enum { SLOTS = 256 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(a->t + 1);
    size_t live = 0;
    for (int r = 0; r < a->rounds; r++) {
        int i = (int)(rng(&seed) % SLOTS);
        if (ptr[i] != NULL) {
            unsigned char tag = (unsigned char)(a->t * 31 + i);
            for (size_t k = 0; k < size[i]; k += 97)
                if (ptr[i][k] != (unsigned char)(tag + k)) {
                    atomic_fetch_add(a->failures, 1);
                    break;
                }
            tether_device_free(ptr[i]);
            live -= size[i];
            ptr[i] = NULL;
            continue;
        }
        uint64_t kind = rng(&seed) % 100;
        size_t n = kind < 70   ? 1 + rng(&seed) % 256
                   : kind < 95 ? 256 + rng(&seed) % 8192
                   : kind < 99 ? 8192 + rng(&seed) % (512 << 10)
                               : (1 << 20) + rng(&seed) % (3 << 20);
        if (live + n > a->live_target && n > 256)
            n = 1 + rng(&seed) % 256;
        if (a->max_size != 0)
            n = 1 + rng(&seed) % a->max_size;
        unsigned char *p = (kind % 7 == 0) ? tether_device_calloc(1, n) : tether_device_malloc(n);
        if (p == NULL) {
            atomic_fetch_add(a->failures, 1);
            continue;
        }
        if (((uintptr_t)p & 15) != 0)
            atomic_fetch_add(a->failures, 1);
        if (kind % 7 == 0)
            for (size_t k = 0; k < n; k += 61)
                if (p[k] != 0)
                    atomic_fetch_add(a->failures, 1);
        unsigned char tag = (unsigned char)(a->t * 31 + i);
        for (size_t k = 0; k < n; k += 97)
            p[k] = (unsigned char)(tag + k);
        ptr[i] = p;
        size[i] = n;
        live += n;
    }
    for (int i = 0; i < SLOTS; i++)
        tether_device_free(ptr[i]);
    return NULL;
}

/* Many threads at once on small blocks, as a GPU grid does: 64 threads (more than this machine
 * has cores) allocating 1..4096 bytes, each block's every byte checked before it is freed. */
static void *burst_thread(void *arg)
{
    struct heap_arg *a = arg;
    enum { SLOTS = 16 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(a->t + 1);
    for (int r = 0; r < a->rounds; r++) {
        int i = (int)(rng(&seed) % SLOTS);
        unsigned char tag = (unsigned char)(a->t * 7 + i);
        if (ptr[i] != NULL) {
            for (size_t k = 0; k < size[i]; k++)
                if (ptr[i][k] != (unsigned char)(tag + k)) {
                    atomic_fetch_add(a->failures, 1);
                    break;
                }
            tether_device_free(ptr[i]);
            ptr[i] = NULL;
            continue;
        }
        size_t n = 1 + rng(&seed) % a->max_size;
        unsigned char *p = tether_device_malloc(n);
        if (p == NULL) {
            atomic_fetch_add(a->failures, 1);
            continue;
        }
        for (size_t k = 0; k < n; k++)
            p[k] = (unsigned char)(tag + k);
        ptr[i] = p;
        size[i] = n;
    }
    for (int i = 0; i < SLOTS; i++)
        tether_device_free(ptr[i]);
    return NULL;
}

void test_malloc_burst(void)
{
    struct rig rig;
    rig_up(&rig, false, 64, 32, true);
    atomic_int failures = 0;
    enum { THREADS = 64 };
    pthread_t tid[THREADS];
    struct heap_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct heap_arg){t, 3000 * scale, 0, &failures, 4096};
        pthread_create(&tid[t], NULL, burst_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECKF(atomic_load(&failures) == 0, "%d heap failures (bad data or NULL) with %d threads",
           atomic_load(&failures), THREADS);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    /* 64 threads x 16 blocks of at most 4 KiB: a few MiB live; slabs made one per class at a
     * time keep the heap near that (a slab per thread and class would be 64 MiB). */
    CHECKF(st.heap_bytes <= (40u << 20), "heap grew to %llu bytes for ~4 MiB live",
           (unsigned long long)st.heap_bytes);
    rig_down(&rig);
}

void test_malloc(void)
{
    struct rig rig;
    rig_up(&rig, true, 16, 32, true);
    atomic_int failures = 0;
    enum { THREADS = 8 };
    pthread_t tid[THREADS];
    struct heap_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct heap_arg){t, 20000 * scale, 6u << 20, &failures, 0};
        pthread_create(&tid[t], NULL, heap_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECKF(atomic_load(&failures) == 0, "%d heap failures (bad data, alignment or NULL)",
           atomic_load(&failures));

    /* Tens of MiB live at once, from one thread, then all freed and reused. */
    enum { N = 48 };
    void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = tether_device_malloc(1 << 20);
        CHECKF(blocks[i] != NULL, "1 MiB block %d", i);
        if (blocks[i])
            memset(blocks[i], i, 1 << 20);
    }
    for (int i = 0; i < N; i++) {
        unsigned char *b = blocks[i];
        CHECKF(b == NULL || (b[0] == i && b[(1 << 20) - 1] == i), "block %d data", i);
    }
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.heap_bytes >= (uint64_t)N << 20, "heap holds %llu bytes with %d MiB live",
           (unsigned long long)st.heap_bytes, N);
    uint64_t before = st.heap_bytes;
    for (int i = 0; i < N; i++)
        tether_device_free(blocks[i]);
    for (int i = 0; i < N; i++) {
        blocks[i] = tether_device_malloc(1 << 20);
        CHECKF(blocks[i] != NULL, "1 MiB block %d again", i);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.heap_bytes <= before + (64u << 20), "freed memory reused: %llu -> %llu bytes",
           (unsigned long long)before, (unsigned long long)st.heap_bytes);
    for (int i = 0; i < N; i++)
        tether_device_free(blocks[i]);

    /* Small blocks are reused: the same size again and again does not grow the heap. */
    tether_rpc_server_stats(rig.srv, &st);
    before = st.heap_bytes;
    for (int i = 0; i < 200000; i++) {
        void *p = tether_device_malloc(48);
        CHECKF(p != NULL, "small block %d", i);
        tether_device_free(p);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.heap_bytes <= before, "small reuse grew the heap: %llu -> %llu",
           (unsigned long long)before, (unsigned long long)st.heap_bytes);

    /* realloc keeps the data; large blocks (> 1 MiB) are kept and reused on the device. */
    char *r = tether_device_malloc(10);
    memcpy(r, "0123456789", 10);
    r = tether_device_realloc(r, 100000);
    CHECKF(r != NULL && memcmp(r, "0123456789", 10) == 0, "realloc kept the data");
    r = tether_device_realloc(r, 5u << 20);
    CHECKF(r != NULL && memcmp(r, "0123456789", 10) == 0, "realloc to 5 MiB kept the data");
    tether_device_free(r);
    tether_rpc_server_stats(rig.srv, &st);
    uint64_t chunks = st.heap_chunks;
    /* 100 sizes of one size class (4..5 MiB): one new block from the host, reused 99 times. */
    for (int i = 0; i < 100; i++) {
        void *p = tether_device_malloc((5u << 20) - 100000 + (unsigned)i * 1000);
        CHECKF(p != NULL, "about 5 MiB again (%d)", i);
        tether_device_free(p);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.heap_chunks <= chunks + 1,
           "freed large blocks reused without the host (%llu -> %llu)", (unsigned long long)chunks,
           (unsigned long long)st.heap_chunks);

    /* A FREE call while a kernel runs: the host's device_free waits until none runs. */
    struct tether_rpc_alloc_req areq = {1 << 20, 65536};
    struct tether_rpc_alloc_ans aans = {0};
    struct dev_iov iov = {&areq, sizeof areq};
    int64_t got = tether_device_call(TETHER_RPC_OP_ALLOC, &iov, 1, true, &aans, sizeof aans);
    CHECKF(got == (int64_t)sizeof aans && aans.ptr % 65536 == 0,
           "raw ALLOC: returned %lld, ptr 0x%llx", (long long)got, (unsigned long long)aans.ptr);
    /* Frees of earlier blocks the host took (each served before this answered: one caller's
     * calls share its port) wait for the end of the kernel too: give them back first, so that
     * the count below sees only this one. */
    tether_rpc_server_kernel_finished(rig.srv);
    tether_rpc_server_kernel_started(rig.srv);
    tether_rpc_server_stats(rig.srv, &st);
    uint64_t with_raw = st.heap_chunks;
    long live_before = atomic_load(&dev_mem.live);
    struct tether_rpc_free_req freq = {aans.ptr};
    iov = (struct dev_iov){&freq, sizeof freq};
    tether_device_call(TETHER_RPC_OP_FREE, &iov, 1, false, NULL, 0);
    while (st.heap_chunks == with_raw) { /* fire and forget: wait for the server to take it */
        usleep(100);
        tether_rpc_server_stats(rig.srv, &st);
    }
    CHECKF(st.heap_chunks == with_raw - 1, "FREE taken by the host (%llu -> %llu)",
           (unsigned long long)with_raw, (unsigned long long)st.heap_chunks);
    CHECKF(atomic_load(&dev_mem.live) == live_before,
           "device_free deferred while a kernel runs (%ld -> %ld blocks)", live_before,
           atomic_load(&dev_mem.live));
    tether_rpc_server_kernel_finished(rig.srv);
    CHECKF(atomic_load(&dev_mem.live) == live_before - 1,
           "device_free done once no kernel runs (%ld -> %ld blocks)", live_before,
           atomic_load(&dev_mem.live));
    tether_rpc_server_kernel_started(rig.srv);
    void *al = tether_device_aligned_alloc(4096, 1000);
    CHECKF(al != NULL && ((uintptr_t)al & 4095) == 0, "aligned_alloc(4096) = %p", al);
    tether_device_free(al);
    CHECKF(atomic_load(&dev_mem.live) > 0, "the device holds heap chunks before shutdown");
    rig_down(&rig); /* checks that destroy released every chunk */
}
