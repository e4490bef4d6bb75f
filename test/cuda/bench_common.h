/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * bench_common.h - timing and output helpers shared by the GPU benchmark
 * programs (native/ built by nvcc, omp/ built by clang-16).
 *
 * Every program prints one line per figure:
 *     fig <name> <value> <unit>
 * scripts/device-compare.sh lines these up across configurations (CUDA
 * native, LLVM 16's plugin, tether's plugin) and prints
 *     <name>: <value> <unit> (<ratio>x vs <baseline>)
 * Names are the same in the native and the OpenMP programs, so that the same
 * operation is compared.
 */
#ifndef TETHER_TEST_CUDA_BENCH_COMMON_H
#define TETHER_TEST_CUDA_BENCH_COMMON_H

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BENCH_GIB ((size_t)1 << 30)
#define BENCH_PRINTF_TEAMS 132
#define BENCH_PRINTF_THREADS 128
#define BENCH_PRINTF_LINES (BENCH_PRINTF_TEAMS * BENCH_PRINTF_THREADS)
#define BENCH_MALLOC_PER_THREAD 16
#define BENCH_LIVE_BYTES 1024 /* per thread, all live at once: 16.5 MiB > CUDA's 8 MiB heap */

static inline double bench_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline void bench_fig(const char *name, double value, const char *unit)
{
    printf("fig %s %.4g %s\n", name, value, unit);
    fflush(stdout);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Median of n samples (sorts them). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Page-aligned host buffer, every page touched (so page faults are not timed). */
static inline void *bench_host_alloc(size_t size)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, size) != 0) {
        fprintf(stderr, "bench: posix_memalign(%zu) failed\n", size);
        exit(1);
    }
    memset(p, 1, size);
    return p;
}

/* Redirect stdout into a temporary file while device printf output is produced; then count the
 * lines that contain `marker` and restore stdout.  A watcher thread notes when the first byte
 * reached the file, to show whether output appears while the kernel still runs. */
struct bench_capture {
    int saved_fd;
    int fd;
    char path[64];
    double t0;       /* bench_capture_begin */
    double first_us; /* first output seen (bench_now_us), 0: none yet */
    int stop;
    pthread_t watcher;
};

static inline void *bench_capture_watch(void *arg)
{
    struct bench_capture *c = (struct bench_capture *)arg;
    struct stat st;

    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        if (fstat(c->fd, &st) == 0 && st.st_size > 0) {
            double now = bench_now_us();
            __atomic_store(&c->first_us, &now, __ATOMIC_RELEASE);
            break;
        }
        usleep(20);
    }
    return NULL;
}

static inline void bench_capture_begin(struct bench_capture *c)
{
    fflush(stdout);
    snprintf(c->path, sizeof(c->path), "/tmp/tether-bench-XXXXXX");
    c->fd = mkstemp(c->path);
    if (c->fd < 0) {
        perror("bench: mkstemp");
        exit(1);
    }
    c->saved_fd = dup(1);
    dup2(c->fd, 1);
    c->first_us = 0;
    c->stop = 0;
    if (pthread_create(&c->watcher, NULL, bench_capture_watch, c) != 0) {
        fprintf(stderr, "bench: pthread_create failed\n");
        exit(1);
    }
    c->t0 = bench_now_us();
}

/* Milliseconds from bench_capture_begin until the first output byte arrived (after
 * bench_capture_end; -1 if none ever did). */
static inline double bench_capture_first_ms(const struct bench_capture *c)
{
    return c->first_us > 0 ? (c->first_us - c->t0) / 1e3 : -1;
}

static inline long bench_capture_end(struct bench_capture *c, const char *marker)
{
    char line[256];
    long count = 0;
    FILE *f;

    fflush(stdout);
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    pthread_join(c->watcher, NULL);
    dup2(c->saved_fd, 1);
    close(c->saved_fd);
    close(c->fd);
    f = fopen(c->path, "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            count += strstr(line, marker) != NULL;
        fclose(f);
    }
    unlink(c->path);
    return count;
}

#endif /* TETHER_TEST_CUDA_BENCH_COMMON_H */
