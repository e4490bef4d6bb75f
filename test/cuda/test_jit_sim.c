/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_jit_sim.c - a -fopenmp-target-jit program (its device image is LLVM bitcode) through
 * Debian's libomptarget 16 and tether's CUDA plugin on fake_cuda_sim.c's simulated sm_90 GPU:
 * the plugin must take the image, compile it to PTX, link it with the driver's linker
 * (fake_cuda_link.c) and launch its kernels there, instead of leaving the program to fall back to
 * the host.  Device code never runs on the simulated GPU, which is how the test tells the two
 * apart.  Run by jit_sim_test.sh.
 */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

#include "fake_cuda_sim.h"
#include "tcheck.h"

int main(void)
{
    const struct fake_cuda_sim_stats *st;
    const int *links;
    int x = 5, on_host = 1;
    void *lib;

    CHECK(omp_get_num_devices() == 1);
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    st = lib != NULL ? dlsym(lib, "fake_cuda_sim_stats") : NULL;
    links = lib != NULL ? dlsym(lib, "fake_cuda_sim_links") : NULL;
    if (st == NULL || links == NULL) {
        fprintf(stderr, "test_jit_sim: the plugin did not load the simulated libcuda.so.1\n");
        return 1;
    }

    /* On the host this would set both; on the simulated GPU nothing runs. */
#pragma omp target map(tofrom : x, on_host)
    {
        x += 1;
        on_host = omp_is_initial_device();
    }
    CHECK(x == 5 && on_host == 1);
    CHECK(*links == 1);
    CHECK(st->modules_loaded == 1);
    CHECK(st->launches == 1);

    /* A second kernel of the same image: no second compilation; LLVM 16's geometry. */
    {
        int a[64];

        for (int i = 0; i < 64; i++)
            a[i] = i;
#pragma omp target teams distribute parallel for num_teams(7) thread_limit(64) map(tofrom : a)
        for (int i = 0; i < 64; i++)
            a[i] *= 2;
        CHECK(a[63] == 63);
        CHECK(st->launches == 2 && st->last_grid == 7 && st->last_block == 64);
        CHECK(*links == 1 && st->modules_loaded == 1);
    }

    printf("test_jit_sim: %d launches on the simulated GPU, %d link\n", st->launches, *links);
    return tcheck_exit("test_jit_sim");
}
