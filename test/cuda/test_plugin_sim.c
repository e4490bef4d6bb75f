/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_plugin_sim.c - tether's CUDA plugin driven by Debian's libomptarget 16 against
 * fake_cuda_sim.c, a libcuda.so.1 that simulates one sm_90 GPU in host memory (no GPU needed).
 * Built for nvptx64 with clang-16; run with LD_LIBRARY_PATH=<sim>:<tether plugins> and
 * LIBOMPTARGET_STACK_SIZE=8192 LIBOMPTARGET_HEAP_SIZE=1048576 LIBOMPTARGET_NUM_INITIAL_STREAMS=4
 * LIBOMPTARGET_NUM_INITIAL_EVENTS=2.  Device code never runs (launches are only counted), so
 * the checks are on what the plugin asks of the driver: contexts, pools, limits, launch
 * geometry, allocation kinds, copies, and pinning through the ref-counted map.
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_sim.h"
#include "tcheck.h"

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);
void *llvm_omp_target_alloc_host(size_t size, int device_num);
void llvm_omp_target_free_host(void *ptr, int device_num);
void *llvm_omp_target_alloc_shared(size_t size, int device_num);
void llvm_omp_target_free_shared(void *ptr, int device_num);

int main(void)
{
    const struct fake_cuda_sim_stats *st;
    int (*sim_register)(void *, size_t, unsigned);
    void *lib;
    int x = 5;

    CHECK(omp_get_num_devices() == 1);
    /* The simulated driver: loaded by the plugin, found without loading it again. */
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        fprintf(stderr, "the plugin did not load the simulated libcuda.so.1\n");
        return 1;
    }
    st = dlsym(lib, "fake_cuda_sim_stats");
    *(void **)&sim_register = dlsym(lib, "cuMemHostRegister_v2");
    if (st == NULL || sim_register == NULL) {
        fprintf(stderr, "not the simulated driver\n");
        return 1;
    }

    /* Interop: a targetsync object carries a stream of the plugin's own; a target object the
     * primary context (libomptarget 16 answers device and context only for target objects, and
     * the stream only for targetsync ones). */
    {
        omp_interop_t sync_obj = omp_interop_none, dev_obj = omp_interop_none;
        int streams = st->streams_created, rc = 0;
        void *stream;

#pragma omp interop init(targetsync : sync_obj) device(0)
        CHECK(sync_obj != omp_interop_none);
        if (sync_obj != omp_interop_none) {
            stream = omp_get_interop_ptr(sync_obj, omp_ipr_targetsync, &rc);
            CHECK(rc == omp_irc_success && stream != NULL);
            CHECK(st->streams_created >= streams); /* from the pool or new: a real stream */
            CHECK(omp_get_interop_int(sync_obj, omp_ipr_device_num, &rc) == 0 &&
                  rc == omp_irc_success);
            CHECK(strcmp(omp_get_interop_str(sync_obj, omp_ipr_vendor_name, &rc), "cuda") == 0);
#pragma omp interop destroy(sync_obj)
        }
#pragma omp interop init(target : dev_obj) device(0)
        CHECK(dev_obj != omp_interop_none);
        if (dev_obj != omp_interop_none) {
            CHECK(omp_get_interop_ptr(dev_obj, omp_ipr_device_context, &rc) != NULL &&
                  rc == omp_irc_success);
            (void)omp_get_interop_ptr(dev_obj, omp_ipr_targetsync, &rc);
            CHECK(rc != omp_irc_success);
#pragma omp interop destroy(dev_obj)
        }
    }

    /* A target region: the image loads, the kernel launches with LLVM 16's geometry. */
