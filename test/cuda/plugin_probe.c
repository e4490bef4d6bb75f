/*
 * plugin_probe.c - an nvptx64 OpenMP program run through Debian's libomptarget with tether's CUDA
 * plugin first on the library path (plugin_test.sh).
 *
 *   plugin_probe host   expects 0 devices and the target region on the host (no usable driver)
 *   plugin_probe gpu    expects >= 1 device and the target region on the GPU
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>

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
    }
    printf("plugin_probe: %d device(s), region ran on the %s, sum %d\n", omp_get_num_devices(),
           on_host ? "host" : "GPU", sum);
    if (sum != 55)
        return 1;
    if (expect_gpu)
        return !(omp_get_num_devices() >= 1 && !on_host);
    return !(omp_get_num_devices() == 0 && on_host);
}
