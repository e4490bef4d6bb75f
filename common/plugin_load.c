/* common/plugin_load.c - image validation, loading, target tables, kernel launch. */
#include "plugin_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_image.h"

/* ---- validation ------------------------------------------------------------------------- */

static tether_status_t image_view(const struct plugin *plugin, const struct tgt_device_image *img,
                                  struct plugin_image *image_p, struct tether_error *err)
{
    struct plugin_image image;
    tether_status_t rc;
    uintptr_t start, end;

    if (img == NULL || img->ImageStart == NULL || img->ImageEnd == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "NULL device image");
    }
    start = (uintptr_t)img->ImageStart;
    end = (uintptr_t)img->ImageEnd;
    if (end <= start) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "empty device image");
    }
    rc = image_unwrap(img->ImageStart, end - start, &image, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = image_elf_check(&image, plugin->ops->elf_machine, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    *image_p = image;
    return TETHER_OK;
}

/* Remember the arch an image was validated with (load_binary does not get it again). */
static void seen_add(struct plugin *plugin, const struct tgt_device_image *img, const char *arch)
{
    struct plugin_state *st = plugin->state;
    struct plugin_seen_image *seen;

    pthread_mutex_lock(&st->seen_lock);
    for (seen = st->seen; seen != NULL; seen = seen->next) {
        if (seen->tgt_image == img) {
            break;
        }
    }
    if (seen == NULL) {
        seen = calloc(1, sizeof(*seen));
        if (seen != NULL) {
            seen->tgt_image = img;
            seen->arch = arch ? strdup(arch) : NULL;
            seen->next = st->seen;
            st->seen = seen;
        }
    }
    pthread_mutex_unlock(&st->seen_lock);
}

const char *plugin_seen_arch(struct plugin *plugin, const struct tgt_device_image *image,
                             bool *known_p)
{
    struct plugin_state *st = plugin->state;
    const char *arch = NULL;

    *known_p = false;
    pthread_mutex_lock(&st->seen_lock);
    for (struct plugin_seen_image *s = st->seen; s != NULL; s = s->next) {
        if (s->tgt_image == image) {
            arch = s->arch;
            *known_p = true;
            break;
        }
    }
    pthread_mutex_unlock(&st->seen_lock);
    return arch;
}

bool plugin_image_valid(struct plugin *plugin, const struct tgt_device_image *img, const char *arch)
{
    struct tether_error err = {{0}};
    struct plugin_image image;

    if (plugin == NULL || plugin->num_devices == 0) {
        return false;
    }
    if (image_view(plugin, img, &image, &err) != TETHER_OK) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p not ours: %s",
                   img ? img->ImageStart : NULL, err.msg);
        return false;
    }
    if (image.arch == NULL) {
        image.arch = arch;
    }
    if (plugin->ops->image_compatible != NULL && !plugin->ops->image_compatible(plugin, &image)) {
        plugin_log(plugin, NULL, PLUGIN_LOG_INFO, "image %p (arch %s) does not run on any device",
                   img->ImageStart, image.arch ? image.arch : "unknown");
        return false;
    }
    seen_add(plugin, img, image.arch);
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p accepted (%zu bytes, arch '%s')",
               img->ImageStart, image.size, image.arch ? image.arch : "?");
    return true;
}

/* ---- loading ---------------------------------------------------------------------------- */

void plugin_loaded_release(struct plugin_device *dev, struct plugin_loaded *loaded)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_kernel *k = loaded->kernels;

    while (k != NULL) {
        struct plugin_kernel *next = k->next;

        k->magic = 0;
        ops->kernel_release(dev, k);
        k = next;
    }
    if (loaded->module != NULL) {
        ops->module_unload(dev, loaded->module);
    }
    free(loaded->entries);
    free(loaded);
}

