/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc_phases_prof.c - the profiling hooks of the device library (rpc/device/device_internal.h)
 * for rpc_phases.c: clock64() cycles per phase of a call, the learnt delays, the polls that
 * found nothing, and two histograms.  A translation unit of its own: the library's own hooks
 * are weak (rpc_phases_lib.c), these replace them at the device link.
 */
#include <stdint.h>

#if defined(__NVPTX__)
void tether_rpc_profile_mark(int phase);
void tether_rpc_profile_delay(uint64_t cycles);
void tether_rpc_profile_poll(void);
#endif
void prof_reset(uint64_t delay_ns);
uint64_t prof_read(int k);
uint32_t prof_hist_read(int h, int k);

#pragma omp declare target
#if defined(__NVPTX__)
/* In shared memory (address space 3): a mark then costs no trip to L2, where the call's acquires
 * would send a global counter (they empty L1). */
static __attribute__((address_space(3))) uint64_t prof_cycles[10];
static __attribute__((address_space(3))) uint64_t prof_last;
static __attribute__((address_space(3))) uint64_t prof_delay;
/* Histograms in buckets of PROF_BUCKET cycles: [0] the time from one call's entry to the next's
 * (mark 8 to mark 8), [1] the wait for the answer's head (mark 2 to mark 5, the learnt delay
 * included). */
#define PROF_BUCKET 128u
#define PROF_BUCKETS 128u
static __attribute__((address_space(3))) uint32_t prof_hist[2][PROF_BUCKETS];
static __attribute__((address_space(3))) uint64_t prof_entry, prof_sent;

static void prof_count(int h, uint64_t cycles)
{
    uint64_t b = cycles / PROF_BUCKET;
    prof_hist[h][b < PROF_BUCKETS ? b : PROF_BUCKETS - 1]++;
}

static uint64_t prof_ns(void)
{
    uint64_t t;
    __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

void tether_rpc_profile_mark(int phase)
{
    uint64_t t;
    __asm__ volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    /* Mark 8 (the library's entry has read its configuration) closes phase 8, from the previous
     * call's end; mark 0 (the packet is built, the port not yet opened) closes phase 6. */
    int slot = phase > 0 ? phase : 6;
    if (phase == 8) {
        if (prof_entry != 0)
            prof_count(0, t - prof_entry);
        prof_entry = t;
    } else if (phase == 2) {
        prof_sent = t;
    } else if (phase == 5) {
        prof_count(1, t - prof_sent);
    }
    if (prof_last != 0)
        prof_cycles[slot] += t - prof_last;
    prof_last = t;
    /* After the send: wait prof_delay ns before the first poll for the answer (counted in the
     * wait's phase). */
    if (phase == 2 && prof_delay != 0)
        for (uint64_t end = prof_ns() + prof_delay; prof_ns() < end;)
            ;
}

/* Slot 0 (mark 0 adds nothing there): the learnt delays before the first poll, in cycles. */
void tether_rpc_profile_delay(uint64_t cycles)
{
    prof_cycles[0] += cycles;
}

/* Slot 7: polls for the answer (or retries of an open) that found nothing. */
void tether_rpc_profile_poll(void)
{
    prof_cycles[7]++;
}

void prof_reset(uint64_t delay_ns)
{
    for (int k = 0; k < 10; k++)
        prof_cycles[k] = 0;
    prof_last = 0;
    prof_delay = delay_ns;
    prof_entry = prof_sent = 0;
    for (unsigned k = 0; k < PROF_BUCKETS; k++)
        prof_hist[0][k] = prof_hist[1][k] = 0;
}

uint32_t prof_hist_read(int h, int k)
{
    return prof_hist[h][k];
}

uint64_t prof_read(int k)
{
    return prof_cycles[k];
}
#else
void prof_reset(uint64_t delay_ns)
{
    (void)delay_ns;
}

uint64_t prof_read(int k)
{
    (void)k;
    return 0;
}

uint32_t prof_hist_read(int h, int k)
{
    (void)h;
    (void)k;
    return 0;
}
#endif
#pragma omp end declare target