#pragma omp target map(tofrom : x)
    {
        x += 1;
    }
    CHECK(x == 5); /* the simulated kernel does not run; the copies do */
    CHECK(st->inits == 1 && st->ctx_retains == 1);
    CHECK(st->primary_flags == 0); /* TETHER_CUDA_SCHED unset: auto */
    CHECK(st->modules_loaded == 1);
    CHECK(st->launches == 1);
    CHECK(st->stack_limit == 8192 && st->heap_limit == 1048576);
    CHECK(st->streams_created >= 4 && st->events_created >= 2);
    {
        int a[64];

        for (int i = 0; i < 64; i++)
            a[i] = i;
#pragma omp target teams distribute parallel for num_teams(7) thread_limit(64) map(tofrom : a)
        for (int i = 0; i < 64; i++)
            a[i] *= 2;
        CHECK(st->launches == 2);
        CHECK(st->last_grid == 7 && st->last_block == 64 && st->last_shared == 0);
        CHECK(a[63] == 63);
    }

    /* What an empty region, a copy each way (through libomptarget, which waits for each) and a
     * copy through the plugin's synchronous entry point cost in driver calls: the context made
     * current, the one operation on a pooled stream and the wait for it, one cuStreamQuery
     * (plugin_wait's first poll: the simulated work is done by then); no stream or event made,
     * no cuStreamSynchronize, no event recorded or synchronised.  Three is the least: a wait
     * needs one look at the stream.  These are the latency of the everyday work: a change that
     * adds a driver call to one of them fails here. */
    {
        struct fake_cuda_sim_stats a;
        int32_t (*submit)(int32_t, void *, void *, int64_t);
        char small[64] = {1};
        void *dev = omp_target_alloc(sizeof(small), 0);
        void *plugin = dlopen("libomptarget.rtl.cuda.nextgen.so", RTLD_NOW | RTLD_NOLOAD);

        REQUIRE(dev != NULL && plugin != NULL);
        *(void **)&submit = dlsym(plugin, "__tgt_rtl_data_submit");
        REQUIRE(submit != NULL);
        a = *st;
#pragma omp target
        {
        }
        CHECK_EQ(st->calls - a.calls, 3);
        CHECK_EQ(st->ctx_set_current - a.ctx_set_current, 1);
        CHECK_EQ(st->launches - a.launches, 1);
        CHECK_EQ(st->stream_queries - a.stream_queries, 1);
        a = *st;
        CHECK(omp_target_memcpy(dev, small, sizeof(small), 0, 0, 0, omp_get_initial_device()) == 0);
        CHECK_EQ(st->calls - a.calls, 3);
        CHECK_EQ(st->ctx_set_current - a.ctx_set_current, 1);
        CHECK_EQ(st->h2d - a.h2d, 1);
        CHECK_EQ(st->stream_queries - a.stream_queries, 1);
        a = *st;
        CHECK(omp_target_memcpy(small, dev, sizeof(small), 0, 0, omp_get_initial_device(), 0) == 0);
        CHECK_EQ(st->calls - a.calls, 3);
        CHECK_EQ(st->d2h - a.d2h, 1);
        CHECK_EQ(st->stream_queries - a.stream_queries, 1);
        a = *st;
        CHECK(submit(0, dev, small, sizeof(small)) == 0);
        CHECK_EQ(st->calls - a.calls, 3);
        CHECK_EQ(st->ctx_set_current - a.ctx_set_current, 1);
        CHECK_EQ(st->h2d - a.h2d, 1);
        CHECK_EQ(st->stream_queries - a.stream_queries, 1);
        omp_target_free(dev, 0);
    }

    /* Device memory and copies. */
    {
        enum { N = 1 << 20 };
        char *host = malloc(N), *back = malloc(N);
        void *dev = omp_target_alloc(N, 0);
        int h2d = st->h2d, d2h = st->d2h;

        CHECK(dev != NULL && st->allocs >= 1);
        for (int i = 0; i < N; i++)
            host[i] = (char)(i * 7);
        CHECK(omp_target_memcpy(dev, host, N, 0, 0, 0, omp_get_initial_device()) == 0);
        CHECK(omp_target_memcpy(back, dev, N, 0, 0, omp_get_initial_device(), 0) == 0);
        CHECK(memcmp(host, back, N) == 0);
        CHECK(st->h2d > h2d && st->d2h > d2h);
        omp_target_free(dev, 0);
        free(host);
        free(back);
    }

    /* A large pageable copy goes through common's staging buffers in 8 MiB chunks (one driver
     * copy per chunk), both ways, and arrives whole; an odd size checks the last, short chunk.
     * TETHER_STAGE=0, or its older name TETHER_CUDA_STAGE=0 (test cuda_plugin_sim_nostage),
     * makes it one copy each way. */
    {
        size_t n = ((size_t)40 << 20) + 13;
        char *host = malloc(n), *back = malloc(n);
        void *dev = omp_target_alloc(n, 0);
        int h2d = st->h2d, d2h = st->d2h;
        const char *off =
            getenv("TETHER_STAGE") != NULL ? getenv("TETHER_STAGE") : getenv("TETHER_CUDA_STAGE");
        int chunks = off != NULL && strcmp(off, "0") == 0 ? 1 : 6;

        CHECK(host != NULL && back != NULL && dev != NULL);
        for (size_t i = 0; i < n; i++)
            host[i] = (char)(i * 13 + (i >> 20));
        memset(back, 0, n);
        CHECK(omp_target_memcpy(dev, host, n, 0, 0, 0, omp_get_initial_device()) == 0);
        CHECK(omp_target_memcpy(back, dev, n, 0, 0, omp_get_initial_device(), 0) == 0);
        CHECK(memcmp(host, back, n) == 0);
        CHECK(st->h2d == h2d + chunks && st->d2h == d2h + chunks);
        omp_target_free(dev, 0);
        free(host);
        free(back);
    }

    /* Pinning: one registration per range, sub-ranges counted, the base unregistered last. */
    {
        size_t n = 1 << 20;
        char *buf = aligned_alloc(4096, n);
        int regs = st->registers, unregs = st->unregisters;
        void *p = llvm_omp_target_lock_mem(buf, n, 0);
        void *q = llvm_omp_target_lock_mem(buf + 4096, 4096, 0);

        CHECK(p == buf && q == buf + 4096);
        CHECK(st->registers == regs + 1);
        llvm_omp_target_unlock_mem(buf + 4096, 0);
        CHECK(st->unregisters == unregs);
        llvm_omp_target_unlock_mem(buf, 0);
        CHECK(st->unregisters == unregs + 1);
        /* Extending a locked range is refused, not silently accepted. */
        p = llvm_omp_target_lock_mem(buf, 8192, 0);
        CHECK(p == buf);
        CHECK(llvm_omp_target_lock_mem(buf + 4096, 8192, 0) == NULL);
        llvm_omp_target_unlock_mem(buf, 0);
        CHECK(st->unregisters == unregs + 2);

        /* Memory registered outside tether: counted, used, never unregistered by tether. */
        CHECK(sim_register(buf, n, 0) == 0);
        unregs = st->unregisters;
        p = llvm_omp_target_lock_mem(buf, n, 0);
        CHECK(p == buf);
        llvm_omp_target_unlock_mem(buf, 0);
        CHECK(st->unregisters == unregs);
        free(buf);
    }

    /* Host and shared allocation kinds. */
    {
        int hosts = st->host_allocs, managed = st->managed_allocs, regs = st->registers;
        char *h = llvm_omp_target_alloc_host(8192, 0);
        char *s = llvm_omp_target_alloc_shared(8192, 0);

        CHECK(h != NULL && st->host_allocs == hosts + 1);
        CHECK(s != NULL && st->managed_allocs == managed + 1);
        /* Host allocations are already pinned: locking part of one reaches no driver. */
        CHECK(llvm_omp_target_lock_mem(h + 100, 100, 0) == h + 100);
        CHECK(st->registers == regs);
        llvm_omp_target_unlock_mem(h + 100, 0);
        llvm_omp_target_free_host(h, 0);
        llvm_omp_target_free_shared(s, 0);
        CHECK(st->host_frees >= 1);
    }

    /* nowait regions: queues through query/synchronize. */
    {
        int launches = st->launches;

        for (int i = 0; i < 8; i++) {
#pragma omp target nowait
            {
            }
        }
#pragma omp taskwait
        CHECK(st->launches == launches + 8);
    }

    printf("test_plugin_sim: %d launches, %d registrations, %d streams created\n", st->launches,
           st->registers, st->streams_created);
    return tcheck_exit("test_plugin_sim");
}
