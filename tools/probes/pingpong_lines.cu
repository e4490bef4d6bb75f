/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// pingpong_lines.cu - is the raw ping-pong's speed a property of the memory it uses?  The
// host-started ping-pong of test/cuda/native/pingpong.cu, run over several pinned buffers in
// one process: separate 4 KiB allocations, pages of one 2 MiB allocation, and pages of 4 MiB of
// anonymous memory backed by transparent huge pages (madvise) and registered with
// cudaHostRegister.
// Build and run on the GPU machine: nvcc -O2 -arch=sm_90 -o /tmp/pl pingpong_lines.cu && /tmp/pl
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <sys/mman.h>
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
        printf("2 MiB allocation, offset %7zu: %.3f %.3f us\n",
               (size_t)((volatile unsigned char *)p - big), a, b);
    }
    // Transparent huge pages: 4 MiB mapped, the 2 MiB-aligned half advised and touched.
    size_t huge = 2 << 20;
    unsigned char *raw = (unsigned char *)mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw != MAP_FAILED) {
        unsigned char *h = (unsigned char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
        int adv = madvise(h, huge, MADV_HUGEPAGE);
        memset(h, 0, huge);
        if (cudaHostRegister(h, huge, cudaHostRegisterPortable | cudaHostRegisterMapped) ==
            cudaSuccess) {
            for (int k = 0; k < 12; k++) {
                volatile unsigned *p = (volatile unsigned *)(h + (size_t)k * 4096 * 37 % huge);
                double a = rounds_on(p, rounds), b = rounds_on(p, rounds);
                printf("huge page (madvise %d), offset %7zu: %.3f %.3f us\n", adv,
                       (size_t)((volatile unsigned char *)p - h), a, b);
            }
            cudaHostUnregister(h);
        }
        munmap(raw, 2 * huge);
    }
    return 0;
}
