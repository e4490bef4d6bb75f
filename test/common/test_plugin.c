/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_plugin.c - the generic layer over the host backend, without libomptarget:
 * ops-table checks, lazy devices, alloc kinds, the pinned map through lock/unlock and host
 * allocations, transfers, queues and the Queue = NULL contract, events, target tables built
 * from a real image, kernel launches (argument = TgtArgs + TgtOffsets), error messages, device
 * info, and many threads at once (run under TSan too).
 * argv[1]: the real x86_64 image (test/common/image_src.c).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "fault_ops.h"
#include "plugin_core.h"
#include "real_image.h"
#include "tcheck.h"

extern const struct plugin_ops plugin_backend_ops; /* the host backend */

static struct plugin *make_plugin(void)
{
    struct tether_error err = {{0}};
    struct plugin *p = NULL;

    fault_reset(&plugin_backend_ops, 0);
    CHECK_RC(plugin_create(&fault_ops, &p, &err), TETHER_OK);
    return p;
}

static void test_ops_checks(void)
{
    struct tether_error err = {{0}};
    struct plugin_ops bad = fault_ops;
    struct plugin *p = NULL;

    bad.version = PLUGIN_OPS_VERSION + 1;
    CHECK_RC(plugin_create(&bad, &p, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "version");
    bad = fault_ops;
    bad.launch = NULL;
    CHECK_RC(plugin_create(&bad, &p, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "required slot launch is NULL");
    bad = fault_ops;
    bad.queue_query = NULL; /* every copy and launch goes on a queue: required */
    CHECK_RC(plugin_create(&bad, &p, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "required slot queue_query is NULL");
    bad = fault_ops;
    bad.event_wait = NULL;
    CHECK_RC(plugin_create(&bad, &p, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "event slots must be all set or all NULL");
    bad = fault_ops;
    bad.host_unregister = NULL;
    CHECK_RC(plugin_create(&bad, &p, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "pairs");
    CHECK_RC(plugin_create(NULL, &p, &err), TETHER_ERR_INVALID);
    CHECK(p == NULL);
}

static void test_devices(void)
{
    struct tether_error err = {{0}};
    struct plugin_device *d0 = NULL, *d0b = NULL;
    struct tether_device_info info;
    struct plugin *p;
    int32_t local = -1;

    setenv("TETHER_X86_64_DEVICES", "3", 1);
    p = make_plugin();
    unsetenv("TETHER_X86_64_DEVICES");
    if (p == NULL) {
        return;
    }
    CHECK(p->num_devices == 3);
    CHECK(plugin_device_peek(p, 0) == NULL); /* lazy */
    CHECK(atomic_load(&fault.devices) == 0);
    CHECK_RC(plugin_device_get(p, 0, &d0, &err), TETHER_OK);
    CHECK_RC(plugin_device_get(p, 0, &d0b, &err), TETHER_OK);
    CHECK(d0 != NULL && d0 == d0b && d0->id == 0 && d0->plugin == p);
    CHECK(atomic_load(&fault.devices) == 1);
    CHECK(plugin_device_peek(p, 0) == d0);
    CHECK(d0->limits.warp_size == 1 && d0->limits.max_threads >= 1);
    CHECK_RC(plugin_device_get(p, 3, &d0, &err), TETHER_ERR_NO_DEVICE);
    CHECK_MSG(err.msg, "device 3 does not exist (3 devices)");
    CHECK_RC(plugin_device_get(p, -1, &d0, &err), TETHER_ERR_NO_DEVICE);
    /* No libomptarget in the global scope: global ids are local ids. */
    CHECK_RC(plugin_global_to_local(p, 2, &local, &err), TETHER_OK);
    CHECK(local == 2);
    CHECK_RC(plugin_global_to_local(p, 3, &local, &err), TETHER_ERR_NO_DEVICE);
    CHECK_MSG(err.msg, "not one of this plugin's devices 0..2");
    CHECK_RC(plugin_device_describe(p, 1, &info, &err), TETHER_OK);
    CHECK(info.local_id == 1 && info.plugin_devices == 3 && strcmp(info.plugin, "x86_64") == 0);
    CHECK(strcmp(info.library, "libomptarget.rtl.x86_64.nextgen.so") == 0);
    CHECK(strstr(info.name, "host CPU 1") != NULL);
    CHECK(atomic_load(&fault.devices) == 2);
    plugin_destroy(p);
    CHECK(fault_live() == 0);

    /* An out-of-range device count falls back to the default with a warning. */
    setenv("TETHER_X86_64_DEVICES", "999", 1);
    {
        struct capture cap;
        char out[1024];

        capture_begin(&cap, 2);
        p = make_plugin();
        capture_end(&cap, out, sizeof(out));
        CHECK_MSG(out, "tether: warning: TETHER_X86_64_DEVICES=999 is out of range (1 to 64); "
                       "using 4");
    }
    unsetenv("TETHER_X86_64_DEVICES");
    CHECK(p != NULL && p->num_devices == 4);
    plugin_destroy(p);
}

static void test_memory(void)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev = NULL;
    void *ptrs[4] = {NULL, NULL, NULL, NULL};
    void *dp = NULL, *x = NULL;
    struct plugin *p = make_plugin();
    char *buf;

    if (p == NULL || plugin_device_get(p, 0, &dev, &err) != TETHER_OK) {
        CHECK(0);
        return;
    }
    for (int32_t kind = 0; kind < 4; kind++) {
        CHECK_RC(plugin_data_alloc(dev, 4096, kind, &ptrs[kind], &err), TETHER_OK);
        CHECK(ptrs[kind] != NULL && ((uintptr_t)ptrs[kind] & 63) == 0);
    }
    CHECK_RC(plugin_data_alloc(dev, 16, 7, &x, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "allocation kind 7");
    CHECK_RC(plugin_data_alloc(dev, 0, 0, &x, &err), TETHER_ERR_INVALID);
    CHECK(x == NULL);
    /* HOST memory is registered in the pinned map: one entry, device address = host address. */
    CHECK(plugin_pinned_count(dev) == 1);
    CHECK_RC(plugin_data_lock(dev, (char *)ptrs[1] + 100, 50, &dp, &err), TETHER_OK);
    CHECK(dp == (char *)ptrs[1] + 100);
    CHECK_RC(plugin_data_delete(dev, ptrs[1], 1, &err), TETHER_ERR_BUSY); /* still locked */
    CHECK_RC(plugin_data_unlock(dev, (char *)ptrs[1] + 120, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, (char *)ptrs[1] + 8, 1, &err), TETHER_ERR_NOT_FOUND);
    for (int32_t kind = 0; kind < 4; kind++) {
        CHECK_RC(plugin_data_delete(dev, ptrs[kind], kind, &err), TETHER_OK);
    }
    CHECK(plugin_pinned_count(dev) == 0);
    CHECK(atomic_load(&fault.allocs) == 0);

    /* lock/unlock: the pinned map's rules, host_register only for a new range. */
    buf = malloc(1 << 16);
    CHECK_RC(plugin_data_lock(dev, buf + 1024, 4096, &dp, &err), TETHER_OK);
    CHECK(dp == buf + 1024);
    CHECK(atomic_load(&fault.registers) == 1);
    CHECK_RC(plugin_data_lock(dev, buf + 2048, 100, &dp, &err), TETHER_OK); /* inside */
    CHECK(dp == buf + 2048);
    CHECK(atomic_load(&fault.registers) == 1);
    CHECK_RC(plugin_data_lock(dev, buf + 4096, 4096, &dp, &err), TETHER_ERR_OVERLAP); /* extends */
    CHECK_RC(plugin_data_lock(dev, buf, 2048, &dp, &err), TETHER_ERR_OVERLAP); /* from below */
    CHECK_RC(plugin_data_lock(dev, buf + 8192, 1024, &dp, &err), TETHER_OK);   /* separate */
    CHECK_RC(plugin_data_lock(dev, buf + 5000, 4000, &dp, &err), TETHER_ERR_OVERLAP); /* straddle */
    CHECK_RC(plugin_data_lock(dev, buf, 0, &dp, &err), TETHER_ERR_INVALID);
    CHECK_RC(plugin_data_lock(dev, NULL, 10, &dp, &err), TETHER_ERR_INVALID);
    CHECK(plugin_pinned_count(dev) == 2 && atomic_load(&fault.registers) == 2);
    CHECK_RC(plugin_data_unlock(dev, buf + 60000, &err), TETHER_ERR_NOT_FOUND);
    CHECK_RC(plugin_data_unlock(dev, buf + 3000, &err), TETHER_OK); /* interior pointer */
    CHECK(plugin_pinned_count(dev) == 2);
    CHECK_RC(plugin_data_unlock(dev, buf + 1024, &err), TETHER_OK);
    CHECK(plugin_pinned_count(dev) == 1 && atomic_load(&fault.registers) == 1);
    CHECK_RC(plugin_data_unlock(dev, buf + 1024, &err), TETHER_ERR_NOT_FOUND);
    /* A range left locked is unpinned when the plugin goes. */
    plugin_destroy(p);
    CHECK(fault_live() == 0);
    free(buf);
}

/* The device a lock or unlock names is the one whose backend pins or unpins (the pinned map hands
 * it to its callbacks with each call); at shutdown, the first live device unpins what is left. */
static void test_pin_device(void)
{
    struct tether_error err = {{0}};
    struct plugin_device *d1 = NULL, *d2 = NULL;
    struct plugin *p;
    void *dev_ptr = NULL;
    char *buf = malloc(8192);

    setenv("TETHER_X86_64_DEVICES", "3", 1);
    p = make_plugin();
    unsetenv("TETHER_X86_64_DEVICES");
    if (p == NULL || buf == NULL || plugin_device_get(p, 2, &d2, &err) != TETHER_OK ||
        plugin_device_get(p, 1, &d1, &err) != TETHER_OK) {
        CHECK(!"set-up");
        free(buf);
        return;
    }
    CHECK_RC(plugin_data_lock(d2, buf, 8192, &dev_ptr, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&fault.register_dev), 2);
    CHECK_RC(plugin_data_lock(d1, buf + 16, 16, &dev_ptr, &err), TETHER_OK); /* inside */
    CHECK_RC(plugin_data_unlock(d2, buf + 16, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&fault.unregister_dev), -1); /* a reference is left */
    CHECK_RC(plugin_data_unlock(d1, buf, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&fault.unregister_dev), 1);
    CHECK_RC(plugin_data_lock(d2, buf, 4096, &dev_ptr, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&fault.register_dev), 2);
    plugin_destroy(p);
    CHECK_EQ(atomic_load(&fault.unregister_dev), 1); /* the lowest live id */
    CHECK(fault_live() == 0);
    free(buf);
}

static void test_transfers(void)
{
    struct tether_error err = {{0}};
    struct tgt_async_info async = {NULL};
    struct plugin_device *dev = NULL, *dev1 = NULL;
    void *d = NULL, *d1 = NULL, *ev = NULL, *ev2 = NULL;
    char src[256], dst[256];
    struct plugin *p = make_plugin();
    void *q1;

    if (p == NULL || plugin_device_get(p, 0, &dev, &err) != TETHER_OK ||
        plugin_device_get(p, 1, &dev1, &err) != TETHER_OK) {
        CHECK(0);
        return;
    }
    for (int i = 0; i < 256; i++) {
        src[i] = (char)i;
    }
    CHECK_RC(plugin_data_alloc(dev, 256, 3, &d, &err), TETHER_OK);
    CHECK_RC(plugin_data_alloc(dev1, 256, 0, &d1, &err), TETHER_OK);
    /* Synchronous: the copy goes on a queue of the call's own, synchronised at its end and given
     * back to the pool (one queue serves every synchronous call that follows). */
    CHECK_RC(plugin_data_submit(dev, d, src, 256, NULL, &err), TETHER_OK);
    CHECK_EQ(atomic_load(&fault.syncs), 1);
    CHECK_EQ(atomic_load(&fault.queues), 1);
    memset(dst, 0, sizeof(dst));
    CHECK_RC(plugin_data_retrieve(dev, dst, d, 256, NULL, &err), TETHER_OK);
    CHECK(memcmp(src, dst, 256) == 0);
    CHECK_EQ(atomic_load(&fault.syncs), 2);
    CHECK_EQ(atomic_load(&fault.queues), 1);
    CHECK_RC(plugin_data_submit(dev, d, NULL, 16, NULL, &err), TETHER_ERR_INVALID);
    CHECK_RC(plugin_data_submit(dev, d, src, -1, NULL, &err), TETHER_ERR_INVALID);
    CHECK_RC(plugin_data_submit(dev, d, src, 0, NULL, &err), TETHER_OK);

    /* Asynchronous: a queue is attached to AsyncInfo and released by synchronize. */
    CHECK_RC(plugin_data_submit(dev, d, src + 1, 128, &async, &err), TETHER_OK);
    CHECK(async.Queue != NULL);
    q1 = async.Queue;
    CHECK_RC(plugin_data_retrieve(dev, dst, d, 128, &async, &err), TETHER_OK);
    CHECK(async.Queue == q1); /* same queue for the same AsyncInfo */
    CHECK_RC(plugin_async_sync(dev, &async, &err), TETHER_OK);
    CHECK(async.Queue == NULL);
    CHECK(memcmp(src + 1, dst, 128) == 0);
    CHECK_RC(plugin_async_sync(dev, &async, &err), TETHER_OK); /* nothing to do */
    CHECK_RC(plugin_data_submit(dev, d, src, 8, &async, &err), TETHER_OK);
    CHECK(async.Queue == q1); /* pooled */
    CHECK(atomic_load(&fault.queues) == 1);
    CHECK_RC(plugin_async_query(dev, &async, &err), TETHER_OK);
    CHECK(async.Queue == NULL); /* done: released */

    /* Device to device, across two devices of the plugin. */
    CHECK(plugin_data_exchangeable(p));
    CHECK_RC(plugin_data_exchange(dev, d, dev1, d1, 64, NULL, &err), TETHER_OK);
    CHECK(memcmp(d1, src, 8) == 0);

    /* Events: created, recorded on a queue (which attaches one), waited, synced, pooled. */
    CHECK_RC(plugin_event_create(dev, &ev, &err), TETHER_OK);
    CHECK(ev != NULL);
    CHECK_RC(plugin_event_record(dev, ev, &async, &err), TETHER_OK);
    CHECK(async.Queue != NULL);
    CHECK_RC(plugin_event_wait(dev, ev, &async, &err), TETHER_OK);
    CHECK_RC(plugin_event_sync(dev, ev, &err), TETHER_OK);
    CHECK_RC(plugin_async_sync(dev, &async, &err), TETHER_OK);
    CHECK_RC(plugin_event_destroy(dev, ev, &err), TETHER_OK);
    CHECK_RC(plugin_event_create(dev, &ev2, &err), TETHER_OK);
    CHECK(ev2 == ev); /* from the pool */
    CHECK(atomic_load(&fault.events) == 1);
    CHECK_RC(plugin_event_destroy(dev, ev2, &err), TETHER_OK);
    CHECK_RC(plugin_event_record(dev, NULL, &async, &err), TETHER_ERR_INVALID);

    CHECK_RC(plugin_data_delete(dev, d, 3, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev1, d1, 0, &err), TETHER_OK);
    plugin_destroy(p);
    CHECK(fault_live() == 0);
}

static void test_image_load(const char *path)
{
    struct tether_error err = {{0}};
    struct tgt_target_table *table = NULL;
    struct plugin_device *dev = NULL, *dev1 = NULL;
    struct tgt_kernel_args ka;
    struct real_image ri;
    struct plugin *p;
    int value[2] = {0, 1};
    void *targs[1];
    ptrdiff_t offs[1];
    int dev_global = 0;
    long dev_array0 = 0;

    CHECK(real_image_open(path, &ri));
    if (ri.bytes == NULL || ri.kernel < 0) {
        return;
    }
    p = make_plugin();
    if (p == NULL || plugin_device_get(p, 0, &dev, &err) != TETHER_OK ||
        plugin_device_get(p, 1, &dev1, &err) != TETHER_OK) {
        CHECK(0);
        return;
    }
    CHECK(plugin_image_valid(p, &ri.dimg, ""));
    CHECK_RC(plugin_image_load(dev, &ri.dimg, &table, &err), TETHER_OK);
    if (table == NULL) {
        fprintf(stderr, "load: %s\n", err.msg);
        plugin_destroy(p);
        real_image_close(&ri);
        return;
    }
    /* One entry per host entry, same order, same names and sizes; globals at device addresses
     * holding the image's initial values; kernels are opaque handles. */
    CHECK((size_t)(table->EntriesEnd - table->EntriesBegin) == ri.count);
    for (size_t i = 0; i < ri.count; i++) {
        CHECK(table->EntriesBegin[i].name == ri.entries[i].name);
        CHECK(table->EntriesBegin[i].size == ri.entries[i].size);
        CHECK(table->EntriesBegin[i].addr != NULL);
        CHECK(table->EntriesBegin[i].addr != ri.entries[i].addr);
    }
    CHECK_RC(plugin_data_retrieve(dev, &dev_global, table->EntriesBegin[ri.global].addr,
                                  sizeof(int), NULL, &err),
             TETHER_OK);
    CHECK(dev_global == 5);

    /* Launch: the kernel gets TgtArgs[i] + TgtOffsets[i] (here a base 4 bytes before). */
    memset(&ka, 0, sizeof(ka));
    ka.Version = 2;
    ka.NumArgs = 1;
    targs[0] = value;
    offs[0] = sizeof(int);
    CHECK_RC(plugin_launch_kernel(dev, table->EntriesBegin[ri.kernel].addr, targs, offs, &ka, NULL,
                                  &err),
             TETHER_OK);
    CHECK(value[1] == 7 && value[0] == 0); /* 2 * 1 + 5 */
    CHECK_RC(plugin_data_retrieve(dev, &dev_array0, table->EntriesBegin[ri.array].addr,
                                  sizeof(long), NULL, &err),
             TETHER_OK);
    CHECK(dev_array0 == 7);
    /* Asynchronous launch: queued, then synchronised. */
    {
        struct tgt_async_info async = {NULL};

        value[1] = 2;
        CHECK_RC(plugin_launch_kernel(dev, table->EntriesBegin[ri.kernel].addr, targs, offs, &ka,
                                      &async, &err),
                 TETHER_OK);
        CHECK(async.Queue != NULL);
        CHECK_RC(plugin_async_sync(dev, &async, &err), TETHER_OK);
        CHECK(value[1] == 9 && async.Queue == NULL);
    }
    ka.Version = 3;
    CHECK_RC(plugin_launch_kernel(dev, table->EntriesBegin[ri.kernel].addr, targs, offs, &ka, NULL,
                                  &err),
             TETHER_ERR_UNSUPPORTED);
    CHECK_MSG(err.msg, "KernelArgs version 3");
    ka.Version = 2;
    CHECK_RC(plugin_launch_kernel(dev, value, targs, offs, &ka, NULL, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "is not a kernel of this plugin");
    CHECK_RC(plugin_launch_kernel(dev1, table->EntriesBegin[ri.kernel].addr, targs, offs, &ka, NULL,
                                  &err),
             TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "belongs to device 0");

    /* Each device loads its own copy: separate globals. */
    {
        struct tgt_target_table *t1 = NULL;
        int seven = 7, back = 0;

        CHECK_RC(plugin_image_load(dev1, &ri.dimg, &t1, &err), TETHER_OK);
        if (t1 != NULL) {
            CHECK(t1->EntriesBegin[ri.global].addr != table->EntriesBegin[ri.global].addr);
            CHECK_RC(plugin_data_submit(dev1, t1->EntriesBegin[ri.global].addr, &seven, sizeof(int),
                                        NULL, &err),
                     TETHER_OK);
            CHECK_RC(plugin_data_retrieve(dev, &back, table->EntriesBegin[ri.global].addr,
                                          sizeof(int), NULL, &err),
                     TETHER_OK);
            CHECK(back == 5);
        }
    }

    /* A host entry whose size differs from the device's is refused, naming both sizes. */
    ri.entries[ri.global].size = 8;
    CHECK_RC(plugin_image_load(dev, &ri.dimg, &table, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "global tether_test_global has 4 bytes on the device, 8 on the host");
    ri.entries[ri.global].size = 4;
    /* An entry the image lacks. */
    strcpy(ri.names[ri.array], "tether_no_such_global");
    CHECK_RC(plugin_image_load(dev, &ri.dimg, &table, &err), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "tether_no_such_global");
    strcpy(ri.names[ri.array], "tether_test_array");
    /* Not an ELF for this backend. */
    {
        struct tgt_device_image junk = ri.dimg;
        char bytes[64] = "not an image";

        junk.ImageStart = bytes;
        junk.ImageEnd = bytes + sizeof(bytes);
        CHECK(!plugin_image_valid(p, &junk, NULL));
        CHECK_RC(plugin_image_load(dev, &junk, &table, &err), TETHER_ERR_BAD_IMAGE);
    }
    {
        struct tether_device_info info;

        CHECK_RC(plugin_device_describe(p, 0, &info, &err), TETHER_OK);
        CHECK(info.images_loaded == 1);
    }
    plugin_destroy(p);
    CHECK(fault_live() == 0);
    real_image_close(&ri);
}

static void test_messages(void)
{
    struct tether_error err = {{0}};
    struct capture cap;
    char out[4096];
    struct plugin *p = make_plugin();

    if (p == NULL) {
        return;
    }
    plugin_error_set(&err, TETHER_ERR_OVERLAP, "range %d", 7);
    capture_begin(&cap, 2);
    plugin_report(p, 1, "data_lock(0x10, 4 bytes)", TETHER_ERR_OVERLAP, &err);
    plugin_report(p, -1, "init_plugin", TETHER_ERR_NO_DRIVER, NULL);
    capture_end(&cap, out, sizeof(out));
    CHECK_MSG(out, "tether (x86_64): device 1: data_lock(0x10, 4 bytes) failed: range overlaps a "
                   "locked range without lying inside it: range 7\n");
    CHECK_MSG(out, "tether (x86_64): init_plugin failed: vendor driver not available\n");
    capture_begin(&cap, 1);
    plugin_print_device_info(p, 2);
    capture_end(&cap, out, sizeof(out));
    CHECK_MSG(out, "libomptarget.rtl.x86_64.nextgen.so (local device 2 of 4)");
    CHECK_MSG(out, "Pinned ranges");
    CHECK_MSG(out, "Fault wrapper"); /* the backend's own lines */
    CHECK_MSG(out, "memfd_create");
    plugin_destroy(p);
}

/* ---- many threads at once ----------------------------------------------------------------- */

struct worker {
    struct plugin *p;
    char *shared; /* 64 KiB every thread locks pieces of */
    int id;
    int errors;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct tether_error err;
    struct plugin_device *dev;

    if (plugin_device_get(w->p, w->id % 2, &dev, &err) != TETHER_OK) {
        w->errors++;
        return NULL;
    }
    for (int it = 0; it < 300; it++) {
        struct tgt_async_info async = {NULL};
        char local[64], back[64];
        void *dp, *h = NULL, *d = NULL, *ev = NULL;
        char *piece = w->shared + (size_t)(it % 8) * 8192;

        /* Every thread locks the same 8 pieces and sub-ranges of them. */
        w->errors += plugin_data_lock(dev, piece, 8192, &dp, &err) != TETHER_OK;
        w->errors += plugin_data_lock(dev, piece + 64, 64, &dp, &err) != TETHER_OK;
        w->errors += plugin_data_unlock(dev, piece + 100, &err) != TETHER_OK;
        w->errors += plugin_data_alloc(dev, 64, 1, &h, &err) != TETHER_OK;
        w->errors += plugin_data_alloc(dev, 64, 3, &d, &err) != TETHER_OK;
        memset(local, w->id, sizeof(local));
        w->errors += plugin_data_submit(dev, d, local, 64, &async, &err) != TETHER_OK;
        w->errors += plugin_event_create(dev, &ev, &err) != TETHER_OK;
        w->errors += plugin_event_record(dev, ev, &async, &err) != TETHER_OK;
        w->errors += plugin_data_retrieve(dev, back, d, 64, &async, &err) != TETHER_OK;
        w->errors += plugin_async_sync(dev, &async, &err) != TETHER_OK;
        w->errors += async.Queue != NULL;
        w->errors += memcmp(local, back, 64) != 0;
        w->errors += plugin_event_destroy(dev, ev, &err) != TETHER_OK;
        w->errors += plugin_data_delete(dev, d, 3, &err) != TETHER_OK;
        w->errors += plugin_data_delete(dev, h, 1, &err) != TETHER_OK;
        w->errors += plugin_data_unlock(dev, piece, &err) != TETHER_OK;
    }
    return NULL;
}

/* Six threads over two devices; `cache`: with the device allocation cache on (a block handed to
 * two threads at once would mix their bytes, which the workers check). */
static void test_threads(bool cache)
{
    enum { N = 6 };
    struct tether_error err = {{0}};
    struct worker w[N];
    pthread_t t[N];
    if (cache)
        unsetenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD");
    struct plugin *p = make_plugin();
    setenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0", 1);
    struct plugin_device *dev;
    char *shared = malloc(1 << 16);

    if (p == NULL || shared == NULL) {
        CHECK(0);
        free(shared);
        return;
    }
    for (int i = 0; i < N; i++) {
        w[i] = (struct worker){.p = p, .shared = shared, .id = i, .errors = 0};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].errors == 0);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_RC(plugin_device_get(p, i, &dev, &err), TETHER_OK);
        CHECK(plugin_pinned_count(dev) == 0);
    }
    /* Without the cache nothing is left; with it, at most one cached block per thread. */
    CHECK(atomic_load(&fault.registers) == 0 && atomic_load(&fault.allocs) <= (cache ? N : 0));
    CHECK(atomic_load(&fault.devices) == 2); /* each created once despite the race */
    plugin_destroy(p);
    CHECK(fault_live() == 0);
    free(shared);
}

/* The device allocation cache (common/plugin_pool.c), over the fault backend's live counts. */
static void test_pool(void)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev = NULL, *dev1 = NULL;
    void *a = NULL, *b = NULL, *c = NULL, *big = NULL, *h = NULL;
    struct plugin *p;

    unsetenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD"); /* the default: blocks up to 4 MiB */
    p = make_plugin();
    if (p == NULL || plugin_device_get(p, 0, &dev, &err) != TETHER_OK) {
        CHECK(0);
        return;
    }
    /* A freed block is kept and handed to the next allocation of its class (256 bytes). */
    CHECK_RC(plugin_data_alloc(dev, 100, 0, &a, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 1);
    CHECK_RC(plugin_data_delete(dev, a, 0, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 1); /* cached, not freed */
    long calls = atomic_load(&fault.calls);
    CHECK_RC(plugin_data_alloc(dev, 256, 3 /* DEFAULT: device memory */, &b, &err), TETHER_OK);
    CHECK(b == a && atomic_load(&fault.calls) == calls); /* no backend call */
    /* Another class: a new block; the block in use is not handed out twice. */
    CHECK_RC(plugin_data_alloc(dev, 300, 0, &c, &err), TETHER_OK);
    CHECK(c != NULL && c != b && atomic_load(&fault.allocs) == 2);
    /* Above the threshold: straight to the backend and back. */
    CHECK_RC(plugin_data_alloc(dev, (8 << 20) + 1, 0, &big, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 3);
    CHECK_RC(plugin_data_delete(dev, big, 0, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 2);
    /* HOST memory is not cached. */
    CHECK_RC(plugin_data_alloc(dev, 100, 1, &h, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, h, 1, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 2);
    /* Out of memory: the cached blocks go back to the backend and the allocation is tried
     * again.  b (256) and c (512) cached; a 1024-byte block fails once with NO_MEMORY. */
    CHECK_RC(plugin_data_delete(dev, b, 0, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, c, 0, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 2);
    fault.fail_status = TETHER_ERR_NO_MEMORY;
    fault.fail_at = atomic_load(&fault.calls) + 1;
    CHECK_RC(plugin_data_alloc(dev, 1000, 0, &a, &err), TETHER_OK);
    CHECK(atomic_load(&fault.failed) == 1 && atomic_load(&fault.allocs) == 1);
    fault.fail_at = 0;
    /* A failure that is not about memory is returned as it is, cache or not. */
    CHECK_RC(plugin_data_delete(dev, a, 0, &err), TETHER_OK); /* cached again */
    fault.fail_status = TETHER_ERR_DRIVER;
    fault.fail_at = atomic_load(&fault.calls) + 1;
    CHECK_RC(plugin_data_alloc(dev, 5000, 0, &big, &err), TETHER_ERR_DRIVER);
    CHECK(atomic_load(&fault.allocs) == 1); /* the cached block stays */
    fault.fail_at = 0;
    /* A cache of at most 256 bytes (device 1): the second free goes to the backend. */
    setenv("TETHER_ALLOC_CACHE_BYTES", "256", 1);
    CHECK_RC(plugin_device_get(p, 1, &dev1, &err), TETHER_OK);
    unsetenv("TETHER_ALLOC_CACHE_BYTES");
    CHECK_RC(plugin_data_alloc(dev1, 200, 0, &b, &err), TETHER_OK);
    CHECK_RC(plugin_data_alloc(dev1, 200, 0, &c, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 3);
    CHECK_RC(plugin_data_delete(dev1, b, 0, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev1, c, 0, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 2);
    /* Shutdown gives every cached block back. */
    plugin_destroy(p);
    CHECK(fault_live() == 0);

    /* LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0: no cache. */
    setenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0", 1);
    p = make_plugin();
    if (p == NULL || plugin_device_get(p, 0, &dev, &err) != TETHER_OK) {
        CHECK(0);
        return;
    }
    CHECK_RC(plugin_data_alloc(dev, 100, 0, &a, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, a, 0, &err), TETHER_OK);
    CHECK(atomic_load(&fault.allocs) == 0);
    /* Every allocation is recorded until its free; allocations that come and go (200,000, at
     * most 512 live, device and shared; sizes above malloc's per-thread cache, so that freed blocks
     * count as free) leave the record no larger than 512 need. */
    {
        enum { LIVE = 512 };
        void *live[LIVE] = {NULL};
        size_t before = mallinfo2().uordblks;

        for (int i = 0; i < 200000; i++) {
            int k = (int)(((unsigned)i * 2654435761u) >> 7) % LIVE;

            if (live[k] != NULL) {
                CHECK_RC(plugin_data_delete(dev, live[k], 3, &err), TETHER_OK);
            }
            CHECK_RC(
                plugin_data_alloc(dev, 4096 + (i % 61) * 64, i % 2 == 0 ? 0 : 2, &live[k], &err),
                TETHER_OK);
        }
        for (int k = 0; k < LIVE; k++) {
            CHECK_RC(plugin_data_delete(dev, live[k], 3, &err), TETHER_OK);
        }
        CHECK(mallinfo2().uordblks < before + (128 << 10)); /* 512 live: a 36 KiB table */
    }
    plugin_destroy(p);
}

int main(int argc, char **argv)
{
    /* The tests below count the backend's live allocations: without the allocation cache (it
     * has a test of its own, test_pool). */
    setenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0", 1);
    test_ops_checks();
    test_devices();
    test_memory();
    test_pin_device();
    test_transfers();
    test_messages();
    test_threads(false);
    test_threads(true);
    test_pool();
    setenv("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0", 1);
    if (argc > 1) {
        test_image_load(argv[1]);
    }
    return tcheck_exit("test_plugin");
}
