/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_backend.c - the AMDGPU backend driven through common's generic layer
 * (plugin_core.h), on the runtime the environment selects: none, Debian's, or fake_hsa.c.
 *
 *   nodevice MESSAGE   plugin_create must succeed with zero devices; with MESSAGE "-" nothing may
 *                      be printed, otherwise stderr must contain MESSAGE
 *   refuse MESSAGE     plugin_create must fail, its error containing MESSAGE (broken runtime)
 *   gpu RAW OMP        fake GPU: devices, limits, memory kinds, pinned and pageable transfers,
 *                      image loading (globals, device environment), launches checked against
 *                      the fake's record and the effect of tether_raw, queues, events, and a
 *                      clean shutdown (no live runtime object left)
 *   faults RAW         the scenario again with each runtime call failing in turn: every failure
 *                      must come back as an error, and nothing may leak
 *   threads RAW        4 threads, each its own queue, submit/launch/retrieve/sync in a loop
 *   knobs              fake GPU: LLVM's names of the AMDGPU knobs (HSA queues, their size, teams
 *                      per compute unit), tether's name winning, bad values warned about once
 *   waits MODE RAW     fake GPU whose kernels run FAKE_HSA_KERNEL_US, TETHER_WAIT=MODE: a
 *                      synchronous launch is waited for by polling, then one runtime wait that
 *                      sleeps (adaptive, block), using well under half the kernel's time in CPU;
 *                      or by polling only, never a runtime wait (spin)
 *
 * RAW is raw_v5.co (kernel tether_raw, which the fake emulates), OMP omp_gfx90a.co.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "amdgpu_code_object.h"
#include "amdgpu_test.h"
#include "fake_hsa.h"
#include "plugin_core.h"

extern const struct plugin_ops plugin_backend_ops;

/* ---- helpers ---------------------------------------------------------------------------- */

static fake_hsa_stats_fn fake_stats;
static fake_hsa_last_dispatch_fn fake_last;
static fake_hsa_set_fail_fn fake_fail;

/* The fake's hooks, from the runtime the plugin loaded. */
static void bind_fake(void)
{
    void *h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);

    REQUIRE(h != NULL);
    fake_stats = (fake_hsa_stats_fn)(uintptr_t)dlsym(h, "fake_hsa_stats");
    fake_last = (fake_hsa_last_dispatch_fn)(uintptr_t)dlsym(h, "fake_hsa_last_dispatch");
    fake_fail = (fake_hsa_set_fail_fn)(uintptr_t)dlsym(h, "fake_hsa_set_fail");
    REQUIRE(fake_stats != NULL && fake_last != NULL && fake_fail != NULL);
}

static struct fake_stats stats(void)
{
    struct fake_stats s;

    fake_stats(&s);
    return s;
}

struct image {
    void *bytes;
    size_t size;
    struct tgt_device_image tgt;
    struct tgt_offload_entry entries[8];
    char names[8][256];
    char host_vars[8][256]; /* host addresses for entries */
    size_t num_entries;
};

static void image_add(struct image *im, const char *name, size_t size)
{
    size_t i = im->num_entries++;

    REQUIRE(i < 8);
    snprintf(im->names[i], sizeof(im->names[i]), "%s", name);
    im->entries[i].addr = im->host_vars[i];
    im->entries[i].name = im->names[i];
    im->entries[i].size = size;
    im->tgt.EntriesBegin = im->entries;
    im->tgt.EntriesEnd = im->entries + im->num_entries;
}

static void image_read(struct image *im, const char *path)
{
    memset(im, 0, sizeof(*im));
    im->bytes = test_read_file(path, &im->size);
    im->tgt.ImageStart = im->bytes;
    im->tgt.ImageEnd = (char *)im->bytes + im->size;
}

/* A plugin on the fake runtime with device 0 and the plain kernel's image (at raw_path) loaded. */
static void load_raw(const char *raw_path, struct plugin **plugin_p, struct plugin_device **dev_p,
                     struct image *raw, struct tgt_target_table **table_p)
{
    struct tether_error err = {{0}};

    REQUIRE_RC(plugin_create(&plugin_backend_ops, plugin_p, &err), TETHER_OK);
    bind_fake();
    REQUIRE_RC(plugin_device_get(*plugin_p, 0, dev_p, &err), TETHER_OK);
    image_read(raw, raw_path);
    image_add(raw, "tether_raw", 0);
    REQUIRE_RC(plugin_image_load(*dev_p, &raw->tgt, table_p, &err), TETHER_OK);
}

/* The name and static group segment size of the kernel whose name contains part. */
static uint32_t kernel_name(const struct image *im, const char *part, char *out, size_t n)
{
    struct amdgpu_code_object co;
    uint32_t group = 0;

    REQUIRE_RC(amdgpu_code_object_parse(im->bytes, im->size, &co, NULL), TETHER_OK);
    out[0] = '\0';
    for (uint32_t i = 0; i < co.num_kernels; i++) {
        if (strstr(co.kernels[i].name, part) != NULL) {
            snprintf(out, n, "%s", co.kernels[i].name);
            group = co.kernels[i].group_segment_fixed_size;
        }
    }
    amdgpu_code_object_fini(&co);
    REQUIRE(out[0] != '\0');
    return group;
}

