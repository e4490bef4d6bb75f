/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// pingpong.cu - CUDA native: one GPU thread <-> one host thread round trip
// over pinned, mapped host memory (the floor for any device-to-host RPC).
// "pingpong": the host writes, the GPU answers; "pingpong_gpu": the GPU writes
// and waits for the host's answer, the direction of a device-to-host call.
#include "native_common.h"

__global__ void pong(volatile unsigned *ping, volatile unsigned *reply, unsigned rounds)
{
    for (unsigned i = 1; i <= rounds; i++) {
        while (*ping != i)
            ;
        *reply = i;
        __threadfence_system();
    }
}

// The GPU starts each round and waits for the host's answer.
__global__ void ping(volatile unsigned *ping, volatile unsigned *reply, unsigned rounds,
                     unsigned long long *ns)
{
    unsigned long long t0 = 0, t1;
    for (unsigned i = 1; i <= rounds; i++) {
        if (i == 1001)
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        *ping = i;
        while (*reply != i)
            ;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    *ns = t1 - t0;
}

int main(void)
{
    const unsigned rounds = 20000;
    volatile unsigned *flags;
    unsigned *dev_flags;

    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaHostAlloc((void **)&flags, 2 * sizeof(unsigned), cudaHostAllocMapped));
    flags[0] = flags[1] = 0;
    RT_CHECK(cudaHostGetDevicePointer((void **)&dev_flags, (void *)flags, 0));
    pong<<<1, 1>>>(dev_flags, dev_flags + 1, rounds);
    RT_CHECK(cudaGetLastError());
    // Warm-up rounds are the first 1000; time the rest.
    double t0 = 0;
    for (unsigned i = 1; i <= rounds; i++) {
        if (i == 1001)
            t0 = bench_now_us();
        __atomic_store_n(&flags[0], i, __ATOMIC_RELEASE);
        double start = bench_now_us();
        while (__atomic_load_n(&flags[1], __ATOMIC_ACQUIRE) != i) {
            if (bench_now_us() - start > 5e6) {
                fprintf(stderr, "pingpong: no reply from the GPU to round %u\n", i);
                return 1;
            }
        }
    }
    double per = (bench_now_us() - t0) / (rounds - 1000);
    RT_CHECK(cudaDeviceSynchronize());
    bench_fig("pingpong", per, "us");

    unsigned long long *ns;
    RT_CHECK(cudaMallocManaged((void **)&ns, sizeof *ns));
    flags[0] = flags[1] = 0;
    ping<<<1, 1>>>(dev_flags, dev_flags + 1, rounds, ns);
    RT_CHECK(cudaGetLastError());
    for (unsigned i = 1; i <= rounds; i++) {
        double start = bench_now_us();
        while (__atomic_load_n(&flags[0], __ATOMIC_ACQUIRE) != i) {
            if (bench_now_us() - start > 5e6) {
                fprintf(stderr, "pingpong: no request from the GPU in round %u\n", i);
                return 1;
            }
        }
        __atomic_store_n(&flags[1], i, __ATOMIC_RELEASE);
    }
    RT_CHECK(cudaDeviceSynchronize());
    bench_fig("pingpong_gpu", (double)*ns / 1e3 / (rounds - 1000), "us");
    RT_CHECK(cudaFree(ns));
    RT_CHECK(cudaFreeHost((void *)flags));
    return 0;
}
