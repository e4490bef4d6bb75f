/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * omp_libomptarget.c - an OpenMP program offloading to amdgcn (gfx90a), run through Debian's
 * libomptarget.so.16 with tether's libomptarget.rtl.amdgpu.nextgen.so (run_omp.sh).
 *
 *   omp_libomptarget host   no usable AMD GPU (no runtime, a CPU-only runtime, no /dev/kfd):
 *                           zero devices, target regions fall back to the host
 *   omp_libomptarget fake   fake_hsa.c's GPU: one device; data moves through the plugin for real
 *                           (mapping, updates, omp_target_memcpy, lock_mem, declare target
 *                           globals); kernels are dispatched (the fake records them) but do not
 *                           execute, so the program checks only what does not need them to
 *   omp_libomptarget fault  one target region, whose kernel the fake makes fault
 *                           (FAKE_HSA_FAIL=kernel_fault:1)
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_hsa.h"

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

#pragma omp declare target
int tether_counter = 42;
#pragma omp end declare target

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "omp_libomptarget: " __VA_ARGS__);                                         \
        fprintf(stderr, "\n");                                                                     \
        return 1;                                                                                  \
    } while (0)

static int run_host(void)
{
    int on_host = 0;

    if (omp_get_num_devices() != 0)
        FAIL("expected no device, got %d", omp_get_num_devices());
#pragma omp target map(from : on_host)
    on_host = omp_is_initial_device();
    if (!on_host)
        FAIL("the target region did not fall back to the host");
    printf("omp host: ok\n");
    return 0;
}

static long dispatches(void)
{
    void *h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
    fake_hsa_stats_fn stats = h ? (fake_hsa_stats_fn)(uintptr_t)dlsym(h, "fake_hsa_stats") : NULL;
    struct fake_stats s;

    if (stats == NULL)
        return -1;
    stats(&s);
    return s.dispatches;
}

static int run_fake(void)
{
    enum { N = 4096 };
    static int a[N], b[N];
    int dev = 0, x = 1;
    void *d, *locked;
    long before;

    if (omp_get_num_devices() != 1)
        FAIL("expected 1 device, got %d", omp_get_num_devices());

        /* a declare target global: initial value from the image, then a round trip */
#pragma omp target update from(tether_counter)
    if (tether_counter != 42)
        FAIL("tether_counter is %d on the device, not 42", tether_counter);
    tether_counter = 7;
#pragma omp target update to(tether_counter)
    tether_counter = 0;
#pragma omp target update from(tether_counter)
    if (tether_counter != 7)
        FAIL("tether_counter came back as %d, not 7", tether_counter);

    /* mapping: to the device, clobber the host copy, back from the device */
    for (int i = 0; i < N; i++)
        a[i] = i * 3 + 1;
#pragma omp target enter data map(to : a [0:N])
    memset(a, 0, sizeof(a));
#pragma omp target update from(a [0:N])
#pragma omp target exit data map(delete : a [0:N])
    for (int i = 0; i < N; i++)
        if (a[i] != i * 3 + 1)
            FAIL("a[%d] = %d after the round trip", i, a[i]);

    /* omp_target_alloc / omp_target_memcpy */
    d = omp_target_alloc(sizeof(a), dev);
    if (d == NULL)
        FAIL("omp_target_alloc failed");
    if (omp_target_memcpy(d, a, sizeof(a), 0, 0, dev, omp_get_initial_device()) != 0 ||
        omp_target_memcpy(b, d, sizeof(b), 0, 0, omp_get_initial_device(), dev) != 0)
        FAIL("omp_target_memcpy failed");
    if (memcmp(a, b, sizeof(a)) != 0)
        FAIL("omp_target_memcpy round trip differs");
    omp_target_free(d, dev);

    /* lock_mem: the agent pointer of the fake runtime differs from the host pointer */
    locked = llvm_omp_target_lock_mem(b, sizeof(b), dev);
    if (locked == NULL || locked == (void *)b)
        FAIL("llvm_omp_target_lock_mem returned %p for %p", locked, (void *)b);
    llvm_omp_target_unlock_mem(b, dev);

    /* kernels are dispatched, synchronously and with nowait */
    before = dispatches();
#pragma omp target map(tofrom : x)
    x += 1;
#pragma omp target map(tofrom : x) nowait
    x += 1;
#pragma omp taskwait
    if (before < 0 || dispatches() - before != 2)
        FAIL("expected 2 kernel dispatches, the fake runtime saw %ld", dispatches() - before);
    printf("omp fake: ok\n");
    return 0;
}

/* A kernel that faults (FAKE_HSA_FAIL=kernel_fault:1): libomptarget stops the program; the
 * plugin's error names the device and this target region (fault_test.sh checks the line). */
static int run_fault(void)
{
    int x = 1;

#pragma omp target map(tofrom : x)
    x += 1;
    printf("omp fault: the region completed (x = %d)\n", x);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "host") == 0)
        return run_host();
    if (argc == 2 && strcmp(argv[1], "fake") == 0)
        return run_fake();
    if (argc == 2 && strcmp(argv[1], "fault") == 0)
        return run_fault();
    fprintf(stderr, "usage: %s host|fake|fault\n", argv[0]);
    return 2;
}
