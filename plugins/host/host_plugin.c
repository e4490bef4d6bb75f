/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * plugins/host/host_plugin.c - the x86_64 host backend: target regions run on the CPU.
 *
 * Primitives only (common/ does everything generic):
 *  - images: the ELF shared object is written to a fresh anonymous memfd (a file of its own, so
 *    glibc's check of device and inode numbers never matches an image loaded before) and
 *    dlopen'ed through /proc/self/fd/N (RTLD_NOW | RTLD_LOCAL), after an RTLD_NOLOAD probe has
 *    made sure that no loaded object carries that name (glibc would hand that one back); the fd is
 *    closed as soon as the image is mapped.  No file is ever created.
 *  - entries: dlsym by name; global sizes from the image's symbol table (dladdr1).
 *  - launch: libffi, num_args pointer-sized arguments, synchronous on the calling thread (the
 *    outlined region forks its own OpenMP teams/threads through libomp).
 *  - memory: posix_memalign/free for every kind; pinning is the identity (host_register returns
 *    the pointer itself), but lock/unlock still follow the pinned map's rules in common.
 *  - queues and events: in-order queues that complete work when it is enqueued (the CPU has no
 *    separate engine to overlap with); they keep the first error for queue_sync, so common's
 *    asynchronous paths (pools, synchronous calls on a queue, events) run for real on every
 *    machine.
 *
 * Devices: TETHER_X86_64_DEVICES (1..64, default 4, like LLVM's host plugin).  All devices share
 * the process's memory; each device loads its own copy of an image (its own globals).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ffi.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugin.h"
#include "plugin_image.h"

#ifndef TETHER_HOST_PLUGIN_NAME
#define TETHER_HOST_PLUGIN_NAME "x86_64"
#endif

#define HOST_DEFAULT_DEVICES 4
#define HOST_MAX_DEVICES 64
#define HOST_ALIGN 64
#define HOST_STACK_ARGS 32

struct host_plugin {
    struct plugin base;
    char cpu_model[64];
    long cpus;
};

struct host_device {
    struct plugin_device base;
};

struct host_module {
    struct plugin_module base;
    void *handle;
};

struct host_kernel {
    struct plugin_kernel base;
    void *fn;
};

/* Work completes at enqueue; the queue remembers the first failure until queue_sync. */
struct plugin_queue {
    tether_status_t status;
    struct tether_error err;
};

struct plugin_event {
    int unused;
};

extern const struct plugin_ops plugin_backend_ops;

static struct host_plugin *host_plugin_of(struct plugin *plugin)
{
    return container_of(plugin, struct host_plugin, base);
}

/* ---- plugin and devices ----------------------------------------------------------------- */

static void read_cpu_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];

    snprintf(buf, len, "x86_64 CPU");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *colon;

        if (strncmp(line, "model name", 10) != 0 || (colon = strchr(line, ':')) == NULL) {
            continue;
        }
        colon++;
        while (*colon == ' ' || *colon == '\t') {
            colon++;
        }
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, len, "%s", colon);
        break;
    }
    fclose(f);
}

static tether_status_t host_plugin_create(struct plugin **plugin_p, struct tether_error *err)
{
    struct host_plugin *hp;
    int64_t n = plugin_env_int("TETHER_X86_64_DEVICES", HOST_DEFAULT_DEVICES, 1, HOST_MAX_DEVICES);

    hp = calloc(1, sizeof(*hp));
    if (hp == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "host plugin");
    }
    hp->base.ops = &plugin_backend_ops;
    hp->base.num_devices = (int32_t)n;
    hp->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (hp->cpus < 1) {
        hp->cpus = 1;
    }
    read_cpu_model(hp->cpu_model, sizeof(hp->cpu_model));
    *plugin_p = &hp->base;
    return TETHER_OK;
}

static void host_plugin_destroy(struct plugin *plugin)
{
    free(host_plugin_of(plugin));
}

#ifdef TETHER_HOST_REQUIRE_SYMBOL
/* Test builds only: accept just the images that define this symbol (docs/host-plugin.md). */
static bool host_image_compatible(struct plugin *plugin, const struct plugin_image *image)
{
    struct image_symbol sym;

    (void)plugin;
    return image_elf_symbol(image, TETHER_HOST_REQUIRE_SYMBOL, &sym);
}
#endif

