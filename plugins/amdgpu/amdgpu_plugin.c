/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_plugin.c - the AMDGPU backend's plugin and devices, and its ops table (see
 * amdgpu_backend.h).
 *
 * Start-up (plugin_create): dlopen the runtime, hsa_init, list agents.  What is not an error:
 * no runtime library, hsa_init failing on a machine without the amdgpu kernel driver (/dev/kfd),
 * or a runtime reporting no GPU agent: each gives zero devices and one info message saying which
 * (common prints it with LIBOMPTARGET_INFO=16 or TETHER_DEBUG=1, and as a warning when an AMDGPU
 * image then finds no device while offloading is mandatory).  A runtime lacking symbols, hsa_init
 * failing although /dev/kfd exists, or a CPU agent without the memory pools the plugin needs is a
 * warning-worthy error with the runtime's message; common then reports zero devices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amdgpu_backend.h"

#define AMDGPU_KFD_PATH "/dev/kfd"

/* Messages before common owns the plugin (plugin_create) carry the backend's name through this
 * stand-in; its state is NULL, so LIBOMPTARGET_INFO / TETHER_DEBUG decide what prints. */
static const struct plugin amdgpu_log_plugin = {.ops = &plugin_backend_ops};

tether_status_t amdgpu_plugin_check(const struct amdgpu_plugin *ap, hsa_status_t status,
                                    const char *call, struct tether_error *err)
{
    tether_status_t ts = amdgpu_hsa_check(&ap->hsa, status, call, err);

    if (ts != TETHER_OK)
        plugin_log(ap->base.ops != NULL ? &ap->base : &amdgpu_log_plugin, NULL, PLUGIN_LOG_DEBUG,
                   "%s", err != NULL ? err->msg : call);
    return ts;
}

tether_status_t amdgpu_check(const struct amdgpu_device *dev, hsa_status_t status, const char *call,
                             struct tether_error *err)
{
    tether_status_t ts = amdgpu_hsa_check(&dev->ap->hsa, status, call, err);

    if (ts != TETHER_OK)
        plugin_log(&dev->ap->base, &dev->base, PLUGIN_LOG_DEBUG, "%s",
                   err != NULL ? err->msg : call);
    return ts;
}

/* ---- agents and pools ------------------------------------------------------------------- */

struct amdgpu_agent_scan {
    struct amdgpu_plugin *ap;
    bool have_cpu;
    hsa_agent_t cpu;
    int32_t num_gpus, cap_gpus;
    hsa_agent_t *gpus;
    bool out_of_memory;
};

static hsa_status_t amdgpu_agent_cb(hsa_agent_t agent, void *data)
{
    struct amdgpu_agent_scan *scan = data;
    hsa_device_type_t type;

    if (scan->ap->hsa.hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS; /* an agent we cannot query is not ours to use */
    if (type == HSA_DEVICE_TYPE_CPU && !scan->have_cpu) {
        scan->cpu = agent;
        scan->have_cpu = true;
    } else if (type == HSA_DEVICE_TYPE_GPU) {
        if (scan->num_gpus == scan->cap_gpus) {
            int32_t cap = scan->cap_gpus ? 2 * scan->cap_gpus : 8;
            hsa_agent_t *g = realloc(scan->gpus, (size_t)cap * sizeof(*g));

            if (g == NULL) {
                scan->out_of_memory = true;
                return HSA_STATUS_INFO_BREAK;
            }
            scan->gpus = g;
            scan->cap_gpus = cap;
        }
        scan->gpus[scan->num_gpus++] = agent;
    }
    return HSA_STATUS_SUCCESS;
}

struct amdgpu_pool_scan {
    const struct amdgpu_hsa *hsa;
    uint32_t want_flags;  /* every one of these global flags */
    uint32_t avoid_flags; /* none of these */
    bool found;
    hsa_amd_memory_pool_t pool;
    size_t size;
};

static hsa_status_t amdgpu_pool_cb(hsa_amd_memory_pool_t pool, void *data)
{
    struct amdgpu_pool_scan *scan = data;
    hsa_amd_segment_t segment;
    uint32_t flags = 0;
    bool alloc_ok = false;
    size_t size = 0;

    if (scan->hsa->hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment) !=
            HSA_STATUS_SUCCESS ||
        segment != HSA_AMD_SEGMENT_GLOBAL)
        return HSA_STATUS_SUCCESS;
    if (scan->hsa->hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
                                                &flags) != HSA_STATUS_SUCCESS ||
        scan->hsa->hsa_amd_memory_pool_get_info(
            pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc_ok) != HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS;
    if (!alloc_ok || (flags & scan->want_flags) != scan->want_flags ||
        (flags & scan->avoid_flags) != 0)
        return HSA_STATUS_SUCCESS;
    scan->hsa->hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
    scan->pool = pool;
    scan->size = size;
    scan->found = true;
    return HSA_STATUS_INFO_BREAK;
}

