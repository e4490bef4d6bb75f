/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c09: llvm_omp_target_lock_mem / unlock_mem follow the pinned map's rules on every device
 * (LLVM 16 accepts extending and overlapping locks: tether refuses them), and transfers from
 * locked memory work. */
#include "conformance.h"

#define MB (1 << 20)

int main(void)
{
    int dev = omp_get_default_device();
    char *buf = aligned_alloc(4096, MB);
    char *a = buf + 4096, *p1, *p2, *p3;
    struct conf_capture cap;
    char msg[4096];

    conf_require_tether(dev);
    CHECK(conf_pinned(dev) == 0);
    p1 = llvm_omp_target_lock_mem(a, 65536, dev);
    CHECK(p1 != NULL);
    CHECK(conf_pinned(dev) == 1);
    /* Inside: counted, same range, address at the same offset. */
    p2 = llvm_omp_target_lock_mem(a + 1000, 100, dev);
    CHECK(p2 != NULL && p2 == p1 + 1000);
    CHECK(conf_pinned(dev) == 1);
    /* Extending, from below, straddling: refused, nothing changes. */
    conf_capture_begin(&cap);
    CHECK(llvm_omp_target_lock_mem(a + 60000, 10000, dev) == NULL);
    CHECK(llvm_omp_target_lock_mem(buf, 8192, dev) == NULL);
    p3 = llvm_omp_target_lock_mem(buf + 200000, 4096, dev);
    CHECK(p3 != NULL);
    CHECK(llvm_omp_target_lock_mem(a + 65000, 200000, dev) == NULL);
    conf_capture_end(&cap, msg, sizeof(msg));
    CHECK(strstr(msg, "data_lock(") != NULL && strstr(msg, "overlaps") != NULL);
    CHECK(conf_pinned(dev) == 2);
    CHECK(llvm_omp_target_lock_mem(a, 0, dev) == NULL); /* size 0 */

    /* Transfers from and to locked memory. */
    for (int i = 0; i < 65536; i++) {
        a[i] = (char)(i & 0x7f);
    }
#pragma omp target map(tofrom : a [0:65536]) device(dev)
    for (int i = 0; i < 65536; i++) {
        a[i] = (char)(a[i] + 1);
    }
    CHECK(a[0] == 1 && a[65535] == (char)((65535 & 0x7f) + 1));
    {
        char *d = omp_target_alloc(4096, dev);

        CHECK(d != NULL);
        CHECK(omp_target_memcpy(d, a + 512, 4096, 0, 0, dev, omp_get_initial_device()) == 0);
        CHECK(omp_target_memcpy(buf + 200000, d, 4096, 0, 0, omp_get_initial_device(), dev) == 0);
        CHECK(memcmp(buf + 200000, a + 512, 4096) == 0);
        omp_target_free(d, dev);
    }

    /* Unlock: through an interior pointer, one reference at a time. */
    llvm_omp_target_unlock_mem(a + 1050, dev);
    CHECK(conf_pinned(dev) == 2);
    llvm_omp_target_unlock_mem(a + 20, dev);
    CHECK(conf_pinned(dev) == 1);
    llvm_omp_target_unlock_mem(buf + 200000, dev);
    CHECK(conf_pinned(dev) == 0);
    /* Unlocking an unknown pointer: an error message, nothing else changes. */
    conf_capture_begin(&cap);
    llvm_omp_target_unlock_mem(buf + 500000, dev);
    conf_capture_end(&cap, msg, sizeof(msg));
    CHECK(strstr(msg, "data_unlock(") != NULL && strstr(msg, "not found") != NULL);
    CHECK(conf_pinned(dev) == 0);
    /* Once unlocked, the former extension is a new range. */
    p1 = llvm_omp_target_lock_mem(a + 60000, 10000, dev);
    CHECK(p1 != NULL);
    llvm_omp_target_unlock_mem(p1 == NULL ? buf : a + 60000, dev);
    CHECK(conf_pinned(dev) == 0);

    /* One map per plugin, shared by its devices: a registration is valid for every device, so a
     * range locked through one device and locked again inside it through another is one pinned
     * range with two references, and an extension is refused whichever device asks. */
    if (omp_get_num_devices() > 1) {
        int other = dev == 0 ? 1 : 0;
        struct tether_device_info di, oi;

        if (tether_device_query(dev, &di) == 0 && tether_device_query(other, &oi) == 0 &&
            strcmp(di.plugin, oi.plugin) == 0) {
            char *q0 = llvm_omp_target_lock_mem(a, 4096, dev);
            char *q1 = llvm_omp_target_lock_mem(a + 100, 100, other);

            CHECK(q0 != NULL && q1 == q0 + 100);
            CHECK(conf_pinned(dev) == 1 && conf_pinned(other) == 1);
            conf_capture_begin(&cap);
            CHECK(llvm_omp_target_lock_mem(buf, 65536, other) == NULL); /* extends from below */
            conf_capture_end(&cap, msg, sizeof(msg));
            llvm_omp_target_unlock_mem(a, dev);
            CHECK(conf_pinned(other) == 1); /* the other device's reference keeps it pinned */
            llvm_omp_target_unlock_mem(a + 100, other);
            CHECK(conf_pinned(dev) == 0 && conf_pinned(other) == 0);
        }
    }
    free(buf);
    return conf_exit("c09_lock");
}