static tether_status_t write_device_environment(struct plugin_device *dev,
                                                struct plugin_module *module,
                                                struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct tgt_device_environment env;
    tether_status_t rc;
    size_t size = 0;
    void *addr = NULL;

    rc = ops->global_lookup(dev, module, TGT_DEVICE_ENVIRONMENT_SYMBOL, &addr, &size, err);
    if (rc == TETHER_ERR_NOT_FOUND) {
        err->msg[0] = '\0';
        return TETHER_OK;
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    if (size != 0 && size != sizeof(env)) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "%s has %zu bytes, expected %zu",
                                TGT_DEVICE_ENVIRONMENT_SYMBOL, size, sizeof(env));
    }
    env.DebugKind = (uint32_t)plugin_env_int("LIBOMPTARGET_DEVICE_RTL_DEBUG", 0);
    env.NumDevices = (uint32_t)dev->plugin->num_devices;
    env.DeviceNum = (uint32_t)dev->id;
    env.DynamicMemSize = (uint32_t)plugin_env_int("LIBOMPTARGET_SHARED_MEMORY_SIZE", 0);
    rc = ops->memcpy_h2d(dev, addr, &env, sizeof(env), NULL, NULL, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG, "device environment written at %p", addr);
    return TETHER_OK;
}

/* Exec mode of a kernel from the image's <name>_exec_mode byte; SPMD when absent. */
static uint8_t exec_mode_of(const struct plugin_image *image, const char *name)
{
    struct image_symbol sym;
    char sym_name[512];
    uint8_t mode;

    if (snprintf(sym_name, sizeof(sym_name), "%s_exec_mode", name) >= (int)sizeof(sym_name)) {
        return PLUGIN_EXEC_SPMD;
    }
    if (!image_elf_symbol(image, sym_name, &sym) || sym.data == NULL || sym.data_size < 1) {
        return PLUGIN_EXEC_SPMD;
    }
    mode = *(const uint8_t *)sym.data;
    if (mode < PLUGIN_EXEC_GENERIC || mode > PLUGIN_EXEC_GENERIC_SPMD) {
        return PLUGIN_EXEC_SPMD;
    }
    return mode;
}

static tether_status_t resolve_entry(struct plugin_device *dev, const struct plugin_image *image,
                                     struct plugin_loaded *loaded,
                                     const struct tgt_offload_entry *host,
                                     struct tgt_offload_entry *out, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_kernel *kernel = NULL;
    tether_status_t rc;
    size_t size = 0;
    void *addr = NULL;

    *out = *host;
    if (host->name == NULL) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "host entry without a name");
    }
    if (host->size == 0) {
        rc = ops->kernel_lookup(dev, loaded->module, host->name, &kernel, err);
        if (rc != TETHER_OK) {
            return rc;
        }
        kernel->magic = PLUGIN_KERNEL_MAGIC;
        kernel->exec_mode = exec_mode_of(image, host->name);
        kernel->mod = loaded->module;
        kernel->name = host->name;
        kernel->next = loaded->kernels;
        loaded->kernels = kernel;
        out->addr = kernel;
        return TETHER_OK;
    }
    rc = ops->global_lookup(dev, loaded->module, host->name, &addr, &size, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (size != 0 && size != host->size) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "global %s has %zu bytes on the device, %zu on the host",
                                host->name, size, host->size);
    }
    out->addr = addr;
    return TETHER_OK;
}

tether_status_t plugin_image_load(struct plugin_device *dev, const struct tgt_device_image *img,
                                  struct tgt_target_table **table_p, struct tether_error *err)
{
    struct plugin *plugin = dev->plugin;
    struct plugin_device_state *st = dev->state;
    struct plugin_module *module = NULL;
    struct plugin_loaded *loaded;
    struct plugin_image image;
    struct image_symbol sym;
    size_t n, kernels = 0;
    tether_status_t rc;
    bool known;

