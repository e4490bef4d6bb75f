/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda_sim.c - a libcuda.so.1 that simulates GPUs in host memory (one unless
 * FAKE_CUDA_SIM_DEVICES says more), so that tether's CUDA plugin can be driven through Debian's
 * libomptarget on a machine without a GPU (test_plugin_sim.c).  Device memory is malloc'ed, copies
 * are memcpy, streams complete work at once (kernels after FAKE_CUDA_SIM_KERNEL_US), modules load
 * any ELF, and kernel launches are only counted: no device code runs. Registration follows the real
 * driver's rules that the plugin relies on: registering an address inside a registered range ->
 * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, unregistering anything but a base ->
 * CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED.
 *
 * Counters (fake_cuda_sim.h) are exported as `fake_cuda_sim_stats` for the test to read through
 * dlsym: every entry point this file defines counts itself in `calls`, some also by name.  Linked
 * with fake_cuda_stubs.c (every other entry point returns CUDA_ERROR_NOT_SUPPORTED).
 *
 * Contexts, as the real driver keeps them: each device has one primary context
 * (cuDevicePrimaryCtxRetain/Release count its references), each thread a current context
 * (cuCtxSetCurrent/cuCtxGetCurrent).  Allocations, streams, events and modules belong to the
 * calling thread's current context, and fail with CUDA_ERROR_INVALID_CONTEXT without one; what
 * each device holds is exported as `fake_cuda_sim_devices[]` (struct fake_cuda_sim_device).
 * cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) answers for this driver's own
 * allocations (device and managed memory: CU_MEMORYTYPE_DEVICE, cuMemHostAlloc'd memory:
 * CU_MEMORYTYPE_HOST) and for registered host memory (CU_MEMORYTYPE_HOST).
 *
 * Configuration (environment):
 *   FAKE_CUDA_SIM_DEVICES the number of simulated GPUs, 1 to SIM_MAX_DEVICES (default 1)
 *   FAKE_CUDA_SIM_PARAMS  the parameter count cuFuncGetParamInfo reports for every kernel
 *                         (unset: the entry point answers CUDA_ERROR_NOT_SUPPORTED)
 *   FAKE_CUDA_SIM_PAGEABLE  1: the GPU reaches pageable host memory (HMM); else it does not
 *   FAKE_CUDA_SIM_FAULT   1: after a launch, every look at a stream's or event's completion
 *                         (cuStreamSynchronize/Query, cuEventSynchronize/Query) fails with
 *                         CUDA_ERROR_ILLEGAL_ADDRESS (a kernel's bad address; sticky, as in CUDA)
 *   FAKE_CUDA_SIM_KERNEL_US  how long a kernel "runs", microseconds (read at each launch;
 *                         default 0): its stream's work completes that long after the launch (or
 *                         after the stream's earlier kernels), so cuStreamQuery and cuEventQuery
 *                         answer CUDA_ERROR_NOT_READY until then; cuEventSynchronize sleeps until
 *                         then for an event created CU_EVENT_BLOCKING_SYNC and spins otherwise,
 *                         cuStreamSynchronize sleeps under a CU_CTX_SCHED_BLOCKING_SYNC primary
 *                         context and spins otherwise (as the real driver does with spare cores)
 *   FAKE_CUDA_SIM_PCI     the GPU's PCI address, "dddd:bb:dd.f" (the function is not reported:
 *                         CUDA has no attribute for it); "none", or anything else that is not
 *                         such an address: the PCI attributes fail with CUDA_ERROR_INVALID_VALUE;
 *                         unset: 0000:3b:00.0
 *   FAKE_CUDA_SIM_RPC_CONST  1: at the first launch after a module with both RPC client globals
 *                         loaded, say on stderr whether __tether_rpc_client_const holds the first
 *                         bytes of __tether_rpc_client ("fake_cuda_sim: launch: the constant
 *                         client copy equals|differs from ... (magic M)", M the client's first
 *                         word: 0x43505254 once written)
 * Limits: cuCtxSetLimit refuses values above 1 GiB (CUDA_ERROR_INVALID_VALUE), as the real driver
 * refuses a limit it cannot grant.
 * Kernels: cuModuleGetFunction finds the FUNC symbols of the image's symbol table (a cubin's
 * kernels), nothing else.  fake_cuda_link.c adds the driver's linker (PTX -> a cubin-like ELF).
 * Globals: only the RPC client globals (__tether_rpc_client, __tether_rpc_client_const) are
 * found, when the image's symbol table defines them, as zeroed blocks of their symbol's size; so
 * an image linked with libtether-device.a gets an RPC server.  Every other global is "not found"
 * (the device environment is optional).
 */
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver.h"
#include "fake_cuda_sim.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

