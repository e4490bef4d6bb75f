/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_log.c - what the plugin says: log and LIBOMPTARGET_INFO lines, error messages and
 * the report of a failed call, the target region a kernel stands for, and why an image finds no
 * device (see plugin.h, "services common offers backends", and plugin_core.h).
 */
#include "plugin_state.h"

#include "plugin_image.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- log lines ---------------------------------------------------------------------------- */

static const char *plugin_name(const struct plugin *plugin)
{
    if (plugin == NULL || plugin->ops == NULL || plugin->ops->name == NULL) {
        return "?";
    }
    return plugin->ops->name;
}

static bool log_enabled(const struct plugin *plugin, enum plugin_log_level level, uint32_t bits)
{
    if (level <= PLUGIN_LOG_WARN) {
        return true;
    }
    if (plugin == NULL || plugin->state == NULL) {
        /* Before plugin_create attached the state (backend logging while it starts). */
        return plugin_env_debug() || (level == PLUGIN_LOG_INFO && (plugin_env_info() & bits) != 0);
    }
    if (plugin->state->debug) {
        return true;
    }
    return level == PLUGIN_LOG_INFO && plugin_info_enabled(plugin, bits);
}

static void log_line(const struct plugin *plugin, const struct plugin_device *dev,
                     enum plugin_log_level level, const char *fmt, va_list ap)
{
    static const char *const prefix[] = {"error: ", "warning: ", "", "debug: "};
    char line[1024];
    int used;

    if (dev != NULL) {
        used = snprintf(line, sizeof(line), "tether (%s): device %d: %s", plugin_name(plugin),
                        (int)dev->id, prefix[level]);
    } else {
        used = snprintf(line, sizeof(line), "tether (%s): %s", plugin_name(plugin), prefix[level]);
    }
    if (used < 0 || (size_t)used >= sizeof(line)) {
        used = 0;
    }
    vsnprintf(line + used, sizeof(line) - (size_t)used, fmt, ap);
    /* One write per message so lines from several threads do not interleave. */
    fprintf(stderr, "%s\n", line);
}

void plugin_log(const struct plugin *plugin, const struct plugin_device *dev,
                enum plugin_log_level level, const char *fmt, ...)
{
    va_list ap;

    if (!log_enabled(plugin, level, PLUGIN_INFO_PLUGIN)) {
        return;
    }
    va_start(ap, fmt);
    log_line(plugin, dev, level, fmt, ap);
    va_end(ap);
}

void plugin_info_log(const struct plugin *plugin, const struct plugin_device *dev, uint32_t bits,
                     const char *fmt, ...)
{
    va_list ap;

    if (!log_enabled(plugin, PLUGIN_LOG_INFO, bits)) {
        return;
    }
    va_start(ap, fmt);
    log_line(plugin, dev, PLUGIN_LOG_INFO, fmt, ap);
    va_end(ap);
}

bool plugin_info_enabled(const struct plugin *plugin, uint32_t bits)
{
    if (plugin == NULL || plugin->state == NULL) {
        return false;
    }
    return plugin->state->debug ||
           (atomic_load_explicit(&plugin->state->info_flags, memory_order_relaxed) & bits) != 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

void plugin_region_describe(const char *kernel, char *buf, size_t len)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    struct image_region region;
    char function[256];
    char *demangled = NULL;
    size_t n;

    if (!image_region_decode(kernel, &region)) {
        snprintf(buf, len, "kernel %s", kernel != NULL ? kernel : "?");
        return;
    }
    n = region.function_len < sizeof(function) - 1 ? region.function_len : sizeof(function) - 1;
    memcpy(function, region.function, n);
    function[n] = '\0';
    if (strncmp(function, "_Z", 2) == 0) {
        /* C++: demangled where the C++ runtime is in the process (libomptarget is C++). */
        void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        demangle_fn demangle = NULL;
        int status = -1;

        memcpy(&demangle, &sym, sizeof(demangle));
        if (demangle != NULL) {
            demangled = demangle(function, NULL, NULL, &status);
            if (status != 0) {
                free(demangled);
                demangled = NULL;
            }
        }
    }
    snprintf(buf, len, "the target region in %s at line %u",
             demangled != NULL ? demangled : function, (unsigned)region.line);
    free(demangled);
}

void plugin_report(const struct plugin *plugin, int32_t id, const char *call,
                   tether_status_t status, const struct tether_error *err)
{
    const char *msg = (err != NULL && err->msg[0] != '\0') ? err->msg : NULL;
    int offset = -1;

    if (plugin != NULL && plugin->state != NULL) {
        offset = atomic_load(&plugin->state->global_offset);
    }
    if (id >= 0 && offset > 0) {
        /* The plugin's devices do not start at OpenMP device 0: name both numbers. */
        fprintf(stderr, "tether (%s): device %d (OpenMP device %d): %s failed: %s%s%s\n",
                plugin_name(plugin), (int)id, offset + (int)id, call, tether_status_str(status),
                msg ? ": " : "", msg ? msg : "");
    } else if (id >= 0) {
        fprintf(stderr, "tether (%s): device %d: %s failed: %s%s%s\n", plugin_name(plugin), (int)id,
                call, tether_status_str(status), msg ? ": " : "", msg ? msg : "");
    } else {
        fprintf(stderr, "tether (%s): %s failed: %s%s%s\n", plugin_name(plugin), call,
                tether_status_str(status), msg ? ": " : "", msg ? msg : "");
    }
}

