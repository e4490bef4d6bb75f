/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_bench.c - `make bench` entry for the CUDA benchmarks.  Where no CUDA driver can be loaded
 * it says so and does nothing (the figures need a GPU: docs/gpu-testing.md); otherwise it runs
 * cuda_bench.sh, which builds the bundle and prints native, LLVM 16 and tether side by side.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (argc != 3) {
        fprintf(stderr, "usage: %s SOURCE_DIR BUILD_DIR\n", argv[0]);
        return 2;
    }
    if (drv == NULL) {
        printf("cuda bench: no CUDA driver here (%s); no GPU figures. On a GPU machine: "
               "docs/gpu-testing.md\n",
               dlerror());
        return 0;
    }
    dlclose(drv);
    char script[4096];
    snprintf(script, sizeof(script), "%s/test/cuda/cuda_bench.sh", argv[1]);
    execl("/bin/bash", "bash", script, argv[1], argv[2], (char *)NULL);
    perror("cuda bench: exec bash");
    return 1;
}
