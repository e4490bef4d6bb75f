// pingpong_lines.cu - is the raw ping-pong's speed a property of the memory it uses?  The
// host-started ping-pong of test/cuda/native/pingpong.cu, run over several pinned buffers in
// one process: separate 4 KiB allocations, and 64-byte lines 4 KiB apart inside one 2 MiB one.
// Build and run on the GPU machine: nvcc -O2 -arch=sm_90 -o /tmp/pl pingpong_lines.cu && /tmp/pl
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>

static double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

__global__ void pong(volatile unsigned *ping, volatile unsigned *reply, unsigned rounds)
{
    for (unsigned i = 1; i <= rounds; i++) {
        while (*ping != i)
            ;
        *reply = i;
        __threadfence_system();
    }
}

// Host-started rounds over the two words at `host` (mapped); returns us per round.
static double rounds_on(volatile unsigned *host, unsigned rounds)
{
    unsigned *dev;
    host[0] = host[1] = 0;
    if (cudaHostGetDevicePointer((void **)&dev, (void *)host, 0) != cudaSuccess)
        return -1;
    pong<<<1, 1>>>(dev, dev + 1, rounds);
    double t0 = 0;
    for (unsigned i = 1; i <= rounds; i++) {
        if (i == 501)
            t0 = now_us();
        __atomic_store_n(&host[0], i, __ATOMIC_RELEASE);
        double start = now_us();
        while (__atomic_load_n(&host[1], __ATOMIC_ACQUIRE) != i)
            if (now_us() - start > 5e6)
                return -1;
    }
    double per = (now_us() - t0) / (rounds - 500);
    cudaDeviceSynchronize();
    return per;
}

int main()
{
    const unsigned rounds = 5000;
    cudaSetDevice(0);
    for (int k = 0; k < 8; k++) {
        volatile unsigned *p;
        cudaHostAlloc((void **)&p, 4096, cudaHostAllocMapped);
        double a = rounds_on(p, rounds), b = rounds_on(p, rounds);
        printf("4 KiB allocation %d at %p: %.3f %.3f us\n", k, (void *)p, a, b);
    }
    volatile unsigned char *big;
    cudaHostAlloc((void **)&big, 2 << 20, cudaHostAllocMapped);
    for (int k = 0; k < 12; k++) {
        volatile unsigned *p = (volatile unsigned *)(big + (size_t)k * 4096 * 37 % (2 << 20));
        double a = rounds_on(p, rounds), b = rounds_on(p, rounds);
        printf("2 MiB allocation, offset %7zu: %.3f %.3f us\n", (size_t)((volatile unsigned char *)p - big), a, b);
    }
    return 0;
}
