/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// alloc_while_running.cu - does a device allocation from a second host thread return while a
// kernel runs?  (The RPC heap asks the server thread for memory while the asking kernel runs.)
// A kernel spins until the host releases it; meanwhile a second thread tries cuMemAlloc and the
// VMM path (cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess), each reported as
// "returned while the kernel ran" or "still blocked after 2 s".  Built and run by hand on a GPU
// machine: nvcc -O2 -arch=sm_90 alloc_while_running.cu -lcuda && ./a.out [SCHED_FLAGS [sync]]
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

__global__ void spin(volatile int *release)
{
    while (*release == 0)
        ;
}

static CUcontext ctx;
static volatile int done_alloc, done_vmm;
static CUresult res_alloc, res_vmm;

static void *try_alloc(void *)
{
    cuCtxSetCurrent(ctx);
    CUdeviceptr p;
    res_alloc = cuMemAlloc(&p, 64u << 20);
    done_alloc = 1;
    return NULL;
}

static void *try_vmm(void *)
{
    cuCtxSetCurrent(ctx);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CUresult r = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    size_t size = ((64u << 20) + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    if (r == CUDA_SUCCESS)
        r = cuMemCreate(&h, size, &prop, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemAddressReserve(&va, size, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemMap(va, size, 0, h, 0);
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (r == CUDA_SUCCESS)
        r = cuMemSetAccess(va, size, &acc, 1);
    res_vmm = r;
    done_vmm = 1;
    return NULL;
}

static CUstream st;
static void *sync_stream(void *)
{
    cuCtxSetCurrent(ctx);
    cuStreamSynchronize(st); // as the plugin's host thread does while the kernel runs
    return NULL;
}

static int wait_flag(volatile int *f, double s)
{
    for (int i = 0; i < (int)(s * 1000); i++) {
        if (*f)
            return 1;
        usleep(1000);
    }
    return *f;
}

int main(int argc, char **argv)
{
    int sched = argc > 1 ? atoi(argv[1]) : 0; // 0 auto, 1 spin, 2 yield, 4 blocking sync
    cuInit(0);
    CUdevice dev;
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxSetFlags(dev, (unsigned)sched);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    int *release;
    cudaHostAlloc((void **)&release, sizeof(int), cudaHostAllocMapped);
    *release = 0;
    int *drel;
    cudaHostGetDevicePointer((void **)&drel, release, 0);
    int with_sync = argc > 2;
    cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    spin<<<1, 1, 0, st>>>(drel);
    pthread_t s;
    if (with_sync)
        pthread_create(&s, NULL, sync_stream, NULL);
    usleep(100000);
    pthread_t a, b;
    pthread_create(&a, NULL, try_alloc, NULL);
    int ok_a = wait_flag(&done_alloc, 2.0);
    printf("sched %d%s: cuMemAlloc from another thread %s (%d)\n", sched,
           with_sync ? " (a thread in cuStreamSynchronize)" : "",
           ok_a ? "returned while the kernel ran" : "still blocked after 2 s", (int)res_alloc);
    pthread_create(&b, NULL, try_vmm, NULL);
    int ok_b = wait_flag(&done_vmm, 2.0);
    printf("sched %d%s: VMM create+reserve+map+access %s (%d)\n", sched,
           with_sync ? " (a thread in cuStreamSynchronize)" : "",
           ok_b ? "returned while the kernel ran" : "still blocked after 2 s", (int)res_vmm);
    *release = 1;
    cuStreamSynchronize(st);
    if (with_sync)
        pthread_join(s, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("sched %d: after the kernel: alloc %d, vmm %d\n", sched, (int)res_alloc, (int)res_vmm);
    return 0;
}