/* The first global pool of agent with all of want and none of avoid; false when none. */
static bool amdgpu_find_pool(const struct amdgpu_hsa *hsa, hsa_agent_t agent, uint32_t want,
                             uint32_t avoid, hsa_amd_memory_pool_t *pool_p, size_t *size_p)
{
    struct amdgpu_pool_scan scan = {.hsa = hsa, .want_flags = want, .avoid_flags = avoid};

    hsa->hsa_amd_agent_iterate_memory_pools(agent, amdgpu_pool_cb, &scan);
    if (!scan.found)
        return false;
    *pool_p = scan.pool;
    if (size_p != NULL)
        *size_p = scan.size;
    return true;
}

static hsa_status_t amdgpu_isa_cb(hsa_isa_t isa, void *data)
{
    struct amdgpu_device *dev = data;
    uint32_t len = 0;

    if (dev->ap->hsa.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len) !=
            HSA_STATUS_SUCCESS ||
        len == 0 || len >= sizeof(dev->isa))
        return HSA_STATUS_SUCCESS;
    if (dev->ap->hsa.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, dev->isa) != HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS;
    dev->isa[len] = '\0';
    return HSA_STATUS_INFO_BREAK;
}

/* ---- plugin ------------------------------------------------------------------------------ */

static void amdgpu_plugin_free(struct amdgpu_plugin *ap)
{
    while (ap->locks != NULL) { /* holds nobody gave back: the runtime forgets them at shutdown */
        struct amdgpu_lock *l = ap->locks;

        ap->locks = l->next;
        free(l);
    }
    pthread_mutex_destroy(&ap->lock_mu);
    if (ap->hsa_up)
        ap->hsa.hsa_shut_down();
    /* The runtime library stays loaded: its threads and atexit handlers may outlive us. */
    free(ap->gpus);
    free(ap);
}

