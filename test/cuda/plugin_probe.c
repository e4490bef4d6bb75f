/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * plugin_probe.c - an nvptx64 OpenMP program run through Debian's libomptarget with tether's CUDA
 * plugin first on the library path (plugin_test.sh).
 *
 *   plugin_probe host   expects 0 devices and the target region on the host (no usable driver)
 *   plugin_probe gpu    expects >= 1 device and the target region on the GPU
 *   plugin_probe sim    expects >= 1 device; the region's results are not checked (the simulated
 *                       GPU of fake_cuda_sim.c runs no device code)
 * Built with -DPROBE_RPC, tether/device_libc.h and libtether-device.a (plugin_probe_rpc), the
 * region also prints a line through tether's device printf, so the image carries the RPC client and
 * the plugin starts an RPC server for it.  Built with -DPROBE_USM (plugin_probe_usm), the program
 * requires unified_shared_memory.
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#ifdef PROBE_USM
#pragma omp requires unified_shared_memory
#endif

int main(int argc, char **argv)
{
    int expect_gpu = argc > 1 && strcmp(argv[1], "gpu") == 0;
    int on_host = 1;
    int sum = 0;

#pragma omp target map(from : on_host) map(tofrom : sum)
    {
        on_host = omp_is_initial_device();
        for (int i = 1; i <= 10; i++)
            sum += i;
#ifdef PROBE_RPC
        printf("plugin_probe: hello from the device\n");
#endif
    }
    printf("plugin_probe: %d device(s), region ran on the %s, sum %d\n", omp_get_num_devices(),
           on_host ? "host" : "GPU", sum);
    if (argc > 1 && strcmp(argv[1], "sim") == 0)
        return !(omp_get_num_devices() >= 1);
    if (sum != 55)
        return 1;
    if (expect_gpu)
        return !(omp_get_num_devices() >= 1 && !on_host);
    return !(omp_get_num_devices() == 0 && on_host);
}
