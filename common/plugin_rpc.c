/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_rpc.c - the RPC server's life cycle in the generic layer, over the server
 * library (rpc/server/, public API include/tether/rpc.h).
 *
 * Per device: one server per loaded image that defines __tether_rpc_client
 * (PLUGIN_RPC_CLIENT_SYMBOL; each image has its own port locks), kept on an append-only list in
 * dev->state->rpc; every kernel start/finish of the device is told to each of them, so a server
 * thread polls only while a kernel of its device runs (and backs off to short sleeps when its
 * calls stop) and sleeps otherwise.  Contract with the rest
 * of common/:
 *  - plugin_rpc_attach(dev, loaded, image): once per image defining the symbol, after it loaded
 *    and before any of its kernels runs: allocates the mailboxes (ops->shared_alloc, or ops->alloc
 *    PLUGIN_ALLOC_HOST), writes the client the server library made into the device global as it
 *    is (and hands it to ops->rpc_client_copy where the backend has one), starts the server thread
 *    (which calls ops->thread_attach first) with the device's limits.pci_bus_id (no address
 *    when it is ""), so that on a machine with several NUMA nodes the server places the thread
 *    on the cores local to the device.  Errors fail the image load.
 *  - plugin_rpc_launch_begin/end(dev): around every kernel; end arrives when the kernel is known
 *    complete (synchronous launch returned, or its queue synchronised/queried done).  begin
 *    refuses a kernel started from a user handler of one of the device's servers (it would wait
 *    for the thread running the handler).
 *  - plugin_rpc_detach(dev): at shutdown, before the device's images are released; logs each
 *    server's counts (calls, inline answers, printf lines, ...) and its thread's CPU time and
 *    calls served with LIBOMPTARGET_INFO's plugin bit (16) or TETHER_DEBUG.
 *  - fork(): in a child, the first of attach, launch_begin or launch_end on a device whose
 *    servers the server library marked forked restarts them on the host backend, or fails (a
 *    GPU: the driver's context and pinned memory stay with the parent); see rpc_after_fork.
 * Environment:
 *   TETHER_RPC_PORTS          ports per image, 1 to 16384 (default: the backend's
 *                             limits.rpc_ports, else 64, or 4 x CPUs, for the host backend and
 *                             4096 on GPUs; CUDA: 16384)
 *   TETHER_RPC_HEAP_RESERVE   bytes of device heap allocated at the load of an image that can
 *                             allocate (rpc_image_allocates), 0 to 1 TiB (default 0 on the host,
 *                             256 MiB on GPUs: the first chunks the device asks for come without
 *                             a driver call; beyond it the server allocates while kernels run,
 *                             see docs/rpc-services.md section 10).  An image that cannot
 *                             allocate gets none.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_image.h"
#include "plugin_state.h"
#include "tether/rpc.h"
#include "../rpc/device_client.h"
#if TETHER_RPC_PROFILE
#include "../rpc/server/rpc_profile.h"
#endif

/* TETHER_RPC_HEAP_RESERVE's largest value: 1 TiB. */
#define RPC_HEAP_RESERVE_MAX ((int64_t)1 << 40)

struct rpc_image_server {
    tether_rpc_server_t *srv;
    struct plugin_device *dev;
    struct plugin_module *module; /* the image's module on dev */
    uint64_t global;              /* device address of PLUGIN_RPC_CLIENT_SYMBOL */
    pid_t pid;                    /* the process that started the server (fork messages) */
    struct rpc_image_server *next;
};

/* Serialises the restart of servers in a fork child (rpc_after_fork). */
static pthread_mutex_t rpc_fork_lock = PTHREAD_MUTEX_INITIALIZER;

static tether_status_t shared_alloc_cb(void *ctx, size_t size, void **host_p, uint64_t *dev_p)
{
    struct plugin_device *dev = ctx;
    const struct plugin_ops *ops = dev->plugin->ops;
    struct tether_error err = {""};
    void *host = NULL;
    void *devp = NULL;
    tether_status_t rc;
    if (ops->shared_alloc != NULL) {
        rc = ops->shared_alloc(dev, size, &host, &devp, &err);
    } else {
        rc = ops->alloc(dev, size, PLUGIN_ALLOC_HOST, &host, &err);
        devp = host;
    }
    if (rc != TETHER_OK) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_ERROR, "RPC shared memory: %s", err.msg);
        return rc;
    }
    *host_p = host;
    *dev_p = (uint64_t)(uintptr_t)devp;
    return TETHER_OK;
}