static tether_status_t amdgpu_plugin_create(struct plugin **plugin_p, struct tether_error *err)
{
    struct amdgpu_plugin *ap = calloc(1, sizeof(*ap));
    struct amdgpu_agent_scan scan = {0};
    hsa_status_t hs;
    tether_status_t st;

    if (ap == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&ap->lock_mu, NULL);
    st = amdgpu_hsa_open(NULL, &ap->hsa, err);
    if (st == TETHER_ERR_NO_DRIVER) {
        char why[TETHER_ERROR_MSG_MAX];

        snprintf(why, sizeof(why), "%s", err->msg);
        plugin_error_set(err, TETHER_OK, "no AMD GPU (%s); the AMDGPU plugin has 0 devices", why);
        goto no_devices;
    }
    if (st != TETHER_OK)
        goto free_plugin;

    hs = ap->hsa.hsa_init();
    if (hs != HSA_STATUS_SUCCESS) {
        st = amdgpu_plugin_check(ap, hs, "hsa_init", err);
        if (access(AMDGPU_KFD_PATH, F_OK) != 0) {
            /* The runtime is installed but the machine has no amdgpu kernel driver: hsa_init's
             * status (often HSA_STATUS_ERROR_OUT_OF_RESOURCES) says nothing useful then; it is
             * in the debug log. */
            plugin_error_set(err, TETHER_OK,
                             "no AMD GPU: %s is absent (no amdgpu kernel driver); the AMDGPU "
                             "plugin has 0 devices",
                             AMDGPU_KFD_PATH);
            goto no_devices;
        }
        goto free_plugin;
    }
    ap->hsa_up = true;

    scan.ap = ap;
    hs = ap->hsa.hsa_iterate_agents(amdgpu_agent_cb, &scan);
    if (scan.out_of_memory) {
        st = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory listing HSA agents");
        goto free_agents;
    }
    st = amdgpu_plugin_check(ap, hs, "hsa_iterate_agents", err);
    if (st != TETHER_OK)
        goto free_agents;
    if (scan.num_gpus == 0) {
        plugin_error_set(err, TETHER_OK,
                         "no AMD GPU: the HSA runtime (%s) reports no GPU agent; the AMDGPU plugin "
                         "has 0 devices",
                         amdgpu_hsa_library_name());
        free(scan.gpus);
        goto no_devices;
    }
    if (!scan.have_cpu) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER, "the HSA runtime reports no CPU agent");
        goto free_agents;
    }
    ap->cpu_agent = scan.cpu;
    /* host memory: a fine-grained pool, preferably not the kernarg one */
    if (!amdgpu_find_pool(&ap->hsa, ap->cpu_agent, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                          HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT, &ap->host_pool, NULL) &&
        !amdgpu_find_pool(&ap->hsa, ap->cpu_agent, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED, 0,
                          &ap->host_pool, NULL)) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER,
                              "the HSA CPU agent has no fine-grained memory pool");
        goto free_agents;
    }
    if (!amdgpu_find_pool(&ap->hsa, ap->cpu_agent, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT, 0,
                          &ap->kernarg_pool, NULL)) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER, "the HSA CPU agent has no kernarg pool");
        goto free_agents;
    }
    ap->gpus = scan.gpus;
    ap->num_gpus = scan.num_gpus;
    ap->base.num_devices = scan.num_gpus;
    *plugin_p = &ap->base;
    return TETHER_OK;

free_agents:
    free(scan.gpus);
free_plugin:
    amdgpu_plugin_free(ap);
    return st;

no_devices:
    /* Not an error: a plugin with zero devices, which libomptarget then skips. */
    if (ap->hsa_up) {
        ap->hsa.hsa_shut_down();
        ap->hsa_up = false;
    }
    ap->base.num_devices = 0;
    *plugin_p = &ap->base;
    return TETHER_OK;
}

static void amdgpu_plugin_destroy(struct plugin *plugin)
{
    amdgpu_plugin_free(amdgpu_plugin_of(plugin));
}

/* The target ID of an image: from its ELF header, else from the OffloadBinary arch. */
static bool amdgpu_image_target(const struct plugin_image *image, struct amdgpu_target_id *id_p)
{
    struct image_elf_header header;

    if (image_elf_header(image, &header, NULL) == TETHER_OK && header.machine == EM_AMDGPU &&
        (header.type == ET_DYN || header.type == ET_REL) &&
        amdgpu_target_id_from_elf(header.abi_version, header.flags, id_p) == TETHER_OK)
        return true;
    return image->arch != NULL && amdgpu_target_id_parse(image->arch, id_p) == TETHER_OK;
}

/* The target ID of GPU agent i (its first ISA). */
static bool amdgpu_agent_target(struct amdgpu_plugin *ap, int32_t i, struct amdgpu_target_id *id_p,
                                char *isa, size_t isa_size)
{
    struct amdgpu_device probe;

    memset(&probe, 0, sizeof(probe));
    probe.ap = ap;
    ap->hsa.hsa_agent_iterate_isas(ap->gpus[i], amdgpu_isa_cb, &probe);
    snprintf(isa, isa_size, "%s", probe.isa);
    return probe.isa[0] != '\0' && amdgpu_target_id_parse(probe.isa, id_p) == TETHER_OK;
}

/* Like LLVM 16: an image is taken only when it runs on every device of the plugin, because
 * libomptarget hands an accepted image to all of them. */