    rc = image_view(plugin, img, &image, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (image.arch == NULL) {
        image.arch = plugin_seen_arch(plugin, img, &known);
    }
    if (img->EntriesEnd < img->EntriesBegin ||
        (img->EntriesBegin == NULL && img->EntriesEnd != NULL)) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "malformed host entry table");
    }
    n = (size_t)(img->EntriesEnd - img->EntriesBegin);
    loaded = calloc(1, sizeof(*loaded));
    if (loaded == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "image record");
    }
    loaded->tgt_image = img;
    loaded->entries = calloc(n ? n : 1, sizeof(*loaded->entries));
    if (loaded->entries == NULL) {
        rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "target table of %zu entries", n);
        goto release;
    }
    rc = plugin->ops->module_load(dev, &image, &module, err);
    if (rc != TETHER_OK) {
        goto release;
    }
    module->dev = dev;
    loaded->module = module;
    rc = write_device_environment(dev, module, err);
    if (rc != TETHER_OK) {
        goto release;
    }
    for (size_t i = 0; i < n; i++) {
        rc = resolve_entry(dev, &image, loaded, &img->EntriesBegin[i], &loaded->entries[i], err);
        if (rc != TETHER_OK) {
            goto release;
        }
        kernels += img->EntriesBegin[i].size == 0;
    }
    loaded->table.EntriesBegin = loaded->entries;
    loaded->table.EntriesEnd = loaded->entries + n;
    loaded->rpc = image_elf_symbol(&image, PLUGIN_RPC_CLIENT_SYMBOL, &sym);
    if (loaded->rpc) {
        rc = plugin_rpc_attach(dev, loaded, err);
        if (rc != TETHER_OK) {
            goto release;
        }
    }
    pthread_mutex_lock(&st->lock);
    loaded->next = st->loaded;
    st->loaded = loaded;
    st->num_loaded++;
    pthread_mutex_unlock(&st->lock);
    plugin_log(plugin, dev, PLUGIN_LOG_INFO,
               "loaded image %p (%zu bytes, arch '%s'): %zu kernel(s), %zu global(s)%s",
               img->ImageStart, image.size, image.arch ? image.arch : "", kernels, n - kernels,
               loaded->rpc ? ", RPC client" : "");
    *table_p = &loaded->table;
    return TETHER_OK;

release:
    plugin_loaded_release(dev, loaded);
    return rc;
}

/* ---- launch ----------------------------------------------------------------------------- */

