// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/*
 * tools/probes/doorbell_park.cu - can a running kernel wake a sleeping host thread sooner than
 * a timed sleep sees it?  One GPU thread, every `gap` of GPU time, stores a sequence number and
 * then 1 to a doorbell word in pinned host memory and waits for the host's answer; the host
 * thread either parks on the GPU (a stream wait on the doorbell word, then an event recorded
 * with CU_EVENT_BLOCKING_SYNC, which the driver ends with an interrupt) or sleeps in futex
 * slices of a given length and checks the word at each wake-up.  Prints the call's latency on
 * the GPU's clock (median, p99, max) and the host thread's CPU time.
 *
 *   nvcc -O2 -arch=sm_90 -o doorbell_park tools/probes/doorbell_park.cu -lcuda && ./doorbell_park
 *
 * The kernel is launched once before any stream wait is queued: with lazy module loading, the
 * first launch of a kernel while another stream waits on memory can wait for that stream.
 */
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_;                                                                        \
            cuGetErrorString(r_, &s_);                                                             \
            fprintf(stderr, "%s: %s\n", #x, s_);                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__device__ unsigned long long gpu_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void caller(volatile uint32_t *seq, volatile uint32_t *bell, volatile uint32_t *ack,
                       int calls, unsigned long long gap_ns, unsigned long long *lat)
{
    for (int i = 0; i < calls; i++) {
        unsigned long long t0 = gpu_ns();
        while (gpu_ns() - t0 < gap_ns) {
        }
        t0 = gpu_ns();
        *seq = i + 1;
        __threadfence_system();
        *bell = 1;
        while (*ack != (uint32_t)(i + 1)) {
        }
        lat[i] = gpu_ns() - t0;
    }
}

struct host_side {
    CUcontext ctx;
    uint32_t *seq, *bell, *ack;
    CUdeviceptr bell_dev;
    CUstream stream;
    CUevent event;
    int calls;
    long slice_us; /* 0: park on the GPU */
    double cpu_s;
};

static void *serve(void *arg)
{
    struct host_side *h = (struct host_side *)arg;
    CK(cuCtxSetCurrent(h->ctx));
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    double c0 = thread_cpu_s();
    uint32_t done = 0, word = 0;
    while (done < (uint32_t)h->calls) {
        __atomic_exchange_n(h->bell, 0u, __ATOMIC_SEQ_CST);
        uint32_t s = __atomic_load_n(h->seq, __ATOMIC_ACQUIRE);
        if (s != done) {
            done = s;
            __atomic_store_n(h->ack, s, __ATOMIC_RELEASE);
            continue;
        }
        if (h->slice_us == 0) {
            CK(cuStreamWaitValue32(h->stream, h->bell_dev, 1, CU_STREAM_WAIT_VALUE_AND));
            CK(cuEventRecord(h->event, h->stream));
            CK(cuEventSynchronize(h->event));
        } else {
            struct timespec ts = {0, h->slice_us * 1000};
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        }
    }
    h->cpu_s = thread_cpu_s() - c0;
    return NULL;
}

static void measure(CUcontext ctx, int calls, long gap_us, long slice_us)
{
    uint32_t *page;
    CK(cuMemHostAlloc((void **)&page, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    memset(page, 0, 4096);
    CUdeviceptr dev;
    CK(cuMemHostGetDevicePointer(&dev, page, 0));
    struct host_side h = {ctx, page, page + 32, page + 64, dev + 128, NULL, NULL, calls, slice_us, 0};
    CK(cuStreamCreate(&h.stream, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&h.event, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
    unsigned long long *lat;
    cudaMalloc(&lat, sizeof *lat * calls);
    cudaStream_t ks;
    cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking);
    pthread_t t;
    pthread_create(&t, NULL, serve, &h);
    caller<<<1, 1, 0, ks>>>((uint32_t *)dev, (uint32_t *)(dev + 128), (uint32_t *)(dev + 256),
                            calls, gap_us * 1000ull, lat);
    cudaStreamSynchronize(ks);
    pthread_join(t, NULL);
    std::vector<unsigned long long> v(calls);
    cudaMemcpy(v.data(), lat, sizeof *lat * calls, cudaMemcpyDeviceToHost);
    std::sort(v.begin(), v.end());
    size_t p99 = std::min((size_t)calls - 1, (size_t)(calls * 99 / 100));
    printf("%-14s gap %7ld us, %3d calls: latency median %6.1f us, p99 %6.1f, max %6.1f; host "
           "thread %.2f%% of a core\n",
           slice_us ? "futex slices" : "GPU park", gap_us, calls, v[calls / 2] / 1e3,
           v[p99] / 1e3, v[calls - 1] / 1e3,
           100.0 * h.cpu_s / (calls * (gap_us * 1e-6)));
    if (slice_us)
        printf("               (slices of %ld us)\n", slice_us);
    cudaFree(lat);
    cudaStreamDestroy(ks);
    CK(cuEventDestroy(h.event));
    CK(cuStreamDestroy(h.stream));
    CK(cuMemFreeHost(page));
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    cudaFree(0);
    CUcontext ctx;
    CK(cuCtxGetCurrent(&ctx));
    caller<<<1, 1>>>(NULL, NULL, NULL, 0, 0, NULL); /* loads the kernel: see above */
    cudaDeviceSynchronize();
    measure(ctx, 100, 10000, 0);
    measure(ctx, 3, 1000000, 0);
    measure(ctx, 100, 10000, 100);
    measure(ctx, 100, 10000, 50);
    return 0;
}
