/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_info.c - which LIBOMPTARGET_INFO bit turns on which of tether's messages,
 * over the host backend without libomptarget.  Each bit works on its own:
 *   0x08  pinned-map changes (lock, unlock, host allocations)
 *   0x10  device init, image load, kernel launches
 *   0x20  transfers
 * TETHER_DEBUG (or LLVM's LIBOMPTARGET_DEBUG) prints all of them; __tgt_rtl_set_info_flag
 * (plugin_set_info_flags) changes the bits after start-up.  A launch on the host names no exec
 * mode and no teams x threads: host images have no <kernel>_exec_mode, and the outlined
 * function forks its own teams.
 * argv[1]: the real x86_64 image (test/common/image_src.c), for the launch.
 */
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "plugin_core.h"
#include "real_image.h"
#include "tcheck.h"

extern const struct plugin_ops plugin_backend_ops; /* the host backend */

static const char *image_path;

/* One of each: init, lock + unlock, a host allocation, a transfer each way, an image load and a
 * launch.  flags >= 0: set with plugin_set_info_flags after creation. */
static void scenario(int64_t flags, char *out, size_t len)
{
    struct tether_error err = {{0}};
    struct plugin_device *dev = NULL;
    struct plugin *p = NULL;
    struct capture cap;
    char buf[256], back[256];
    void *dp = NULL, *host = NULL, *d = NULL;
    struct real_image ri;
    bool have_image = image_path != NULL && real_image_open(image_path, &ri) && ri.kernel >= 0;

    capture_begin(&cap, 2);
    if (plugin_create(&plugin_backend_ops, &p, &err) != TETHER_OK) {
        capture_end(&cap, out, len);
        CHECK(0);
        return;
    }
    if (flags >= 0) {
        plugin_set_info_flags(p, (uint32_t)flags);
    }
    CHECK_RC(plugin_device_get(p, 0, &dev, &err), TETHER_OK);
    CHECK_RC(plugin_data_lock(dev, buf, sizeof(buf), &dp, &err), TETHER_OK);
    CHECK_RC(plugin_data_unlock(dev, buf, &err), TETHER_OK);
    CHECK_RC(plugin_data_alloc(dev, 64, PLUGIN_ALLOC_HOST, &host, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, host, PLUGIN_ALLOC_HOST, &err), TETHER_OK);
    CHECK_RC(plugin_data_alloc(dev, sizeof(buf), PLUGIN_ALLOC_DEVICE, &d, &err), TETHER_OK);
    memset(buf, 7, sizeof(buf));
    CHECK_RC(plugin_data_submit(dev, d, buf, sizeof(buf), NULL, &err), TETHER_OK);
    CHECK_RC(plugin_data_retrieve(dev, back, d, sizeof(back), NULL, &err), TETHER_OK);
    CHECK(memcmp(buf, back, sizeof(buf)) == 0);
    CHECK_RC(plugin_data_delete(dev, d, PLUGIN_ALLOC_DEVICE, &err), TETHER_OK);
    if (have_image) {
        struct tgt_target_table *table = NULL;
        struct tgt_kernel_args ka;
        int value[2] = {0, 1};
        void *targs[1] = {value};
        ptrdiff_t offs[1] = {sizeof(int)};

        CHECK(plugin_image_valid(p, &ri.dimg, ""));
        CHECK_RC(plugin_image_load(dev, &ri.dimg, &table, &err), TETHER_OK);
        memset(&ka, 0, sizeof(ka));
        ka.Version = 2;
        ka.NumArgs = 1;
        if (table != NULL) {
            CHECK_RC(plugin_launch_kernel(dev, table->EntriesBegin[ri.kernel].addr, targs, offs,
                                          &ka, NULL, &err),
                     TETHER_OK);
        }
    }
    plugin_destroy(p);
    capture_end(&cap, out, len);
    if (have_image) {
        real_image_close(&ri);
    }
}

static bool has(const char *out, const char *needle)
{
    return strstr(out, needle) != NULL;
}

/* What each group of messages looks like. */
#define MAPPING "locked "
#define MAPPING_HOST "registered as pinned"
#define TRANSFER "host to device 256 bytes"
#define PLUGIN_INIT "initialised host CPU 0"
#define PLUGIN_LAUNCH "launching kernel"

static void expect(const char *what, const char *out, bool mapping, bool plugin, bool transfer)
{
    fprintf(stderr, "--- %s\n%s", what, out);
    CHECK(has(out, MAPPING) == mapping);
    CHECK(has(out, "unlocked ") == mapping);
    CHECK(has(out, MAPPING_HOST) == mapping);
    CHECK(has(out, TRANSFER) == transfer);
    CHECK(has(out, "device to host 256 bytes") == transfer);
    CHECK(has(out, PLUGIN_INIT) == plugin);
    if (image_path != NULL) {
        CHECK(has(out, PLUGIN_LAUNCH) == plugin);
        CHECK(has(out, "loaded image") == plugin);
    }
}

int main(int argc, char **argv)
{
    static char out[16384];

    image_path = argc > 1 ? argv[1] : NULL;
    unsetenv("TETHER_DEBUG");
    unsetenv("LIBOMPTARGET_DEBUG");

    unsetenv("LIBOMPTARGET_INFO");
    scenario(-1, out, sizeof(out));
    CHECK(!has(out, "tether"));

    setenv("LIBOMPTARGET_INFO", "8", 1);
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_INFO=8", out, true, false, false);

    setenv("LIBOMPTARGET_INFO", "0x20", 1);
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_INFO=0x20", out, false, false, true);

    setenv("LIBOMPTARGET_INFO", "16", 1);
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_INFO=16", out, false, true, false);
    /* The host launch: no exec mode (the image has none), no teams x threads. */
    if (image_path != NULL) {
        CHECK(has(out, "on the host, 1 argument(s)"));
        CHECK(!has(out, "SPMD") && !has(out, "Generic") && !has(out, " mode"));
    }

    setenv("LIBOMPTARGET_INFO", "0x28", 1);
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_INFO=0x28", out, true, false, true);

    setenv("LIBOMPTARGET_INFO", "-1", 1); /* every bit, as libomptarget reads it */
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_INFO=-1", out, true, true, true);

    /* __tgt_rtl_set_info_flag: only what it sets. */
    setenv("LIBOMPTARGET_INFO", "0", 1);
    scenario(0x08, out, sizeof(out));
    expect("set_info_flag(0x08)", out, true, false, false);
    scenario(0x20, out, sizeof(out));
    expect("set_info_flag(0x20)", out, false, false, true);

    /* TETHER_DEBUG, or LLVM's LIBOMPTARGET_DEBUG: everything. */
    unsetenv("LIBOMPTARGET_INFO");
    setenv("TETHER_DEBUG", "1", 1);
    scenario(-1, out, sizeof(out));
    expect("TETHER_DEBUG=1", out, true, true, true);
    CHECK(has(out, "debug: "));
    unsetenv("TETHER_DEBUG");
    setenv("LIBOMPTARGET_DEBUG", "1", 1);
    scenario(-1, out, sizeof(out));
    expect("LIBOMPTARGET_DEBUG=1", out, true, true, true);
    CHECK(has(out, "debug: "));
    setenv("TETHER_DEBUG", "0", 1); /* tether's name wins */
    scenario(-1, out, sizeof(out));
    expect("TETHER_DEBUG=0 LIBOMPTARGET_DEBUG=1", out, false, false, false);
    CHECK(has(out, "TETHER_DEBUG=0 and LIBOMPTARGET_DEBUG=1 are both set; TETHER_DEBUG wins"));
    return tcheck_exit("test_info");
}
