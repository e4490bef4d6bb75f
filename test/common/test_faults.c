/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_faults.c - driver-failure injection (style rule 12).
 *
 * A scenario that uses every acquiring backend slot (plugin and device creation, each alloc
 * kind, lock/unlock, sync and async transfers, device-to-device, queues, events, image load with
 * globals and kernels, launches) runs once to count its backend calls, then once per call N with
 * call N failing.  Each run must: see the failure come back as an error carrying the driver's
 * message, leave the plugin usable for cleanup, and after plugin_destroy hold no live backend
 * object (so every cleanup label in common ran).  argv[1]: the real x86_64 image.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_ops.h"
#include "plugin_core.h"
#include "real_image.h"
#include "tcheck.h"

extern const struct plugin_ops plugin_backend_ops;

static struct real_image image;
static bool have_image;

#define STEP(expr)                                                                                 \
    do {                                                                                           \
        rc = (expr);                                                                               \
        if (rc != TETHER_OK) {                                                                     \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Returns the first error (and its message), after undoing what it did. */
static tether_status_t scenario(struct tether_error *err)
{
    struct tgt_async_info async = {NULL};
    struct plugin_device *d0 = NULL, *d1 = NULL;
    struct tgt_target_table *table = NULL;
    void *mem[4] = {NULL, NULL, NULL, NULL};
    void *dp, *ev = NULL, *d1mem = NULL;
    struct plugin *p = NULL;
    char buf[4096], back[256];
    bool locked = false;
    tether_status_t rc;

    rc = plugin_create(&fault_ops, &p, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    STEP(plugin_device_get(p, 0, &d0, err));
    STEP(plugin_device_get(p, 1, &d1, err));
    for (int32_t kind = 0; kind < 4; kind++) {
        STEP(plugin_data_alloc(d0, 256, kind, &mem[kind], err));
    }
    STEP(plugin_data_alloc(d1, 256, 0, &d1mem, err));
    STEP(plugin_data_lock(d0, buf, sizeof(buf), &dp, err));
    locked = true;
    STEP(plugin_data_lock(d0, buf + 16, 16, &dp, err));
    STEP(plugin_data_unlock(d0, buf + 16, err));
    memset(buf, 3, sizeof(buf));
    STEP(plugin_data_submit(d0, mem[0], buf, 256, NULL, err));
    STEP(plugin_data_retrieve(d0, back, mem[0], 256, NULL, err));
    STEP(plugin_data_submit(d0, mem[3], buf, 256, &async, err));
    STEP(plugin_event_create(d0, &ev, err));
    STEP(plugin_event_record(d0, ev, &async, err));
    STEP(plugin_event_wait(d0, ev, &async, err));
    STEP(plugin_event_sync(d0, ev, err));
    STEP(plugin_data_retrieve(d0, back, mem[3], 256, &async, err));
    STEP(plugin_async_query(d0, &async, err));
    STEP(plugin_data_submit(d0, mem[3], buf, 256, &async, err));
    STEP(plugin_async_sync(d0, &async, err));
    STEP(plugin_data_exchange(d0, mem[0], d1, d1mem, 256, NULL, err));
    if (have_image) {
        struct tgt_kernel_args ka;
        int value[1] = {1};
        void *targs[1] = {value};
        ptrdiff_t offs[1] = {0};

        STEP(plugin_image_load(d0, &image.dimg, &table, err));
        memset(&ka, 0, sizeof(ka));
        ka.Version = 2;
        ka.NumArgs = 1;
        STEP(plugin_launch_kernel(d0, table->EntriesBegin[image.kernel].addr, targs, offs, &ka,
                                  &async, err));
        STEP(plugin_async_sync(d0, &async, err));
        if (value[0] != 7) {
            rc = plugin_error_set(err, TETHER_ERR_INTERNAL, "kernel computed %d", value[0]);
        }
    }
out:
    /* What a well-behaved caller (libomptarget) does after a failure. */
    if (async.Queue != NULL) {
        struct tether_error ignored;

        plugin_async_sync(d0, &async, &ignored);
        if (async.Queue != NULL) {
            rc = plugin_error_set(err, TETHER_ERR_INTERNAL, "Queue not NULL after synchronize");
        }
    }
    if (ev != NULL) {
        plugin_event_destroy(d0, ev, NULL);
    }
    if (locked) {
        plugin_data_unlock(d0, buf, NULL);
    }
    for (int32_t kind = 0; kind < 4; kind++) {
        if (mem[kind] != NULL) {
            plugin_data_delete(d0, mem[kind], kind, NULL);
        }
    }
    if (d1mem != NULL) {
        plugin_data_delete(d1, d1mem, 0, NULL);
    }
    plugin_destroy(p);
    return rc;
}

int main(int argc, char **argv)
{
    struct tether_error err = {{0}};
    tether_status_t rc;
    long total;

    if (argc > 1) {
        have_image = real_image_open(argv[1], &image);
        CHECK(have_image);
    }
    fault_reset(&plugin_backend_ops, 0);
    rc = scenario(&err);
    CHECK_RC(rc, TETHER_OK);
    if (rc != TETHER_OK) {
        fprintf(stderr, "clean run failed: %s\n", err.msg);
    }
    total = atomic_load(&fault.calls);
    CHECK(fault_live() == 0);
    CHECK(total >= 20);
    printf("scenario makes %ld acquiring backend calls\n", total);
    for (long n = 1; n <= total; n++) {
        memset(&err, 0, sizeof(err));
        fault_reset(&plugin_backend_ops, n);
        rc = scenario(&err);
        CHECK(atomic_load(&fault.failed) == 1);
        CHECK_RC(rc, TETHER_ERR_DRIVER);
        CHECK_MSG(err.msg, "injected failure");
        if (fault_live() != 0) {
            char what[64];

            snprintf(what, sizeof(what), "after failing call %ld", n);
            fault_dump(what);
            CHECK(fault_live() == 0);
        }
    }
    if (have_image) {
        real_image_close(&image);
    }
    return tcheck_exit("test_faults");
}
