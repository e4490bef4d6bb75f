// link_costs.cu - what each step of a device-to-host call costs on this GPU and link, measured
// with nvcc alone (no OpenMP, no tether): the primitives the RPC protocol is made of (fences,
// reductions, reads of pinned host memory) timed on the GPU, and four shapes of a one-packet
// round trip between one GPU thread and one host thread, from the raw flag ping-pong up to the
// flag + fence + 64-byte packet shape of rpc.h and the shapes that carry a tag in every 8-byte
// word instead (docs/rpc-protocol.md, "Tagged answers").  Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/link_costs test/cuda/probe/link_costs.cu && /tmp/link_costs
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define ROUNDS 20000u
#define WARM 1000u

struct shared {
    alignas(64) unsigned req_flag;
    alignas(64) unsigned ans_flag;
    alignas(64) unsigned long long req[8];
    alignas(64) unsigned long long ans[8];
    alignas(64) unsigned long long scratch[64];
};

__device__ __forceinline__ unsigned long long gtime(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void fence_acq_rel_sys(void)
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void store16(volatile unsigned long long *p, unsigned long long a,
                                        unsigned long long b)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ void load16(volatile unsigned long long *p, unsigned long long *a,
                                       unsigned long long *b)
{
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

__device__ __forceinline__ void load16_relaxed(volatile unsigned long long *p, unsigned long long *a,
                                               unsigned long long *b)
{
    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

__device__ __forceinline__ void load16_weak(const unsigned long long *p, unsigned long long *a,
                                            unsigned long long *b)
{
    asm volatile("ld.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

__device__ __forceinline__ void load16_cv(const unsigned long long *p, unsigned long long *a,
                                          unsigned long long *b)
{
    asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

__device__ __forceinline__ void load16_acquire(const unsigned long long *p, unsigned long long *a,
                                               unsigned long long *b)
{
    asm volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

__device__ __forceinline__ void red_xor(unsigned *p, unsigned v)
{
    asm volatile("red.sys.xor.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- primitives, timed on the GPU ----------------------------------------------------------------

#define N 2000

__global__ void primitives(struct shared *h, unsigned *dev_word, unsigned long long *out)
{
    unsigned long long t, x = 0, a, b;
    // M0: fence.acq_rel.sys with nothing outstanding
    t = gtime();
    for (int i = 0; i < N; i++)
        fence_acq_rel_sys();
    out[0] = gtime() - t;
    // M1: 64-byte store to host memory, then fence.acq_rel.sys
    t = gtime();
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[2 * k], i, k);
        fence_acq_rel_sys();
    }
    out[1] = gtime() - t;
    // M2: 64-byte store to host memory alone
    t = gtime();
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[2 * k], i, k);
    out[2] = gtime() - t;
    // M3: red.sys.xor on host memory alone
    t = gtime();
    for (int i = 0; i < N; i++)
        red_xor((unsigned *)&h->scratch[16], 1);
    out[3] = gtime() - t;
    // M4: dependent 8-byte volatile loads of host memory (one link round trip each)
    t = gtime();
    for (int i = 0; i < N; i++)
        x += ((volatile unsigned long long *)h->scratch)[24 + (x & 1)];
    out[4] = gtime() - t;
    // M5: dependent 64-byte loads (4 x 16 bytes issued together)
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        for (int k = 0; k < 4; k++) {
            load16(&h->scratch[32 + 2 * k + (x & 1) * 8], &a, &b);
            s += a + b;
        }
        x += s;
    }
    out[5] = gtime() - t;
    // M6: device-memory lock and unlock (atom.or + membar.gl, atom.and + membar.gl)
    t = gtime();
    for (int i = 0; i < N; i++) {
        atomicOr(dev_word, 1u);
        __threadfence();
        atomicAnd(dev_word, ~1u);
        __threadfence();
    }
    out[6] = gtime() - t;
    // M7: 64-byte store to host memory, then fence.sc.sys (membar.sys)
    t = gtime();
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[2 * k], i, k);
        __threadfence_system();
    }
    out[7] = gtime() - t;
    // M8: dependent 64-byte loads, 4 x 16 bytes ld.relaxed.sys
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        for (int k = 0; k < 4; k++) {
            load16_relaxed(&h->scratch[32 + 2 * k + (x & 1) * 8], &a, &b);
            s += a + b;
        }
        x += s;
    }
    out[8] = gtime() - t;
    // M9: fence.acq_rel.sys then 4 x 16 bytes weak loads
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        fence_acq_rel_sys();
        for (int k = 0; k < 4; k++) {
            load16_weak(&h->scratch[32 + 2 * k + (x & 1) * 8], &a, &b);
            s += a + b;
        }
        x += s;
    }
    out[9] = gtime() - t;
    // M10: one dependent 16-byte volatile load
    t = gtime();
    for (int i = 0; i < N; i++) {
        load16(&h->scratch[32 + (x & 1) * 8], &a, &b);
        x += a + b;
    }
    out[10] = gtime() - t;
    // M11: 8 x 8-byte volatile loads
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        for (int k = 0; k < 8; k++)
            s += ((volatile unsigned long long *)h->scratch)[32 + k + (x & 1) * 8];
        x += s;
    }
    out[11] = gtime() - t;
    // M12: st.volatile.u32 to host memory
    t = gtime();
    for (int i = 0; i < N; i++)
        *(volatile unsigned *)&h->scratch[16] = i;
    out[12] = gtime() - t;
    // M13: st.release.sys.u32 to host memory
    t = gtime();
    for (int i = 0; i < N; i++)
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(&h->scratch[16]), "r"(i) : "memory");
    out[13] = gtime() - t;
    // M14: device lock + unlock with atom.acquire.gpu / atom.release.gpu
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned old;
        asm volatile("atom.acquire.gpu.global.or.b32 %0, [%1], 1;" : "=r"(old) : "l"(dev_word) : "memory");
        x += old;
        asm volatile("red.release.gpu.global.and.b32 [%0], 0xfffffffe;" ::"l"(dev_word) : "memory");
    }
    out[14] = gtime() - t;
    // M15: dependent ld.acquire.sys.u32 of host memory
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned v;
        asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(&h->scratch[24 + (x & 1)]) : "memory");
        x += v;
    }
    out[15] = gtime() - t;
    // M16: red.sys.xor then a 64-byte store (does the reduction block what follows?)
    t = gtime();
    for (int i = 0; i < N; i++) {
        red_xor((unsigned *)&h->scratch[16], 1);
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[2 * k], i, k);
    }
    out[16] = gtime() - t;
    // M17: 4 x 16-byte weak loads, no fence (L1 may serve them)
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        for (int k = 0; k < 4; k++) {
            load16_weak(&h->scratch[32 + 2 * k + (x & 1) * 8], &a, &b);
            s += a + b;
        }
        x += s;
    }
    out[17] = gtime() - t;
    // M18: dependent 64-byte loads, 4 x 16 bytes ld.global.cv
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned long long s = 0;
        for (int k = 0; k < 4; k++) {
            load16_cv(&h->scratch[32 + 2 * k + (x & 1) * 8], &a, &b);
            s += a + b;
        }
        x += s;
    }
    out[18] = gtime() - t;
    // M19: one dependent 16-byte ld.global.cv
    t = gtime();
    for (int i = 0; i < N; i++) {
        load16_cv(&h->scratch[32 + (x & 1) * 8], &a, &b);
        x += a + b;
    }
    out[19] = gtime() - t;
    // M20: red.sys.xor on host memory, then st.release.gpu of a device word (a close)
    t = gtime();
    for (int i = 0; i < N; i++) {
        red_xor((unsigned *)&h->scratch[16], 1);
        asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory");
    }
    out[20] = gtime() - t;
    // M21: red.sys.xor, then st.relaxed.gpu of a device word
    t = gtime();
    for (int i = 0; i < N; i++) {
        red_xor((unsigned *)&h->scratch[16], 1);
        asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory");
    }
    out[21] = gtime() - t;
    // M22: red.sys.add.u32 on host memory alone
    t = gtime();
    for (int i = 0; i < N; i++)
        asm volatile("red.sys.add.u32 [%0], 1;" ::"l"(&h->scratch[16]) : "memory");
    out[22] = gtime() - t;
    // M23: atom.acquire.gpu.or of a device word alone
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned old;
        asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 0;" : "=r"(old) : "l"(dev_word) : "memory");
        x += old;
    }
    out[23] = gtime() - t;
    // M24: st.release.gpu of a device word alone
    t = gtime();
    for (int i = 0; i < N; i++)
        asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i) : "memory");
    out[24] = gtime() - t;
    // M25: a client call's own work without the wait: lock, header, packet, clear, fence, red,
    // unlock
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned old;
        asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 1;" : "=r"(old) : "l"(dev_word) : "memory");
        x += old;
        store16(&h->scratch[40], i, old);
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[48 + 2 * k], i, k);
        store16(&h->scratch[42], 0, 0);
        fence_acq_rel_sys();
        red_xor((unsigned *)&h->scratch[16], 1);
        asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i << 8) : "memory");
    }
    out[25] = gtime() - t;
    // M26: the same with st.volatile.u32 for the flip instead of red
    t = gtime();
    for (int i = 0; i < N; i++) {
        unsigned old;
        asm volatile("atom.acquire.gpu.or.b32 %0, [%1], 1;" : "=r"(old) : "l"(dev_word) : "memory");
        x += old;
        store16(&h->scratch[40], i, old);
        for (int k = 0; k < 4; k++)
            store16(&h->scratch[48 + 2 * k], i, k);
        store16(&h->scratch[42], 0, 0);
        fence_acq_rel_sys();
        *(volatile unsigned *)&h->scratch[16] = i;
        asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(dev_word), "r"(i << 8) : "memory");
    }
    out[26] = gtime() - t;
    // M27: fence.acq_rel.gpu alone
    t = gtime();
    for (int i = 0; i < N; i++)
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    out[27] = gtime() - t;
    out[28] = x;
}