__attribute__((visibility("default"))) struct fake_cuda_sim_stats fake_cuda_sim_stats;

#define MAX_REGISTERED 64

static pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;

#define COUNT(field)                                                                               \
    do {                                                                                           \
        pthread_mutex_lock(&sim_lock);                                                             \
        fake_cuda_sim_stats.field++;                                                               \
        pthread_mutex_unlock(&sim_lock);                                                           \
    } while (0)

static struct {
    char *base;
    size_t size;
} registered[MAX_REGISTERED];

/* ---- devices and contexts ------------------------------------------------------------------ */

#define SIM_MAX_DEVICES 8

/* What one simulated device holds now ("live") and has been asked for in all. */
struct fake_cuda_sim_device {
    int ctx_retained; /* primary context references not yet released */
    int ctx_retains;
    int streams_live, streams_created;
    int events_live, events_created;
    int allocs_live, allocs; /* device and managed memory */
    int host_allocs_live, host_allocs;
    int modules_loaded, launches;
};

__attribute__((
    visibility("default"))) struct fake_cuda_sim_device fake_cuda_sim_devices[SIM_MAX_DEVICES];

static struct CUctx_st {
    int device;
} sim_ctx[SIM_MAX_DEVICES];
static _Thread_local CUcontext sim_current; /* the calling thread's current context */

/* Streams and events remember their device, and when their work completes (sim_now()). */
struct CUstream_st {
    int device;
    _Atomic uint64_t done_at;
};
struct CUevent_st {
    int device;
    unsigned int flags;
    _Atomic uint64_t done_at;
};

/* The clock of simulated work: CLOCK_MONOTONIC in nanoseconds. */
static uint64_t sim_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait until sim_now() reaches `until`: asleep (a blocking synchronisation: no CPU time), or
 * spinning.  Counted in `slept` or `spun` when there was anything to wait for. */
static void sim_wait_until(uint64_t until, int sleep)
{
    struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                          .tv_nsec = (long)(until % 1000000000u)};

    if (sim_now() >= until) {
        return;
    }
    if (sleep) {
        COUNT(slept);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
    } else {
        COUNT(spun);
        while (sim_now() < until) {
        }
    }
}

/* FAKE_CUDA_SIM_FAULT=1 and a kernel launched: the sticky error of a kernel's bad address. */
static CUresult sim_fault(void)
{
    const char *fault = getenv("FAKE_CUDA_SIM_FAULT");
    int launched;

    pthread_mutex_lock(&sim_lock);
    launched = fake_cuda_sim_stats.launches;
    pthread_mutex_unlock(&sim_lock);
    return fault != NULL && strcmp(fault, "1") == 0 && launched > 0 ? CUDA_ERROR_ILLEGAL_ADDRESS
                                                                    : CUDA_SUCCESS;
}

/* A query's answer for work completing at done_at. */
static CUresult sim_query(uint64_t done_at)
{
    if (sim_now() < done_at) {
        COUNT(not_ready);
        return CUDA_ERROR_NOT_READY;
    }
    return sim_fault();
}

static int sim_devices(void)
{
    const char *env = getenv("FAKE_CUDA_SIM_DEVICES");
    int n = env != NULL ? atoi(env) : 1;

    return n < 1 ? 1 : n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : n;
}

/* The device of the calling thread's current context, or -1 without one. */
static int sim_current_device(void)
{
    return sim_current != NULL ? sim_current->device : -1;
}

