/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * interop.c - what a GPU-aware library (an MPI with CUDA support, cuBLAS, NCCL) assumes when an
 * OpenMP program hands it device pointers, checked through the CUDA driver API after the first
 * target region:
 *   context       cuCtxGetCurrent on the thread that launched a region is the device's primary
 *                 context (cuDevicePrimaryCtxRetain's), on the initial thread and on a second
 *                 host thread that launched a region of its own;
 *   device-memory cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) of an omp_target_alloc
 *                 pointer is CU_MEMORYTYPE_DEVICE;
 *   host-memory   the same of an llvm_omp_target_alloc_host pointer is CU_MEMORYTYPE_HOST.
 * One "interop: PASS|FAIL <check>" line per check; exit status 0 only when all passed, 77 (with
 * "interop: SKIP") without an OpenMP device or a CUDA driver.
 *
 *   interop [DEVICE]   the OpenMP device (default: omp_get_default_device()); it is taken to be
 *                      CUDA device DEVICE, as it is when the CUDA plugin is the only one with
 *                      devices.
 *
 * The driver is dlopen'ed (libcuda.so.1, already loaded by the plugin): no CUDA header is needed.
 * Runs against any plugin (tether's or LLVM 16's), and on test/cuda's simulated driver.
 */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t size, int device_num);
void llvm_omp_target_free_host(void *ptr, int device_num);

/* The few CUDA driver types and constants used (cuda.h). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_MEMORYTYPE_HOST 1u
#define CU_MEMORYTYPE_DEVICE 2u

static struct {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*pointer_attribute)(void *, int, CUdeviceptr);
} cu;

static int failed;

static void report(int ok, const char *check, const char *detail)
{
    printf("interop: %s %s (%s)\n", ok ? "PASS" : "FAIL", check, detail);
    if (!ok)
        failed = 1;
}

static int load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void **slots[] = {(void **)&cu.ctx_get_current, (void **)&cu.device_get,
                      (void **)&cu.primary_retain, (void **)&cu.primary_release,
                      (void **)&cu.pointer_attribute};
    const char *names[] = {"cuCtxGetCurrent", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
                           "cuDevicePrimaryCtxRelease_v2", "cuPointerGetAttribute"};

    if (lib == NULL)
        lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == NULL)
        return 0;
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        void *sym = dlsym(lib, names[i]);
        if (sym == NULL)
            return 0;
        memcpy(slots[i], &sym, sizeof(sym));
    }
    return 1;
}

/* Launch a region on `dev` from the calling thread, then compare its current context with the
 * primary one; describes what it saw in `detail`. */
static int context_is_primary(int dev, CUcontext primary, char *detail, size_t len)
{
    CUcontext current = NULL;
    int x = 0;

#pragma omp target device(dev) map(tofrom : x)
    x = 1;
    if (cu.ctx_get_current(&current) != 0) {
        snprintf(detail, len, "cuCtxGetCurrent failed");
        return 0;
    }
    snprintf(detail, len, "current %p, primary %p", (void *)current, (void *)primary);
    return current != NULL && current == primary;
}

/* The same on a host thread of its own. */
struct second_thread {
    int dev;
    CUcontext primary;
    int ok;
    char detail[160];
};

static void *second_thread_main(void *arg)
{
    struct second_thread *t = arg;

    t->ok = context_is_primary(t->dev, t->primary, t->detail, sizeof(t->detail));
    return NULL;
}

static const char *memory_type_name(unsigned type)
{
    return type == CU_MEMORYTYPE_HOST ? "host" : type == CU_MEMORYTYPE_DEVICE ? "device" : "other";
}

/* The memory type the driver gives `ptr`, written into `detail`; 0 when it does not know it. */
static unsigned memory_type(void *ptr, char *detail, size_t len)
{
    unsigned type = 0;
    CUresult res =
        cu.pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)ptr);

    if (res != 0) {
        snprintf(detail, len, "%p: cuPointerGetAttribute error %d", ptr, res);
        return 0;
    }
    snprintf(detail, len, "%p: CU_MEMORYTYPE %u (%s)", ptr, type, memory_type_name(type));
    return type;
}

int main(int argc, char **argv)
{
    int dev = argc > 1 ? atoi(argv[1]) : omp_get_default_device();
    CUdevice cu_dev;
    CUcontext primary = NULL;
    char detail[160];
    int x = 0;

    if (omp_get_num_devices() == 0) {
        printf("interop: SKIP: no OpenMP device\n");
        return 77;
    }
    /* The first target region: it initialises the device and loads the driver. */
#pragma omp target device(dev) map(tofrom : x)
    x = 1;
    if (!load_driver()) {
        printf("interop: SKIP: no CUDA driver (libcuda.so.1) with the entry points used\n");
        return 77;
    }
    if (cu.device_get(&cu_dev, dev) != 0 || cu.primary_retain(&primary, cu_dev) != 0) {
        printf("interop: FAIL: CUDA device %d or its primary context not found\n", dev);
        return 1;
    }
    printf("interop: OpenMP device %d, CUDA device %d\n", dev, (int)cu_dev);

    report(context_is_primary(dev, primary, detail, sizeof(detail)), "context", detail);
    {
        struct second_thread t = {.dev = dev, .primary = primary};
        pthread_t tid;
        char line[200];

        if (pthread_create(&tid, NULL, second_thread_main, &t) != 0) {
            snprintf(t.detail, sizeof(t.detail), "pthread_create failed");
        } else {
            pthread_join(tid, NULL);
        }
        snprintf(line, sizeof(line), "second host thread: %s", t.detail);
        report(t.ok, "context", line);
    }

    void *d = omp_target_alloc(1 << 20, dev);
    void *h = llvm_omp_target_alloc_host(1 << 20, dev);
    if (d == NULL || h == NULL) {
        printf("interop: FAIL: omp_target_alloc %p, llvm_omp_target_alloc_host %p\n", d, h);
        return 1;
    }
    report(memory_type(d, detail, sizeof(detail)) == CU_MEMORYTYPE_DEVICE,
           "device-memory omp_target_alloc", detail);
    report(memory_type(h, detail, sizeof(detail)) == CU_MEMORYTYPE_HOST,
           "host-memory llvm_omp_target_alloc_host", detail);
    omp_target_free(d, dev);
    llvm_omp_target_free_host(h, dev);
    cu.primary_release(cu_dev);
    printf("interop: %s\n", failed ? "FAIL" : "PASS");
    return failed;
}