static struct tgt_kernel_args kargs_for(uint32_t num_args, uint32_t teams, uint32_t threads,
                                        uint64_t tripcount)
{
    struct tgt_kernel_args k;

    memset(&k, 0, sizeof(k));
    k.Version = 2;
    k.NumArgs = num_args;
    k.NumTeams[0] = teams;
    k.ThreadLimit[0] = threads;
    k.Tripcount = tripcount;
    return k;
}

/* ---- nodevice / refuse -------------------------------------------------------------------- */

/* Run plugin_create with stderr captured into buf. */
static tether_status_t create_captured(struct plugin **plugin_p, struct tether_error *err,
                                       char *buf, size_t size)
{
    char path[] = "/tmp/tether-amdgpu-stderr-XXXXXX";
    int fd = mkstemp(path), saved;
    tether_status_t st;
    ssize_t n;

    REQUIRE(fd >= 0);
    unlink(path);
    fflush(stderr);
    saved = dup(2);
    REQUIRE(saved >= 0 && dup2(fd, 2) == 2);
    st = plugin_create(&plugin_backend_ops, plugin_p, err);
    fflush(stderr);
    REQUIRE(dup2(saved, 2) == 2);
    close(saved);
    n = pread(fd, buf, size - 1, 0);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    fprintf(stderr, "%s", buf); /* keep it visible in the test log */
    return st;
}

static int mode_nodevice(const char *message)
{
    struct plugin *plugin = NULL;
    struct tether_error err = {{0}};
    char out[4096];

    REQUIRE_RC(create_captured(&plugin, &err, out, sizeof(out)), TETHER_OK);
    REQUIRE(plugin != NULL && plugin->num_devices == 0);
    if (strcmp(message, "-") == 0) {
        REQUIRE(out[0] == '\0');
    } else {
        REQUIRE(strstr(out, "tether (amdgpu): ") != NULL);
        REQUIRE(strstr(out, message) != NULL);
        REQUIRE(strstr(out, "; the AMDGPU plugin has 0 devices\n") != NULL);
    }
    /* No driver or no GPU is said at info level, in words: never as a runtime error status. */
    REQUIRE(strstr(out, "HSA_STATUS_ERROR") == NULL);
    REQUIRE(strstr(out, "error") == NULL);
    plugin_destroy(plugin);
    printf("zero devices: ok\n");
    return 0;
}

static int mode_refuse(const char *message)
{
    struct plugin *plugin = NULL;
    struct tether_error err = {{0}};
    tether_status_t st = plugin_create(&plugin_backend_ops, &plugin, &err);

    printf("plugin_create: %s: %s\n", tether_status_str(st), err.msg);
    REQUIRE(st != TETHER_OK);
    REQUIRE(strstr(err.msg, message) != NULL);
    printf("refused: ok\n");
    return 0;
}

/* hsa_init fails: zero devices without /dev/kfd, a refusal with it (a broken driver). */
static int mode_initfail(void)
{
    if (access("/dev/kfd", F_OK) == 0)
        return mode_refuse("hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES");
    return mode_nodevice("no AMD GPU: /dev/kfd is absent (no amdgpu kernel driver)");
}

/* Debian's runtime on this machine: without /dev/kfd it must come up with zero devices. */
static int mode_system(void)
{
    if (access("/dev/kfd", F_OK) == 0) {
        printf("SKIP: /dev/kfd exists, this machine may have an AMD GPU\n");
        return 77;
    }
    return mode_nodevice("no AMD GPU: /dev/kfd is absent (no amdgpu kernel driver)");
}

/* A wave32 agent (gfx1030): limits follow the agent, images must match its processor. */
static int mode_wave32(const char *omp90a_path, const char *omp1030_path)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tether_error err = {{0}};
    struct image a, b;
    struct tgt_target_table *table;

    REQUIRE_RC(plugin_create(&plugin_backend_ops, &plugin, &err), TETHER_OK);
    REQUIRE_RC(plugin_device_get(plugin, 0, &dev, &err), TETHER_OK);
    REQUIRE(dev->limits.warp_size == 32);
    image_read(&a, omp90a_path);
    image_read(&b, omp1030_path);
    REQUIRE(!plugin_image_valid(plugin, &a.tgt, "gfx90a"));
    REQUIRE(plugin_image_valid(plugin, &b.tgt, "gfx1030"));
    REQUIRE_RC(plugin_image_load(dev, &b.tgt, &table, &err), TETHER_OK);
    /* loading the wrong processor's image directly is refused by the backend itself */
    {
        struct plugin_module *m = NULL;
        struct plugin_image pi = {a.bytes, a.size, "gfx90a"};

        REQUIRE_RC(plugin_backend_ops.module_load(dev, &pi, &m, &err), TETHER_ERR_BAD_IMAGE);
        printf("refused: %s\n", err.msg);
        REQUIRE(strstr(err.msg, "built for gfx90a; this device is gfx1030") != NULL);
    }
    plugin_destroy(plugin);
    free(a.bytes);
    free(b.bytes);
    printf("wave32: ok\n");
    return 0;
}

/* ---- gpu ----------------------------------------------------------------------------------- */