static tether_status_t host_device_create(struct plugin *plugin, int32_t id,
                                          struct plugin_device **dev_p, struct tether_error *err)
{
    struct host_device *hd = calloc(1, sizeof(*hd));

    (void)plugin;
    if (hd == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "host device %d", (int)id);
    }
    *dev_p = &hd->base;
    return TETHER_OK;
}

static void host_device_destroy(struct plugin_device *dev)
{
    free(container_of(dev, struct host_device, base));
}

static tether_status_t host_device_limits(struct plugin_device *dev,
                                          struct plugin_device_limits *limits_p,
                                          struct tether_error *err)
{
    struct host_plugin *hp = host_plugin_of(dev->plugin);

    (void)err;
    /* Informational: the outlined host region forks its own teams and threads through libomp. */
    limits_p->warp_size = 1;
    limits_p->max_threads = (uint32_t)hp->cpus;
    limits_p->max_teams = 1u << 16;
    limits_p->default_threads = (uint32_t)hp->cpus;
    limits_p->default_teams = (uint32_t)hp->cpus;
    limits_p->host_access = PLUGIN_HOST_ACCESS_PAGEABLE; /* the "device" is this process */
    return TETHER_OK;
}

static void host_device_name(struct plugin_device *dev, char *buf, size_t len)
{
    struct host_plugin *hp = host_plugin_of(dev->plugin);

    snprintf(buf, len, "host CPU %d: %s, %ld hardware threads", (int)dev->id, hp->cpu_model,
             hp->cpus);
}

static void host_device_info(struct plugin_device *dev, plugin_info_emit_t emit, void *ctx)
{
    struct host_plugin *hp = host_plugin_of(dev->plugin);

    emit(ctx, "CPU", "%s", hp->cpu_model);
    emit(ctx, "Hardware threads", "%ld", hp->cpus);
    emit(ctx, "Image loading", "%s", "memfd_create + dlopen(/proc/self/fd/N), no files");
    emit(ctx, "Kernel calls", "%s", "libffi, synchronous");
    emit(ctx, "Pinning", "%s", "identity (host memory), pinned-map rules enforced");
}

/* ---- memory ----------------------------------------------------------------------------- */

static tether_status_t host_alloc(struct plugin_device *dev, size_t size,
                                  enum plugin_alloc_kind kind, void **ptr_p,
                                  struct tether_error *err)
{
    void *ptr = NULL;
    int rc;

    (void)dev;
    (void)kind;
    rc = posix_memalign(&ptr, HOST_ALIGN, size);
    if (rc != 0) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "posix_memalign(%zu bytes): %s", size,
                                strerror(rc));
    }
    *ptr_p = ptr;
    return TETHER_OK;
}

static tether_status_t host_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                                 struct tether_error *err)
{
    (void)dev;
    (void)kind;
    (void)err;
    free(ptr);
    return TETHER_OK;
}

/* Work on a queue: already done; only a failure is remembered. */
static tether_status_t queue_note(struct plugin_queue *queue, tether_status_t rc,
                                  const struct tether_error *err)
{
    if (rc != TETHER_OK && queue->status == TETHER_OK) {
        queue->status = rc;
        queue->err = *err;
    }
    return rc;
}

static tether_status_t host_memcpy_h2d(struct plugin_device *dev, void *dst, const void *src,
                                       size_t size, const void *host_dev,
                                       struct plugin_queue *queue, struct tether_error *err)
{
    (void)dev;
    (void)host_dev;
    (void)queue;
    (void)err;
    memcpy(dst, src, size);
    return TETHER_OK;
}

static tether_status_t host_memcpy_d2h(struct plugin_device *dev, void *dst, const void *src,
                                       size_t size, void *host_dev, struct plugin_queue *queue,
                                       struct tether_error *err)
{
    (void)dev;
    (void)host_dev;
    (void)queue;
    (void)err;
    memcpy(dst, src, size);
    return TETHER_OK;
}

