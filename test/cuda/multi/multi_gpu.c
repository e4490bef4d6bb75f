/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * multi_gpu.c - issue 6's two-GPU acceptance test for tether's CUDA plugin.
 *
 * Finds the OpenMP devices served by tether's cuda plugin (tether_device_query); with fewer than
 * two it prints "SKIP: needs 2 GPUs" and exits 77.  Otherwise, with devices A and B:
 *
 *   1. locks a host buffer through A (llvm_omp_target_lock_mem) and a sub-range of it through B:
 *      one pinned map per plugin, so B's lock must succeed and be counted on the same range;
 *   2. from two host threads at the same time, offloads one kernel to A and one to B; each
 *      kernel reads its input from the locked buffer, computes a known result, malloc()s and
 *      free()s a block per stream (data written, read back, summed) and printf()s
 *      "multi-gpu-line dev D stream S line L" from every stream (TEAMS x THREADS streams);
 *   3. checks every result on the host, unlocks, and prints a summary.
 *
 * The host checks results, heap sums and pinned counts; the printed lines go to stdout through
 * each device's RPC server, and test/cuda/multi/check_multi.sh counts them (every line exactly
 * once) from the "multi-gpu: expect" lines printed here.  Run with LIBOMPTARGET_INFO=16, the
 * plugin's "rpc:" info lines on stderr show one server per device (checked by the same script).
 *
 * Usage: multi_gpu [TEAMS [THREADS [LINES]]]  (default 4 4 4).  Exit: 0 all host checks passed,
 * 1 a check failed, 2 bad arguments, 77 fewer than two tether CUDA devices.  Link with
 * -ltether-device.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/tether.h"

#define MULTI_N (1 << 16)            /* input elements per device */
#define MULTI_BUF (4u * MULTI_N * 4) /* locked buffer: 4 x MULTI_N ints */
#define MULTI_MAX_STREAMS 4096

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "multi-gpu: FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The known result: out[i] = in[i] * 3 + dev_tag. */
#pragma omp declare target
static int64_t heap_sum(int tag, int stream, int *ok)
{
    int count = 64 + stream % 97;
    int64_t *block = malloc((size_t)count * sizeof(*block));
    int64_t sum = 0;

    if (block == NULL) {
        *ok = 0;
        return 0;
    }
    for (int k = 0; k < count; k++) {
        block[k] = (int64_t)tag * 1000003 + (int64_t)stream * 131 + k;
    }
    for (int k = 0; k < count; k++) {
        sum += block[k];
    }
    free(block);
    *ok = 1;
    return sum;
}
#pragma omp end declare target

static int64_t heap_sum_expected(int tag, int stream)
{
    int count = 64 + stream % 97;
    int64_t sum = 0;

    for (int k = 0; k < count; k++) {
        sum += (int64_t)tag * 1000003 + (int64_t)stream * 131 + k;
    }
    return sum;
}

struct multi_job {
    int dev;        /* OpenMP device number */
    int tag;        /* printed in every line: the OpenMP device number */
    const int *in;  /* MULTI_N inputs, inside the locked buffer */
    int *out;       /* MULTI_N results */
    int64_t *sums;  /* per-stream heap sums */
    int *heap_ok;   /* per-stream: malloc succeeded */
    double span[2]; /* seconds since the start: submitted, returned (-1: never ran) */
};

static void multi_job_run(struct multi_job *job, int teams, int threads, int lines)
{
    const int *in = job->in;
    int *out = job->out;
    int64_t *sums = job->sums;
    int *heap_ok = job->heap_ok;
    int tag = job->tag;
    int streams = teams * threads;

#pragma omp target teams distribute parallel for device(job->dev) num_teams(teams)                 \
    thread_limit(threads) map(to                                                                   \
                              : in [0:MULTI_N]) map(from                                           \
                                                    : out [0:MULTI_N])                             \
        map(from                                                                                   \
            : sums [0:streams], heap_ok [0:streams])
    for (int s = 0; s < streams; s++) {
        for (int i = s; i < MULTI_N; i += streams) {
            out[i] = in[i] * 3 + tag;
        }
        sums[s] = heap_sum(tag, s, &heap_ok[s]);
        for (int l = 0; l < lines; l++) {
            printf("multi-gpu-line dev %d stream %d line %d\n", tag, s, l);
        }
    }
}

