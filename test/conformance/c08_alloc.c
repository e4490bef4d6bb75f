/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c08: llvm_omp_target_alloc_host/_device/_shared, their frees, omp_target_alloc/free/memcpy,
 * all BEFORE the first target region (LLVM 16's CUDA plugin fails alloc_host: tether must not),
 * then used from target regions. */
#include "conformance.h"

#define SZ 4096

int main(void)
{
    int dev = omp_get_default_device();
    int host = omp_get_initial_device();
    int src[SZ / sizeof(int)], back[SZ / sizeof(int)];
    struct tether_device_info info;
    int *h, *d, *s, *t;
    int n = SZ / sizeof(int);

    /* No target region has run yet. */
    CHECK(tether_device_query(dev, &info) == TETHER_OK);
    CHECK(info.images_loaded == 0);
    h = llvm_omp_target_alloc_host(SZ, dev);
    d = llvm_omp_target_alloc_device(SZ, dev);
    s = llvm_omp_target_alloc_shared(SZ, dev);
    t = omp_target_alloc(SZ, dev);
    CHECK(h != NULL && d != NULL && s != NULL && t != NULL);
    if (h == NULL || d == NULL || s == NULL || t == NULL) {
        return conf_exit("c08_alloc");
    }
    /* Host memory is page-locked and registered: one pinned range. */
    CHECK(conf_pinned(dev) == 1);
    for (int i = 0; i < n; i++) {
        src[i] = i;
        h[i] = -i;
        s[i] = 2 * i;
    }
    CHECK(omp_target_memcpy(t, src, SZ, 0, 0, dev, host) == 0);
    CHECK(omp_target_memcpy(d, t, SZ, 0, 0, dev, dev) == 0);
    memset(back, 0, sizeof(back));
    CHECK(omp_target_memcpy(back, d, SZ, 0, 0, host, dev) == 0);
    CHECK(back[0] == 0 && back[n - 1] == n - 1);
    /* A lock inside host memory is counted on its range: no new range. */
    {
        char *l = llvm_omp_target_lock_mem((char *)h + 100, 100, dev);

        CHECK(l != NULL);
        CHECK(conf_pinned(dev) == 1);
        llvm_omp_target_unlock_mem((char *)h + 100, dev);
    }

    /* Now the first target region: device, host and shared pointers used directly. */
    conf_require_tether(dev);
#pragma omp target is_device_ptr(d, h, s) device(dev)
    for (int i = 0; i < n; i++) {
        d[i] += 1;
        h[i] = -h[i] + d[i]; /* i + i + 1 */
        s[i] += 1;
    }
    CHECK(omp_target_memcpy(back, d, SZ, 0, 0, host, dev) == 0);
    CHECK(back[5] == 6);
    CHECK(h[5] == 11 && h[n - 1] == 2 * (n - 1) + 1);
    CHECK(s[5] == 11);

    llvm_omp_target_free_host(h, dev);
    llvm_omp_target_free_device(d, dev);
    llvm_omp_target_free_shared(s, dev);
    omp_target_free(t, dev);
    CHECK(conf_pinned(dev) == 0);
    return conf_exit("c08_alloc");
}