static void check_raw_launch(struct plugin_device *dev, struct tgt_target_table *table,
                             struct tgt_async_info *async, uint32_t teams, uint32_t threads,
                             int32_t n)
{
    struct tether_error err = {{0}};
    void *out = NULL;
    int32_t host[1024];
    void *args[2];
    ptrdiff_t offsets[2] = {0, 0};
    struct tgt_kernel_args k = kargs_for(2, teams, threads, 0);
    struct fake_dispatch d;

    REQUIRE_RC(plugin_data_alloc(dev, sizeof(host), 3, &out, &err), TETHER_OK);
    args[0] = out;
    args[1] = (void *)(intptr_t)n;
    REQUIRE_RC(
        plugin_launch_kernel(dev, table->EntriesBegin[0].addr, args, offsets, &k, async, &err),
        TETHER_OK);
    memset(host, 0, sizeof(host));
    REQUIRE_RC(
        plugin_data_retrieve(dev, host, out, (int64_t)(threads * sizeof(int32_t)), async, &err),
        TETHER_OK);
    if (async != NULL) {
        REQUIRE_RC(plugin_async_sync(dev, async, &err), TETHER_OK);
        REQUIRE(async->Queue == NULL);
    }
    for (uint32_t i = 0; i < threads; i++)
        REQUIRE(host[i] == n + (int32_t)threads);
    if (async == NULL) { /* threads racing on the fake's one record skip this */
        fake_last(&d);
        REQUIRE(strcmp(d.kernel, "tether_raw") == 0);
        REQUIRE(d.setup == 1 && d.workgroup_size[0] == threads &&
                d.grid_size[0] == teams * threads);
        REQUIRE(d.workgroup_size[1] == 1 && d.grid_size[2] == 1);
        REQUIRE(memcmp(d.kernarg, &out, 8) == 0);
    }
    REQUIRE_RC(plugin_data_delete(dev, out, 3, &err), TETHER_OK);
}

