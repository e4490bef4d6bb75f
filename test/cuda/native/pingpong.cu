// pingpong.cu - CUDA native: one GPU thread <-> one host thread round trip
// over pinned, mapped host memory (the floor for any device-to-host RPC).
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
    RT_CHECK(cudaFreeHost((void *)flags));
    return 0;
}