static tether_status_t host_memcpy_d2d(struct plugin_device *dst_dev, void *dst,
                                       struct plugin_device *src_dev, const void *src, size_t size,
                                       struct plugin_queue *queue, struct tether_error *err)
{
    (void)dst_dev;
    (void)src_dev;
    (void)queue;
    (void)err;
    memmove(dst, src, size);
    return TETHER_OK;
}

static tether_status_t host_register(struct plugin_device *dev, void *ptr, size_t size,
                                     void **dev_ptr_p, bool *external_p, struct tether_error *err)
{
    (void)dev;
    (void)size;
    (void)err;
    *dev_ptr_p = ptr;
    *external_p = false;
    return TETHER_OK;
}

static tether_status_t host_unregister(struct plugin_device *dev, void *base, size_t size,
                                       struct tether_error *err)
{
    (void)dev;
    (void)base;
    (void)size;
    (void)err;
    return TETHER_OK;
}

/* ---- queues and events ------------------------------------------------------------------ */

static tether_status_t host_queue_create(struct plugin_device *dev, struct plugin_queue **queue_p,
                                         struct tether_error *err)
{
    struct plugin_queue *q = calloc(1, sizeof(*q));

    (void)dev;
    if (q == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "queue");
    }
    *queue_p = q;
    return TETHER_OK;
}

static void host_queue_destroy(struct plugin_device *dev, struct plugin_queue *queue)
{
    (void)dev;
    free(queue);
}

/* Nothing to wait for (the work ran when it was enqueued), so no plugin_wait(): TETHER_WAIT does
 * not apply to this backend. */
static tether_status_t host_queue_sync(struct plugin_device *dev, struct plugin_queue *queue,
                                       struct tether_error *err)
{
    tether_status_t rc = queue->status;

    (void)dev;
    if (rc != TETHER_OK) {
        *err = queue->err;
        queue->status = TETHER_OK;
    }
    return rc;
}

static tether_status_t host_queue_query(struct plugin_device *dev, struct plugin_queue *queue,
                                        bool *done_p, struct tether_error *err)
{
    tether_status_t rc = host_queue_sync(dev, queue, err);

    if (rc == TETHER_OK) {
        *done_p = true;
    }
    return rc;
}

static tether_status_t host_event_create(struct plugin_device *dev, struct plugin_event **event_p,
                                         struct tether_error *err)
{
    struct plugin_event *ev = calloc(1, sizeof(*ev));

    (void)dev;
    if (ev == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "event");
    }
    *event_p = ev;
    return TETHER_OK;
}

static void host_event_destroy(struct plugin_device *dev, struct plugin_event *event)
{
    (void)dev;
    free(event);
}

/* Work completes at enqueue, so an event is complete as soon as it is recorded. */
static tether_status_t host_event_record(struct plugin_device *dev, struct plugin_event *event,
                                         struct plugin_queue *queue, struct tether_error *err)
{
    (void)dev;
    (void)event;
    (void)queue;
    (void)err;
    return TETHER_OK;
}

static tether_status_t host_event_wait(struct plugin_device *dev, struct plugin_event *event,
                                       struct plugin_queue *queue, struct tether_error *err)
{
    (void)dev;
    (void)event;
    (void)queue;
    (void)err;
    return TETHER_OK;
}

static tether_status_t host_event_sync(struct plugin_device *dev, struct plugin_event *event,
                                       struct tether_error *err)
{
    (void)dev;
    (void)event;
    (void)err;
    return TETHER_OK;
}

/* ---- images ----------------------------------------------------------------------------- */

static tether_status_t write_all(int fd, const void *buf, size_t size, struct tether_error *err)
{
    const char *p = buf;

    while (size > 0) {
        ssize_t n = write(fd, p, size);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return plugin_error_set(err, TETHER_ERR_DRIVER, "writing the image to a memfd: %s",
                                    strerror(errno));
        }
        p += n;
        size -= (size_t)n;
    }
    return TETHER_OK;
}

/* Writes into path the name /proc/self/fd/N under which *fd_io can be dlopen'ed as a new object.
 * glibc hands back an already-loaded object whose name equals the one asked for, and the name of
 * an image loaded earlier through the same number stays in its list after that fd was closed (by
 * us, or by a program that closes every fd), so an RTLD_NOLOAD probe asks the loader itself; while
 * the name is taken the memfd moves to a higher number.  The probe of a free name opens the file
 * and compares its device and inode numbers too, then loads nothing. */