static int mode_gpu(const char *raw_path, const char *omp_path)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tether_error err = {{0}};
    struct image raw, omp;
    struct tgt_target_table *raw_table, *omp_table;
    struct tgt_async_info a1 = {NULL}, a2 = {NULL};
    struct fake_stats s0, s1;
    struct fake_dispatch d;
    char saxpy[256], bump[256], name[128];
    uint32_t saxpy_group;
    uint8_t pattern[8192], back[8192];
    void *dmem = NULL, *hmem = NULL, *locked = NULL, *ev = NULL;
    int32_t value = 0;
    struct tgt_device_environment env;

    REQUIRE_RC(plugin_create(&plugin_backend_ops, &plugin, &err), TETHER_OK);
    bind_fake();
    REQUIRE(plugin->num_devices == 1);
    REQUIRE_RC(plugin_device_get(plugin, 0, &dev, &err), TETHER_OK);
    plugin_backend_ops.device_name(dev, name, sizeof(name));
    printf("device: %s\n", name);
    REQUIRE(strcmp(name, "Fake Instinct 0 (gfx90a:sramecc+:xnack-)") == 0);
    REQUIRE(dev->limits.warp_size == 64 && dev->limits.max_threads == 1024);
    REQUIRE(dev->limits.default_threads == 256 && dev->limits.default_teams == 104 * 4);
    REQUIRE(dev->limits.max_teams == UINT32_MAX / 1024);
    /* the fake's HSA_AMD_AGENT_INFO_DOMAIN 0 and BDFID bus 0xc1, device 2, function 1 */
    printf("PCI bus id: %s\n", dev->limits.pci_bus_id);
    REQUIRE(strcmp(dev->limits.pci_bus_id, "0000:c1:02.1") == 0);

    /* memory kinds; pageable transfers lock the host buffer for the copy only */
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t)(i * 7 + 3);
    REQUIRE_RC(plugin_data_alloc(dev, sizeof(pattern), 0, &dmem, &err), TETHER_OK);
    s0 = stats();
    REQUIRE_RC(plugin_data_submit(dev, dmem, pattern, sizeof(pattern), NULL, &err), TETHER_OK);
    memset(back, 0, sizeof(back));
    REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, sizeof(back), NULL, &err), TETHER_OK);
    REQUIRE(memcmp(back, pattern, sizeof(back)) == 0);
    s1 = stats();
    REQUIRE(s1.lock_calls - s0.lock_calls == 2 && s1.live_locks == s0.live_locks);
    REQUIRE(s1.copies - s0.copies == 2);

    /* pinned: the agent pointer differs from the host pointer, and transfers use it without
     * locking again */
    REQUIRE_RC(plugin_data_lock(dev, back, sizeof(back), &locked, &err), TETHER_OK);
    REQUIRE(locked != (void *)back && ((uintptr_t)locked & ~(1ull << 47)) == (uintptr_t)back);
    s0 = stats();
    memset(back, 0, sizeof(back));
    REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, sizeof(back), NULL, &err), TETHER_OK);
    REQUIRE(memcmp(back, pattern, sizeof(back)) == 0);
    s1 = stats();
    REQUIRE(s1.lock_calls == s0.lock_calls);
    REQUIRE_RC(plugin_data_unlock(dev, back, &err), TETHER_OK);
    REQUIRE(stats().live_locks == 0);

    /* a lock taken while a transfer of the same pageable buffer is in flight joins the
     * transfer's lock, which then outlives the transfer */
    REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, sizeof(back), &a1, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_lock(dev, back, sizeof(back), &locked, &err), TETHER_OK);
    REQUIRE(((uintptr_t)locked & ~(1ull << 47)) == (uintptr_t)back);
    REQUIRE_RC(plugin_async_sync(dev, &a1, &err), TETHER_OK);
    REQUIRE(stats().live_locks == 1);
    memset(back, 0, sizeof(back));
    REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, sizeof(back), NULL, &err), TETHER_OK);
    REQUIRE(memcmp(back, pattern, sizeof(back)) == 0);
    REQUIRE_RC(plugin_data_unlock(dev, back, &err), TETHER_OK);
    REQUIRE(stats().live_locks == 0);

    /* host memory: fine-grained, same address on both sides */
    REQUIRE_RC(plugin_data_alloc(dev, 4096, 1, &hmem, &err), TETHER_OK);
    memcpy(hmem, pattern, 4096);
    s0 = stats();
    REQUIRE_RC(plugin_data_submit(dev, dmem, hmem, 4096, NULL, &err), TETHER_OK);
    REQUIRE(stats().lock_calls == s0.lock_calls);
    /* even when the caller does not say it is pinned: the runtime knows it, no lock is taken */
    {
        struct plugin_queue *q = NULL;

        REQUIRE_RC(plugin_backend_ops.queue_create(dev, &q, &err), TETHER_OK);
        REQUIRE_RC(plugin_backend_ops.memcpy_h2d(dev, dmem, hmem, 4096, NULL, q, &err), TETHER_OK);
        REQUIRE_RC(plugin_backend_ops.queue_sync(dev, q, &err), TETHER_OK);
        plugin_backend_ops.queue_destroy(dev, q);
    }
    REQUIRE(stats().lock_calls == s0.lock_calls);
    REQUIRE_RC(plugin_data_delete(dev, hmem, 1, &err), TETHER_OK);

    /* the plain kernel: kernargs, hidden arguments, geometry; synchronous then on a queue */
    image_read(&raw, raw_path);
    image_add(&raw, "tether_raw", 0);
    REQUIRE(plugin_image_valid(plugin, &raw.tgt, "gfx90a"));
    REQUIRE_RC(plugin_image_load(dev, &raw.tgt, &raw_table, &err), TETHER_OK);
    check_raw_launch(dev, raw_table, NULL, 2, 64, 5);
    fake_last(&d);
    REQUIRE(d.kernarg_size == 272);
    REQUIRE(d.kernarg[16] == 2 && d.kernarg[28] == 64 && d.kernarg[80] == 1); /* v5 hidden */
    check_raw_launch(dev, raw_table, &a1, 3, 128, -9);
    check_raw_launch(dev, raw_table, &a1, 1, 1024, 1000);

    /* the OpenMP image: globals, the device environment, launch geometry of an SPMD kernel */
    image_read(&omp, omp_path);
    saxpy_group = kernel_name(&omp, "_saxpy_l", saxpy, sizeof(saxpy));
    kernel_name(&omp, "_bump_l", bump, sizeof(bump));
    image_add(&omp, saxpy, 0);
    image_add(&omp, bump, 0);
    image_add(&omp, "tether_global", 4);
    image_add(&omp, "tether_table", 128);
    image_add(&omp, "__omp_rtl_device_environment", sizeof(env));
    REQUIRE(plugin_image_valid(plugin, &omp.tgt, "gfx90a"));
    REQUIRE_RC(plugin_image_load(dev, &omp.tgt, &omp_table, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_retrieve(dev, &value, omp_table->EntriesBegin[2].addr, 4, NULL, &err),
               TETHER_OK);
    REQUIRE(value == 42);
    REQUIRE_RC(
        plugin_data_retrieve(dev, &env, omp_table->EntriesBegin[4].addr, sizeof(env), NULL, &err),
        TETHER_OK);
    REQUIRE(env.NumDevices == 1 && env.DeviceNum == 0);
    {
        void *args[4] = {(void *)(uintptr_t)1000, dmem, (void *)(uintptr_t)0x40000000, dmem};
        ptrdiff_t offsets[4] = {0, 0, 0, 16};
        struct tgt_kernel_args k = kargs_for(4, 0, 0, 1000);
        uint64_t arg3;

        REQUIRE_RC(plugin_launch_kernel(dev, omp_table->EntriesBegin[0].addr, args, offsets, &k,
                                        NULL, &err),
                   TETHER_OK);
        fake_last(&d);
        REQUIRE(strcmp(d.kernel, saxpy) == 0);
        /* SPMD, no clauses, trip count 1000: 256 threads, ceil(1000 / 256) = 4 teams */
        REQUIRE(d.workgroup_size[0] == 256 && d.grid_size[0] == 4 * 256);
        REQUIRE(d.group_segment_size == saxpy_group && d.kernarg_size == 32);
        memcpy(&arg3, d.kernarg + 24, 8);
        REQUIRE(arg3 == (uint64_t)(uintptr_t)dmem + 16);
        /* dynamic group memory comes on top of the kernel's static group segment */
        k.DynCGroupMem = 256;
        REQUIRE_RC(plugin_launch_kernel(dev, omp_table->EntriesBegin[0].addr, args, offsets, &k,
                                        NULL, &err),
                   TETHER_OK);
        fake_last(&d);
        REQUIRE(d.group_segment_size == saxpy_group + 256);
    }
    /* a kernel launch compatible image check: an xnack+ image would not run on this agent */
    {
        struct plugin_image pi = {omp.bytes, omp.size, "gfx90a"};

        REQUIRE(plugin_backend_ops.image_compatible(plugin, &pi));
        pi.arch = "gfx90a:xnack+"; /* the ELF (xnack any) decides, not the arch string */
        REQUIRE(plugin_backend_ops.image_compatible(plugin, &pi));
    }

    /* queues and events: the D2H on a2 must wait for the H2D on a1 */
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t)(255 - i);
    REQUIRE_RC(plugin_event_create(dev, &ev, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_submit(dev, dmem, pattern, sizeof(pattern), &a1, &err), TETHER_OK);
    REQUIRE_RC(plugin_event_record(dev, ev, &a1, &err), TETHER_OK);
    REQUIRE_RC(plugin_event_wait(dev, ev, &a2, &err), TETHER_OK);
    memset(back, 0, sizeof(back));
    REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, sizeof(back), &a2, &err), TETHER_OK);
    REQUIRE_RC(plugin_async_sync(dev, &a2, &err), TETHER_OK);
    REQUIRE(memcmp(back, pattern, sizeof(back)) == 0);
    REQUIRE_RC(plugin_event_sync(dev, ev, &err), TETHER_OK);
    REQUIRE_RC(plugin_async_sync(dev, &a1, &err), TETHER_OK);
    REQUIRE_RC(plugin_event_destroy(dev, ev, &err), TETHER_OK);
    REQUIRE(a1.Queue == NULL && a2.Queue == NULL);

    /* interop: the agent as the device, no context, and an HSA queue of the fake's as the
     * targetsync stream; the device frees it at shutdown (live_queues below) */
    {
        struct tgt_device_info info = {NULL, NULL};
        struct tgt_async_info *sync = NULL;

        REQUIRE_RC(plugin_interop_device(dev, &info, &err), TETHER_OK);
        REQUIRE(info.Device != NULL && info.Context == NULL);
        REQUIRE_RC(plugin_interop_async(dev, &sync, &err), TETHER_OK);
        REQUIRE(sync != NULL && sync->Queue != NULL);
        REQUIRE(stats().live_queues >= 1);
    }

    REQUIRE_RC(plugin_data_delete(dev, dmem, 0, &err), TETHER_OK);
    plugin_destroy(plugin);
    s1 = stats();
    printf("copies %ld, dispatches %ld, barriers %ld, misuse %ld\n", s1.copies, s1.dispatches,
           s1.barriers, s1.misuse);
    REQUIRE(s1.misuse == 0);
    REQUIRE(s1.live_allocs == 0 && s1.live_locks == 0 && s1.live_signals == 0);
    REQUIRE(s1.live_queues == 0 && s1.live_executables == 0 && s1.live_readers == 0);
    REQUIRE(s1.inits == 1 && s1.shutdowns == 1);
    free(raw.bytes);
    free(omp.bytes);
    printf("gpu: ok\n");
    return 0;
}

