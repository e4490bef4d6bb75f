/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_hsa.c - a fake libhsa-runtime64.so.1 for testing the AMDGPU backend without AMD hardware.
 *
 * It is a test double, not an emulator: it implements the HSA calls the plugin makes, with the
 * observable behaviour the plugin relies on, and checks the plugin's use of them strictly.
 *
 * Configuration (read by hsa_init):
 *   FAKE_HSA_MODE   gpu (default): one CPU agent and FAKE_HSA_GPUS GPU agents (default 1);
 *                   cpu: only a CPU agent (a runtime on a machine without GPU);
 *                   init-fail: hsa_init fails with HSA_STATUS_ERROR_OUT_OF_RESOURCES.
 *   FAKE_HSA_ISA    the GPU agents' ISA name (default amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-)
 *   FAKE_HSA_WAVE   their wavefront size (default 64)
 *   FAKE_HSA_ASYNC  1: copies run on a worker thread, later and in any order their dependencies
 *                   allow, so missing dependencies show up as wrong data (otherwise a copy
 *                   runs at once when its dependencies are complete, else as soon as they are)
 *   FAKE_HSA_KERNEL_US  how long a kernel dispatch "runs", microseconds (default 0): the packet
 *                   processor completes its signal that long after it read the packet
 *   FAKE_HSA_FAIL   "name:n,...": the n-th call (1-based) of HSA function `name` fails;
 *                   "kernel_fault:n": the n-th kernel dispatch faults (a queue error,
 *                   HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, as a bad address gives)
 *
 * Memory model: every pool allocation is host memory.  hsa_amd_memory_lock returns an "agent
 * pointer" that is the host pointer with bit 47 set: never a valid user-space address, so a
 * plugin that dereferences it on the host crashes, and a plugin that hands the device a plain
 * unlocked host pointer is caught by the access check of every copy and dispatch.
 *
 * Queues: one packet processor thread per queue reads AQL packets in order (acquiring the
 * header, as hardware does), honours barrier-AND dependencies, and "runs" kernel dispatches: it
 * records them (fake_hsa_last_dispatch) and, for the kernel "tether_raw" (test/amdgpu/
 * raw_kernel.c), performs its effect, out[workitem_id_x] = n + hidden_group_size_x, reading its
 * arguments from the kernarg segment at the offsets of code object v5.
 *
 * Test hooks (dlsym from the test): fake_hsa_stats(), fake_hsa_last_dispatch(),
 * fake_hsa_set_fail().
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "amdgpu_code_object.h"
#include "fake_hsa.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_GPUS 8
#define FAKE_AGENT_BIT (1ull << 47)
#define FAKE_CPU_AGENT 1
#define FAKE_POOL_HOST_KERNARG 1 /* CPU: fine-grained + kernarg */
#define FAKE_POOL_HOST_COARSE 2  /* CPU: coarse-grained (should not be picked for host memory) */
#define FAKE_POOL_DEVICE 3       /* GPU: coarse-grained */
#define FAKE_POOL_HOST_FINE 4    /* CPU: fine-grained (what host allocations should use) */

/* ---- state ---------------------------------------------------------------------------------- */

struct fake_alloc {
    void *ptr;
    size_t size;
    int pool;
    uint64_t gpu_access; /* bit g: GPU g may access (allow_access, or its own device pool) */
    int owner_gpu;       /* device pool: the GPU, else -1 */
    struct fake_alloc *next;
};

struct fake_lock {
    void *host;
    size_t size;
    unsigned refs;
    struct fake_lock *next;
};

struct fake_signal {
    _Atomic int64_t value;
};

struct fake_queue {
    hsa_queue_t q; /* first: the plugin sees this */
    _Atomic uint64_t write_index;
    _Atomic uint64_t read_index;
    int gpu;
    void (*callback)(hsa_status_t, hsa_queue_t *, void *);
    void *data;
    atomic_bool stop;
    pthread_t thread;
};

struct fake_symbol {
    char name[256];
    bool kernel;
    void *storage; /* variable: its device memory */
    uint64_t size; /* variable size */
    uint32_t kernarg_size;
    char kernel_name[256]; /* kernel: name without .kd */
    struct fake_symbol *next;
};

struct fake_executable {
    uint8_t *image;
    size_t size;
    struct plugin_image elf; /* image and size, for common's ELF reader */
    bool loaded, frozen;
    int gpu;
    struct fake_symbol *symbols;
};

struct fake_reader {
    const void *image;
    size_t size;
};

struct fake_copy {
    void *dst;
    const void *src;
    size_t size;
    hsa_signal_t deps[8];
    uint32_t num_deps;
    hsa_signal_t completion;
    struct fake_copy *next;
};

static pthread_mutex_t fake_lock_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER; /* any signal changed */
static struct fake_alloc *fake_allocs;
static struct fake_lock *fake_locks;
static struct fake_stats fake_stats_now;
static struct fake_dispatch fake_last;
static bool fake_initialised;
static int fake_mode_gpu = 1;
static int fake_num_gpus;
static char fake_isa[96];
static uint32_t fake_wave = 64;
static bool fake_async;
static unsigned long fake_kernel_us;  /* FAKE_HSA_KERNEL_US */
static struct fake_copy *fake_copies; /* async mode: not yet run */
static pthread_t fake_copy_thread;
static bool fake_copy_thread_up, fake_copy_stop;

struct fake_fail {
    char name[64];
    int nth;
    int calls;
};
static struct fake_fail fake_fails[16];
static int fake_num_fails;