#define DEVICE_ADD(dev, field, delta)                                                              \
    do {                                                                                           \
        pthread_mutex_lock(&sim_lock);                                                             \
        fake_cuda_sim_devices[dev].field += (delta);                                               \
        pthread_mutex_unlock(&sim_lock);                                                           \
    } while (0)

/* ---- this driver's allocations, for cuPointerGetAttribute and per-device counts ------------ */

struct sim_allocation {
    char *base;
    size_t size;
    unsigned int type; /* CU_MEMORYTYPE_HOST (1) or CU_MEMORYTYPE_DEVICE (2) */
    int device;
};
static struct sim_allocation *sim_allocations;
static size_t sim_allocations_len, sim_allocations_cap;

static int sim_track(void *base, size_t size, unsigned int type, int device)
{
    int ok = 1;

    pthread_mutex_lock(&sim_lock);
    if (sim_allocations_len == sim_allocations_cap) {
        size_t cap = sim_allocations_cap ? 2 * sim_allocations_cap : 64;
        struct sim_allocation *a = realloc(sim_allocations, cap * sizeof(*a));

        if (a == NULL) {
            ok = 0;
            goto out;
        }
        sim_allocations = a;
        sim_allocations_cap = cap;
    }
    sim_allocations[sim_allocations_len++] =
        (struct sim_allocation){.base = base, .size = size, .type = type, .device = device};
out:
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

/* Forget the allocation at `base`; its device, or -1 when it is not one of ours. */
static int sim_untrack(void *base)
{
    int device = -1;

    pthread_mutex_lock(&sim_lock);
    for (size_t i = 0; i < sim_allocations_len; i++) {
        if (sim_allocations[i].base == base) {
            device = sim_allocations[i].device;
            sim_allocations[i] = sim_allocations[--sim_allocations_len];
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return device;
}

CUresult cuInit(unsigned int flags)
{
    COUNT(calls);
    COUNT(inits);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
    COUNT(calls);
    *version = 13000;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **str)
{
    COUNT(calls);
    *str = error == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"
           : error == CUDA_ERROR_ILLEGAL_ADDRESS          ? "CUDA_ERROR_ILLEGAL_ADDRESS"
                                                          : "CUDA_ERROR_SIM";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **str)
{
    COUNT(calls);
    *str = "simulated driver";
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    COUNT(calls);
    *count = sim_devices();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    COUNT(calls);
    if (ordinal < 0 || ordinal >= sim_devices()) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    COUNT(calls);
    strncpy(name, "Simulated GPU", (size_t)len);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

/* One part of the PCI address (FAKE_CUDA_SIM_PCI, see the top). */
static CUresult sim_pci_attribute(CUdevice_attribute attrib, int *value)
{
    const char *env = getenv("FAKE_CUDA_SIM_PCI");
    unsigned domain = 0, bus = 0x3b, slot = 0, function = 0;

    if (env != NULL && (strcmp(env, "none") == 0 ||
                        sscanf(env, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *value = (int)(attrib == CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID ? domain
                   : attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID  ? bus
                                                               : slot);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev)
{
    COUNT(calls);
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        return sim_pci_attribute(attrib, value);
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
        *value = getenv("FAKE_CUDA_SIM_PAGEABLE") != NULL &&
                 strcmp(getenv("FAKE_CUDA_SIM_PAGEABLE"), "1") == 0;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *value = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        *value = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *value = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *value = 232448;
        break;
    default:
        *value = 1;
        break;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    COUNT(calls);
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    COUNT(calls);
    if (dev < 0 || dev >= sim_devices()) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *flags = fake_cuda_sim_stats.primary_flags;
    pthread_mutex_lock(&sim_lock);
    *active = fake_cuda_sim_devices[dev].ctx_retained > 0;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    COUNT(calls);
    fake_cuda_sim_stats.primary_flags = flags;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    COUNT(calls);
    if (dev < 0 || dev >= sim_devices()) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    COUNT(ctx_retains);
    pthread_mutex_lock(&sim_lock);
    fake_cuda_sim_devices[dev].ctx_retained++;
    fake_cuda_sim_devices[dev].ctx_retains++;
    sim_ctx[dev].device = dev;
    pthread_mutex_unlock(&sim_lock);
    *ctx = &sim_ctx[dev];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    COUNT(calls);
    CUresult res = CUDA_SUCCESS;

    if (dev < 0 || dev >= sim_devices()) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    COUNT(ctx_releases);
    pthread_mutex_lock(&sim_lock);
    if (fake_cuda_sim_devices[dev].ctx_retained > 0) {
        fake_cuda_sim_devices[dev].ctx_retained--;
    } else {
        res = CUDA_ERROR_INVALID_CONTEXT; /* released more often than retained */
    }
    pthread_mutex_unlock(&sim_lock);
    return res;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    COUNT(calls);
    COUNT(ctx_set_current);
    if (ctx != NULL && (ctx < &sim_ctx[0] || ctx >= &sim_ctx[sim_devices()])) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    sim_current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    *ctx = sim_current;
    return CUDA_SUCCESS;
}

/* Like the real driver, a limit it cannot grant is refused (here: above 1 GiB); cuCtxGetLimit
 * answers the value set, else the driver's defaults. */
#define FAKE_LIMIT_MAX ((size_t)1 << 30)

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    COUNT(calls);
    if (value > FAKE_LIMIT_MAX) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (limit == CU_LIMIT_STACK_SIZE) {
        fake_cuda_sim_stats.stack_limit = value;
    } else if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
        fake_cuda_sim_stats.heap_limit = value;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
    COUNT(calls);
    if (limit == CU_LIMIT_STACK_SIZE) {
        *value = fake_cuda_sim_stats.stack_limit ? fake_cuda_sim_stats.stack_limit : 1024;
    } else if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
        *value = fake_cuda_sim_stats.heap_limit ? fake_cuda_sim_stats.heap_limit : 8 << 20;
    } else {
        *value = 1 << 20;
    }
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
    COUNT(calls);
    int dev = sim_current_device();

    if (dev < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *stream = malloc(sizeof(**stream));
    if (*stream == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    (*stream)->device = dev;
    atomic_init(&(*stream)->done_at, 0);
    COUNT(streams_created);
    DEVICE_ADD(dev, streams_created, 1);
    DEVICE_ADD(dev, streams_live, 1);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream)
{
    COUNT(calls);
    COUNT(streams_destroyed);
    DEVICE_ADD(stream->device, streams_live, -1);
    free(stream);
    return CUDA_SUCCESS;
}

/* Waits until the stream's work is done: asleep under a blocking-sync primary context, spinning
 * otherwise (the real driver's CU_CTX_SCHED_AUTO with spare cores). */
CUresult cuStreamSynchronize(CUstream stream)
{
    COUNT(calls);
    COUNT(stream_syncs);
    sim_wait_until(atomic_load(&stream->done_at),
                   (fake_cuda_sim_stats.primary_flags & CU_CTX_SCHED_BLOCKING_SYNC) != 0);
    return sim_fault();
}

CUresult cuStreamQuery(CUstream stream)
{
    COUNT(calls);
    COUNT(stream_queries);
    return sim_query(atomic_load(&stream->done_at));
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
    COUNT(calls);
    COUNT(stream_waits);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
    COUNT(calls);
    int dev = sim_current_device();

    if (dev < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *event = malloc(sizeof(**event));
    if (*event == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    (*event)->device = dev;
    (*event)->flags = flags;
    atomic_init(&(*event)->done_at, 0);
    COUNT(events_created);
    DEVICE_ADD(dev, events_created, 1);
    DEVICE_ADD(dev, events_live, 1);
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event)
{
    COUNT(calls);
    COUNT(events_destroyed);
    DEVICE_ADD(event->device, events_live, -1);
    free(event);
    return CUDA_SUCCESS;
}

/* The event completes with the work enqueued on the stream so far. */
CUresult cuEventRecord(CUevent event, CUstream stream)
{
    COUNT(calls);
    COUNT(event_records);
    atomic_store(&event->done_at, atomic_load(&stream->done_at));
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event)
{
    COUNT(calls);
    COUNT(event_queries);
    return sim_query(atomic_load(&event->done_at));
}

/* As the real driver: a thread waiting for a CU_EVENT_BLOCKING_SYNC event sleeps, whatever the
 * context's scheduling flags; for any other event it follows them (here: spins). */
CUresult cuEventSynchronize(CUevent event)
{
    COUNT(calls);
    COUNT(event_syncs);
    sim_wait_until(atomic_load(&event->done_at),
                   (event->flags & CU_EVENT_BLOCKING_SYNC) != 0 ||
                       (fake_cuda_sim_stats.primary_flags & CU_CTX_SCHED_BLOCKING_SYNC) != 0);
    return sim_fault();
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    COUNT(calls);
    *free_bytes = *total_bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

/* Aligned as the real driver's memory is: device allocations to 256 bytes, host ones to a page
 * (the RPC server requires 64-byte aligned mailboxes). */
static void *sim_alloc(size_t align, size_t bytes)
{
    void *p = NULL;

    return posix_memalign(&p, align, bytes != 0 ? bytes : 1) == 0 ? p : NULL;
}

/* An allocation of the current context's device, tracked (sim_track); NULL and *res_p set on
 * failure. */
static void *sim_alloc_tracked(size_t align, size_t bytes, unsigned int type, int *dev_p,
                               CUresult *res_p)
{
    int dev = sim_current_device();
    void *p;

    if (dev < 0) {
        *res_p = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    p = sim_alloc(align, bytes);
    if (p == NULL || !sim_track(p, bytes, type, dev)) {
        free(p);
        *res_p = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    *dev_p = dev;
    return p;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    CUresult res;
    int dev;
    void *p = sim_alloc_tracked(256, bytes, 2 /* CU_MEMORYTYPE_DEVICE */, &dev, &res);

    COUNT(calls);
    if (p == NULL) {
        return res;
    }
    COUNT(allocs);
    DEVICE_ADD(dev, allocs, 1);
    DEVICE_ADD(dev, allocs_live, 1);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    COUNT(calls);
    int dev = sim_untrack((void *)(uintptr_t)dptr);

    COUNT(frees);
    if (dev >= 0) {
        DEVICE_ADD(dev, allocs_live, -1);
    }
    free((void *)(uintptr_t)dptr);
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags)
{
    COUNT(calls);
    CUresult res;
    int dev;

    *ptr = sim_alloc_tracked(4096, bytes, 1 /* CU_MEMORYTYPE_HOST */, &dev, &res);
    if (*ptr == NULL) {
        return res;
    }
    COUNT(host_allocs);
    DEVICE_ADD(dev, host_allocs, 1);
    DEVICE_ADD(dev, host_allocs_live, 1);
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *ptr)
{
    COUNT(calls);
    int dev = sim_untrack(ptr);

    COUNT(host_frees);
    if (dev >= 0) {
        DEVICE_ADD(dev, host_allocs_live, -1);
    }
    free(ptr);
    return CUDA_SUCCESS;
}

/* Managed memory answers CU_MEMORYTYPE_DEVICE, as the driver's does
 * (CU_POINTER_ATTRIBUTE_IS_MANAGED is what tells it apart). */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
    CUresult res;
    int dev;
    void *p = sim_alloc_tracked(4096, bytes, 2 /* CU_MEMORYTYPE_DEVICE */, &dev, &res);

    COUNT(calls);
    if (p == NULL) {
        return res;
    }
    COUNT(managed_allocs);
    DEVICE_ADD(dev, allocs, 1);
    DEVICE_ADD(dev, allocs_live, 1);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *ptr, size_t bytes, unsigned int flags)
{
    char *p = ptr;
    CUresult res = CUDA_ERROR_OUT_OF_MEMORY;

    COUNT(calls);
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i].base != NULL && p < registered[i].base + registered[i].size &&
            registered[i].base < p + bytes) {
            res = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
            goto out;
        }
    }
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i].base == NULL) {
            registered[i].base = p;
            registered[i].size = bytes;
            fake_cuda_sim_stats.registers++;
            res = CUDA_SUCCESS;
            goto out;
        }
    }
out:
    if (res != CUDA_SUCCESS) {
        fake_cuda_sim_stats.register_failures++;
    }
    pthread_mutex_unlock(&sim_lock);
    return res;
}

CUresult cuMemHostUnregister(void *ptr)
{
    CUresult res = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;

    COUNT(calls);
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i].base == ptr) {
            registered[i].base = NULL;
            fake_cuda_sim_stats.unregisters++;
            res = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return res;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *ptr, unsigned int flags)
{
    COUNT(calls);
    *dptr = (CUdeviceptr)(uintptr_t)ptr; /* unified addressing */
    return CUDA_SUCCESS;
}

/* The memory type of this driver's allocations and of registered host memory; anything else is
 * not the driver's (pageable), as the real driver answers for malloc'ed memory. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attrib, CUdeviceptr ptr)
{
    COUNT(calls);
    COUNT(pointer_queries);
    const char *p = (const char *)(uintptr_t)ptr;
    CUresult res = CUDA_ERROR_INVALID_VALUE;

    pthread_mutex_lock(&sim_lock);
    for (size_t i = 0; i < sim_allocations_len; i++) {
        const struct sim_allocation *a = &sim_allocations[i];

        if (p >= a->base && p < a->base + (a->size ? a->size : 1) &&
            attrib == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
            *(unsigned int *)data = a->type;
            res = CUDA_SUCCESS;
        }
    }
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i].base != NULL && p >= registered[i].base &&
            p < registered[i].base + registered[i].size &&
            attrib == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
            *(unsigned int *)data = 1; /* CU_MEMORYTYPE_HOST */
            res = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return res;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream)
{
    COUNT(calls);
    COUNT(h2d);
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    COUNT(calls);
    COUNT(d2h);
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    COUNT(calls);
    COUNT(d2d);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

/* The globals a module answers (see the top): the RPC client's, in this order. */
static const char *const sim_globals[] = {"__tether_rpc_client", "__tether_rpc_client_const"};
#define SIM_GLOBALS (sizeof(sim_globals) / sizeof(sim_globals[0]))

struct CUmod_st {
    void *global[SIM_GLOBALS]; /* zeroed "device memory", NULL: not in the image */
    size_t global_size[SIM_GLOBALS];
    char **funcs; /* the FUNC symbols of the image: its kernels */
    size_t nfuncs;
    struct CUmod_st *next; /* the loaded modules (sim_modules, under sim_lock) */
    int said;              /* FAKE_CUDA_SIM_RPC_CONST: reported at a launch */
};

static struct CUmod_st *sim_modules;

/* FAKE_CUDA_SIM_RPC_CONST (see the top), at a launch, under sim_lock. */
static void sim_check_rpc_const(void)
{
    const char *env = getenv("FAKE_CUDA_SIM_RPC_CONST");

    if (env == NULL || strcmp(env, "1") != 0) {
        return;
    }
    for (struct CUmod_st *m = sim_modules; m != NULL; m = m->next) {
        size_t n = m->global_size[1];

        if (m->said || m->global[0] == NULL || m->global[1] == NULL || n > m->global_size[0]) {
            continue;
        }
        uint32_t magic = 0;
        memcpy(&magic, m->global[0], n < sizeof magic ? n : sizeof magic);
        m->said = 1;
        fprintf(stderr,
                "fake_cuda_sim: launch: the constant client copy %s the first %zu bytes of "
                "__tether_rpc_client (magic %#x)\n",
                memcmp(m->global[0], m->global[1], n) == 0 ? "equals" : "differs from", n,
                (unsigned)magic);
    }
}

/* The size of each of sim_globals the ELF image's symbol table defines, and its functions. */
static void sim_module_globals(struct CUmod_st *mod, const unsigned char *image)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)image;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(image + eh->e_shoff);

    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
        eh->e_shentsize != sizeof(Elf64_Shdr)) {
        return;
    }
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) {
            continue;
        }
        const Elf64_Sym *sym = (const Elf64_Sym *)(const void *)(image + sh[i].sh_offset);
        const char *names = (const char *)image + sh[sh[i].sh_link].sh_offset;
        size_t nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
        char **funcs = realloc(mod->funcs, (mod->nfuncs + nsyms) * sizeof(*funcs));

        if (funcs == NULL) {
            return;
        }
        mod->funcs = funcs;
        for (size_t k = 0; k < nsyms; k++) {
            if (sym[k].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC &&
                (funcs[mod->nfuncs] = strdup(names + sym[k].st_name)) != NULL) {
                mod->nfuncs++;
            }
            for (size_t g = 0; g < SIM_GLOBALS; g++) {
                if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_size != 0 &&
                    strcmp(names + sym[k].st_name, sim_globals[g]) == 0) {
                    mod->global_size[g] = sym[k].st_size;
                }
            }
        }
    }
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int num_options,
                            CUjit_option *options, void **option_values)
{
    struct CUmod_st *mod;
    int dev = sim_current_device();

    COUNT(calls);
    if (dev < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (memcmp(image, "\177ELF", 4) != 0) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    mod = calloc(1, sizeof(*mod));
    if (mod == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_module_globals(mod, image);
    for (size_t g = 0; g < SIM_GLOBALS; g++) {
        if (mod->global_size[g] != 0) {
            mod->global[g] = calloc(1, mod->global_size[g]);
        }
    }
    COUNT(modules_loaded);
    DEVICE_ADD(dev, modules_loaded, 1);
    pthread_mutex_lock(&sim_lock);
    mod->next = sim_modules;
    sim_modules = mod;
    pthread_mutex_unlock(&sim_lock);
    *module = mod;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module)
{
    COUNT(calls);
    COUNT(modules_unloaded);
    pthread_mutex_lock(&sim_lock);
    for (struct CUmod_st **m = &sim_modules; *m != NULL; m = &(*m)->next) {
        if (*m == module) {
            *m = module->next;
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    for (size_t g = 0; g < SIM_GLOBALS; g++) {
        free(module->global[g]);
    }
    for (size_t f = 0; f < module->nfuncs; f++) {
        free(module->funcs[f]);
    }
    free(module->funcs);
    free(module);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule module, const char *name)
{
    COUNT(calls);
    for (size_t g = 0; g < SIM_GLOBALS; g++) {
        if (module->global[g] != NULL && strcmp(name, sim_globals[g]) == 0) {
            *dptr = (CUdeviceptr)(uintptr_t)module->global[g];
            *bytes = module->global_size[g];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleGetFunction(CUfunction *func, CUmodule module, const char *name)
{
    COUNT(calls);
    for (size_t f = 0; f < module->nfuncs; f++) {
        if (strcmp(module->funcs[f], name) == 0) {
            *func = (CUfunction)(uintptr_t)0x1000;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attrib, CUfunction func)
{
    COUNT(calls);
    *value = attrib == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}

/* Parameters of every kernel: FAKE_CUDA_SIM_PARAMS if set, else unknown (as drivers before CUDA
 * 12.4, which lack the entry point). */
CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset, size_t *size)
{
    COUNT(calls);
    (void)func;
    const char *env = getenv("FAKE_CUDA_SIM_PARAMS");
    if (env == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (index >= strtoull(env, NULL, 10))
        return CUDA_ERROR_INVALID_VALUE;
    *offset = 8 * index;
    *size = 8;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction func, unsigned int grid_x, unsigned int grid_y,
                        unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                        unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                        void **params, void **extra)
{
    COUNT(calls);
    int dev = sim_current_device();

    if (dev < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    /* FAKE_CUDA_SIM_KERNEL_US: the stream's work completes that long after the launch, or after
     * the stream's earlier work if that ends later (in order). */
    {
        const char *env = getenv("FAKE_CUDA_SIM_KERNEL_US");
        uint64_t run = env != NULL ? strtoull(env, NULL, 10) * 1000u : 0, now = sim_now();
        uint64_t start = atomic_load(&stream->done_at);

        atomic_store(&stream->done_at, (start > now ? start : now) + run);
    }
    pthread_mutex_lock(&sim_lock);
    fake_cuda_sim_devices[dev].launches++;
    fake_cuda_sim_stats.launches++;
    fake_cuda_sim_stats.last_grid = grid_x;
    fake_cuda_sim_stats.last_block = block_x;
    fake_cuda_sim_stats.last_shared = shared_bytes;
    sim_check_rpc_const();
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}