static tether_status_t image_name_free(int *fd_io, char *path, size_t len, struct tether_error *err)
{
    for (;;) {
        void *loaded;
        int fd;

        snprintf(path, len, "/proc/self/fd/%d", *fd_io);
        loaded = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (loaded == NULL) {
            (void)dlerror(); /* "not loaded": nothing for a later dlerror() to report */
            return TETHER_OK;
        }
        dlclose(loaded);
        fd = fcntl(*fd_io, F_DUPFD_CLOEXEC, *fd_io + 1);
        if (fd < 0) {
            return plugin_error_set(err, TETHER_ERR_DRIVER,
                                    "no free fd above %d for the image's memfd: %s", *fd_io,
                                    strerror(errno));
        }
        close(*fd_io);
        *fd_io = fd;
    }
}

static tether_status_t host_module_load(struct plugin_device *dev, const struct plugin_image *image,
                                        struct plugin_module **module_p, struct tether_error *err)
{
    struct host_module *hm;
    char path[64];
    tether_status_t rc;
    const char *why;
    int fd;

    hm = calloc(1, sizeof(*hm));
    if (hm == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "module");
    }
    fd = memfd_create("tether-x86_64-image", MFD_CLOEXEC);
    if (fd < 0) {
        rc = plugin_error_set(err, TETHER_ERR_DRIVER, "memfd_create: %s", strerror(errno));
        goto free_module;
    }
    rc = write_all(fd, image->start, image->size, err);
    if (rc != TETHER_OK) {
        goto close_fd;
    }
    rc = image_name_free(&fd, path, sizeof(path), err);
    if (rc != TETHER_OK) {
        goto close_fd;
    }
    hm->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (hm->handle == NULL) {
        why = dlerror();
        rc = plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "dlopen of the image: %s",
                              why ? why : "unknown error");
        goto close_fd;
    }
    /* The mappings keep the memfd alive; the fd is no longer needed. */
    close(fd);
    plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG, "image of %zu bytes loaded from %s", image->size,
               path);
    *module_p = &hm->base;
    return TETHER_OK;

close_fd:
    close(fd);
free_module:
    free(hm);
    return rc;
}

static void host_module_unload(struct plugin_device *dev, struct plugin_module *module)
{
    struct host_module *hm = container_of(module, struct host_module, base);

    (void)dev;
    dlclose(hm->handle);
    free(hm);
}

/* dlsym restricted to the image itself (not its dependencies). */
static void *image_sym(struct host_module *hm, const char *name)
{
    struct link_map *lm = NULL;
    void *addr = dlsym(hm->handle, name);
    Dl_info info;

    if (addr == NULL || dlinfo(hm->handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
        return addr;
    }
    if (dladdr(addr, &info) == 0 || info.dli_fbase != (void *)lm->l_addr) {
        return NULL; /* found in a dependency (libc, libomp...), not in the image */
    }
    return addr;
}

static tether_status_t host_global_lookup(struct plugin_device *dev, struct plugin_module *module,
                                          const char *name, void **addr_p, size_t *size_p,
                                          struct tether_error *err)
{
    struct host_module *hm = container_of(module, struct host_module, base);
    const ElfW(Sym) *sym = NULL;
    void *addr = image_sym(hm, name);
    Dl_info info;
    size_t size = 0;

    (void)dev;
    if (addr == NULL) {
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "global %s is not in the image", name);
    }
    if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL &&
        info.dli_sname != NULL && strcmp(info.dli_sname, name) == 0) {
        size = sym->st_size;
    }
    *addr_p = addr;
    *size_p = size;
    return TETHER_OK;
}

static tether_status_t host_kernel_lookup(struct plugin_device *dev, struct plugin_module *module,
                                          const char *name, struct plugin_kernel **kernel_p,
                                          struct tether_error *err)
{
    struct host_module *hm = container_of(module, struct host_module, base);
    struct host_kernel *hk;
    void *fn = image_sym(hm, name);

