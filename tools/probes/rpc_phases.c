/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc_phases.c - where the time of a one-packet RPC round trip goes on the GPU: the device
 * library is compiled into this program (rpc_phases_lib.c) in its profiling build
 * (TETHER_RPC_PROFILE), whose marks in dev_call_port add the clock64() cycles of each phase (open
 * the home port, send, wait for and read the answer, close) into a device array.  Prints cycles per
 * call and phase, and the globaltimer nanoseconds per call for scale.  Build (here) and run (there,
 * through tether's plugin, with the device bundle's runtime): tools/probes/build_rpc_phases.sh
 * OUT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tether/rpc.h"

#define OP_ECHO 0x8100u
#define ROUNDS 20000

#pragma omp declare target
void prof_reset(uint64_t delay_ns);
uint64_t prof_read(int k);
uint32_t prof_hist_read(int h, int k);
#pragma omp end declare target

#define HIST_BUCKET 128 /* cycles, as PROF_BUCKET in rpc_phases_lib.c */
#define HIST_BUCKETS 128

/* Percentiles of histogram h (cycles, bucket upper bounds) and its shape in 0.5 us steps. */
static void print_hist(const char *what, const uint32_t *hist)
{
    uint64_t n = 0, acc = 0;
    for (int k = 0; k < HIST_BUCKETS; k++)
        n += hist[k];
    if (n == 0)
        return;
    static const double pct[] = {0.10, 0.50, 0.90, 0.97, 0.99};
    printf("rpc_phases: %s, %llu samples, cycles at", what, (unsigned long long)n);
    int p = 0;
    for (int k = 0; k < HIST_BUCKETS && p < 5; k++) {
        acc += hist[k];
        while (p < 5 && (double)acc >= pct[p] * (double)n)
            printf(" p%.0f %d", pct[p++] * 100, (k + 1) * HIST_BUCKET);
    }
    printf("\nrpc_phases:   per 0.5 us (990 cycles):");
    for (int lo = 0; lo < HIST_BUCKETS * HIST_BUCKET; lo += 990) {
        uint64_t c = 0;
        for (int k = 0; k < HIST_BUCKETS; k++)
            if (k * HIST_BUCKET >= lo && k * HIST_BUCKET < lo + 990)
                c += hist[k];
        printf(" %.1f%%", 100.0 * (double)c / (double)n);
    }
    printf("\n");
}

static tether_status_t echo(void *user, const struct tether_rpc_request *req,
                            struct tether_rpc_reply *reply)
{
    (void)user;
    return tether_rpc_reply_append(reply, req->data, req->size);
}

static int run(uint64_t delay_ns)
{
    uint64_t ns = 0, bad = 0, cycles[10] = {0};
    uint32_t hist[2][HIST_BUCKETS] = {{0}};
    for (int pass = 0; pass < 2; pass++) {
#pragma omp target map(tofrom : ns, bad) map(from : cycles, hist)
        {
            prof_reset(delay_ns);
            uint64_t t0 = 0, t1 = 0;
#if defined(__NVPTX__)
            __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
#endif
            for (int i = 0; i < ROUNDS; i++) {
                uint32_t in = (uint32_t)i, out = 0;
#if defined(PHASES_NO_CHECK) /* a variant: the answer's bytes are not read back */
                if (tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != 4)
                    bad++;
#else
                if (tether_rpc_call(OP_ECHO, &in, sizeof in, &out, sizeof out) != 4 || out != in)
                    bad++;
#endif
            }
#if defined(__NVPTX__)
            __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
#endif
            ns = t1 - t0;
            for (int k = 0; k < 10; k++)
                cycles[k] = prof_read(k);
            for (int k = 0; k < HIST_BUCKETS; k++) {
                hist[0][k] = prof_hist_read(0, k);
                hist[1][k] = prof_hist_read(1, k);
            }
        }
    }
    uint64_t total =
        cycles[1] + cycles[2] + cycles[3] + cycles[4] + cycles[5] + cycles[6] + cycles[8];
    printf("rpc_phases: %d calls, %lu wrong, %.2f us per call (globaltimer), first poll %lu ns "
           "after the send, %.2f empty polls per call, learnt delay %.0f cycles per call\n",
           ROUNDS, (unsigned long)bad, (double)ns / ROUNDS / 1e3, (unsigned long)delay_ns,
           (double)cycles[7] / ROUNDS, (double)cycles[0] / ROUNDS);
    const char *names[9] = {"",
                            "open home port",
                            "send",
                            "read the answer (inline: decode)",
                            "close",
                            "wait for the answer's head",
                            "build the packet",
                            "",
                            "between calls (loop, entry, config)"};
    for (int k = 1; k < 9; k++) {
        if (k == 7)
            continue;
        printf("rpc_phases: %-36s %8.0f cycles per call (%4.1f%%)\n", names[k],
               (double)cycles[k] / ROUNDS, 100.0 * (double)cycles[k] / (double)(total ? total : 1));
    }
    print_hist("call to call", hist[0]);
    print_hist("send to answer (delay + poll)", hist[1]);
    /* The phases cover the whole loop, so cycles over nanoseconds is the SM clock. */
    printf("rpc_phases: all phases %8.0f cycles per call (%.2f cycles per globaltimer ns)\n",
           (double)total / ROUNDS, ns ? (double)total / (double)ns : 0.0);
    return bad != 0;
}

/* rpc_phases [DELAY_NS...]: one run per delay before the first poll for the answer (default:
 * none). */
int main(int argc, char **argv)
{
    if (tether_rpc_register_user(OP_ECHO, echo, NULL) != TETHER_OK) {
        fprintf(stderr, "rpc_phases: no tether plugin\n");
        return 1;
    }
    int bad = 0;
    if (argc < 2)
        return run(0);
    for (int i = 1; i < argc; i++)
        bad |= run(strtoull(argv[i], NULL, 10));
    return bad;
}