/* True when this call of `name` is the one configured to fail. */
static bool fake_should_fail(const char *name)
{
    bool fail = false;

    pthread_mutex_lock(&fake_lock_mu);
    for (int i = 0; i < fake_num_fails; i++) {
        if (strcmp(fake_fails[i].name, name) == 0 && ++fake_fails[i].calls == fake_fails[i].nth) {
            fail = true;
            fake_stats_now.injected_failures++;
        }
    }
    pthread_mutex_unlock(&fake_lock_mu);
    return fail;
}

#define FAKE_FAIL_POINT(name)                                                                      \
    do {                                                                                           \
        if (fake_should_fail(name))                                                                \
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;                                              \
    } while (0)

FAKE_EXPORT void fake_hsa_set_fail(const char *name, int nth)
{
    pthread_mutex_lock(&fake_lock_mu);
    if (name == NULL) {
        fake_num_fails = 0;
    } else if (fake_num_fails < 16) {
        snprintf(fake_fails[fake_num_fails].name, sizeof(fake_fails[0].name), "%s", name);
        fake_fails[fake_num_fails].nth = nth;
        fake_fails[fake_num_fails].calls = 0;
        fake_num_fails++;
    }
    pthread_mutex_unlock(&fake_lock_mu);
}

FAKE_EXPORT void fake_hsa_stats(struct fake_stats *out)
{
    pthread_mutex_lock(&fake_lock_mu);
    *out = fake_stats_now;
    pthread_mutex_unlock(&fake_lock_mu);
}

FAKE_EXPORT void fake_hsa_last_dispatch(struct fake_dispatch *out)
{
    pthread_mutex_lock(&fake_lock_mu);
    *out = fake_last;
    pthread_mutex_unlock(&fake_lock_mu);
}

static void fake_error(const char *what)
{
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.misuse++;
    pthread_mutex_unlock(&fake_lock_mu);
    fprintf(stderr, "fake_hsa: misuse: %s\n", what);
}

/* ---- agents ---------------------------------------------------------------------------------- */

static int fake_gpu_of(hsa_agent_t agent)
{
    if (agent.handle >= 2 && agent.handle < 2 + (uint64_t)fake_num_gpus)
        return (int)(agent.handle - 2);
    return -1;
}

static void fake_config(void)
{
    const char *mode = getenv("FAKE_HSA_MODE");
    const char *gpus = getenv("FAKE_HSA_GPUS");
    const char *isa = getenv("FAKE_HSA_ISA");
    const char *wave = getenv("FAKE_HSA_WAVE");
    const char *async = getenv("FAKE_HSA_ASYNC");
    const char *fail = getenv("FAKE_HSA_FAIL");
    const char *kernel_us = getenv("FAKE_HSA_KERNEL_US");

    fake_mode_gpu = !(mode != NULL && strcmp(mode, "cpu") == 0);
    fake_num_gpus = fake_mode_gpu ? (gpus != NULL ? atoi(gpus) : 1) : 0;
    if (fake_num_gpus < 0 || fake_num_gpus > FAKE_MAX_GPUS)
        fake_num_gpus = 1;
    snprintf(fake_isa, sizeof(fake_isa), "%s",
             isa != NULL ? isa : "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    fake_wave = wave != NULL ? (uint32_t)atoi(wave) : 64;
    fake_async = async != NULL && strcmp(async, "1") == 0;
    fake_kernel_us = kernel_us != NULL ? strtoul(kernel_us, NULL, 10) : 0;
    if (fail != NULL) {
        char buf[512], *save = NULL;

        snprintf(buf, sizeof(buf), "%s", fail);
        for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');

            if (colon != NULL) {
                *colon = '\0';
                fake_hsa_set_fail(tok, atoi(colon + 1));
            }
        }
    }
}

static void *fake_copy_worker(void *arg);