/* ---- faults -------------------------------------------------------------------------------- */

/* The scenario under fault injection: returns the number of steps that failed. */
static int fault_scenario(struct image *raw)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tether_error err = {{0}};
    struct tgt_target_table *table;
    struct tgt_async_info a = {NULL};
    uint8_t buf[4096], back[4096], pinned[4096];
    void *dmem = NULL, *locked = NULL, *ev = NULL;
    int failed = 0;

    memset(buf, 0x5a, sizeof(buf));
    if (plugin_create(&plugin_backend_ops, &plugin, &err) != TETHER_OK)
        return 1;
    if (plugin->num_devices == 0 || plugin_device_get(plugin, 0, &dev, &err) != TETHER_OK) {
        plugin_destroy(plugin);
        return 1;
    }
    failed += plugin_data_alloc(dev, sizeof(buf), 0, &dmem, &err) != TETHER_OK;
    if (dmem != NULL) {
        failed += plugin_data_submit(dev, dmem, buf, sizeof(buf), NULL, &err) != TETHER_OK;
        failed += plugin_data_submit(dev, dmem, buf, sizeof(buf), &a, &err) != TETHER_OK;
        failed += plugin_data_retrieve(dev, back, dmem, sizeof(back), &a, &err) != TETHER_OK;
        if (plugin_data_lock(dev, pinned, sizeof(pinned), &locked, &err) == TETHER_OK) {
            failed +=
                plugin_data_retrieve(dev, pinned, dmem, sizeof(pinned), &a, &err) != TETHER_OK;
            failed += plugin_async_sync(dev, &a, &err) != TETHER_OK;
            failed += plugin_data_unlock(dev, pinned, &err) != TETHER_OK;
        } else {
            failed++;
        }
        if (plugin_event_create(dev, &ev, &err) == TETHER_OK) {
            failed += plugin_event_record(dev, ev, &a, &err) != TETHER_OK;
            failed += plugin_event_wait(dev, ev, &a, &err) != TETHER_OK;
            failed += plugin_event_destroy(dev, ev, &err) != TETHER_OK;
        } else {
            failed++;
        }
        if (plugin_image_load(dev, &raw->tgt, &table, &err) == TETHER_OK) {
            void *args[2] = {dmem, (void *)(intptr_t)3};
            ptrdiff_t offsets[2] = {0, 0};
            struct tgt_kernel_args k = kargs_for(2, 1, 64, 0);

            failed += plugin_launch_kernel(dev, table->EntriesBegin[0].addr, args, offsets, &k, &a,
                                           &err) != TETHER_OK;
            failed += plugin_launch_kernel(dev, table->EntriesBegin[0].addr, args, offsets, &k,
                                           NULL, &err) != TETHER_OK;
        } else {
            failed++;
        }
        if (a.Queue != NULL)
            failed += plugin_async_sync(dev, &a, &err) != TETHER_OK;
        failed += plugin_data_delete(dev, dmem, 0, &err) != TETHER_OK;
    }
    plugin_destroy(plugin);
    return failed;
}

