/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* common/plugin_load.c - image validation, loading, target tables, the device environment. */
#include "plugin_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_image.h"
#include "plugin_jit.h"

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
    if (plugin_jit_is_bitcode(image.start, image.size)) {
        *image_p = image; /* LLVM bitcode: plugin_jit.h decides */
        return TETHER_OK;
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
        uint16_t machine = 0;

        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p not ours: %s",
                   img ? img->ImageStart : NULL, err.msg);
        if (img != NULL && img->ImageStart != NULL && img->ImageEnd > img->ImageStart &&
            image_unwrap(img->ImageStart,
                         (size_t)((const char *)img->ImageEnd - (const char *)img->ImageStart),
                         &image, NULL) == TETHER_OK) {
            machine = image_elf_machine(&image);
        }
        if (machine == plugin->ops->elf_machine) {
            /* An image for this plugin that it cannot read. */
            plugin_image_refused(plugin,
                                 "the program's %s image%s%s%s is not one this plugin "
                                 "can load: %s",
                                 plugin->ops->name, arch != NULL && arch[0] ? " (arch " : "",
                                 arch != NULL ? arch : "", arch != NULL && arch[0] ? ")" : "",
                                 err.msg);
        } else if (machine != 0) {
            plugin_image_unserved(plugin, machine, arch);
        }
        return false;
    }
    if (image.arch == NULL) {
        image.arch = arch;
    }
    if (plugin_jit_is_bitcode(image.start, image.size) && !plugin_jit_accept(plugin, &image)) {
        return false;
    }
    if (plugin->ops->image_compatible != NULL && !plugin->ops->image_compatible(plugin, &image)) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p (arch %s) does not run on any device",
                   img->ImageStart, image.arch ? image.arch : "unknown");
        return false;
    }
    seen_add(plugin, img, image.arch);
    plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p accepted (%zu bytes, arch '%s')",
               img->ImageStart, image.size, image.arch ? image.arch : "?");
    return true;
}

/* ---- loading ---------------------------------------------------------------------------- */

/* An environment variable set to what LLVM's plugins read as true (true, yes, on, 1). */
/* LLVM 16's plugins record kernels (LIBOMPTARGET_RECORD: image, arguments and device memory into
 * files) and replay them (LIBOMPTARGET_REPLAY); tether does neither.  Said once per plugin, at
 * the first image load, when either is asked for. */
static void record_replay_warn(struct plugin *plugin)
{
    static atomic_bool said;
    bool record = plugin_env_bool("LIBOMPTARGET_RECORD", false);
    bool replay = plugin_env_bool("LIBOMPTARGET_REPLAY", false);

    if ((!record && !replay) || atomic_exchange(&said, true)) {
        return;
    }
    if (record) {
        plugin_log(plugin, NULL, PLUGIN_LOG_WARN,
                   "LIBOMPTARGET_RECORD is set, but tether's plugins do not record kernels: no "
                   "record files are written and the program runs as usual (LLVM 16's own "
                   "plugins record)");
    } else {
        plugin_log(plugin, NULL, PLUGIN_LOG_WARN,
                   "LIBOMPTARGET_REPLAY is set, but tether's plugins do not replay recorded "
                   "kernels: the program runs as usual (LLVM 16's own plugins replay)");
    }
}

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
    env.DebugKind = (uint32_t)plugin_env_int("LIBOMPTARGET_DEVICE_RTL_DEBUG", 0, 0, UINT32_MAX);
    env.NumDevices = (uint32_t)dev->plugin->num_devices;
    env.DeviceNum = (uint32_t)dev->id;
    env.DynamicMemSize = dev->plugin->state->env_shared_mem;
    rc = plugin_write_device(dev, addr, &env, sizeof(env), err);
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
    /* Under unified shared memory libomptarget maps no global: the device copy takes the host
     * bytes once, at load.  That is what makes clang's <name>_decl_tgt_ref_ptr globals (every
     * declare target variable under USM, `link` ones always) hold the host variable's address. */
    if (dev->plugin->state->requires_flags & TGT_REQ_UNIFIED_SHARED_MEMORY) {
        if (host->addr == NULL) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "global %s has no host address",
                                    host->name);
        }
        rc = plugin_write_device(dev, addr, host->addr, host->size, err);
        if (rc != TETHER_OK) {
            return rc;
        }
        plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG,
                   "unified shared memory: global %s (%zu bytes) at %p takes the host's bytes",
                   host->name, (size_t)host->size, addr);
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

    record_replay_warn(plugin);
    rc = image_view(plugin, img, &image, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    if (image.arch == NULL) {
        image.arch = plugin_seen_arch(plugin, img, &known);
    }
    if (plugin_jit_is_bitcode(image.start, image.size)) {
        rc = plugin_jit_load(dev, &image, err); /* the image becomes the backend's ELF */
        if (rc != TETHER_OK) {
            return rc;
        }
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
        rc = plugin_rpc_attach(dev, loaded, &image, err);
        if (rc != TETHER_OK) {
            goto release;
        }
    }
    plugin_rpc_driver_services(dev, &image, loaded->rpc);
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