static bool amdgpu_image_compatible(struct plugin *plugin, const struct plugin_image *image)
{
    struct amdgpu_plugin *ap = amdgpu_plugin_of(plugin);
    struct amdgpu_target_id img;
    char text[64];

    if (!amdgpu_image_target(image, &img)) {
        plugin_image_refused(plugin,
                             "the program's image (arch \"%s\") names no AMDGPU processor this "
                             "plugin knows",
                             image->arch != NULL ? image->arch : "");
        return false;
    }
    amdgpu_target_id_format(&img, text, sizeof(text));
    for (int32_t i = 0; i < ap->num_gpus; i++) {
        struct amdgpu_target_id agent;
        char isa[80];

        if (!amdgpu_agent_target(ap, i, &agent, isa, sizeof(isa)) ||
            !amdgpu_target_id_compatible(&img, &agent)) {
            plugin_image_refused(plugin,
                                 "the program's image for %s does not run on device %d (%s); "
                                 "build it with --offload-arch for that processor",
                                 text, (int)i, isa[0] != '\0' ? isa : "unknown ISA");
            return false;
        }
    }
    return true;
}

/* ---- devices ----------------------------------------------------------------------------- */

/* LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE: packets per HSA queue, a power of two (HSA requires it);
 * the agent's limits apply on top, as in LLVM's plugin. */
static uint32_t amdgpu_env_queue_size(void)
{
    static const char name[] = "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE";
    int64_t v = plugin_env_int(name, AMDGPU_HW_QUEUE_PACKETS, 1, AMDGPU_MAX_QUEUE_PACKETS);

    if ((v & (v - 1)) != 0) {
        plugin_env_warn(name, "%s=%lld is not a power of two; using %u", name, (long long)v,
                        AMDGPU_HW_QUEUE_PACKETS);
        v = AMDGPU_HW_QUEUE_PACKETS;
    }
    return (uint32_t)v;
}

static tether_status_t amdgpu_device_create(struct plugin *plugin, int32_t id,
                                            struct plugin_device **dev_p, struct tether_error *err)
{
    struct amdgpu_plugin *ap = amdgpu_plugin_of(plugin);
    struct amdgpu_device *dev;
    const struct amdgpu_hsa *hsa = &ap->hsa;
    hsa_dim3_t grid_dim = {0, 0, 0};
    int64_t queues;
    uint32_t packets;
    tether_status_t st;

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    dev->ap = ap;
    dev->agent = ap->gpus[id];

