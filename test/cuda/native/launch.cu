/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// launch.cu - CUDA native: empty kernel launch + stream synchronize latency.
#include "native_common.h"

__global__ void empty_kernel(void) {}

int main(void)
{
    enum { BATCHES = 11, PER_BATCH = 2000 };
    double batch_us[BATCHES];
    cudaStream_t stream;

    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int i = 0; i < 1000; i++) // warm-up
        empty_kernel<<<1, 1, 0, stream>>>();
    RT_CHECK(cudaStreamSynchronize(stream));
    for (int b = 0; b < BATCHES; b++) {
        double t0 = bench_now_us();
        for (int i = 0; i < PER_BATCH; i++) {
            empty_kernel<<<1, 1, 0, stream>>>();
            RT_CHECK(cudaStreamSynchronize(stream));
        }
        batch_us[b] = (bench_now_us() - t0) / PER_BATCH;
    }
    bench_fig("launch_empty", bench_median(batch_us, BATCHES), "us");
    return 0;
}