FAKE_EXPORT hsa_status_t hsa_init(void)
{
    const char *mode = getenv("FAKE_HSA_MODE");

    if (mode != NULL && strcmp(mode, "init-fail") == 0)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    FAKE_FAIL_POINT("hsa_init");
    pthread_mutex_lock(&fake_lock_mu);
    if (fake_initialised) {
        pthread_mutex_unlock(&fake_lock_mu);
        return HSA_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&fake_lock_mu);
    fake_config();
    pthread_mutex_lock(&fake_lock_mu);
    fake_initialised = true;
    fake_stats_now.inits++;
    if (!fake_copy_thread_up) {
        fake_copy_stop = false;
        fake_copy_thread_up = pthread_create(&fake_copy_thread, NULL, fake_copy_worker, NULL) == 0;
    }
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_shut_down(void)
{
    bool join;

    pthread_mutex_lock(&fake_lock_mu);
    if (!fake_initialised) {
        pthread_mutex_unlock(&fake_lock_mu);
        return HSA_STATUS_ERROR_NOT_INITIALIZED;
    }
    fake_initialised = false;
    fake_stats_now.shutdowns++;
    join = fake_copy_thread_up;
    fake_copy_stop = true;
    fake_copy_thread_up = false;
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock_mu);
    if (join)
        pthread_join(fake_copy_thread, NULL);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_status_string(hsa_status_t status, const char **text)
{
    if ((int)status == (int)HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION) { /* hsa_ext_amd.h */
        *text = "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: fake kernel fault";
        return HSA_STATUS_SUCCESS;
    }
    switch (status) {
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
        *text = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: fake out of resources";
        break;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
        *text = "HSA_STATUS_ERROR_INVALID_ARGUMENT: fake invalid argument";
        break;
    default:
        *text = "HSA_STATUS_ERROR: fake error";
        break;
    }
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attribute, void *value)
{
    if (attribute == HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY) {
        *(uint64_t *)value = 1000000000ull;
        return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

FAKE_EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void *),
                                            void *data)
{
    hsa_status_t st;

    if (!fake_initialised)
        return HSA_STATUS_ERROR_NOT_INITIALIZED;
    st = callback((hsa_agent_t){FAKE_CPU_AGENT}, data);
    for (int g = 0; g < fake_num_gpus && st == HSA_STATUS_SUCCESS; g++)
        st = callback((hsa_agent_t){2 + (uint64_t)g}, data);
    return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

FAKE_EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute,
                                            void *value)
{
    int gpu = fake_gpu_of(agent);

    if (agent.handle != FAKE_CPU_AGENT && gpu < 0)
        return HSA_STATUS_ERROR_INVALID_AGENT;
    switch ((int)attribute) {
    case HSA_AGENT_INFO_DEVICE:
        *(hsa_device_type_t *)value = gpu < 0 ? HSA_DEVICE_TYPE_CPU : HSA_DEVICE_TYPE_GPU;
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_NAME:
        snprintf(value, 64, "%s", gpu < 0 ? "Fake CPU" : "gfx90a");
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_PROFILE:
        *(hsa_profile_t *)value = gpu < 0 ? HSA_PROFILE_FULL : HSA_PROFILE_BASE;
        return HSA_STATUS_SUCCESS;
    }
    if (gpu < 0)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    switch ((int)attribute) {
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
        *(uint32_t *)value = fake_wave;
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
        *(uint32_t *)value = 1024;
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
        *(uint32_t *)value = 131072;
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MIN_SIZE:
        *(uint32_t *)value = 64;
        return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_GRID_MAX_DIM:
        *(hsa_dim3_t *)value = (hsa_dim3_t){UINT32_MAX, UINT16_MAX, UINT16_MAX};
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
        *(uint32_t *)value = 104;
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
        snprintf(value, 64, "Fake Instinct %d", gpu);
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_DOMAIN:
        *(uint32_t *)value = 0;
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_BDFID: /* 0000:c1:02.1 for GPU 0, then bus c2, c3, ... */
        *(uint32_t *)value = (uint32_t)(0xc1 + gpu) << 8 | 2u << 3 | 1u;
        return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

FAKE_EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t agent,
                                                hsa_status_t (*callback)(hsa_isa_t, void *),
                                                void *data)
{
    hsa_status_t st;

    if (fake_gpu_of(agent) < 0)
        return HSA_STATUS_ERROR_INVALID_AGENT;
    st = callback((hsa_isa_t){agent.handle}, data);
    return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

FAKE_EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, hsa_isa_info_t attribute, void *value)
{
    (void)isa;
    if (attribute == HSA_ISA_INFO_NAME_LENGTH) {
        *(uint32_t *)value = (uint32_t)strlen(fake_isa) + 1; /* ROCr counts the NUL */
        return HSA_STATUS_SUCCESS;
    }
    if (attribute == HSA_ISA_INFO_NAME) {
        memcpy(value, fake_isa, strlen(fake_isa) + 1);
        return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ---- pools and memory ----------------------------------------------------------------------- */

FAKE_EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent, hsa_status_t (*callback)(hsa_amd_memory_pool_t, void *), void *data)
{
    int gpu = fake_gpu_of(agent);
    hsa_status_t st;

    if (agent.handle == FAKE_CPU_AGENT) {
        st = callback((hsa_amd_memory_pool_t){FAKE_POOL_HOST_COARSE}, data);
        if (st == HSA_STATUS_SUCCESS)
            st = callback((hsa_amd_memory_pool_t){FAKE_POOL_HOST_KERNARG}, data);
        if (st == HSA_STATUS_SUCCESS)
            st = callback((hsa_amd_memory_pool_t){FAKE_POOL_HOST_FINE}, data);
    } else if (gpu >= 0) {
        st = callback((hsa_amd_memory_pool_t){FAKE_POOL_DEVICE | ((uint64_t)gpu << 8)}, data);
    } else {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool,
                                                      hsa_amd_memory_pool_info_t attribute,
                                                      void *value)
{
    int kind = (int)(pool.handle & 0xff);

    switch (attribute) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
        *(hsa_amd_segment_t *)value = HSA_AMD_SEGMENT_GLOBAL;
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
        *(uint32_t *)value =
            kind == FAKE_POOL_HOST_KERNARG ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT |
                                                 HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
            : kind == FAKE_POOL_HOST_FINE ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                                          : HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
        *(bool *)value = true;
        return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
        *(size_t *)value = (size_t)64 << 30;
        return HSA_STATUS_SUCCESS;
    default:
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
}

/* The allocation containing [p, p + n), or NULL (fake_lock_mu held). */
static struct fake_alloc *fake_alloc_find(const void *p, size_t n)
{
    for (struct fake_alloc *a = fake_allocs; a != NULL; a = a->next) {
        uintptr_t b = (uintptr_t)a->ptr, q = (uintptr_t)p;

        if (q >= b && q - b <= a->size && n <= a->size - (q - b))
            return a;
    }
    return NULL;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size,
                                                      uint32_t flags, void **ptr)
{
    struct fake_alloc *a;
    int kind = (int)(pool.handle & 0xff);

    (void)flags;
    FAKE_FAIL_POINT("hsa_amd_memory_pool_allocate");
    if (size == 0 || kind < FAKE_POOL_HOST_KERNARG || kind > FAKE_POOL_HOST_FINE)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    if (kind == FAKE_POOL_HOST_COARSE)
        fake_error("allocation from the coarse-grained host pool (not coherent with the GPU)");
    a = calloc(1, sizeof(*a));
    if (a == NULL || posix_memalign(&a->ptr, 4096, size) != 0) {
        free(a);
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    memset(a->ptr, 0xcd, size); /* not zeroed, like real memory */
    a->size = size;
    a->pool = kind;
    a->owner_gpu = kind == FAKE_POOL_DEVICE ? (int)(pool.handle >> 8) : -1;
    a->gpu_access = a->owner_gpu >= 0 ? 1ull << a->owner_gpu : 0;
    pthread_mutex_lock(&fake_lock_mu);
    a->next = fake_allocs;
    fake_allocs = a;
    fake_stats_now.live_allocs++;
    pthread_mutex_unlock(&fake_lock_mu);
    *ptr = a->ptr;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr)
{
    struct fake_alloc **pp, *a = NULL;

    pthread_mutex_lock(&fake_lock_mu);
    for (pp = &fake_allocs; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->ptr == ptr) {
            a = *pp;
            *pp = a->next;
            fake_stats_now.live_allocs--;
            break;
        }
    }
    pthread_mutex_unlock(&fake_lock_mu);
    if (a == NULL) {
        fake_error("hsa_amd_memory_pool_free of an unknown pointer");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    free(a->ptr);
    free(a);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents, const hsa_agent_t *agents,
                                                     const uint32_t *flags, const void *ptr)
{
    struct fake_alloc *a;

    (void)flags;
    FAKE_FAIL_POINT("hsa_amd_agents_allow_access");
    pthread_mutex_lock(&fake_lock_mu);
    a = fake_alloc_find(ptr, 1);
    if (a != NULL && a->ptr == ptr)
        for (uint32_t i = 0; i < num_agents; i++)
            if (fake_gpu_of(agents[i]) >= 0)
                a->gpu_access |= 1ull << fake_gpu_of(agents[i]);
    pthread_mutex_unlock(&fake_lock_mu);
    if (a == NULL || a->ptr != ptr) {
        fake_error("hsa_amd_agents_allow_access on memory that is not an allocation's base");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_lock(void *host_ptr, size_t size, hsa_agent_t *agents,
                                             int num_agent, void **agent_ptr)
{
    struct fake_lock *l;

    (void)agents;
    (void)num_agent;
    FAKE_FAIL_POINT("hsa_amd_memory_lock");
    if (host_ptr == NULL || size == 0 || ((uintptr_t)host_ptr & FAKE_AGENT_BIT) != 0) {
        fake_error("hsa_amd_memory_lock of NULL, nothing, or an agent pointer");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&fake_lock_mu);
    for (l = fake_locks; l != NULL; l = l->next)
        if (l->host == host_ptr && l->size == size)
            break;
    if (l != NULL) {
        l->refs++;
    } else {
        l = calloc(1, sizeof(*l));
        if (l != NULL) {
            l->host = host_ptr;
            l->size = size;
            l->refs = 1;
            l->next = fake_locks;
            fake_locks = l;
            fake_stats_now.live_locks++;
        }
    }
    if (l != NULL)
        fake_stats_now.lock_calls++;
    pthread_mutex_unlock(&fake_lock_mu);
    if (l == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    *agent_ptr = (void *)((uintptr_t)host_ptr | FAKE_AGENT_BIT);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_unlock(void *host_ptr)
{
    struct fake_lock **pp, *to_free = NULL;
    bool found = false;

    bool inject = fake_should_fail("hsa_amd_memory_unlock");

    /* An injected failure still unlocks (so tests count leaks exactly) but reports an error. */
    pthread_mutex_lock(&fake_lock_mu);
    for (pp = &fake_locks; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->host == host_ptr) {
            found = true;
            if (--(*pp)->refs == 0) {
                to_free = *pp;
                *pp = to_free->next;
                fake_stats_now.live_locks--;
            }
            break;
        }
    }
    pthread_mutex_unlock(&fake_lock_mu);
    free(to_free);
    if (!found) {
        fake_error("hsa_amd_memory_unlock of a pointer that is not a locked base");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    return inject ? HSA_STATUS_ERROR_OUT_OF_RESOURCES : HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_pointer_info(const void *ptr, hsa_amd_pointer_info_t *info,
                                              void *(*alloc)(size_t), uint32_t *num_agents,
                                              hsa_agent_t **accessible)
{
    struct fake_alloc *a;

    (void)alloc;
    if (num_agents != NULL || accessible != NULL)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT; /* the plugin never asks for agent lists */
    pthread_mutex_lock(&fake_lock_mu);
    info->type = HSA_EXT_POINTER_TYPE_UNKNOWN;
    a = fake_alloc_find(ptr, 1);
    if (a != NULL) {
        info->type = HSA_EXT_POINTER_TYPE_HSA;
        info->agentBaseAddress = a->ptr;
        info->hostBaseAddress = a->ptr;
        info->sizeInBytes = a->size;
    } else {
        for (struct fake_lock *l = fake_locks; l != NULL; l = l->next) {
            uintptr_t b = (uintptr_t)l->host, q = (uintptr_t)ptr;

            if (q >= b && q - b < l->size) {
                info->type = HSA_EXT_POINTER_TYPE_LOCKED;
                info->hostBaseAddress = l->host;
                info->agentBaseAddress = (void *)(b | FAKE_AGENT_BIT);
                info->sizeInBytes = l->size;
                break;
            }
        }
    }
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

/* The host address behind a device-side pointer range that GPU gpu may access, or NULL when it
 * may not (fake_lock_mu held). */
static void *fake_translate(const void *p, size_t n, int gpu)
{
    uintptr_t q = (uintptr_t)p;
    struct fake_alloc *a;

    if (q & FAKE_AGENT_BIT) {
        uintptr_t h = q & ~FAKE_AGENT_BIT;

        for (struct fake_lock *l = fake_locks; l != NULL; l = l->next) {
            uintptr_t b = (uintptr_t)l->host;

            if (h >= b && h - b <= l->size && n <= l->size - (h - b))
                return (void *)h;
        }
        return NULL;
    }
    a = fake_alloc_find(p, n);
    if (a != NULL && (gpu < 0 || (a->gpu_access >> gpu) & 1))
        return (void *)p;
    return NULL;
}

/* ---- signals ------------------------------------------------------------------------------- */

static struct fake_signal *fake_sig(hsa_signal_t s)
{
    return (struct fake_signal *)(uintptr_t)s.handle;
}

FAKE_EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value, uint32_t num_consumers,
                                           const hsa_agent_t *consumers, hsa_signal_t *signal)
{
    struct fake_signal *s;

    (void)num_consumers;
    (void)consumers;
    FAKE_FAIL_POINT("hsa_signal_create");
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    atomic_store(&s->value, initial_value);
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_signals++;
    pthread_mutex_unlock(&fake_lock_mu);
    signal->handle = (uint64_t)(uintptr_t)s;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal)
{
    if (signal.handle == 0)
        return HSA_STATUS_ERROR_INVALID_SIGNAL;
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_signals--;
    pthread_mutex_unlock(&fake_lock_mu);
    free(fake_sig(signal));
    return HSA_STATUS_SUCCESS;
}

static void fake_signal_set(hsa_signal_t s, hsa_signal_value_t v)
{
    atomic_store_explicit(&fake_sig(s)->value, v, memory_order_release);
    pthread_mutex_lock(&fake_lock_mu);
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock_mu);
}

static void fake_signal_decrement(hsa_signal_t s)
{
    if (s.handle == 0)
        return;
    atomic_fetch_sub_explicit(&fake_sig(s)->value, 1, memory_order_acq_rel);
    pthread_mutex_lock(&fake_lock_mu);
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock_mu);
}

FAKE_EXPORT void hsa_signal_store_relaxed(hsa_signal_t signal, hsa_signal_value_t value)
{
    fake_signal_set(signal, value);
}

FAKE_EXPORT void hsa_signal_store_screlease(hsa_signal_t signal, hsa_signal_value_t value)
{
    fake_signal_set(signal, value);
}

FAKE_EXPORT hsa_signal_value_t hsa_signal_load_relaxed(hsa_signal_t signal)
{
    return atomic_load_explicit(&fake_sig(signal)->value, memory_order_relaxed);
}

FAKE_EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t signal)
{
    return atomic_load_explicit(&fake_sig(signal)->value, memory_order_acquire);
}

static bool fake_condition(hsa_signal_value_t v, hsa_signal_condition_t c, hsa_signal_value_t cmp)
{
    switch (c) {
    case HSA_SIGNAL_CONDITION_EQ:
        return v == cmp;
    case HSA_SIGNAL_CONDITION_NE:
        return v != cmp;
    case HSA_SIGNAL_CONDITION_LT:
        return v < cmp;
    default:
        return v >= cmp;
    }
}

static void fake_deadline(struct timespec *ts, long ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += ns;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

FAKE_EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t signal,
                                                         hsa_signal_condition_t condition,
                                                         hsa_signal_value_t compare_value,
                                                         uint64_t timeout_hint,
                                                         hsa_wait_state_t wait_state_hint)
{
    struct timespec until;
    hsa_signal_value_t v;

    (void)wait_state_hint;
    /* timeout_hint is in timestamp ticks (1 GHz here); wait at most that long, at most 1 s */
    fake_deadline(&until, timeout_hint < 1000000000ull ? (long)timeout_hint : 1000000000L);
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.signal_waits++;
    if (!fake_condition(hsa_signal_load_scacquire(signal), condition, compare_value))
        fake_stats_now.signal_waits_slept++;
    while (!fake_condition(v = hsa_signal_load_scacquire(signal), condition, compare_value)) {
        if (pthread_cond_timedwait(&fake_cond, &fake_lock_mu, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&fake_lock_mu);
    return hsa_signal_load_scacquire(signal);
}

/* ---- copies -----------------------------------------------------------------------------------
 */

static bool fake_deps_done(const hsa_signal_t *deps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (deps[i].handle != 0 && hsa_signal_load_scacquire(deps[i]) >= 1)
            return false;
    return true;
}

static void fake_copy_run(struct fake_copy *c)
{
    memmove(c->dst, c->src, c->size);
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.copies++;
    pthread_mutex_unlock(&fake_lock_mu);
    fake_signal_decrement(c->completion);
    free(c);
}

/* Copies whose dependencies were not complete at submission wait here.  Async mode: every copy
 * waits here, and the worker runs, after a short delay, the NEWEST copy whose dependencies are
 * done: without the dependencies the plugin passes, later copies would overtake earlier ones.
 * Otherwise it runs the oldest ready copy at once. */
static void *fake_copy_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&fake_lock_mu);
    while (!fake_copy_stop) {
        struct fake_copy **pick = NULL;
        struct timespec until;

        /* the list is newest first */
        for (struct fake_copy **pp = &fake_copies; *pp != NULL; pp = &(*pp)->next) {
            if (fake_deps_done((*pp)->deps, (*pp)->num_deps)) {
                pick = pp;
                if (fake_async)
                    break;
            }
        }
        if (pick == NULL) {
            fake_deadline(&until, 2000000);
            pthread_cond_timedwait(&fake_cond, &fake_lock_mu, &until);
            continue;
        }
        {
            struct fake_copy *c = *pick;

            *pick = c->next;
            pthread_mutex_unlock(&fake_lock_mu);
            if (fake_async) {
                struct timespec d = {0, 200000};

                nanosleep(&d, NULL);
            }
            fake_copy_run(c);
            pthread_mutex_lock(&fake_lock_mu);
        }
    }
    pthread_mutex_unlock(&fake_lock_mu);
    return NULL;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent,
                                                   const void *src, hsa_agent_t src_agent,
                                                   size_t size, uint32_t num_dep_signals,
                                                   const hsa_signal_t *dep_signals,
                                                   hsa_signal_t completion_signal)
{
    struct fake_copy *c;
    int dst_gpu = fake_gpu_of(dst_agent), src_gpu = fake_gpu_of(src_agent);

    FAKE_FAIL_POINT("hsa_amd_memory_async_copy");
    if (num_dep_signals > 8 || completion_signal.handle == 0)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    pthread_mutex_lock(&fake_lock_mu);
    /* each side must be reachable by its agent (or by the other one: both are GPUs here) */
    c->dst = fake_translate(dst, size, dst_gpu);
    if (c->dst == NULL)
        c->dst = fake_translate(dst, size, src_gpu);
    c->src = fake_translate(src, size, src_gpu);
    if (c->src == NULL)
        c->src = fake_translate(src, size, dst_gpu);
    pthread_mutex_unlock(&fake_lock_mu);
    if (c->dst == NULL || c->src == NULL || dst_gpu < 0 || src_gpu < 0) {
        free(c);
        fake_error("hsa_amd_memory_async_copy: a side is not accessible to the agents");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    c->size = size;
    c->num_deps = num_dep_signals;
    for (uint32_t i = 0; i < num_dep_signals; i++)
        c->deps[i] = dep_signals[i];
    c->completion = completion_signal;
    if (!fake_async && fake_deps_done(c->deps, c->num_deps)) {
        fake_copy_run(c);
        return HSA_STATUS_SUCCESS;
    }
    pthread_mutex_lock(&fake_lock_mu);
    c->next = fake_copies;
    fake_copies = c;
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_amd_memory_fill(void *ptr, uint32_t value, size_t count)
{
    void *p;

    pthread_mutex_lock(&fake_lock_mu);
    p = fake_translate(ptr, count * 4, -1);
    pthread_mutex_unlock(&fake_lock_mu);
    if (p == NULL)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < count; i++)
        memcpy((uint32_t *)p + i, &value, 4);
    return HSA_STATUS_SUCCESS;
}

/* ---- executables ---------------------------------------------------------------------------- */

FAKE_EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(
    const void *code_object, size_t size, hsa_code_object_reader_t *code_object_reader)
{
    struct fake_reader *r;

    FAKE_FAIL_POINT("hsa_code_object_reader_create_from_memory");
    if (image_elf_machine(&(struct plugin_image){.start = code_object, .size = size}) != EM_AMDGPU)
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    r->image = code_object;
    r->size = size;
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_readers++;
    pthread_mutex_unlock(&fake_lock_mu);
    code_object_reader->handle = (uint64_t)(uintptr_t)r;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader)
{
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_readers--;
    pthread_mutex_unlock(&fake_lock_mu);
    free((void *)(uintptr_t)reader.handle);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_create_alt(
    hsa_profile_t profile, hsa_default_float_rounding_mode_t default_float_rounding_mode,
    const char *options, hsa_executable_t *executable)
{
    struct fake_executable *e;

    (void)profile;
    (void)default_float_rounding_mode;
    (void)options;
    FAKE_FAIL_POINT("hsa_executable_create_alt");
    e = calloc(1, sizeof(*e));
    if (e == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    e->gpu = -1;
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_executables++;
    pthread_mutex_unlock(&fake_lock_mu);
    executable->handle = (uint64_t)(uintptr_t)e;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_load_agent_code_object(
    hsa_executable_t executable, hsa_agent_t agent, hsa_code_object_reader_t code_object_reader,
    const char *options, hsa_loaded_code_object_t *loaded_code_object)
{
    struct fake_executable *e = (void *)(uintptr_t)executable.handle;
    struct fake_reader *r = (void *)(uintptr_t)code_object_reader.handle;

    (void)options;
    (void)loaded_code_object;
    FAKE_FAIL_POINT("hsa_executable_load_agent_code_object");
    if (e->loaded || e->frozen || fake_gpu_of(agent) < 0)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    e->image = malloc(r->size);
    if (e->image == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    memcpy(e->image, r->image, r->size);
    e->size = r->size;
    e->elf = (struct plugin_image){.start = e->image, .size = e->size};
    if (image_elf_header(&e->elf, &(struct image_elf_header){0}, NULL) != TETHER_OK) {
        free(e->image);
        e->image = NULL;
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    }
    e->gpu = fake_gpu_of(agent);
    e->loaded = true;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t executable, const char *options)
{
    struct fake_executable *e = (void *)(uintptr_t)executable.handle;

    (void)options;
    FAKE_FAIL_POINT("hsa_executable_freeze");
    if (!e->loaded)
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    e->frozen = true;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t executable)
{
    struct fake_executable *e = (void *)(uintptr_t)executable.handle;

    while (e->symbols != NULL) {
        struct fake_symbol *s = e->symbols;

        e->symbols = s->next;
        if (s->storage != NULL)
            hsa_amd_memory_pool_free(s->storage);
        free(s);
    }
    free(e->image);
    free(e);
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_executables--;
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t executable,
                                                           const char *symbol_name,
                                                           const hsa_agent_t *agent,
                                                           hsa_executable_symbol_t *symbol)
{
    struct fake_executable *e = (void *)(uintptr_t)executable.handle;
    struct image_symbol es;
    struct fake_symbol *s;
    size_t len = strlen(symbol_name);

    FAKE_FAIL_POINT("hsa_executable_get_symbol_by_name");
    if (!e->frozen || agent == NULL || fake_gpu_of(*agent) != e->gpu)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    for (s = e->symbols; s != NULL; s = s->next)
        if (strcmp(s->name, symbol_name) == 0)
            goto found;
    if (!image_elf_symbol(&e->elf, symbol_name, &es) || es.type != STT_OBJECT ||
        len >= sizeof(s->name))
        return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    memcpy(s->name, symbol_name, len + 1);
    if (len > 3 && strcmp(symbol_name + len - 3, ".kd") == 0 && es.size == 64 &&
        es.data_size == 64) {
        s->kernel = true;
        memcpy(&s->kernarg_size, (const uint8_t *)es.data + 8, 4);
        memcpy(s->kernel_name, symbol_name, len - 3);
    } else {
        /* a variable: device memory of the executable's agent, initialised from the image */
        void *mem = NULL;

        s->size = es.size;
        if (hsa_amd_memory_pool_allocate(
                (hsa_amd_memory_pool_t){FAKE_POOL_DEVICE | ((uint64_t)e->gpu << 8)},
                es.size ? es.size : 1, 0, &mem) != HSA_STATUS_SUCCESS) {
            free(s);
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        if (es.data != NULL && es.data_size == es.size)
            memcpy(mem, es.data, es.size);
        else
            memset(mem, 0, es.size ? es.size : 1);
        s->storage = mem;
    }
    s->next = e->symbols;
    e->symbols = s;
found:
    symbol->handle = (uint64_t)(uintptr_t)s;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol,
                                                        hsa_executable_symbol_info_t attribute,
                                                        void *value)
{
    struct fake_symbol *s = (void *)(uintptr_t)symbol.handle;

    switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
        *(hsa_symbol_kind_t *)value = s->kernel ? HSA_SYMBOL_KIND_KERNEL : HSA_SYMBOL_KIND_VARIABLE;
        return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS:
        if (s->kernel)
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        *(uint64_t *)value = (uint64_t)(uintptr_t)s->storage;
        return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
        if (s->kernel)
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        *(uint32_t *)value = 0; /* like ROCr for code object v3+: the plugin must cope */
        return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
        if (!s->kernel)
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        *(uint64_t *)value = (uint64_t)(uintptr_t)s;
        return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
        if (!s->kernel)
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        *(uint32_t *)value = s->kernarg_size;
        return HSA_STATUS_SUCCESS;
    default:
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
}

/* ---- queues and the packet processor --------------------------------------------------------- */

/* "Run" a dispatch: record it, check what the device would touch, emulate tether_raw. */
static hsa_status_t fake_dispatch(struct fake_queue *fq, const hsa_kernel_dispatch_packet_t *p)
{
    struct fake_symbol *k = (struct fake_symbol *)(uintptr_t)p->kernel_object;
    struct fake_dispatch d;
    const uint8_t *ka;
    size_t ka_size;

    memset(&d, 0, sizeof(d));
    pthread_mutex_lock(&fake_lock_mu);
    ka_size = k->kernarg_size ? k->kernarg_size : 1;
    ka = fake_translate(p->kernarg_address, ka_size, fq->gpu);
    if (ka != NULL) {
        struct fake_alloc *a = fake_alloc_find(ka, ka_size);

        if (a == NULL || a->pool != FAKE_POOL_HOST_KERNARG)
            ka = NULL; /* kernargs must come from the kernarg pool */
    }
    pthread_mutex_unlock(&fake_lock_mu);
    if (ka == NULL) {
        fake_error("dispatch: kernarg segment not in the kernarg pool or not GPU-accessible");
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    snprintf(d.kernel, sizeof(d.kernel), "%s", k->kernel_name);
    d.setup = p->setup;
    d.workgroup_size[0] = p->workgroup_size_x;
    d.workgroup_size[1] = p->workgroup_size_y;
    d.workgroup_size[2] = p->workgroup_size_z;
    d.grid_size[0] = p->grid_size_x;
    d.grid_size[1] = p->grid_size_y;
    d.grid_size[2] = p->grid_size_z;
    d.group_segment_size = p->group_segment_size;
    d.private_segment_size = p->private_segment_size;
    d.kernarg_size = k->kernarg_size;
    memcpy(d.kernarg, ka,
           k->kernarg_size < sizeof(d.kernarg) ? k->kernarg_size : sizeof(d.kernarg));

    if (strcmp(k->kernel_name, "tether_raw") == 0 && k->kernarg_size >= 30) {
        /* out[workitem_id_x] = n + hidden_group_size_x (v5 offsets: out 0, n 8, group x 28) */
        uint64_t out_addr;
        int32_t n;
        uint16_t group_x;
        int32_t *out;

        memcpy(&out_addr, ka, 8);
        memcpy(&n, ka + 8, 4);
        memcpy(&group_x, ka + 28, 2);
        pthread_mutex_lock(&fake_lock_mu);
        out = fake_translate((void *)(uintptr_t)out_addr, (size_t)p->workgroup_size_x * 4, fq->gpu);
        pthread_mutex_unlock(&fake_lock_mu);
        if (out == NULL) {
            fake_error("dispatch: tether_raw's output buffer is not GPU-accessible");
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        for (uint32_t i = 0; i < p->workgroup_size_x; i++)
            out[i] = n + (int32_t)group_x;
    }
    pthread_mutex_lock(&fake_lock_mu);
    fake_last = d;
    fake_stats_now.dispatches++;
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

static void *fake_queue_thread(void *arg)
{
    struct fake_queue *fq = arg;
    hsa_queue_t *q = &fq->q;

    while (!atomic_load(&fq->stop)) {
        uint64_t r = atomic_load_explicit(&fq->read_index, memory_order_relaxed);
        uint8_t *slot = (uint8_t *)q->base_address + (r % q->size) * 64;
        uint32_t hs = __atomic_load_n((uint32_t *)slot, __ATOMIC_ACQUIRE);
        unsigned type = hs & 0xff;
        hsa_status_t st = HSA_STATUS_SUCCESS;

        if (type == HSA_PACKET_TYPE_INVALID) {
            struct timespec until;

            pthread_mutex_lock(&fake_lock_mu);
            fake_deadline(&until, 1000000);
            pthread_cond_timedwait(&fake_cond, &fake_lock_mu, &until);
            pthread_mutex_unlock(&fake_lock_mu);
            continue;
        }
        if (type == HSA_PACKET_TYPE_BARRIER_AND) {
            hsa_barrier_and_packet_t p;

            memcpy(&p, slot, sizeof(p));
            while (!fake_deps_done(p.dep_signal, 5) && !atomic_load(&fq->stop)) {
                struct timespec until;

                pthread_mutex_lock(&fake_lock_mu);
                fake_deadline(&until, 1000000);
                pthread_cond_timedwait(&fake_cond, &fake_lock_mu, &until);
                pthread_mutex_unlock(&fake_lock_mu);
            }
            pthread_mutex_lock(&fake_lock_mu);
            fake_stats_now.barriers++;
            pthread_mutex_unlock(&fake_lock_mu);
            fake_signal_decrement(p.completion_signal);
        } else if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
            hsa_kernel_dispatch_packet_t p;

            memcpy(&p, slot, sizeof(p));
            if ((hs >> 16) != 1 || p.workgroup_size_x == 0 || p.grid_size_x % p.workgroup_size_x)
                st = HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
            else if (fake_should_fail("kernel_fault"))
                /* the kernel touched bad memory */
                st = (hsa_status_t)HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION;
            else
                st = fake_dispatch(fq, &p);
            if (st == HSA_STATUS_SUCCESS && fake_kernel_us > 0) {
                struct timespec run = {.tv_sec = (time_t)(fake_kernel_us / 1000000),
                                       .tv_nsec = (long)(fake_kernel_us % 1000000) * 1000};

                while (nanosleep(&run, &run) != 0) {
                }
            }
            if (st == HSA_STATUS_SUCCESS)
                fake_signal_decrement(p.completion_signal);
        } else {
            st = HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
        }
        if (st != HSA_STATUS_SUCCESS) {
            /* like a real queue error: report it and stop processing this queue */
            fq->callback(st, q, fq->data);
            break;
        }
        /* the slot is free again: invalidate it, then move the read index */
        __atomic_store_n((uint32_t *)slot, (uint32_t)HSA_PACKET_TYPE_INVALID, __ATOMIC_RELAXED);
        atomic_store_explicit(&fq->read_index, r + 1, memory_order_release);
    }
    return NULL;
}

FAKE_EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                          void (*callback)(hsa_status_t, hsa_queue_t *, void *),
                                          void *data, uint32_t private_segment_size,
                                          uint32_t group_segment_size, hsa_queue_t **queue)
{
    struct fake_queue *fq;
    hsa_signal_t doorbell;

    (void)private_segment_size;
    (void)group_segment_size;
    FAKE_FAIL_POINT("hsa_queue_create");
    if (fake_gpu_of(agent) < 0 || size == 0 || (size & (size - 1)) != 0 || size > 131072 ||
        type != HSA_QUEUE_TYPE_MULTI || callback == NULL)
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    fq = calloc(1, sizeof(*fq));
    if (fq == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    if (posix_memalign(&fq->q.base_address, 64, (size_t)size * 64) != 0 ||
        hsa_signal_create(0, 0, NULL, &doorbell) != HSA_STATUS_SUCCESS) {
        free(fq->q.base_address);
        free(fq);
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    for (uint32_t i = 0; i < size; i++)
        ((uint32_t *)fq->q.base_address)[i * 16] = HSA_PACKET_TYPE_INVALID;
    fq->q.size = size;
    fq->q.type = type;
    fq->q.doorbell_signal = doorbell;
    fq->gpu = fake_gpu_of(agent);
    fq->callback = callback;
    fq->data = data;
    if (pthread_create(&fq->thread, NULL, fake_queue_thread, fq) != 0) {
        hsa_signal_destroy(doorbell);
        free(fq->q.base_address);
        free(fq);
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_queues++;
    pthread_mutex_unlock(&fake_lock_mu);
    *queue = &fq->q;
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *queue)
{
    struct fake_queue *fq = (struct fake_queue *)queue;

    atomic_store(&fq->stop, true);
    pthread_mutex_lock(&fake_lock_mu);
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock_mu);
    pthread_join(fq->thread, NULL);
    hsa_signal_destroy(fq->q.doorbell_signal);
    free(fq->q.base_address);
    free(fq);
    pthread_mutex_lock(&fake_lock_mu);
    fake_stats_now.live_queues--;
    pthread_mutex_unlock(&fake_lock_mu);
    return HSA_STATUS_SUCCESS;
}

FAKE_EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue)
{
    const struct fake_queue *fq = (const struct fake_queue *)queue;

    return atomic_load_explicit(&((struct fake_queue *)fq)->read_index, memory_order_acquire);
}

FAKE_EXPORT uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t *queue, uint64_t value)
{
    struct fake_queue *fq = (struct fake_queue *)queue;

    return atomic_fetch_add_explicit(&fq->write_index, value, memory_order_relaxed);
}
