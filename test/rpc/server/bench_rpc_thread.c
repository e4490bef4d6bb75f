/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/bench_rpc_thread.c - the server thread's idle policy: CPU it
 * burns while idle and how fast it answers a call that comes after an idle
 * spell.  Host threads play the device (the device library compiled for the
 * host).  Baseline, measured in the same run on the same server: a thread
 * with LLVM offload's policy (RPC.cpp, PR #168596: condition variable while
 * no kernel runs; while one runs, spin and after 25 us without work sleep
 * 250 us per iteration).
 *
 *   bench_rpc_thread [samples]
 *
 * Figures need idle cores: on an oversubscribed host the scheduler, not the
 * policy, decides the latencies.  The load average is printed first.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../../rpc/device/device_internal.h"
#include "tether/rpc.h"
#include "svc_rig.h"

extern struct tether_rpc_device_client __tether_rpc_client;

#define OP_PING 0x8001u

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static tether_status_t ping(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    return tether_rpc_reply_append(reply, req->data, req->size);
}

/* ---- the baseline thread: LLVM's policy over the same server ---------------------------- */

struct llvm_thread {
    pthread_t tid;
    tether_rpc_server_t *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int users; /* kernels running */
    bool stop;
};

static void *llvm_main(void *arg)
{
    struct llvm_thread *t = arg;
    uint64_t last = svc_clock_ns(CLOCK_MONOTONIC);
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (t->users == 0 && !t->stop)
            pthread_cond_wait(&t->cv, &t->mu);
        bool stop = t->stop;
        pthread_mutex_unlock(&t->mu);
        if (stop)
            return NULL;
        uint32_t progress = 0;
        tether_rpc_server_handle(t->srv, &progress);
        if (progress != 0) {
            last = svc_clock_ns(CLOCK_MONOTONIC);
        } else if (svc_clock_ns(CLOCK_MONOTONIC) - last > 25000) {
            sleep_us(250);
        }
    }
}