    st = amdgpu_check(
        dev,
        hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, &dev->wavefront_size),
        "hsa_agent_get_info(WAVEFRONT_SIZE)", err);
    if (st == TETHER_OK)
        st = amdgpu_check(dev,
                          hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE,
                                                  &dev->max_group_size),
                          "hsa_agent_get_info(WORKGROUP_MAX_SIZE)", err);
    if (st == TETHER_OK)
        st = amdgpu_check(
            dev,
            hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &dev->queue_packets),
            "hsa_agent_get_info(QUEUE_MAX_SIZE)", err);
    if (st != TETHER_OK)
        goto free_device;
    /* informational: absent on some runtimes */
    hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_GRID_MAX_DIM, &grid_dim);
    hsa->hsa_agent_get_info(dev->agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
                            &dev->compute_units);
    hsa->hsa_agent_get_info(dev->agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_PRODUCT_NAME,
                            dev->product);
    dev->product[sizeof(dev->product) - 1] = '\0';
    dev->grid_max_x = grid_dim.x;
    if (hsa->hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &dev->wait_hint) !=
            HSA_STATUS_SUCCESS ||
        dev->wait_hint == 0)
        dev->wait_hint = 1000000; /* 1 MHz: the spec's lower bound */
    dev->wait_hint /= 10;         /* wake up every ~100 ms to look for queue errors */
    plugin_wait_init(&dev->wait);

    hsa->hsa_agent_iterate_isas(dev->agent, amdgpu_isa_cb, dev);
    if (dev->isa[0] == '\0' || amdgpu_target_id_parse(dev->isa, &dev->target) != TETHER_OK) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER, "GPU agent %d reports no usable ISA (\"%s\")",
                              (int)id, dev->isa);
        goto free_device;
    }
    if (dev->wavefront_size != 32 && dev->wavefront_size != 64) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER, "GPU agent %d: wavefront size %u", (int)id,
                              dev->wavefront_size);
        goto free_device;
    }
    if (!amdgpu_find_pool(hsa, dev->agent, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, 0,
                          &dev->device_pool, &dev->device_pool_size)) {
        st = plugin_error_set(err, TETHER_ERR_DRIVER,
                              "GPU agent %d (%s) has no coarse-grained memory pool", (int)id,
                              dev->isa);
        goto free_device;
    }
    packets = amdgpu_env_queue_size();
    if (dev->queue_packets > packets) {
        uint32_t min_packets = 0;

        dev->queue_packets = packets;
        if (hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_QUEUE_MIN_SIZE, &min_packets) ==
                HSA_STATUS_SUCCESS &&
            min_packets > dev->queue_packets)
            dev->queue_packets = min_packets;
    }
    /* tether's name, or LLVM's for the same thing */
    queues = plugin_env_int(
        plugin_env_pick("TETHER_AMDGPU_QUEUES", "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES"),
        AMDGPU_DEFAULT_HW_QUEUES, 1, AMDGPU_MAX_HW_QUEUES);
    dev->num_hw_queues = (uint32_t)queues;
    pthread_mutex_init(&dev->queue_lock, NULL);
    pthread_mutex_init(&dev->signal_lock, NULL);
    pthread_mutex_init(&dev->kernarg_lock, NULL);
    *dev_p = &dev->base;
    return TETHER_OK;

free_device:
    free(dev);
    return st;
}

static void amdgpu_device_destroy(struct plugin_device *pdev)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);

    plugin_wait_report(pdev, &dev->wait);
    amdgpu_device_streams_fini(dev);
    amdgpu_kernarg_fini(dev);
    pthread_mutex_destroy(&dev->queue_lock);
    pthread_mutex_destroy(&dev->signal_lock);
    pthread_mutex_destroy(&dev->kernarg_lock);
    free(dev);
}

static tether_status_t amdgpu_device_limits(struct plugin_device *pdev,
                                            struct plugin_device_limits *limits_p,
                                            struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    struct plugin_device_limits l = {0};
    int64_t per_cu = plugin_env_int("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", AMDGPU_TEAMS_PER_CU, 1,
                                    AMDGPU_MAX_TEAMS_PER_CU);
    uint64_t max_teams;
    uint32_t domain = 0, bdf = 0;

    (void)err;
    l.warp_size = dev->wavefront_size;
    l.max_threads = dev->max_group_size != 0 ? dev->max_group_size : 1024;
    /* an AQL grid is at most 2^32-1 work-items, and the agent may say less */
    max_teams = UINT32_MAX / l.max_threads;
    if (dev->grid_max_x != 0 && dev->grid_max_x / l.max_threads < max_teams)
        max_teams = dev->grid_max_x / l.max_threads;
    l.max_teams = (uint32_t)(max_teams != 0 ? max_teams : 1);
    l.default_threads =
        AMDGPU_DEFAULT_THREADS < l.max_threads ? AMDGPU_DEFAULT_THREADS : l.max_threads;
    l.default_teams = dev->compute_units != 0 ? (uint32_t)(dev->compute_units * per_cu) : 440;
    if (l.default_teams > l.max_teams)
        l.default_teams = l.max_teams;
    /* Where the GPU sits, for the RPC server thread's placement and print_device_info; left ""
     * where the runtime cannot tell.  BDFID is bus << 8 | device << 3 | function. */
    if (hsa->hsa_agent_get_info(dev->agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DOMAIN, &domain) ==
            HSA_STATUS_SUCCESS &&
        hsa->hsa_agent_get_info(dev->agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_BDFID, &bdf) ==
            HSA_STATUS_SUCCESS)
        snprintf(l.pci_bus_id, sizeof(l.pci_bus_id), "%04x:%02x:%02x.%x", (unsigned)domain,
                 (unsigned)(bdf >> 8) & 0xffu, (unsigned)(bdf >> 3) & 0x1fu, (unsigned)bdf & 0x7u);
    *limits_p = l;
    return TETHER_OK;
}