static int mode_faults(const char *raw_path)
{
    static const struct {
        const char *name;
        int max_nth;
    } points[] = {
        {"hsa_iterate_agents", 0}, /* not a fail point: sanity of the list below */
        {"hsa_amd_memory_pool_allocate", 5},
        {"hsa_amd_agents_allow_access", 4},
        {"hsa_amd_memory_lock", 4},
        {"hsa_amd_memory_unlock", 5},
        {"hsa_signal_create", 4},
        {"hsa_amd_memory_async_copy", 5},
        {"hsa_queue_create", 1},
        {"hsa_code_object_reader_create_from_memory", 1},
        {"hsa_executable_create_alt", 1},
        {"hsa_executable_load_agent_code_object", 1},
        {"hsa_executable_freeze", 1},
        {"hsa_executable_get_symbol_by_name", 2},
    };
    struct image raw;
    struct fake_stats s;
    int runs = 0;

    image_read(&raw, raw_path);
    image_add(&raw, "tether_raw", 0);
    /* load the fake (and check the scenario passes without faults) */
    REQUIRE(fault_scenario(&raw) == 0);
    bind_fake();
    for (size_t p = 1; p < sizeof(points) / sizeof(points[0]); p++) {
        for (int nth = 1; nth <= points[p].max_nth; nth++) {
            struct fake_stats b = stats();
            long locks;
            int failed;

            fake_fail(NULL, 0);
            fake_fail(points[p].name, nth);
            failed = fault_scenario(&raw);
            fake_fail(NULL, 0);
            s = stats();
            runs++;
            printf("%s #%d: %s, %d failed step(s)\n", points[p].name, nth,
                   s.injected_failures > b.injected_failures ? "hit" : "not reached", failed);
            locks = s.live_locks - b.live_locks;
            /* a fault that was hit must be reported by some step, and only then; the exception
             * is the unlock of a transfer's temporary lock after the data moved: a warning */
            REQUIRE(s.injected_failures == b.injected_failures || failed > 0 ||
                    strcmp(points[p].name, "hsa_amd_memory_unlock") == 0);
            REQUIRE(s.injected_failures > b.injected_failures || failed == 0);
            REQUIRE(locks == 0);
            REQUIRE(s.live_allocs == 0 && s.live_signals == 0 && s.live_queues == 0);
            REQUIRE(s.live_executables == 0 && s.live_readers == 0);
        }
    }
    REQUIRE(stats().misuse == 0);
    free(raw.bytes);
    printf("faults: %d runs, ok\n", runs);
    return 0;
}

/* ---- threads ------------------------------------------------------------------------------- */

struct thread_arg {
    struct plugin_device *dev;
    struct tgt_target_table *table;
    int index;
};

static void *thread_main(void *p)
{
    struct thread_arg *t = p;
    struct tgt_async_info a = {NULL};

    for (int i = 0; i < 25; i++)
        check_raw_launch(t->dev, t->table, &a, 1 + (uint32_t)(i % 3), 64 * (1 + (uint32_t)t->index),
                         t->index * 100 + i);
    return NULL;
}

static int mode_threads(const char *raw_path)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tgt_target_table *table;
    struct image raw;
    pthread_t th[4];
    struct thread_arg args[4];
    struct fake_stats s;

    load_raw(raw_path, &plugin, &dev, &raw, &table);
    for (int i = 0; i < 4; i++) {
        args[i] = (struct thread_arg){dev, table, i};
        REQUIRE(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++)
        REQUIRE(pthread_join(th[i], NULL) == 0);
    plugin_destroy(plugin);
    s = stats();
    REQUIRE(s.misuse == 0 && s.dispatches == 100);
    REQUIRE(s.live_allocs == 0 && s.live_signals == 0 && s.live_queues == 0 && s.live_locks == 0);
    free(raw.bytes);
    printf("threads: ok (%ld copies, %ld dispatches)\n", s.copies, s.dispatches);
    return 0;
}

