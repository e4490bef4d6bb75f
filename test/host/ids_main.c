/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/host/ids_main.c - global vs local device ids with two plugins.
 *
 * Two tether host-backend plugins serve this process: the test-only
 * libomptarget.rtl.ppc64.nextgen.so (which claims only images defining tether_test_claim, so it
 * gets libids_claim.so's image, registered first, and becomes OpenMP devices 0..3) and the real
 * libomptarget.rtl.x86_64.nextgen.so (this program's image: OpenMP devices 4..7, local 0..3).
 * libomptarget 16 passes the GLOBAL number to data_lock/data_unlock and the local one
 * elsewhere; tether must land every lock in the right device's pinned map.  (A plugin that took
 * the global number as local would fail device 5's lock: it has no local device 5.)
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcheck.h"
#include "tether/tether.h"

/* 1 when a region ran off the host on dev and saw its data. */
static int plain_run(int dev)
{
    int off_host = 0;
    char data[64];

    for (int i = 0; i < 64; i++) {
        data[i] = (char)i;
    }
#pragma omp target device(dev) map(tofrom : data) map(from : off_host)
    {
        int ok = 1;

        for (int i = 0; i < 64; i++) {
            ok &= data[i] == (char)i;
        }
        off_host = !omp_is_initial_device() && ok;
    }
    return off_host;
}

static long pinned(int dev)
{
    struct tether_device_info info;

    return tether_device_query(dev, &info) == TETHER_OK ? (long)info.pinned_ranges : -1;
}

static void check_device(int dev, const char *plugin, int local)
{
    struct tether_device_info info;

    CHECK(tether_device_query(dev, &info) == TETHER_OK);
    CHECK(strcmp(info.plugin, plugin) == 0);
    CHECK(info.local_id == local && info.omp_device == dev && info.plugin_devices == 4);
}

int main(void)
{
    char *buf = aligned_alloc(4096, 1 << 16);
    struct tether_device_info info;
    int xb, pb; /* first OpenMP device of the x86_64 and of the ppc64 plugin */

    /* libomptarget numbers devices in the order plugins first accepted an image: the library's
     * image went to the ppc64 plugin first, so the x86_64 plugin's devices are 4..7. */
    CHECK(omp_get_num_devices() == 8);
    CHECK(tether_device_query(0, &info) == TETHER_OK);
    xb = strcmp(info.plugin, "x86_64") == 0 ? 0 : 4;
    pb = 4 - xb;
    CHECK(xb == 4);
    printf("x86_64 plugin: devices %d..%d, ppc64 test plugin: devices %d..%d\n", xb, xb + 3, pb,
           pb + 3);
    for (int l = 0; l < 4; l++) {
        check_device(xb + l, "x86_64", l);
        check_device(pb + l, "ppc64", l);
    }
    /* Regions run on the x86_64 plugin's devices (the ppc64 plugin has no loadable image). */
    CHECK(plain_run(xb + 1) == 1);
    CHECK(plain_run(xb) == 1);

    /* Local device 1 of each plugin: global 5 (x86_64, offset 4) and global 1 (ppc64). */
    for (int k = 0; k < 2; k++) {
        int base = k == 0 ? xb : pb, other = k == 0 ? pb : xb;
        int d1 = base + 1, d0 = base;
        char *p, *q;

        /* Routed by the global number to the right plugin; one map per plugin. */
        p = llvm_omp_target_lock_mem(buf, 4096, d1);
        CHECK(p == buf);
        CHECK(pinned(d1) == 1 && pinned(d0) == 1 && pinned(other + 1) == 0);
        q = llvm_omp_target_lock_mem(buf + 100, 10, d0); /* inside, through another device */
        CHECK(q == buf + 100);
        CHECK(llvm_omp_target_lock_mem(buf, 8192, d1) == NULL); /* extends the range */
        CHECK(llvm_omp_target_lock_mem(buf, 8192, d0) == NULL); /* whichever device asks */
        CHECK(pinned(d0) == 1 && pinned(d1) == 1 && pinned(other) == 0);
        llvm_omp_target_unlock_mem(buf + 100, d0);
        CHECK(pinned(d0) == 1);
        llvm_omp_target_unlock_mem(buf, d1);
        CHECK(pinned(d0) == 0 && pinned(d1) == 0);
    }
    /* Transfers from memory locked on an x86_64 device, to a region there. */
    CHECK(llvm_omp_target_lock_mem(buf, 4096, xb + 2) == buf);
    CHECK(plain_run(xb + 2) == 1);
    llvm_omp_target_unlock_mem(buf, xb + 2);
    CHECK(pinned(xb + 2) == 0);
    free(buf);
    return tcheck_exit("host_ids");
}
