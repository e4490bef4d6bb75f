/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * one_device.c - a rank that uses one GPU of several leaves the others untouched: no context,
 * stream, event, module, allocation (device or pinned host: RPC ports, staging buffers) on any
 * device but its own.  Built for nvptx64 with libtether-device.a (so images carry an RPC client
 * and get a server), run with FAKE_CUDA_SIM_DEVICES=2 against test/cuda's simulated driver, which
 * counts what each device holds (fake_cuda_sim_devices[]).
 *
 *   one_device USE [--default]   use device USE only (0 or 1); --default: through
 *                                omp_set_default_device(USE) and no device clauses, the way
 *                                examples/mpi_halo.c picks its device
 *
 * Everything an MPI rank does with its device: a target data region, kernels with device
 * printf, omp_target_alloc and copies (a small one, and a large pageable one that goes through
 * the staging buffers), pinned host memory, locked memory, nowait regions, tether_device_query.
 * Exit status 0 when every check passed.
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/tether.h"

/* Same layout as in test/cuda/fake_cuda_sim.c. */
struct fake_cuda_sim_device {
    int ctx_retained, ctx_retains;
    int streams_live, streams_created;
    int events_live, events_created;
    int allocs_live, allocs;
    int host_allocs_live, host_allocs;
    int modules_loaded, launches;
};

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "one_device: %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The work, on device `use` (explicit device clauses) or on the default device (use < 0). */
static void work(int use)
{
    int dev = use >= 0 ? use : omp_get_default_device();
    enum { N = 1024 };
    static double a[N];
    size_t big = (size_t)24 << 20;
    char *host = malloc(big);
    void *buf;

    for (int i = 0; i < N; i++)
        a[i] = i;
    if (use >= 0) {
#pragma omp target data map(tofrom : a) device(use)
        {
#pragma omp target teams distribute parallel for device(use)
            for (int i = 0; i < N; i++) {
                a[i] *= 2;
                if (i == 0)
                    printf("one_device: printf from device %d\n", use);
            }
#pragma omp target update from(a) device(use)
        }
    } else {
#pragma omp target data map(tofrom : a)
        {
#pragma omp target teams distribute parallel for
            for (int i = 0; i < N; i++) {
                a[i] *= 2;
                if (i == 0)
                    printf("one_device: printf from the default device\n");
            }
#pragma omp target update from(a)
        }
    }
    /* Allocations and copies, a small one and a large pageable one (staged). */
    buf = omp_target_alloc(big, dev);
    CHECK(buf != NULL && host != NULL);
    if (buf != NULL && host != NULL) {
        memset(host, 7, big);
        CHECK(omp_target_memcpy(buf, host, 64, 0, 0, dev, omp_get_initial_device()) == 0);
        CHECK(omp_target_memcpy(buf, host, big, 0, 0, dev, omp_get_initial_device()) == 0);
        CHECK(omp_target_memcpy(host, buf, big, 0, 0, omp_get_initial_device(), dev) == 0);
        omp_target_free(buf, dev);
    }
    /* Pinned host memory, and locked memory. */
    void *pinned = llvm_omp_target_alloc_host(1 << 16, dev);
    CHECK(pinned != NULL);
    llvm_omp_target_free_host(pinned, dev);
    CHECK(llvm_omp_target_lock_mem(host, 1 << 20, dev) == host);
    llvm_omp_target_unlock_mem(host, dev);
    free(host);
    /* nowait regions: queues. */
    for (int i = 0; i < 4; i++) {
#pragma omp target nowait device(dev)
        {
        }
    }
#pragma omp taskwait
    struct tether_device_info info;
    CHECK(tether_device_query(dev, &info) == TETHER_OK);
}

int main(int argc, char **argv)
{
    const struct fake_cuda_sim_device *devs;
    void *lib;
    int use = argc > 1 ? atoi(argv[1]) : -1;
    int by_default = argc > 2 && strcmp(argv[2], "--default") == 0;

    if (use < 0 || use > 1) {
        fprintf(stderr, "usage: one_device 0|1 [--default]\n");
        return 2;
    }
    if (omp_get_num_devices() != 2) {
        fprintf(stderr, "one_device: %d devices, want 2 (FAKE_CUDA_SIM_DEVICES=2)\n",
                omp_get_num_devices());
        return 1;
    }
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    devs = lib != NULL ? dlsym(lib, "fake_cuda_sim_devices") : NULL;
    if (devs == NULL) {
        fprintf(stderr, "one_device: not the simulated driver\n");
        return 1;
    }
    if (by_default) {
        omp_set_default_device(use);
        work(-1);
    } else {
        work(use);
    }

    const struct fake_cuda_sim_device *mine = &devs[use], *other = &devs[1 - use];
    printf("one_device: device %d: %d context retains, %d streams, %d events, %d modules, "
           "%d allocations, %d pinned host allocations, %d launches\n",
           use, mine->ctx_retains, mine->streams_created, mine->events_created,
           mine->modules_loaded, mine->allocs, mine->host_allocs, mine->launches);
    printf("one_device: device %d: %d context retains, %d streams, %d events, %d modules, "
           "%d allocations, %d pinned host allocations, %d launches\n",
           1 - use, other->ctx_retains, other->streams_created, other->events_created,
           other->modules_loaded, other->allocs, other->host_allocs, other->launches);
    /* The device used did the work (so the counters do count)... */
    CHECK(mine->ctx_retained >= 1 && mine->streams_created > 0 && mine->modules_loaded == 1);
    CHECK(mine->launches >= 5 && mine->allocs > 0 && mine->host_allocs > 0);
    /* ... and the other was never touched. */
    CHECK(other->ctx_retains == 0);
    CHECK(other->streams_created == 0 && other->events_created == 0);
    CHECK(other->modules_loaded == 0 && other->launches == 0);
    CHECK(other->allocs == 0 && other->host_allocs == 0);
    if (failures != 0) {
        fprintf(stderr, "one_device: FAIL (%d checks)\n", failures);
        return 1;
    }
    printf("one_device: PASS (device %d used, device %d untouched)\n", use, 1 - use);
    return 0;
}