static uint32_t min_u32(uint64_t a, uint64_t b)
{
    uint64_t m = a < b ? a : b;

    return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

void plugin_launch_geometry(const struct plugin_device_limits *limits, uint32_t kernel_max_threads,
                            uint8_t exec_mode, const struct tgt_kernel_args *kargs,
                            uint32_t *teams_p, uint32_t *threads_p)
{
    uint64_t max_threads = limits->max_threads;
    uint64_t threads, teams;

    if (kernel_max_threads != 0 && kernel_max_threads < max_threads) {
        max_threads = kernel_max_threads;
    }
    if (kargs->ThreadLimit[0] > 0) {
        threads = kargs->ThreadLimit[0];
        if (exec_mode == PLUGIN_EXEC_GENERIC) {
            threads += limits->warp_size;
        }
    } else {
        threads = limits->default_threads;
    }
    threads = min_u32(threads, max_threads);
    if (threads == 0) {
        threads = 1;
    }
    if (kargs->NumTeams[0] > 0) {
        teams = min_u32(kargs->NumTeams[0], limits->max_teams);
    } else {
        uint64_t trip_teams = UINT64_MAX;

        if (kargs->Tripcount > 0) {
            trip_teams = exec_mode == PLUGIN_EXEC_SPMD ? (kargs->Tripcount - 1) / threads + 1
                                                       : kargs->Tripcount;
        }
        teams = min_u32(min_u32(trip_teams, limits->default_teams), limits->max_teams);
    }
    if (teams == 0) {
        teams = 1;
    }
    *teams_p = (uint32_t)teams;
    *threads_p = (uint32_t)threads;
}

static const char *mode_name(uint8_t mode)
{
    switch (mode) {
    case PLUGIN_EXEC_GENERIC:
        return "Generic";
    case PLUGIN_EXEC_SPMD:
        return "SPMD";
    default:
        return "Generic-SPMD";
    }
}

#define LAUNCH_STACK_ARGS 32

tether_status_t plugin_launch_kernel(struct plugin_device *dev, void *entry, void **tgt_args,
                                     const ptrdiff_t *tgt_offsets,
                                     const struct tgt_kernel_args *kargs,
                                     struct tgt_async_info *async, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_kernel *kernel = entry;
    void *stack_args[LAUNCH_STACK_ARGS];
    struct plugin_async *pa = NULL;
    struct plugin_launch launch;
    void **args = stack_args;
    tether_status_t rc;
    uint32_t n;

    if (kernel == NULL || kernel->magic != PLUGIN_KERNEL_MAGIC || kernel->mod == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "%p is not a kernel of this plugin",
                                entry);
    }
    if (kernel->mod->dev != dev) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "kernel %s belongs to device %d",
                                kernel->name, (int)kernel->mod->dev->id);
    }
    if (kargs == NULL || (kargs->Version != 1 && kargs->Version != 2)) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "kernel %s: KernelArgs version %u (tether knows 1 and 2)",
                                kernel->name, kargs ? (unsigned)kargs->Version : 0u);
    }
    n = kargs->NumArgs;
    if (n > 0 && (tgt_args == NULL || tgt_offsets == NULL)) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "kernel %s: %u arguments but no array",
                                kernel->name, (unsigned)n);
    }
    if (n > LAUNCH_STACK_ARGS) {
        args = malloc((size_t)n * sizeof(*args));
        if (args == NULL) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "%u kernel arguments", (unsigned)n);
        }
    }
    /* Each parameter: TgtArgs[i] + TgtOffsets[i]; never the host-side Arg* arrays. */
    for (uint32_t i = 0; i < n; i++) {
        args[i] = (void *)((uintptr_t)tgt_args[i] + (uintptr_t)tgt_offsets[i]);
    }
    memset(&launch, 0, sizeof(launch));
    plugin_launch_geometry(&dev->limits, kernel->max_threads, kernel->exec_mode, kargs,
                           &launch.num_teams, &launch.num_threads);
    launch.dyn_shared_mem = kargs->Version >= 2 ? kargs->DynCGroupMem : 0;
    if (dev->plugin->state->env_shared_mem > launch.dyn_shared_mem) {
        launch.dyn_shared_mem = dev->plugin->state->env_shared_mem;
    }
    launch.num_args = n;
    launch.args = args;
    launch.tripcount = kargs->Tripcount;
    if (async != NULL && plugin_has_queues(dev->plugin)) {
        rc = plugin_async_acquire(dev, async, &pa, err);
        if (rc != TETHER_OK) {
            goto free_args;
        }
    }
    if (plugin_info_enabled(dev->plugin, PLUGIN_INFO_PLUGIN)) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                   "launching kernel %s with %u teams and %u threads in %s mode, %u argument(s)%s",
                   kernel->name, launch.num_teams, launch.num_threads, mode_name(kernel->exec_mode),
                   (unsigned)n, pa ? ", queued" : "");
    }
    rc = plugin_rpc_launch_begin(dev, err);
    if (rc != TETHER_OK) {
        goto free_args;
    }
    rc = ops->launch(dev, kernel, &launch, pa ? pa->queue : NULL, err);
    if (rc == TETHER_OK && pa != NULL) {
        pa->launches++;
    } else {
        plugin_rpc_launch_end(dev, 1);
    }
free_args:
    if (args != stack_args) {
        free(args);
    }
    return rc;
}