static void shared_free_cb(void *ctx, void *host)
{
    struct plugin_device *dev = ctx;
    const struct plugin_ops *ops = dev->plugin->ops;
    struct tether_error err = {""};
    if (ops->shared_alloc != NULL)
        ops->shared_free(dev, host);
    else
        ops->free(dev, host, PLUGIN_ALLOC_HOST, &err);
}

static tether_status_t device_alloc_cb(void *ctx, size_t size, uint64_t *dev_p)
{
    struct plugin_device *dev = ctx;
    struct tether_error err = {""};
    void *p = NULL;
    tether_status_t rc = dev->plugin->ops->alloc(dev, size, PLUGIN_ALLOC_DEVICE, &p, &err);
    if (rc != TETHER_OK) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_WARN, "RPC heap chunk of %zu bytes: %s", size,
                   err.msg);
        return rc;
    }
    *dev_p = (uint64_t)(uintptr_t)p;
    return TETHER_OK;
}

static void device_free_cb(void *ctx, uint64_t ptr)
{
    struct plugin_device *dev = ctx;
    struct tether_error err = {""};
    dev->plugin->ops->free(dev, (void *)(uintptr_t)ptr, PLUGIN_ALLOC_DEVICE, &err);
}

static tether_status_t thread_attach_cb(void *ctx, struct tether_error *err)
{
    struct plugin_device *dev = ctx;
    if (dev->plugin->ops->thread_attach == NULL)
        return TETHER_OK;
    return dev->plugin->ops->thread_attach(dev, err);
}

/* Kernels of these devices are threads of this process (the host backend, warp size 1, whose
 * client is a host thread): whatever the server shares with them is this process's memory, which
 * fork() copies.  On a GPU the driver's context and pinned memory stay with the parent. */
static bool rpc_host_device(const struct plugin_device *dev)
{
    return dev->limits.warp_size <= 1;
}

/* Writes the client, as the server library made it, into the image's global (fresh port locks),
 * then lets the backend copy it where its device code also reads it (ops->rpc_client_copy). */
static tether_status_t rpc_client_write(struct plugin_device *dev, struct rpc_image_server *node,
                                        struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    size_t size = tether_rpc_client_size();
    unsigned char *buf = malloc(size);
    struct plugin_async *pa = NULL;
    tether_status_t rc;

    if (buf == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "RPC server: out of memory");
    }
    rc = tether_rpc_server_client_bytes(node->srv, node->global, buf, size);
    if (rc == TETHER_OK) {
        rc = plugin_write_device(dev, (void *)(uintptr_t)node->global, buf, size, err);
    }
    if (rc == TETHER_OK && ops->rpc_client_copy != NULL) {
        rc = plugin_queue_begin(dev, NULL, &pa, err);
        if (rc == TETHER_OK) {
            rc = ops->rpc_client_copy(dev, node->module, buf, size, pa->queue, err);
            rc = plugin_queue_end(dev, NULL, pa, rc, err);
        }
    }
    free(buf);
    return rc;
}

static tether_status_t rpc_thread_start(struct plugin_device *dev, struct rpc_image_server *node,
                                        struct tether_error *err)
{
    struct tether_rpc_thread_config tcfg = {
        /* The thread runs near the device where the machine has several NUMA nodes. */
        .pci_bus_id = dev->limits.pci_bus_id[0] != '\0' ? dev->limits.pci_bus_id : NULL,
        .attach = thread_attach_cb,
        .attach_ctx = dev,
    };

    return tether_rpc_server_start(node->srv, &tcfg, err);
}

static struct rpc_image_server *servers(struct plugin_device *dev)
{
    return __atomic_load_n(&dev->state->rpc, __ATOMIC_ACQUIRE);
}

/*
 * In a child made by fork() after the device's servers started (the server library marks them
 * forked): on the host, start each server again on the child's copy of its memory (no call of
 * the parent's other threads survives: every port is zeroed, the image's port locks rewritten,
 * no kernel counted); on a GPU, refuse with the reason, since the child has neither the driver's
 * context nor the servers' pinned memory.  The first thread of the child that gets here does it;
 * the others wait for it.
 */