// ---- round trips ---------------------------------------------------------------------------------

// shape 0: raw flags.  1: rpc.h today (64-byte packet, fence, flip; wait flip, fence, read 64 bytes).
// 2: request as today, answer tagged (tag in the high half of every 8-byte word; the GPU polls the
// answer itself).  3: both tagged: the GPU stores a tagged packet and flips with no fence; the
// host, seeing the flip, polls the packet's tags.
__global__ void client(struct shared *h, int shape, unsigned long long *out)
{
    unsigned long long t0 = 0;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        if (i == WARM + 1)
            t0 = gtime();
        unsigned long long sum = 0;
        if (shape == 0) {
            *(volatile unsigned *)&h->req_flag = i;
            while (*(volatile unsigned *)&h->ans_flag != i)
                ;
        } else if (shape == 1 || shape == 2 || shape >= 9) {
            unsigned long long tag = (unsigned long long)i << 32;
            for (int k = 0; k < 4; k++)
                store16(&h->req[2 * k], tag | (2 * k), tag | (2 * k + 1));
            fence_acq_rel_sys();
            if (shape == 10)
                *(volatile unsigned *)&h->req_flag = i;
            else
                red_xor(&h->req_flag, 1);
            if (shape == 1) {
                while ((*(volatile unsigned *)&h->ans_flag & 1) != (i & 1))
                    ;
                fence_acq_rel_sys();
                for (int k = 0; k < 4; k++) {
                    unsigned long long a, b;
                    load16(&h->ans[2 * k], &a, &b);
                    sum += a + b;
                }
            }
        } else {
            unsigned long long tag = (unsigned long long)i << 32;
            for (int k = 0; k < 4; k++)
                store16(&h->req[2 * k], tag | (2 * k), tag | (2 * k + 1));
            if (shape == 3)
                red_xor(&h->req_flag, 1);
            else
                *(volatile unsigned *)&h->req_flag = i; /* same parity as the flip */
        }
        if (shape >= 2) {
            unsigned long long tag = (unsigned long long)i << 32;
            for (;;) {
                bool ok = true;
                unsigned long long w[8];
                if (shape == 6)
                    for (int k = 0; k < 4; k++)
                        load16_cv(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                else if (shape >= 7) {
                    if (shape == 7)
                        load16(&h->ans[0], &w[0], &w[1]);
                    else
                        load16_acquire(&h->ans[0], &w[0], &w[1]);
                    for (int k = 2; k < 8; k++)
                        w[k] = tag;
                }
                else if (shape == 4)
                    for (int k = 0; k < 4; k++)
                        load16_relaxed(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                else if (shape == 5)
                    for (int k = 0; k < 8; k++)
                        w[k] = ((volatile unsigned long long *)h->ans)[k];
                else
                    for (int k = 0; k < 4; k++)
                        load16(&h->ans[2 * k], &w[2 * k], &w[2 * k + 1]);
                for (int k = 0; k < 8; k++)
                    ok &= (w[k] & 0xffffffff00000000ull) == tag;
                if (ok) {
                    for (int k = 0; k < 8; k++)
                        sum += w[k] & 0xffffffffu;
                    if (sum != (shape >= 7 ? 3u : 36u))
                        out[2]++; /* a word with the right tag and the wrong data: torn */
                    break;
                }
            }
        }
        if (shape == 0)
            sum = i;
        out[1] += sum;
    }
    out[0] = gtime() - t0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int serve(struct shared *h, int shape)
{
    volatile struct shared *v = h;
    for (unsigned i = 1; i <= ROUNDS; i++) {
        double start = now_us();
        if (shape == 0) {
            while (v->req_flag != i)
                if (now_us() - start > 5e6)
                    return 1;
            __atomic_store_n(&h->ans_flag, i, __ATOMIC_RELEASE);
            continue;
        }
        while ((__atomic_load_n(&h->req_flag, __ATOMIC_ACQUIRE) & 1) != (i & 1))
            if (now_us() - start > 5e6)
                return 1;
        unsigned long long req[8], tag = (unsigned long long)i << 32;
        if (shape >= 3) {
            for (;;) {
                bool ok = true;
                for (int k = 0; k < 8; k++) {
                    req[k] = __atomic_load_n(&h->req[k], __ATOMIC_ACQUIRE);
                    ok &= (req[k] & 0xffffffff00000000ull) == tag;
                }
                if (ok)
                    break;
            }
        } else {
            for (int k = 0; k < 8; k++)
                req[k] = v->req[k];
        }
        if (shape == 1) {
            for (int k = 0; k < 8; k++)
                v->ans[k] = req[k] + 1;
            __atomic_fetch_xor(&h->ans_flag, 1, __ATOMIC_RELEASE);
        } else {
            for (int k = 0; k < 8; k++)
                __atomic_store_n(&h->ans[k], tag | ((req[k] + 1) & 0xffffffffu), __ATOMIC_RELAXED);
            __atomic_fetch_xor(&h->ans_flag, 1, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

int main(void)
{
    struct shared *h, *d;
    unsigned long long *out;
    unsigned *dev_word;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc((void **)&h, sizeof *h, cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&d, h, 0));
    CHECK(cudaMallocManaged((void **)&out, 32 * sizeof *out));
    CHECK(cudaMalloc((void **)&dev_word, sizeof *dev_word));
    CHECK(cudaMemset(dev_word, 0, sizeof *dev_word));

    primitives<<<1, 1>>>(d, dev_word, out);
    CHECK(cudaDeviceSynchronize());
    primitives<<<1, 1>>>(d, dev_word, out);
    CHECK(cudaDeviceSynchronize());
    const char *names[28] = {"fence.acq_rel.sys, nothing outstanding",
                            "64-byte store to host + fence.acq_rel.sys",
                            "64-byte store to host",
                            "red.sys.xor on host memory",
                            "dependent 8-byte load of host memory",
                            "dependent 64-byte load of host memory (4 x 16)",
                            "device lock + unlock (atom + membar.gl, twice)",
                            "64-byte store to host + fence.sc.sys",
                            "dependent 64-byte load, 4 x 16 ld.relaxed.sys",
                            "fence.acq_rel.sys + 4 x 16 weak loads",
                            "dependent 16-byte volatile load",
                            "dependent 64-byte load, 8 x 8 volatile",
                            "st.volatile.u32 to host",
                            "st.release.sys.u32 to host",
                            "device lock + unlock, atom.acquire/red.release",
                            "dependent ld.acquire.sys.u32 of host",
                            "red.sys.xor + 64-byte store",
                            "4 x 16 weak loads, no fence (L1?)",
                            "dependent 64-byte load, 4 x 16 ld.global.cv",
                            "dependent 16-byte ld.global.cv",
                            "red.sys.xor + st.release.gpu (device)",
                            "red.sys.xor + st.relaxed.gpu (device)",
                            "red.sys.add.u32 on host memory",
                            "atom.acquire.gpu.or (device)",
                            "st.release.gpu (device)",
                            "client work: lock..red..unlock",
                            "client work, st flag instead of red",
                            "fence.acq_rel.gpu"};
    for (int k = 0; k < 28; k++)
        printf("link_costs: %-48s %7.3f us\n", names[k], out[k] / 1e3 / N);

    const char *shapes[11] = {"raw flag ping-pong", "rpc.h: packet, fence, flip / flip, fence, read",
                             "tagged answer (request as rpc.h)", "tagged request and answer",
                             "tagged, st flag, ld.relaxed.sys answer", "tagged, st flag, 8 x 8 answer",
                             "tagged, st flag, 4 x 16 ld.cv answer", "tagged, st flag, 16-byte answer",
                             "tagged, st flag, 16-byte ld.acquire answer",
                             "rpc.h request, 16-byte ld.acquire answer",
                             "fence + st flag, 16-byte ld.acquire answer"};
    for (int shape = 0; shape < 11; shape++) {
        memset(h, 0, sizeof *h);
        out[0] = out[1] = out[2] = 0;
        client<<<1, 1>>>(d, shape, out);
        CHECK(cudaGetLastError());
        if (serve(h, shape) != 0) {
            fprintf(stderr, "link_costs: shape %d: no request from the GPU\n", shape);
            return 1;
        }
        CHECK(cudaDeviceSynchronize());
        printf("link_costs: round trip, %-48s %7.3f us (%llu torn)\n", shapes[shape],
               out[0] / 1e3 / (ROUNDS - WARM), out[2]);
    }
    return 0;
}