static void llvm_users(struct llvm_thread *t, int delta)
{
    pthread_mutex_lock(&t->mu);
    t->users += delta;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* ---- one configuration ------------------------------------------------------------------ */

struct result {
    double cpu_idle;   /* % of a core, no kernel running */
    double cpu_kernel; /* % of a core, a kernel running but no calls */
    double lat_p50;    /* us, call after 1 ms idle */
    double lat_p99;    /* us */
    double busy_rtt;   /* us per call, back to back */
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void run(bool ours, bool host_client, int samples, struct result *r)
{
    struct tether_rpc_server_config cfg = {
        .port_count = 16,
        .lane_count = 32,
        .host_client = host_client,
        .shared_alloc = svc_shared_alloc,
        .shared_free = svc_shared_free,
    };
    tether_rpc_server_t *srv;
    if (tether_rpc_server_create(&cfg, &srv, NULL) != TETHER_OK)
        exit(1);
    tether_rpc_register(srv, OP_PING, ping, NULL);
    if (svc_attach_client(srv) != TETHER_OK)
        exit(1);
    struct llvm_thread lt = {.srv = srv, .users = 0, .stop = false};
    if (ours) {
        tether_rpc_server_start(srv, NULL, NULL);
    } else {
        pthread_mutex_init(&lt.mu, NULL);
        pthread_cond_init(&lt.cv, NULL);
        pthread_create(&lt.tid, NULL, llvm_main, &lt);
    }

    /* Idle, no kernel: the main thread sleeps, what the process burns is the server's. */
    sleep_us(50000);
    uint64_t c0 = svc_clock_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = svc_clock_ns(CLOCK_MONOTONIC);
    sleep_us(500000);
    r->cpu_idle = 100.0 * (double)(svc_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) /
                  (double)(svc_clock_ns(CLOCK_MONOTONIC) - t0);

    /* A kernel runs, no calls. */
    if (ours)
        tether_rpc_server_kernel_started(srv);
    else
        llvm_users(&lt, 1);
    sleep_us(50000);
    c0 = svc_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    t0 = svc_clock_ns(CLOCK_MONOTONIC);
    sleep_us(500000);
    r->cpu_kernel = 100.0 * (double)(svc_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) /
                    (double)(svc_clock_ns(CLOCK_MONOTONIC) - t0);

    /* Calls after 1 ms of quiet. */
    uint64_t *lat = malloc((size_t)samples * sizeof *lat);
    char in[16] = "ping", out[16];
    for (int i = 0; i < samples; i++) {
        sleep_us(1000);
        uint64_t s = svc_clock_ns(CLOCK_MONOTONIC);
        int64_t n = tether_rpc_call(OP_PING, in, sizeof in, out, sizeof out);
        lat[i] = svc_clock_ns(CLOCK_MONOTONIC) - s;
        if (n != (int64_t)sizeof in)
            exit(1);
    }
    qsort(lat, (size_t)samples, sizeof *lat, cmp_u64);
    r->lat_p50 = (double)lat[samples / 2] / 1000.0;
    r->lat_p99 = (double)lat[samples * 99 / 100] / 1000.0;
    free(lat);

    /* Back to back: the median call (a loaded host preempts the odd one for milliseconds). */
    enum { BUSY = 20000 };
    uint64_t *rtt = malloc(BUSY * sizeof *rtt);
    for (int i = 0; i < BUSY; i++) {
        uint64_t s = svc_clock_ns(CLOCK_MONOTONIC);
        tether_rpc_call(OP_PING, in, sizeof in, out, sizeof out);
        rtt[i] = svc_clock_ns(CLOCK_MONOTONIC) - s;
    }
    qsort(rtt, BUSY, sizeof *rtt, cmp_u64);
    r->busy_rtt = (double)rtt[BUSY / 2] / 1000.0;
    free(rtt);

    if (ours) {
        tether_rpc_server_kernel_finished(srv);
    } else {
        llvm_users(&lt, -1);
        pthread_mutex_lock(&lt.mu);
        lt.stop = true;
        pthread_cond_broadcast(&lt.cv);
        pthread_mutex_unlock(&lt.mu);
        pthread_join(lt.tid, NULL);
        pthread_cond_destroy(&lt.cv);
        pthread_mutex_destroy(&lt.mu);
    }
    tether_rpc_server_destroy(srv);
    memset(&__tether_rpc_client, 0, sizeof __tether_rpc_client);
}

static void line(const char *name, double v, const char *unit, double base)
{
    if (base > 0)
        printf("%s: %.2f %s (%.2fx vs LLVM policy %.2f %s)\n", name, v, unit, v / base, base, unit);
    else
        printf("%s: %.2f %s (LLVM policy %.2f %s)\n", name, v, unit, base, unit);
}

int main(int argc, char **argv)
{
    int samples = argc > 1 ? atoi(argv[1]) : 300;
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(f);
    }
    printf("# %ld CPUs, load average %.2f (figures are meaningful only when it is below the "
           "CPU count)\n",
           sysconf(_SC_NPROCESSORS_ONLN), load[0]);
    struct result gpu, gpu_llvm, host, host_llvm;
    run(true, false, samples, &gpu);
    run(false, false, samples, &gpu_llvm);
    run(true, true, samples, &host);
    run(false, true, samples, &host_llvm);
    line("rpc_thread_cpu_idle_no_kernel", gpu.cpu_idle, "% of a core", gpu_llvm.cpu_idle);
    line("rpc_thread_cpu_kernel_running_no_calls", gpu.cpu_kernel, "% of a core",
         gpu_llvm.cpu_kernel);
    line("rpc_wakeup_latency_p50_gpu_like", gpu.lat_p50, "us", gpu_llvm.lat_p50);
    line("rpc_wakeup_latency_p99_gpu_like", gpu.lat_p99, "us", gpu_llvm.lat_p99);
    line("rpc_wakeup_latency_p50_host_doorbell", host.lat_p50, "us", host_llvm.lat_p50);
    line("rpc_wakeup_latency_p99_host_doorbell", host.lat_p99, "us", host_llvm.lat_p99);
    line("rpc_call_roundtrip_busy_p50_gpu_like", gpu.busy_rtt, "us", gpu_llvm.busy_rtt);
    line("rpc_call_roundtrip_busy_p50_host_doorbell", host.busy_rtt, "us", host_llvm.busy_rtt);
    line("rpc_thread_cpu_kernel_running_host_doorbell", host.cpu_kernel, "% of a core",
         host_llvm.cpu_kernel);
    return 0;
}