static tether_status_t rpc_after_fork(struct plugin_device *dev, struct tether_error *err)
{
    struct rpc_image_server *head = servers(dev);
    tether_status_t rc = TETHER_OK;

    if (!rpc_host_device(dev)) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "this process (%d) is a child that process %d created with fork() "
                                "after the device's RPC server started; a %s device cannot be "
                                "used in a fork() child (the driver's context and the server's "
                                "pinned memory stay with the parent): offload from the parent, "
                                "or exec() in the child",
                                (int)getpid(), (int)head->pid, dev->plugin->ops->name);
    }
    pthread_mutex_lock(&rpc_fork_lock);
    if (tether_rpc_server_forked(head->srv)) {
        atomic_store(&dev->state->kernels_running, 0); /* launched by threads the child lacks */
    }
    for (struct rpc_image_server *n = head; n != NULL && rc == TETHER_OK; n = n->next) {
        if (!tether_rpc_server_forked(n->srv)) {
            continue;
        }
        tether_rpc_server_reset(n->srv);
        n->pid = getpid();
        rc = rpc_client_write(dev, n, err);
        if (rc == TETHER_OK) {
            rc = rpc_thread_start(dev, n, err);
        }
        if (rc == TETHER_OK) {
            plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG,
                       "rpc: server started again in fork child %d", (int)n->pid);
        }
    }
    pthread_mutex_unlock(&rpc_fork_lock);
    return rc;
}

/* True when a server of the device is a fork child's copy not started again yet. */
static bool rpc_forked(struct rpc_image_server *head)
{
    for (struct rpc_image_server *n = head; n != NULL; n = n->next) {
        if (tether_rpc_server_forked(n->srv)) {
            return true;
        }
    }
    return false;
}

/* The device library's functions that allocate from its heap (rpc/device/device_malloc.c; the
 * C library's names on AMD GPUs call them).  A linked image keeps only the functions its kernels
 * may call, so an image without any of them never asks for heap. */
static const char *const rpc_heap_entries[] = {"tether_device_malloc", "tether_device_calloc",
                                               "tether_device_realloc",
                                               "tether_device_aligned_alloc"};

static bool rpc_image_allocates(const struct plugin_image *image)
{
    struct image_symbol sym;
    for (size_t i = 0; i < sizeof rpc_heap_entries / sizeof rpc_heap_entries[0]; i++) {
        if (image_elf_symbol(image, rpc_heap_entries[i], &sym))
            return true;
    }
    return false;
}

tether_status_t plugin_rpc_attach(struct plugin_device *dev, struct plugin_loaded *loaded,
                                  const struct plugin_image *image, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    void *global = NULL;
    size_t size = 0;
    tether_status_t rc =
        ops->global_lookup(dev, loaded->module, PLUGIN_RPC_CLIENT_SYMBOL, &global, &size, err);
    if (rc != TETHER_OK)
        return rc;
    if (size != 0 && size != tether_rpc_client_size()) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "%s is %zu bytes, this plugin's RPC server expects %zu "
                                "(libtether-device.a and plugin from different versions?)",
                                PLUGIN_RPC_CLIENT_SYMBOL, size, tether_rpc_client_size());
    }
    /* The device's servers from before a fork are started again first (their count of
     * running kernels is copied into the new server below). */
    if (rpc_forked(servers(dev))) {
        rc = rpc_after_fork(dev, err);
        if (rc != TETHER_OK)
            return rc;
    }
    bool host = rpc_host_device(dev);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t ports = host ? (uint32_t)(cpus > 16 ? 4 * cpus : 64) : 4096;
    if (dev->limits.rpc_ports != 0)
        ports = dev->limits.rpc_ports;
    ports = (uint32_t)plugin_env_int("TETHER_RPC_PORTS", ports, 1, TETHER_RPC_DEVICE_PORTS_MAX);
    /* The host's wide calls run one message through all 32 lanes' buffers. */
    uint32_t lanes = dev->limits.rpc_lanes ? dev->limits.rpc_lanes
                     : host                ? 32
                                           : dev->limits.warp_size;
    /* GPUs: device heap allocated before any kernel runs (a CUDA allocation while a kernel runs
     * may wait for it; the device heap refills from this first), for an image that can
     * allocate. */
    size_t reserve = (size_t)plugin_env_int("TETHER_RPC_HEAP_RESERVE", host ? 0 : 256 << 20, 0,
                                            RPC_HEAP_RESERVE_MAX);
    struct tether_rpc_server_config cfg = {
        .device_id = (uint32_t)dev->id,
        .port_count = ports,
        .lane_count = lanes,
        .host_client = host,
        .shared_alloc = shared_alloc_cb,
        .shared_free = shared_free_cb,
        .shared_ctx = dev,
        .device_alloc = device_alloc_cb,
        .device_free = device_free_cb,
        .device_ctx = dev,
        .heap_reserve = rpc_image_allocates(image) ? reserve : 0,
    };
    struct rpc_image_server *node = calloc(1, sizeof *node);
    if (node == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "RPC server: out of memory");
    node->dev = dev;
    node->module = loaded->module;
    node->global = (uint64_t)(uintptr_t)global;
    node->pid = getpid();
    rc = tether_rpc_server_create(&cfg, &node->srv, err);
    if (rc != TETHER_OK)
        goto free_node;
    rc = rpc_client_write(dev, node, err);
    if (rc != TETHER_OK)
        goto destroy;
    rc = rpc_thread_start(dev, node, err);
    if (rc != TETHER_OK)
        goto destroy;
    /* Kernels already running on the device count for the new server too. */
    uint64_t running = atomic_load(&dev->state->kernels_running);
    for (uint64_t i = 0; i < running; i++)
        tether_rpc_server_kernel_started(node->srv);
    node->next = __atomic_load_n(&dev->state->rpc, __ATOMIC_ACQUIRE);
    __atomic_store_n(&dev->state->rpc, (void *)node, __ATOMIC_RELEASE);
    if (plugin_info_enabled(dev->plugin, PLUGIN_INFO_PLUGIN)) {
        char line[256];
        tether_rpc_server_describe(node->srv, line, sizeof line);
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO, "%s", line);
    }
    return TETHER_OK;