/* ---- why an image finds no device (docs/plugin-interface.md, "Messages") ------------------ */

/* Backends of this process without devices, and the messages already printed about images no
 * device takes.  Shared by every tether plugin of the process like tether_rtl_env_warned
 * (rpc/server/rpc_env.h): the plugin that sees an image it cannot run (the x86_64 plugin sees
 * every image first, in libomptarget's order) tells why the plugin for it has no device. */
#define ABSENT_MAX 8
#define TOLD_MAX 32

struct plugin_absent {
    pthread_mutex_t lock;
    unsigned count, told_count;
    struct {
        uint16_t machine;
        char name[16];
        char why[TETHER_ERROR_MSG_MAX];
    } entry[ABSENT_MAX];
    uint64_t told[TOLD_MAX]; /* hashes of the messages printed */
};

__attribute__((visibility("default"))) extern struct plugin_absent tether_rtl_absent;
struct plugin_absent tether_rtl_absent = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* OMP_TARGET_OFFLOAD (libomp's knob, which libomp checks): MANDATORY makes libomptarget stop at
 * the first target region no device runs, saying only that offloading failed. */
bool plugin_offload_mandatory(void)
{
    const char *s = plugin_env_str("OMP_TARGET_OFFLOAD");

    return s != NULL && strcasecmp(s, "MANDATORY") == 0;
}

void plugin_absent_record(const struct plugin_ops *ops, const char *why)
{
    struct plugin_absent *a = &tether_rtl_absent;

    pthread_mutex_lock(&a->lock);
    if (a->count < ABSENT_MAX) {
        a->entry[a->count].machine = ops->elf_machine;
        snprintf(a->entry[a->count].name, sizeof(a->entry[0].name), "%s", ops->name);
        snprintf(a->entry[a->count].why, sizeof(a->entry[0].why), "%s", why);
        a->count++;
    }
    pthread_mutex_unlock(&a->lock);
}

/* True the first time this exact line is to be printed in the process. */
static bool told_first(const char *line)
{
    struct plugin_absent *a = &tether_rtl_absent;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    bool first = true;

    for (const char *p = line; *p != '\0'; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    pthread_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->told_count; i++) {
        if (a->told[i] == h) {
            first = false;
            break;
        }
    }
    if (first && a->told_count < TOLD_MAX) {
        a->told[a->told_count++] = h;
    }
    pthread_mutex_unlock(&a->lock);
    return first;
}

/* Print `line` for plugin `name`: a warning when offloading is mandatory, else an info line
 * (LIBOMPTARGET_INFO & 0x10 or TETHER_DEBUG); once per process either way. */
static void tell(const struct plugin *plugin, const char *name, const char *line)
{
    bool mandatory = plugin_offload_mandatory();

    if (!mandatory && !log_enabled(plugin, PLUGIN_LOG_INFO, PLUGIN_INFO_PLUGIN)) {
        return;
    }
    if (!told_first(line)) {
        return;
    }
    if (mandatory) {
        fprintf(stderr, "tether (%s): warning: offloading is mandatory, and %s\n", name, line);
    } else {
        fprintf(stderr, "tether (%s): %s\n", name, line);
    }
}

void plugin_image_refused(struct plugin *plugin, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    tell(plugin, plugin_name(plugin), line);
}

void plugin_image_unserved(struct plugin *plugin, uint16_t machine, const char *arch)
{
    struct plugin_absent *a = &tether_rtl_absent;
    char name[16] = "", why[TETHER_ERROR_MSG_MAX] = "";
    char line[512];

    pthread_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->count; i++) {
        if (a->entry[i].machine == machine) {
            snprintf(name, sizeof(name), "%s", a->entry[i].name);
            snprintf(why, sizeof(why), "%s", a->entry[i].why);
            break;
        }
    }
    pthread_mutex_unlock(&a->lock);
    if (name[0] == '\0') {
        return; /* a plugin with devices may still take it, or none of tether's is for it */
    }
    snprintf(line, sizeof(line), "the program's image for the %s plugin%s%s%s has no device: %s",
             name, arch != NULL && arch[0] != '\0' ? " (arch " : "", arch != NULL ? arch : "",
             arch != NULL && arch[0] != '\0' ? ")" : "", why);
    tell(plugin, name, line);
}