/* ---- waits ------------------------------------------------------------------------------ */

/* CPU time of the whole process so far (every thread), microseconds. */
static long long cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static int mode_waits(const char *mode, const char *raw_path)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tgt_target_table *table;
    struct image raw;
    const char *env = getenv("FAKE_HSA_KERNEL_US");
    long long kernel_us = env != NULL ? atoll(env) : 0;
    bool spin = strcmp(mode, "spin") == 0;
    long slept = 0;

    REQUIRE(kernel_us >= 50000);
    load_raw(raw_path, &plugin, &dev, &raw, &table);
    /* Until a wait sleeps (it needs the first poll before the kernel's end, right after the
     * launch on the same thread): up to three launches; spin once. */
    for (int i = 0; i < (spin ? 1 : 3) && slept == 0; i++) {
        struct fake_stats s0 = stats(), s1;
        long long cpu = cpu_us();

        check_raw_launch(dev, table, NULL, 1, 64, 7 + i);
        cpu = cpu_us() - cpu;
        s1 = stats();
        printf("waits (%s): a %lld ms kernel: %ld runtime waits (%ld slept), %.1f ms of CPU time\n",
               mode, kernel_us / 1000, s1.signal_waits - s0.signal_waits,
               s1.signal_waits_slept - s0.signal_waits_slept, (double)cpu / 1000);
        if (spin) {
            CHECK_EQ(s1.signal_waits - s0.signal_waits, 0);
        } else {
            /* a thread asleep accrues no CPU time, however loaded the machine */
            CHECK(cpu < kernel_us / 2);
            slept = s1.signal_waits_slept - s0.signal_waits_slept;
        }
    }
    if (!spin)
        CHECK(slept >= 1);
    plugin_destroy(plugin);
    free(raw.bytes);
    return 0;
}

/* The knobs, under LLVM's names and tether's, with good and bad values (common's rule: a bad
 * value gives the default and one warning). */
static char knobs_errs[4096]; /* what the last knobs_device printed on stderr */

static int knobs_device(const char *want_queues, uint32_t want_teams, const char *want_err)
{
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tether_error err = {{0}};
    char out[8192], *errs = knobs_errs;
    int fd, saved;
    ssize_t n;

    fflush(stderr);
    saved = dup(2);
    fd = memfd_create("tether-test-knobs", 0);
    dup2(fd, 2);
    REQUIRE_RC(plugin_create(&plugin_backend_ops, &plugin, &err), TETHER_OK);
    REQUIRE(plugin != NULL && plugin->num_devices == 1);
    REQUIRE_RC(plugin_device_get(plugin, 0, &dev, &err), TETHER_OK);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    n = pread(fd, errs, sizeof(knobs_errs) - 1, 0);
    close(fd);
    errs[n > 0 ? n : 0] = '\0';
    fprintf(stderr, "%s", errs);
    REQUIRE(want_err[0] == '\0' ? errs[0] == '\0' : strstr(errs, want_err) != NULL);
    if (dev == NULL) {
        plugin_destroy(plugin);
        return 1;
    }
    REQUIRE(dev->limits.default_teams == want_teams);
    fflush(stdout);
    saved = dup(1);
    fd = memfd_create("tether-test-knobs-info", 0);
    dup2(fd, 1);
    plugin_print_device_info(plugin, 0);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    n = pread(fd, out, sizeof(out) - 1, 0);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    REQUIRE(strstr(out, want_queues) != NULL);
    if (strstr(out, want_queues) == NULL)
        fprintf(stderr, "device info lacks \"%s\":\n%s", want_queues, out);
    plugin_destroy(plugin);
    return 0;
}