destroy:
    tether_rpc_server_destroy(node->srv);
free_node:
    free(node);
    return rc;
}

void plugin_rpc_driver_services(struct plugin_device *dev, const struct plugin_image *image,
                                bool client)
{
    static const char *const services[] = {"vprintf", "printf", "malloc", "free"};
    static atomic_flag said_no_client = ATOMIC_FLAG_INIT;
    static atomic_flag said_no_header = ATOMIC_FLAG_INIT;
    char names[64] = "";
    size_t used = 0;

    if (dev->limits.warp_size <= 1 || !plugin_info_enabled(dev->plugin, PLUGIN_INFO_PLUGIN))
        return;
    if (client) {
        /* With the library, only a source compiled without tether/device_libc.h brings in the
         * device runtime's printf, which calls vprintf. */
        if (image_elf_undefined(image, "vprintf") && !atomic_flag_test_and_set(&said_no_header))
            plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                       "the image has a tether RPC client but calls vprintf: device code compiled "
                       "without tether/device_libc.h prints through the driver, not tether's "
                       "server; compile every source with `pkg-config --cflags tether`");
        return;
    }
    for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++) {
        if (image_elf_undefined(image, services[i]))
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
                                     services[i]);
    }
    if (used == 0 || atomic_flag_test_and_set(&said_no_client))
        return;
    plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
               "the image calls %s but has no tether RPC client (%s): the driver's own device "
               "printf and heap serve them, not tether's; to use tether's, compile with "
               "`pkg-config --cflags tether` and link -ltether-device after the program's "
               "sources (`pkg-config --libs tether`)",
               names, PLUGIN_RPC_CLIENT_SYMBOL);
}

/* Exported (tether_rtl_* is in the plugin's version script): tether_rpc_register_user() in
 * libtether-device.a finds it in every loaded tether plugin. */
__attribute__((visibility("default"))) tether_status_t
tether_rtl_rpc_register(uint32_t opcode, tether_rpc_handler_t fn, void *user);

tether_status_t tether_rtl_rpc_register(uint32_t opcode, tether_rpc_handler_t fn, void *user)
{
    return tether_rpc_register_global(opcode, fn, user);
}

