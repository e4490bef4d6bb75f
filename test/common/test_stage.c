/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_stage.c - common/plugin_stage.c over the host backend, with a host_pageable
 * slot that calls every host address pageable: large pageable copies go through the staging
 * buffers in 8 MiB chunks both ways (the backend sees each chunk with host_dev set, the buffer's
 * own address), small ones and pinned ones go to the backend as they are, a backend that refuses
 * the buffers gets every copy as it is (and is not asked again), and the buffers go back at
 * shutdown.  TETHER_STAGE=0 (test common_stage_off): nothing is staged.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_core.h"
#include "tcheck.h"

extern const struct plugin_ops plugin_backend_ops; /* the host backend */

static struct plugin_ops ops; /* the host backend with host_pageable, and counting wrappers */
static struct {
    int h2d, d2h, h2d_host_dev, d2h_host_dev, host_allocs, host_frees, fail_host_alloc;
} calls;

static bool always_pageable(struct plugin_device *dev, const void *ptr, size_t size)
{
    (void)dev, (void)ptr, (void)size;
    return true;
}

static tether_status_t count_h2d(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                 const void *host_dev, struct plugin_queue *queue,
                                 struct tether_error *err)
{
    calls.h2d++;
    calls.h2d_host_dev += host_dev != NULL && host_dev == src;
    return plugin_backend_ops.memcpy_h2d(dev, dst, src, size, host_dev, queue, err);
}

static tether_status_t count_d2h(struct plugin_device *dev, void *dst, const void *src, size_t size,
                                 void *host_dev, struct plugin_queue *queue,
                                 struct tether_error *err)
{
    calls.d2h++;
    calls.d2h_host_dev += host_dev != NULL && host_dev == dst;
    return plugin_backend_ops.memcpy_d2h(dev, dst, src, size, host_dev, queue, err);
}

static tether_status_t count_alloc(struct plugin_device *dev, size_t size,
                                   enum plugin_alloc_kind kind, void **ptr_p,
                                   struct tether_error *err)
{
    if (kind == PLUGIN_ALLOC_HOST) {
        if (calls.fail_host_alloc) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "refused by the test");
        }
        calls.host_allocs++;
    }
    return plugin_backend_ops.alloc(dev, size, kind, ptr_p, err);
}

static tether_status_t count_free(struct plugin_device *dev, void *ptr, enum plugin_alloc_kind kind,
                                  struct tether_error *err)
{
    calls.host_frees += kind == PLUGIN_ALLOC_HOST;
    return plugin_backend_ops.free(dev, ptr, kind, err);
}

/* One copy of n bytes each way (async NULL: synchronous); the data must arrive whole. */
static void round_trip(struct plugin_device *dev, char *host, char *back, void *dmem, size_t n,
                       struct tgt_async_info *async)
{
    struct tether_error err = {{0}};

    for (size_t i = 0; i < n; i++) {
        host[i] = (char)(i * 13 + (i >> 20));
    }
    memset(back, 0, n);
    CHECK_RC(plugin_data_submit(dev, dmem, host, (int64_t)n, async, &err), TETHER_OK);
    CHECK_RC(plugin_data_retrieve(dev, back, dmem, (int64_t)n, async, &err), TETHER_OK);
    if (async != NULL) {
        CHECK_RC(plugin_async_sync(dev, async, &err), TETHER_OK);
    }
    CHECK(memcmp(host, back, n) == 0);
}

int main(void)
{
    const char *knob = getenv("TETHER_STAGE");
    bool on = knob == NULL || strcmp(knob, "0") != 0;
    size_t big = ((size_t)40 << 20) + 13, small = 4096;
    struct tether_error err = {{0}};
    struct tgt_async_info async = {NULL};
    struct plugin_device *dev = NULL;
    struct plugin *p = NULL;
    char *host = malloc(big), *back = malloc(big);
    void *dmem = NULL, *locked = NULL;

    REQUIRE(host != NULL && back != NULL);
    ops = plugin_backend_ops;
    ops.host_pageable = always_pageable;
    ops.memcpy_h2d = count_h2d;
    ops.memcpy_d2h = count_d2h;
    ops.alloc = count_alloc;
    ops.free = count_free;
    REQUIRE_RC(plugin_create(&ops, &p, &err), TETHER_OK);
    REQUIRE_RC(plugin_device_get(p, 0, &dev, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_alloc(dev, (int64_t)big, 0, &dmem, &err), TETHER_OK);

    /* Large and pageable: 6 chunks each way from and to the buffers, synchronous and queued. */
    for (int round = 0; round < 2; round++) {
        memset(&calls, 0, sizeof(calls));
        round_trip(dev, host, back, dmem, big, round == 0 ? NULL : &async);
        CHECK_EQ(calls.h2d, on ? 6 : 1);
        CHECK_EQ(calls.d2h, on ? 6 : 1);
        /* a chunk reaches the backend from or to a buffer, with its address as host_dev */
        CHECK_EQ(calls.h2d_host_dev, on ? 6 : 0);
        CHECK_EQ(calls.d2h_host_dev, on ? 6 : 0);
        CHECK_EQ(calls.host_allocs, on && round == 0 ? 3 : 0); /* made once, kept */
    }
    /* Small: as it is. */
    memset(&calls, 0, sizeof(calls));
    round_trip(dev, host, back, dmem, small, NULL);
    CHECK_EQ(calls.h2d, 1);
    CHECK_EQ(calls.d2h, 1);
    /* Pinned (locked through the map): as it is, with its host_dev. */
    REQUIRE_RC(plugin_data_lock(dev, host, (int64_t)big, &locked, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_lock(dev, back, (int64_t)big, &locked, &err), TETHER_OK);
    memset(&calls, 0, sizeof(calls));
    round_trip(dev, host, back, dmem, big, NULL);
    CHECK_EQ(calls.h2d, 1);
    CHECK_EQ(calls.d2h, 1);
    CHECK_EQ(calls.h2d_host_dev + calls.d2h_host_dev, 2);
    CHECK_RC(plugin_data_unlock(dev, host, &err), TETHER_OK);
    CHECK_RC(plugin_data_unlock(dev, back, &err), TETHER_OK);
    CHECK_RC(plugin_data_delete(dev, dmem, 0, &err), TETHER_OK);

    /* A second device whose backend refuses the buffers: every copy as it is, asked once. */
    {
        struct plugin_device *dev1 = NULL;
        void *dmem1 = NULL;

        calls.fail_host_alloc = 1;
        REQUIRE_RC(plugin_device_get(p, 1, &dev1, &err), TETHER_OK);
        REQUIRE_RC(plugin_data_alloc(dev1, (int64_t)big, 0, &dmem1, &err), TETHER_OK);
        for (int i = 0; i < 2; i++) {
            int h2d = calls.h2d, d2h = calls.d2h;

            round_trip(dev1, host, back, dmem1, big, NULL);
            CHECK_EQ(calls.h2d - h2d, 1);
            CHECK_EQ(calls.d2h - d2h, 1);
        }
        CHECK_RC(plugin_data_delete(dev1, dmem1, 0, &err), TETHER_OK);
        calls.fail_host_alloc = 0;
    }
    memset(&calls, 0, sizeof(calls));
    plugin_destroy(p);
    CHECK_EQ(calls.host_frees, on ? 3 : 0); /* device 0's buffers; device 1 never had any */
    free(host);
    free(back);
    return tcheck_exit(on ? "test_stage" : "test_stage (TETHER_STAGE=0)");
}