static int mode_knobs(void)
{
    unsetenv("TETHER_AMDGPU_QUEUES");
    /* LLVM's names: 2 queues of 256 packets, 2 teams per compute unit (the fake has 104). */
    setenv("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "2", 1);
    setenv("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "256", 1);
    setenv("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", "2", 1);
    knobs_device(" 2 of 256 packets", 104 * 2, "");
    /* Smaller than the agent allows (64): the agent's minimum. */
    setenv("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "0x20", 1);
    knobs_device(" 2 of 64 packets", 104 * 2, "");
    /* tether's name wins over LLVM's, with a warning; bad values: the defaults, a warning each. */
    setenv("TETHER_AMDGPU_QUEUES", "3", 1);
    setenv("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "300", 1);
    setenv("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", "0", 1);
    knobs_device(" 3 of 1024 packets", 104 * 4,
                 "tether: warning: TETHER_AMDGPU_QUEUES=3 and LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES=2 "
                 "are both set; TETHER_AMDGPU_QUEUES wins\n");
    REQUIRE(strstr(knobs_errs, "tether: warning: LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE=300 is not a "
                               "power of two; using 1024\n") != NULL);
    REQUIRE(strstr(knobs_errs,
                   "tether: warning: LIBOMPTARGET_AMDGPU_TEAMS_PER_CU=0 is out of range "
                   "(1 to 1024); using 4\n") != NULL);
    setenv("TETHER_AMDGPU_QUEUES", "17", 1);
    setenv("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "512", 1);
    knobs_device(" 4 of 512 packets", 104 * 4,
                 "tether: warning: TETHER_AMDGPU_QUEUES=17 is out of range (1 to 16); using 4\n");
    REQUIRE(strstr(knobs_errs, "TEAMS_PER_CU") == NULL); /* said once already */
    /* Each bad value was said once, and only once, over the four devices made above. */
    printf("knobs: ok\n");
    return 0;
}

/* ---- stage: large pageable copies go through common's pinned staging buffers ---------------- */

/* A copy of 40 MiB + 13 bytes each way between pageable memory and the device, synchronous and
 * on a queue: with staging (the default) each is 6 copies of at most 8 MiB from or to common's
 * pinned buffers (fine-grained host memory the runtime knows: no lock); with TETHER_STAGE=0 each
 * is one copy that locks the host buffer for its duration.  The data arrive whole either way, and
 * the buffers go back at shutdown. */
static int mode_stage(void)
{
    const char *knob = getenv("TETHER_STAGE");
    bool staged = knob == NULL || strcmp(knob, "0") != 0;
    size_t n = ((size_t)40 << 20) + 13;
    struct plugin *plugin = NULL;
    struct plugin_device *dev = NULL;
    struct tether_error err = {{0}};
    struct tgt_async_info async = {NULL};
    struct fake_stats s0, s1;
    char *host = malloc(n), *back = malloc(n);
    void *dmem = NULL;

    REQUIRE(host != NULL && back != NULL);
    REQUIRE_RC(plugin_create(&plugin_backend_ops, &plugin, &err), TETHER_OK);
    bind_fake();
    REQUIRE_RC(plugin_device_get(plugin, 0, &dev, &err), TETHER_OK);
    REQUIRE_RC(plugin_data_alloc(dev, (int64_t)n, 0, &dmem, &err), TETHER_OK);
    for (int round = 0; round < 2; round++) {
        struct tgt_async_info *a = round == 0 ? NULL : &async;

        for (size_t i = 0; i < n; i++)
            host[i] = (char)(i * 13 + (i >> 20) + round);
        memset(back, 0, n);
        s0 = stats();
        REQUIRE_RC(plugin_data_submit(dev, dmem, host, (int64_t)n, a, &err), TETHER_OK);
        REQUIRE_RC(plugin_data_retrieve(dev, back, dmem, (int64_t)n, a, &err), TETHER_OK);
        if (a != NULL)
            REQUIRE_RC(plugin_async_sync(dev, a, &err), TETHER_OK);
        s1 = stats();
        REQUIRE(memcmp(host, back, n) == 0);
        printf("stage %s: %ld copies, %ld locks\n", round == 0 ? "synchronous" : "queued",
               s1.copies - s0.copies, s1.lock_calls - s0.lock_calls);
        REQUIRE(s1.copies - s0.copies == (staged ? 12 : 2));
        REQUIRE(s1.lock_calls - s0.lock_calls == (staged ? 0 : 2));
        REQUIRE(s1.live_locks == 0);
    }
    REQUIRE_RC(plugin_data_delete(dev, dmem, 0, &err), TETHER_OK);
    plugin_destroy(plugin);
    s1 = stats();
    REQUIRE(s1.live_allocs == 0 && s1.live_locks == 0 && s1.live_signals == 0);
    REQUIRE(s1.misuse == 0);
    free(host);
    free(back);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "nodevice") == 0)
        return amdgpu_test_end(argv[1], mode_nodevice(argv[2]));
    if (argc == 3 && strcmp(argv[1], "refuse") == 0)
        return amdgpu_test_end(argv[1], mode_refuse(argv[2]));
    if (argc == 2 && strcmp(argv[1], "initfail") == 0)
        return amdgpu_test_end(argv[1], mode_initfail());
    if (argc == 2 && strcmp(argv[1], "system") == 0)
        return amdgpu_test_end(argv[1], mode_system());
    if (argc == 4 && strcmp(argv[1], "wave32") == 0)
        return amdgpu_test_end(argv[1], mode_wave32(argv[2], argv[3]));
    if (argc == 4 && strcmp(argv[1], "gpu") == 0)
        return amdgpu_test_end(argv[1], mode_gpu(argv[2], argv[3]));
    if (argc == 3 && strcmp(argv[1], "faults") == 0)
        return amdgpu_test_end(argv[1], mode_faults(argv[2]));
    if (argc == 3 && strcmp(argv[1], "threads") == 0)
        return amdgpu_test_end(argv[1], mode_threads(argv[2]));
    if (argc == 4 && strcmp(argv[1], "waits") == 0)
        return amdgpu_test_end(argv[1], mode_waits(argv[2], argv[3]));
    if (argc == 2 && strcmp(argv[1], "knobs") == 0)
        return amdgpu_test_end(argv[1], mode_knobs());
    if (argc == 2 && strcmp(argv[1], "stage") == 0)
        return amdgpu_test_end(argv[1], mode_stage());
    fprintf(stderr,
            "usage: %s nodevice MSG | refuse MSG | initfail | system | wave32 OMP90A OMP1030 | "
            "gpu RAW OMP | faults RAW | threads RAW | waits MODE RAW | knobs | stage\n",
            argv[0]);
    return 2;
}
