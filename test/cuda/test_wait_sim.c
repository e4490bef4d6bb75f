/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_wait_sim.c - how tether's CUDA plugin waits for the GPU (common/plugin_wait.h), through
 * Debian's libomptarget 16 on the simulated GPU of fake_cuda_sim.c, whose kernels "run" for
 * FAKE_CUDA_SIM_KERNEL_US (set here before each region).  Run as `test_wait_sim MODE` with
 * TETHER_WAIT=MODE (adaptive: TETHER_WAIT unset, the default), same environment as
 * test_plugin_sim.  The checks count what the plugin asked of the driver:
 *   adaptive  a kernel shorter than the shortest poll window is waited for by polling only (no
 *             thread slept); a long one (300 ms) by polling, then ONE cuEventSynchronize of a
 *             blocking-sync event that slept, in a context left at CU_CTX_SCHED_AUTO; the same
 *             when the region maps a result back to pageable memory (the copy waits for the
 *             kernel first); and the process used well under half the wait in CPU time (a
 *             sleeping thread accrues none, however loaded the machine);
 *   spin      no event recorded or synchronised, nothing slept, however long the kernel;
 *   block     each wait polls once (one cuStreamQuery), then records and synchronises the event.
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fake_cuda_sim.h"
#include "tcheck.h"

#define LONG_US 300000 /* a long kernel: 300 ms */
#define SHORT_US 5     /* shorter than the shortest poll window (20 us) */

static const struct fake_cuda_sim_stats *st;

static void kernel_us(int us)
{
    char v[32];

    snprintf(v, sizeof(v), "%d", us);
    setenv("FAKE_CUDA_SIM_KERNEL_US", v, 1);
}

/* CPU time of the whole process so far (every thread), microseconds. */
static long long cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static void empty_region(void)
{
#pragma omp target
    {
    }
}

/* One region running a kernel of LONG_US, with or without a result mapped back to pageable
 * memory, in the adaptive mode; whether its wait slept.  What holds however the threads are
 * scheduled is checked here: at most one event synchronised (libomptarget records events of its
 * own for mapped data), no spinning synchronisation, and the process's CPU time well under half the
 * wait (a thread asleep in the driver accrues none, however loaded the machine). */
static int long_region(int map)
{
    struct fake_cuda_sim_stats a = *st;
    long long cpu = cpu_us();
    int x = 1;

    kernel_us(LONG_US);
    if (map) {
#pragma omp target map(tofrom : x)
        {
            x++;
        }
        CHECK_EQ(st->d2h - a.d2h, 1);
    } else {
        empty_region();
    }
    cpu = cpu_us() - cpu;
    CHECK(st->event_syncs - a.event_syncs <= 1);
    CHECK(st->event_syncs - a.event_syncs >= st->slept - a.slept);
    CHECK_EQ(st->spun - a.spun, 0);
    CHECK_EQ(st->stream_syncs - a.stream_syncs, 0);
    CHECK(cpu < LONG_US / 2);
    printf("test_wait_sim: a %d ms kernel%s: %d polls found it running, %d sleep(s), %.1f ms of "
           "CPU time\n",
           LONG_US / 1000, map ? " (result mapped back)" : "", st->not_ready - a.not_ready,
           st->slept - a.slept, (double)cpu / 1000);
    return st->slept - a.slept;
}

static void adaptive(void)
{
    struct fake_cuda_sim_stats a;
    int slept = 0;

    /* Short kernels: polled for.  A poll that finds one running happens within SHORT_US of its
     * launch, before any window ends, so nothing ever sleeps (a late poll finds it done). */
    kernel_us(SHORT_US);
    a = *st;
    for (int i = 0; i < 50; i++) {
        empty_region();
    }
    CHECK_EQ(st->launches - a.launches, 50);
    CHECK(st->stream_queries - a.stream_queries >= 50);
    CHECK_EQ(st->slept - a.slept, 0);
    CHECK_EQ(st->spun - a.spun, 0);
    CHECK_EQ(st->stream_syncs - a.stream_syncs, 0);

    /* A long kernel: polled for at most the window, then one sleep on the queue's blocking-sync
     * event, with the context at CU_CTX_SCHED_AUTO.  (The sleep needs the first poll to come
     * before the kernel's end, 300 ms after its launch on the same thread: up to three tries.) */
    for (int i = 0; i < 3 && !slept; i++) {
        slept = long_region(0);
    }
    CHECK_EQ(slept, 1);
    CHECK_EQ(st->primary_flags, 0);
    /* The same when the region maps a result back: the copy waits for the kernel first
     * (cuda_memory.c). */
    slept = 0;
    for (int i = 0; i < 3 && !slept; i++) {
        slept = long_region(1);
    }
    CHECK_EQ(slept, 1);
}

static void spin(void)
{
    struct fake_cuda_sim_stats a = *st;
    int polled = 0;

    /* 100 ms kernels: polled until done, never a sleep or an event.  (Until one is found running
     * by a poll, which comes right after its launch: up to three.) */
    kernel_us(100000);
    for (int i = 0; i < 3 && polled == 0; i++) {
        struct fake_cuda_sim_stats r = *st;

        empty_region();
        polled = st->not_ready - r.not_ready;
    }
    CHECK(polled >= 1);
    CHECK_EQ(st->event_records - a.event_records, 0);
    CHECK_EQ(st->event_syncs - a.event_syncs, 0);
    CHECK_EQ(st->slept - a.slept, 0);
    CHECK_EQ(st->stream_syncs - a.stream_syncs, 0);
}

static void block(void)
{
    /* Each wait: one poll, then the event, short or long kernel alike.  A long kernel is found
     * running by that poll (up to three tries), and the thread sleeps until its end. */
    static const int durations[] = {SHORT_US, 100000};

    for (int d = 0; d < 2; d++) {
        int slept = 0;

        kernel_us(durations[d]);
        for (int i = 0; i < 3; i++) {
            struct fake_cuda_sim_stats a = *st;

            empty_region();
            CHECK_EQ(st->stream_queries - a.stream_queries, 1);
            CHECK_EQ(st->event_syncs - a.event_syncs, st->event_records - a.event_records);
            CHECK(st->event_syncs - a.event_syncs <= 1);
            CHECK_EQ(st->spun - a.spun, 0);
            slept += st->slept - a.slept;
        }
        if (durations[d] >= 100000) {
            CHECK(slept >= 1);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "adaptive";
    void *lib;

    REQUIRE(omp_get_num_devices() == 1);
    empty_region(); /* load the image, fill the pools */
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != NULL);
    st = dlsym(lib, "fake_cuda_sim_stats");
    REQUIRE(st != NULL);
    if (strcmp(mode, "adaptive") == 0) {
        adaptive();
    } else if (strcmp(mode, "spin") == 0) {
        spin();
    } else if (strcmp(mode, "block") == 0) {
        block();
    } else {
        fprintf(stderr, "usage: test_wait_sim adaptive|spin|block\n");
        return 2;
    }
    unsetenv("FAKE_CUDA_SIM_KERNEL_US");
    return tcheck_exit("test_wait_sim");
}