    (void)dev;
    if (fn == NULL) {
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "kernel %s is not in the image", name);
    }
    hk = calloc(1, sizeof(*hk));
    if (hk == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "kernel %s", name);
    }
    hk->fn = fn;
    hk->base.max_threads = 0;
    *kernel_p = &hk->base;
    return TETHER_OK;
}

static void host_kernel_release(struct plugin_device *dev, struct plugin_kernel *kernel)
{
    (void)dev;
    free(container_of(kernel, struct host_kernel, base));
}

static tether_status_t host_launch(struct plugin_device *dev, struct plugin_kernel *kernel,
                                   const struct plugin_launch *launch, struct plugin_queue *queue,
                                   struct tether_error *err)
{
    struct host_kernel *hk = container_of(kernel, struct host_kernel, base);
    ffi_type *stack_types[HOST_STACK_ARGS];
    ffi_type **types = stack_types;
    void (*fn)(void);
    tether_status_t rc = TETHER_OK;
    ffi_status fs;
    ffi_cif cif;

    (void)dev;
    if (launch->num_args > HOST_STACK_ARGS) {
        types = malloc(launch->num_args * sizeof(*types));
        if (types == NULL) {
            return queue_note(queue,
                              plugin_error_set(err, TETHER_ERR_NO_MEMORY, "%u kernel arguments",
                                               (unsigned)launch->num_args),
                              err);
        }
    }
    for (uint32_t i = 0; i < launch->num_args; i++) {
        types[i] = &ffi_type_pointer;
    }
    fs = ffi_prep_cif(&cif, FFI_DEFAULT_ABI, launch->num_args, &ffi_type_void, types);
    if (fs != FFI_OK) {
        rc = plugin_error_set(err, TETHER_ERR_DRIVER, "ffi_prep_cif for %s (%u args): status %d",
                              kernel->name, (unsigned)launch->num_args, (int)fs);
        goto free_types;
    }
    memcpy(&fn, &hk->fn, sizeof(fn));
    ffi_call(&cif, fn, NULL, launch->arg_ptrs);
free_types:
    if (types != stack_types) {
        free(types);
    }
    return queue_note(queue, rc, err);
}

/* LLVM bitcode images (-fopenmp-target-jit): LLVM would compile them to a relocatable object,
 * but only a linker makes the shared object this backend dlopens of that, and tether ships none
 * (LLVM 16's host plugin takes them and then fails to load them).  Refused with this reason: the
 * target regions run on the host anyway, as libomptarget's fallback (docs/host-plugin.md). */
static const struct plugin_jit_ops host_jit_ops = {
    .triple = "x86_64",
    .refusal = "needs a linker to make a shared object of LLVM's output, which tether does not "
               "ship",
};

const struct plugin_ops plugin_backend_ops = {
    .version = PLUGIN_OPS_VERSION,
    .name = TETHER_HOST_PLUGIN_NAME,
    .elf_machine = 62, /* EM_X86_64 */
    .plugin_create = host_plugin_create,
    .plugin_destroy = host_plugin_destroy,
#ifdef TETHER_HOST_REQUIRE_SYMBOL
    .image_compatible = host_image_compatible,
#endif
    .device_create = host_device_create,
    .device_destroy = host_device_destroy,
    .device_limits = host_device_limits,
    .device_name = host_device_name,
    .device_info = host_device_info,
    .alloc = host_alloc,
    .free = host_free,
    .memcpy_h2d = host_memcpy_h2d,
    .memcpy_d2h = host_memcpy_d2h,
    .memcpy_d2d = host_memcpy_d2d,
    .host_register = host_register,
    .host_unregister = host_unregister,
    .queue_create = host_queue_create,
    .queue_destroy = host_queue_destroy,
    .queue_sync = host_queue_sync,
    .queue_query = host_queue_query,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .event_wait = host_event_wait,
    .event_sync = host_event_sync,
    .module_load = host_module_load,
    .module_unload = host_module_unload,
    .global_lookup = host_global_lookup,
    .kernel_lookup = host_kernel_lookup,
    .kernel_release = host_kernel_release,
    .launch = host_launch,
    .jit = &host_jit_ops,
};