/* The first two OpenMP devices served by tether's cuda plugin. */
static int cuda_devices(int found[2])
{
    int n = 0;

    for (int d = 0; d < omp_get_num_devices() && n < 2; d++) {
        struct tether_device_info info;

        if (tether_device_query(d, &info) == TETHER_OK && strcmp(info.plugin, "cuda") == 0) {
            printf("multi-gpu: OpenMP device %d: tether cuda device %d of %d, %s\n", d,
                   info.local_id, info.plugin_devices, info.name);
            found[n++] = d;
        }
    }
    return n;
}

/* A first target region on dev: loads the image (and starts its RPC server) before the pinned
 * counts are taken.  Returns whether it really ran on the device. */
static int offloads(int dev)
{
    int initial = 1;

#pragma omp target device(dev) map(from : initial)
    initial = omp_is_initial_device();
    return !initial;
}

static long pinned_ranges(int dev)
{
    struct tether_device_info info;

    if (tether_device_query(dev, &info) != TETHER_OK) {
        return -1;
    }
    return (long)info.pinned_ranges;
}

int main(int argc, char **argv)
{
    int teams = argc > 1 ? atoi(argv[1]) : 4;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    int lines = argc > 3 ? atoi(argv[3]) : 4;
    int streams = teams * threads;
    int devs[2];
    struct multi_job jobs[2];

    if (teams < 1 || threads < 1 || lines < 0 || streams > MULTI_MAX_STREAMS) {
        fprintf(stderr, "usage: multi_gpu [TEAMS [THREADS [LINES]]], at most %d streams\n",
                MULTI_MAX_STREAMS);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cuda_devices(devs) < 2) {
        printf("SKIP: needs 2 GPUs (%d OpenMP device(s), fewer than 2 served by tether's cuda "
               "plugin)\n",
               omp_get_num_devices());
        return 77;
    }

    CHECK(offloads(devs[0]));
    CHECK(offloads(devs[1]));

    /* 1. One host buffer locked through A, a sub-range of it through B. */
    int *buf = aligned_alloc(4096, MULTI_BUF);
    long base = pinned_ranges(devs[0]);
    CHECK(buf != NULL && base >= 0 && pinned_ranges(devs[1]) == base);
    if (buf == NULL) {
        return 1;
    }
    char *lock_a = llvm_omp_target_lock_mem(buf, MULTI_BUF, devs[0]);
    CHECK(lock_a != NULL);
    CHECK(pinned_ranges(devs[0]) == base + 1);
    char *lock_b = llvm_omp_target_lock_mem(buf + MULTI_N, 2u * MULTI_N * 4, devs[1]);
    CHECK(lock_b != NULL);
    CHECK(lock_a == NULL || lock_b == lock_a + (size_t)MULTI_N * 4);
    /* Counted on A's range, not a second one: both devices see the same map. */
    CHECK(pinned_ranges(devs[0]) == base + 1);
    CHECK(pinned_ranges(devs[1]) == base + 1);
    printf("multi-gpu: pinned: lock through device %d %s, sub-range through device %d %s, "
           "ranges %ld/%ld (base %ld)\n",
           devs[0], lock_a != NULL ? "ok" : "REFUSED", devs[1], lock_b != NULL ? "ok" : "REFUSED",
           pinned_ranges(devs[0]), pinned_ranges(devs[1]), base);

    /* Inputs inside the locked buffer: A's in the part only A locked, B's in B's sub-range. */
    for (int i = 0; i < 4 * MULTI_N; i++) {
        buf[i] = i * 7 - 12345;
    }
    for (int j = 0; j < 2; j++) {
        jobs[j] = (struct multi_job){
            .dev = devs[j],
            .tag = devs[j],
            .in = buf + (j == 0 ? 0 : 2 * MULTI_N),
            .out = calloc(MULTI_N, sizeof(int)),
            .sums = calloc((size_t)streams, sizeof(int64_t)),
            .heap_ok = calloc((size_t)streams, sizeof(int)),
            .span = {-1.0, -1.0},
        };
        CHECK(jobs[j].out != NULL && jobs[j].sums != NULL && jobs[j].heap_ok != NULL);
        if (jobs[j].out == NULL || jobs[j].sums == NULL || jobs[j].heap_ok == NULL) {
            return 1;
        }
        printf("multi-gpu: expect dev %d streams %d lines %d\n", jobs[j].tag, streams, lines);
    }

    /* 2. Both devices at once, from two host threads. */
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(2)
    {
        int j = omp_get_thread_num();

        if (omp_get_num_threads() == 2) {
#pragma omp barrier
            jobs[j].span[0] = omp_get_wtime() - t0;
            multi_job_run(&jobs[j], teams, threads, lines);
            jobs[j].span[1] = omp_get_wtime() - t0;
        }
    }
    printf("multi-gpu: device %d ran [%.3f, %.3f] s, device %d ran [%.3f, %.3f] s\n", devs[0],
           jobs[0].span[0], jobs[0].span[1], devs[1], jobs[1].span[0], jobs[1].span[1]);
    /* Both ran, and each was submitted before the other returned. */
    CHECK(jobs[0].span[1] >= 0 && jobs[1].span[1] >= 0);
    CHECK(jobs[0].span[0] < jobs[1].span[1] && jobs[1].span[0] < jobs[0].span[1]);

    /* 3. Results. */
    for (int j = 0; j < 2; j++) {
        struct multi_job *job = &jobs[j];
        int bad = 0, heap_bad = 0;

        for (int i = 0; i < MULTI_N; i++) {
            bad += job->out[i] != job->in[i] * 3 + job->tag;
        }
        for (int s = 0; s < streams; s++) {
            heap_bad += !job->heap_ok[s] || job->sums[s] != heap_sum_expected(job->tag, s);
        }
        CHECK(bad == 0);
        CHECK(heap_bad == 0);
        printf("multi-gpu: device %d: results %d/%d wrong, heap %d/%d streams wrong\n", job->dev,
               bad, MULTI_N, heap_bad, streams);
        free(job->out);
        free(job->sums);
        free(job->heap_ok);
    }

    /* Explicit transfers from the locked buffer (B's sub-range) to each device and back into
     * the part only A locked: host -> A -> host, then host -> B -> host. */
    for (int j = 0; j < 2; j++) {
        int *d = omp_target_alloc((size_t)MULTI_N * 4, devs[j]);
        int host = omp_get_initial_device();

        CHECK(d != NULL);
        if (d == NULL) {
            continue;
        }
        CHECK(omp_target_memcpy(d, buf + MULTI_N, (size_t)MULTI_N * 4, 0, 0, devs[j], host) == 0);
        CHECK(omp_target_memcpy(buf + 3 * MULTI_N, d, (size_t)MULTI_N * 4, 0, 0, host, devs[j]) ==
              0);
        CHECK(memcmp(buf + 3 * MULTI_N, buf + MULTI_N, (size_t)MULTI_N * 4) == 0);
        memset(buf + 3 * MULTI_N, 0, (size_t)MULTI_N * 4);
        omp_target_free(d, devs[j]);
    }

    /* Unlock: B's reference first (the range stays pinned), then A's. */
    if (lock_b != NULL) {
        llvm_omp_target_unlock_mem(buf + MULTI_N, devs[1]);
        CHECK(pinned_ranges(devs[0]) == base + (lock_a != NULL ? 1 : 0));
    }
    if (lock_a != NULL) {
        llvm_omp_target_unlock_mem(buf, devs[0]);
    }
    CHECK(pinned_ranges(devs[0]) == base && pinned_ranges(devs[1]) == base);
    free(buf);

    fflush(stdout);
    if (failures != 0) {
        printf("multi-gpu: FAIL (%d checks failed)\n", failures);
        return 1;
    }
    printf("multi-gpu: host checks passed (devices %d and %d, %d streams x %d lines each)\n",
           devs[0], devs[1], streams, lines);
    return 0;
}
