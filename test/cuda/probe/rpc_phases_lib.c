/*
 * rpc_phases_lib.c - the device library compiled with TETHER_DEVICE_PROFILE for rpc_phases.c
 * (a translation unit of its own: the library's libc names conflict with <stdio.h>), with the
 * profile hook that adds clock64() cycles per phase of dev_call_port.
 */
#include <stdint.h>

#if defined(__NVPTX__)
#define TETHER_DEVICE_PROFILE 1
#include "../../../rpc/device/device_lib.c"
#else
#include "../../../rpc/device/device_host.c"
#endif

#pragma omp declare target
uint64_t prof_cycles[8];
static uint64_t prof_last;
#if defined(__NVPTX__)
void tether_device_profile_mark(int phase)
{
    uint64_t t;
    __asm__ volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    if (phase > 0)
        prof_cycles[phase] += t - prof_last;
    prof_last = t;
}

#endif
#pragma omp end declare target