void amdgpu_device_name(struct plugin_device *pdev, char *buf, size_t len)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    char target[64];

    amdgpu_target_id_format(&dev->target, target, sizeof(target));
    if (dev->product[0] != '\0')
        snprintf(buf, len, "%s (%s)", dev->product, target);
    else
        snprintf(buf, len, "AMD GPU (%s)", target);
}

static void amdgpu_device_info(struct plugin_device *pdev, plugin_info_emit_t emit, void *ctx)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);

    emit(ctx, "Product", "%s", dev->product[0] != '\0' ? dev->product : "(not reported)");
    emit(ctx, "ISA", "%s", dev->isa);
    emit(ctx, "Compute units", "%u", dev->compute_units);
    emit(ctx, "Wavefront size", "%u", dev->wavefront_size);
    emit(ctx, "Max work-group size", "%u", dev->max_group_size);
    emit(ctx, "Device memory (coarse-grained pool)", "%zu MiB", dev->device_pool_size >> 20);
    emit(ctx, "HSA queues", "%u of %u packets", dev->num_hw_queues, dev->queue_packets);
    emit(ctx, "HSA runtime", "%s", amdgpu_hsa_library_name());
}

/* ---- the ops table ----------------------------------------------------------------------- */

/* LLVM bitcode images (-fopenmp-target-jit): LLVM would compile them to a relocatable object,
 * but only a linker (ld.lld) makes the HSA code object HSA loads of that, and tether ships none:
 * such images are refused with this reason (docs/amdgpu.md). */
static const struct plugin_jit_ops amdgpu_jit_ops = {
    .triple = "amdgcn",
    .refusal = "needs a linker (ld.lld) to make an HSA code object of LLVM's output, which tether "
               "does not ship",
};

const struct plugin_ops plugin_backend_ops = {
    .version = PLUGIN_OPS_VERSION,
    .name = "amdgpu",
    .elf_machine = EM_AMDGPU,
    .plugin_create = amdgpu_plugin_create,
    .plugin_destroy = amdgpu_plugin_destroy,
    .image_compatible = amdgpu_image_compatible,
    .device_create = amdgpu_device_create,
    .device_destroy = amdgpu_device_destroy,
    .device_limits = amdgpu_device_limits,
    .device_name = amdgpu_device_name,
    .device_info = amdgpu_device_info,
    .thread_attach = NULL, /* HSA has no per-thread context */
    .alloc = amdgpu_alloc,
    .free = amdgpu_free,
    .memcpy_h2d = amdgpu_memcpy_h2d,
    .memcpy_d2h = amdgpu_memcpy_d2h,
    .memcpy_d2d = amdgpu_memcpy_d2d,
    .host_register = amdgpu_host_register,
    .host_unregister = amdgpu_host_unregister,
    .host_pageable = amdgpu_host_pageable,
    .queue_create = amdgpu_queue_create,
    .queue_destroy = amdgpu_queue_destroy,
    .queue_sync = amdgpu_queue_sync,
    .queue_query = amdgpu_queue_query,
    .event_create = amdgpu_event_create,
    .event_destroy = amdgpu_event_destroy,
    .event_record = amdgpu_event_record,
    .event_wait = amdgpu_event_wait,
    .event_sync = amdgpu_event_sync,
    .module_load = amdgpu_module_load,
    .module_unload = amdgpu_module_unload,
    .global_lookup = amdgpu_global_lookup,
    .kernel_lookup = amdgpu_kernel_lookup,
    .kernel_release = amdgpu_kernel_release,
    .launch = amdgpu_launch,
    .jit = &amdgpu_jit_ops,
    .interop_info = amdgpu_interop_info,
    .shared_alloc = NULL, /* alloc(PLUGIN_ALLOC_HOST) is fine-grained and GPU-visible */
    .shared_free = NULL,
};
