/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_query.c - global vs local device ids, the probe, the public device query.
 *
 * libomptarget 16 passes the GLOBAL OpenMP device number to data_lock/data_unlock but the
 * plugin-local one everywhere else, and tells a plugin nothing about its offset.  tether learns
 * it: when the plugin's devices are all the devices libomptarget has, the offset is 0; otherwise
 * common sends a probe - a host-to-device omp_target_memcpy of a struct plugin_probe to the
 * process-wide probe address - to the global device.  libomptarget routes it to the owning
 * plugin's data_submit with the LOCAL id; a tether plugin recognises the address, fills the probe
 * and records offset = global - local.  The probe address is the exported object
 * tether_rtl_probe_target of the first tether plugin loaded (found with dlsym), so every tether
 * plugin in the process agrees on it.  Details: docs/plugin-interface.md.
 */
#include "plugin_state.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void plugin_probe_bind(struct plugin *plugin, void *target)
{
    plugin->state->probe_target = target;
}

bool plugin_probe_is(const struct plugin *plugin, const void *tgt)
{
    return plugin != NULL && plugin->state->probe_target != NULL &&
           tgt == plugin->state->probe_target;
}

tether_status_t plugin_probe_answer(struct plugin *plugin, int32_t id, void *hst, int64_t size,
                                    struct tether_error *err)
{
    struct plugin_probe probe;
    struct tether_error derr = {{0}};

    if (hst == NULL || size != (int64_t)sizeof(probe)) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "malformed probe (%lld bytes)",
                                (long long)size);
    }
    memcpy(&probe, hst, sizeof(probe));
    if (probe.magic != PLUGIN_PROBE_MAGIC || probe.version != PLUGIN_PROBE_VERSION) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "probe magic or version mismatch");
    }
    if (probe.omp_device >= id) {
        int expected = -1;

        atomic_compare_exchange_strong(&plugin->state->global_offset, &expected,
                                       (int)(probe.omp_device - id));
    }
    probe.answered = 1;
    probe.status = plugin_device_describe(plugin, id, &probe.info, &derr);
    probe.info.omp_device = probe.omp_device;
    memcpy(hst, &probe, sizeof(probe));
    return TETHER_OK;
}

/* libomptarget entry points, looked up at run time so common does not link libomptarget. */
struct omp_api {
    int (*num_devices)(void);
    int (*initial_device)(void);
    int (*memcpy)(void *, const void *, size_t, size_t, size_t, int, int);
};

static bool omp_api_get(struct omp_api *api)
{
    void *nd = dlsym(RTLD_DEFAULT, "omp_get_num_devices");
    void *id = dlsym(RTLD_DEFAULT, "omp_get_initial_device");
    void *mc = dlsym(RTLD_DEFAULT, "omp_target_memcpy");

    if (nd == NULL || id == NULL || mc == NULL) {
        return false;
    }
    memcpy(&api->num_devices, &nd, sizeof(nd));
    memcpy(&api->initial_device, &id, sizeof(id));
    memcpy(&api->memcpy, &mc, sizeof(mc));
    return true;
}

tether_status_t plugin_probe_send(struct plugin *plugin, int32_t omp_device,
                                  struct plugin_probe *probe_p, struct tether_error *err)
{
    struct plugin_probe probe;
    struct omp_api api;
    int n;

    if (plugin->state->probe_target == NULL || !omp_api_get(&api)) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "no libomptarget in this process to route a probe");
    }
    n = api.num_devices();
    if (omp_device < 0 || omp_device >= n) {
        return plugin_error_set(err, TETHER_ERR_NO_DEVICE,
                                "OpenMP device %d does not exist (%d device%s)", (int)omp_device, n,
                                n == 1 ? "" : "s");
    }
    memset(&probe, 0, sizeof(probe));
    probe.magic = PLUGIN_PROBE_MAGIC;
    probe.version = PLUGIN_PROBE_VERSION;
    probe.omp_device = omp_device;
    if (api.memcpy(plugin->state->probe_target, &probe, sizeof(probe), 0, 0, omp_device,
                   api.initial_device()) != 0 ||
        probe.answered != 1) {
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND,
                                "OpenMP device %d is not served by a tether plugin",
                                (int)omp_device);
    }
    *probe_p = probe;
    return TETHER_OK;
}

tether_status_t plugin_global_to_local(struct plugin *plugin, int32_t global, int32_t *local_p,
                                       struct tether_error *err)
{
    struct plugin_state *st = plugin->state;
    int offset = atomic_load(&st->global_offset);
    struct plugin_probe probe;
    struct omp_api api;
    tether_status_t rc;
    int32_t local;

    if (offset < 0) {
        if (!omp_api_get(&api) || api.num_devices() == plugin->num_devices) {
            /* Our devices are all the devices libomptarget has: global ids are local ids. */
            offset = 0;
            atomic_store(&st->global_offset, 0);
        } else {
            rc = plugin_probe_send(plugin, global, &probe, err);
            if (rc != TETHER_OK) {
                return rc;
            }
            offset = atomic_load(&st->global_offset);
            if (offset < 0 || strcmp(probe.info.plugin, plugin->ops->name) != 0) {
                return plugin_error_set(err, TETHER_ERR_NO_DEVICE,
                                        "OpenMP device %d belongs to plugin %s, not this one",
                                        (int)global, probe.info.plugin);
            }
        }
    }
    local = global - offset;
    if (local < 0 || local >= plugin->num_devices) {
        return plugin_error_set(err, TETHER_ERR_NO_DEVICE,
                                "OpenMP device %d is not one of this plugin's devices %d..%d",
                                (int)global, offset, offset + (int)plugin->num_devices - 1);
    }
    *local_p = local;
    return TETHER_OK;
}
