/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// copy.cu - CUDA native: 1 GiB host<->device copies, pageable and pinned
// (cuMemHostRegister with PORTABLE|DEVICEMAP, the flags tether's lock uses).
#include "native_common.h"

static double best_gbs(void *dst, const void *src, size_t size, cudaMemcpyKind kind)
{
    double best = 0;

    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_us();
        RT_CHECK(cudaMemcpy(dst, src, size, kind));
        double gbs = (double)size / ((bench_now_us() - t0) * 1e3);
        if (gbs > best)
            best = gbs;
    }
    return best;
}

int main(void)
{
    size_t size = BENCH_GIB;
    char *host = (char *)bench_host_alloc(size);
    void *dev;

    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaMalloc(&dev, size));
    bench_fig("h2d_1g_pageable", best_gbs(dev, host, size, cudaMemcpyHostToDevice), "GB/s");
    bench_fig("d2h_1g_pageable", best_gbs(host, dev, size, cudaMemcpyDeviceToHost), "GB/s");
    DRV_CHECK(cuMemHostRegister(host, size,
                                CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
    bench_fig("h2d_1g_pinned", best_gbs(dev, host, size, cudaMemcpyHostToDevice), "GB/s");
    bench_fig("d2h_1g_pinned", best_gbs(host, dev, size, cudaMemcpyDeviceToHost), "GB/s");
    DRV_CHECK(cuMemHostUnregister(host));
    RT_CHECK(cudaFree(dev));
    free(host);
    return 0;
}
