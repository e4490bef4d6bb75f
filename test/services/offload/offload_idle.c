/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_idle.c - a target region that makes no RPC call for a second, then calls: the calls
 * are answered, and the device's RPC server thread (tether-rpc0) used a small share of a core
 * while the region was quiet.  x86_64 offload only: the region runs in a thread of this
 * process, so it reads the server thread's CPU time itself from /proc/self/task/<tid>/schedstat
 * (nanoseconds on a CPU; /proc/self/task/<tid>/stat's clock ticks where schedstat is missing).
 * A busy machine only lowers the share (the thread gets less CPU, the stretch lasts longer).
 *
 *   offload_idle [max percent of a core]   (default 5)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"

#define OP_ECHO 0x8200u

static tether_status_t echo_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    return tether_rpc_reply_append(reply, req->data, req->size);
}

#pragma omp declare target
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the thread named `name` in this process, in ns; -1 when there is none. */
static int64_t thread_cpu_ns(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int64_t ns = -1;
    char path[96], line[256];
    while (d != NULL && ns < 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        int match = fgets(line, sizeof line, f) != NULL && strncmp(line, name, strlen(name)) == 0 &&
                    (line[strlen(name)] == '\n' || line[strlen(name)] == '\0');
        fclose(f);
        if (!match)
            continue;
        unsigned long long run = 0, user = 0, sys = 0;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%llu", &run) == 1)
                ns = (int64_t)run;
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if (ns < 0 && (f = fopen(path, "r")) != NULL) {
            /* After the name's closing parenthesis: fields 3.., utime and stime are 14 and 15. */
            if (fgets(line, sizeof line, f) != NULL && strrchr(line, ')') != NULL &&
                sscanf(strrchr(line, ')') + 2,
                       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user, &sys) == 2)
                ns = (int64_t)((user + sys) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK)));
            fclose(f);
        }
    }
    if (d != NULL)
        closedir(d);
    return ns;
}
#pragma omp end declare target

int main(int argc, char **argv)
{
    double max_share = argc > 1 ? atof(argv[1]) : 5.0;
    if (tether_rpc_register_user(OP_ECHO, echo_handler, NULL) != TETHER_OK) {
        fprintf(stderr, "offload_idle: no tether plugin with RPC loaded\n");
        return 1;
    }
    int64_t cpu0 = -1, cpu1 = -1;
    uint64_t elapsed = 0;
    int wrong = 0, first = 0;
#pragma omp target map(from : cpu0, cpu1, elapsed, wrong, first)
    {
        uint32_t in = 7, out = 0;
        first =
            tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) == sizeof out && out == in;
        struct timespec settle = {0, 20000000}; /* past the server's hot rounds */
        nanosleep(&settle, NULL);
        cpu0 = thread_cpu_ns("tether-rpc0");
        uint64_t t0 = now_ns();
        struct timespec quiet = {1, 0};
        while (nanosleep(&quiet, &quiet) != 0)
            ;
        cpu1 = thread_cpu_ns("tether-rpc0");
        elapsed = now_ns() - t0;
        wrong = 0;
        for (uint32_t k = 0; k < 100; k++) {
            in = k * 2654435761u;
            out = 0;
            wrong += tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != sizeof out ||
                     out != in;
        }
    }
    if (cpu0 < 0 || cpu1 < cpu0) {
        fprintf(stderr, "offload_idle: no thread tether-rpc0 found (%lld, %lld)\n", (long long)cpu0,
                (long long)cpu1);
        return 1;
    }
    double share = 100.0 * (double)(cpu1 - cpu0) / (double)elapsed;
    printf("idle: the server thread used %.3f ms of CPU in %.1f ms without calls (%.3f%% of a "
           "core); first call %s, %d wrong answers in 100 calls after the quiet stretch\n",
           (double)(cpu1 - cpu0) / 1e6, (double)elapsed / 1e6, share, first ? "answered" : "FAILED",
           wrong);
    if (!first || wrong != 0)
        return 1;
    if (share >= max_share) {
        fprintf(stderr, "offload_idle: the server thread used %.3f%% of a core (want < %.1f%%)\n",
                share, max_share);
        return 1;
    }
    return 0;
}