#if TETHER_RPC_PROFILE
/* The profiling build: the server's call timing (TETHER_RPC_TIMING), averaged per call. */
static void rpc_log_timing(struct plugin_device *dev, tether_rpc_server_t *srv)
{
    struct srv_timing t;
    srv_timing_read(srv, &t);
    if (t.timed_calls == 0) {
        return;
    }
    plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
               "rpc timing: %.0f ns per call from open to close; %llu calls followed one on the "
               "same port, %.0f ns from its close to their open; %llu seen by the thread's poll, "
               "%.0f ns from seen to open, %.0f ns from seen to the answer's head stored",
               (double)t.serve_ns / (double)t.timed_calls, (unsigned long long)t.gaps,
               t.gaps ? (double)t.gap_ns / (double)t.gaps : 0.0, (unsigned long long)t.seen,
               t.seen ? (double)t.seen_ns / (double)t.seen : 0.0,
               t.seen_answered ? (double)t.seen_answer_ns / (double)t.seen_answered : 0.0);
    plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
               "rpc timing: per call %.0f ns in the services, %.0f ns inside the server's handle, "
               "%.2f sweeps that found no call",
               (double)t.service_ns / (double)t.timed_calls,
               (double)t.handle_ns / (double)t.timed_calls,
               (double)t.sweeps / (double)t.timed_calls);
}
#endif

void plugin_rpc_detach(struct plugin_device *dev)
{
    struct rpc_image_server *node = servers(dev);
    dev->state->rpc = NULL;
    while (node != NULL) {
        struct rpc_image_server *next = node->next;
        if (tether_rpc_server_forked(node->srv) && !rpc_host_device(dev)) {
            /* A GPU server in a fork child: its memory and thread are the parent's. */
            free(node);
            node = next;
            continue;
        }
        struct tether_rpc_stats st;
        tether_rpc_server_stats(node->srv, &st);
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                   "rpc: %llu calls (%llu answered inline, %llu of them at once on a hot port), "
                   "%llu printf/write calls, %llu unhandled, %llu malformed, %llu server wakeups",
                   (unsigned long long)st.calls, (unsigned long long)st.inline_answers,
                   (unsigned long long)st.hot_answers, (unsigned long long)st.printf_lines,
                   (unsigned long long)st.unhandled, (unsigned long long)st.malformed,
                   (unsigned long long)st.wakeups);
        if (st.thread_ns != 0) {
            plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                       "rpc: server thread tether-rpc%d: %.1f ms of CPU in %.2f s (%.1f%% of a "
                       "core), %llu calls served",
                       dev->id, (double)st.thread_cpu_ns / 1e6, (double)st.thread_ns / 1e9,
                       100.0 * (double)st.thread_cpu_ns / (double)st.thread_ns,
                       (unsigned long long)st.calls);
        }
#if TETHER_RPC_PROFILE
        rpc_log_timing(dev, node->srv);
#endif
        tether_rpc_server_destroy(node->srv);
        free(node);
        node = next;
    }
}

tether_status_t plugin_rpc_launch_begin(struct plugin_device *dev, struct tether_error *err)
{
    struct rpc_image_server *head = servers(dev);
    tether_rpc_server_t *own = head != NULL ? tether_rpc_server_current() : NULL;

    for (struct rpc_image_server *n = head; n != NULL; n = n->next) {
        if (n->srv == own) {
            return plugin_error_set(
                err, TETHER_ERR_BUSY,
                "a target region started from inside an RPC handler of this device is refused: "
                "the handler runs on the device's RPC server thread, which the region would "
                "need to serve its calls and its end, so it would wait for itself forever; "
                "start the region after the handler returned");
        }
    }
    if (rpc_forked(head)) {
        tether_status_t rc = rpc_after_fork(dev, err);
        if (rc != TETHER_OK) {
            return rc;
        }
    }
    atomic_fetch_add_explicit(&dev->state->kernels_running, 1, memory_order_relaxed);
    for (struct rpc_image_server *n = head; n != NULL; n = n->next)
        tether_rpc_server_kernel_started(n->srv);
    return TETHER_OK;
}

void plugin_rpc_launch_end(struct plugin_device *dev, uint32_t count)
{
    struct rpc_image_server *head = servers(dev);
    struct tether_error err = {""};
    uint_fast64_t old = atomic_load_explicit(&dev->state->kernels_running, memory_order_relaxed);

    /* Never below 0: a fork child counts none of the parent's kernels (rpc_after_fork), and a
     * kernel its one thread was running at the fork ends after that. */
    while (!atomic_compare_exchange_weak_explicit(&dev->state->kernels_running, &old,
                                                  old > count ? old - count : 0,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    if (rpc_forked(head) && rpc_after_fork(dev, &err) != TETHER_OK) {
        return; /* a GPU in a fork child: nothing to drain */
    }
    for (struct rpc_image_server *n = head; n != NULL; n = n->next)
        for (uint32_t i = 0; i < count; i++)
            tether_rpc_server_kernel_finished(n->srv);
}
