/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * printf_flush_sim.c - an image that prints with CUDA's own printf (vprintf, no
 * libtether-device.a), run against fake_cuda_sim.c.  The driver writes that printf's buffer only
 * at a synchronising call, so a wait that ends by polling (cuStreamQuery) would leave the lines
 * until the program ends, out of order with the host's output.  The plugin then also makes one
 * cuStreamSynchronize per completed wait: in a synchronous region and after a nowait region's
 * taskwait.  Images without vprintf pay nothing (test_plugin_sim.c counts their driver calls).
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

#include "fake_cuda_sim.h"
#include "tcheck.h"

int main(void)
{
    const struct fake_cuda_sim_stats *st;
    struct fake_cuda_sim_stats a;
    void *lib;
    int x = 0;

    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != NULL);
    st = dlsym(lib, "fake_cuda_sim_stats");
    REQUIRE(st != NULL);

#pragma omp target map(tofrom : x)
    {
        printf("device line %d\n", x);
        x = 1;
    }
    a = *st;
#pragma omp target map(tofrom : x)
    {
        printf("device line %d\n", x);
    }
    CHECK(st->stream_syncs - a.stream_syncs >= 1);
    a = *st;
#pragma omp target nowait map(tofrom : x)
    {
        printf("device line %d\n", x);
    }
#pragma omp taskwait
    CHECK(st->stream_syncs - a.stream_syncs >= 1);
    return tcheck_exit("printf_flush_sim");
}
