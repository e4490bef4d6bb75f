/*
 * cuda_l2.c - cuda_l2_probe (cuda_plugin.h): how far each SM is from a few device-memory
 * windows in L2.
 *
 * An H100's or H200's L2 is split in two partitions, and a device-scope atomic from an SM takes
 * about 290 cycles on a word of the near one and about 500 on a word of the far one; which is
 * which depends on the word's 4 KiB page and on the SM (test/cuda/probe/l2_lat.cu).  The device
 * side is a kernel in PTX, JIT-compiled by the driver for whatever GPU it runs on (`.target
 * sm_70` is a minimum).  Each block (one thread) runs, for each window, two chains of 16
 * atomics (`or` with 0: no word changes), each atomic's address depending on the previous
 * one's result so that they cannot overlap, and writes the second chain's cycles per atomic at
 * [smid * windows + window].  The thread uses the line of the window picked by its SM, so that
 * SMs mostly time different lines.  Twice as many blocks as SMs are launched so that every SM
 * gets one; two blocks on one SM write the same slot, both measured there.
 */
#include "cuda_plugin.h"

#include <stdlib.h>
#include <string.h>

static const char l2_probe_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry tether_l2_probe(.param .u64 addr, .param .u64 out, .param .u32 windows,\n"
    "                                .param .u32 stride, .param .u32 ids)\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<12>;\n"
    "    .reg .b64 %rd<16>;\n"
    "    ld.param.u64 %rd1, [addr];\n"
    "    ld.param.u64 %rd2, [out];\n"
    "    ld.param.u32 %r1, [windows];\n"
    "    ld.param.u32 %r2, [stride];\n"
    "    mov.u32 %r3, %smid;\n"
    "    ld.param.u32 %r11, [ids];\n"
    "    setp.ge.u32 %p1, %r3, %r11;\n"
    "    @%p1 bra $done;\n"
    "    and.b32 %r4, %r3, 63;\n"
    "    mul.wide.u32 %rd3, %r4, 64;\n"
    "    add.u64 %rd1, %rd1, %rd3;\n"
    "    mul.lo.u32 %r5, %r3, %r1;\n"
    "    mov.u32 %r6, 0;\n"
    "$window:\n"
    "    setp.ge.u32 %p1, %r6, %r1;\n"
    "    @%p1 bra $done;\n"
    "    mul.wide.u32 %rd4, %r6, %r2;\n"
    "    add.u64 %rd5, %rd1, %rd4;\n"
    "    mov.u32 %r7, 0;\n"
    "$pass:\n"
    "    mov.u64 %rd9, 0;\n"
    "    mov.u32 %r8, 0;\n"
    "    mov.u64 %rd6, %clock64;\n"
    "$chain:\n"
    "    add.u64 %rd10, %rd5, %rd9;\n"
    "    atom.global.or.b64 %rd7, [%rd10], 0;\n"
    "    and.b64 %rd9, %rd7, 8;\n"
    "    add.u32 %r8, %r8, 1;\n"
    "    setp.lt.u32 %p2, %r8, 16;\n"
    "    @%p2 bra $chain;\n"
    "    mov.u64 %rd8, %clock64;\n"
    "    add.u32 %r7, %r7, 1;\n"
    "    setp.lt.u32 %p2, %r7, 2;\n"
    "    @%p2 bra $pass;\n"
    "    sub.u64 %rd11, %rd8, %rd6;\n"
    "    shr.u64 %rd11, %rd11, 4;\n"
    "    cvt.u32.u64 %r9, %rd11;\n"
    "    max.u32 %r9, %r9, 1;\n"
    "    add.u32 %r10, %r5, %r6;\n"
    "    mul.wide.u32 %rd12, %r10, 4;\n"
    "    add.u64 %rd13, %rd2, %rd12;\n"
    "    st.global.u32 [%rd13], %r9;\n"
    "    add.u32 %r6, %r6, 1;\n"
    "    bra $window;\n"
    "$done:\n"
    "    ret;\n"
    "}\n";

tether_status_t cuda_l2_probe(struct plugin_device *dev, uint64_t addr, uint32_t windows,
                              uint32_t stride, uint32_t *cycles, uint32_t max_sms, uint32_t *sms_p,
                              struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    struct cuda_driver *drv = cd->drv;
    if (windows == 0 || cycles == NULL || sms_p == NULL || addr % 8 != 0 || cd->sm_count <= 0)
        return plugin_error_set(err, TETHER_ERR_INVALID, "L2 probe: bad arguments");
    /* Slots for SM ids up to 2 x count + 64 (ids can exceed the count where SMs are fused off;
     * the kernel skips larger ones): those beyond max_sms are read and dropped. */
    size_t slots = (size_t)(2 * (uint32_t)cd->sm_count + 64) * windows;
    size_t bytes = slots * sizeof(uint32_t);
    uint32_t ids = (uint32_t)(slots / windows);
    uint32_t sms = ids < max_sms ? ids : max_sms;
    tether_status_t rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK)
        return rc;
    uint32_t *host = calloc(slots, sizeof *host);
    if (host == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "L2 probe: out of memory");
    CUmodule module = NULL;
    CUfunction func = NULL;
    CUstream stream = NULL;
    CUdeviceptr out = 0;
    rc = CUDA_CALL(drv, err, cuModuleLoadDataEx, &module, l2_probe_ptx, 0, NULL, NULL);
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuModuleGetFunction, &func, module, "tether_l2_probe");
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuMemAlloc, &out, bytes);
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuMemcpyHtoD, out, host, bytes);
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    if (rc == TETHER_OK) {
        uint64_t a_addr = addr;
        uint64_t a_out = out;
        uint32_t a_windows = windows;
        uint32_t a_stride = stride;
        uint32_t a_ids = ids;
        void *args[] = {&a_addr, &a_out, &a_windows, &a_stride, &a_ids};
        rc = CUDA_CALL(drv, err, cuLaunchKernel, func, 2 * (unsigned)cd->sm_count, 1, 1, 1, 1, 1, 0,
                       stream, args, NULL);
    }
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuStreamSynchronize, stream);
    if (rc == TETHER_OK)
        rc = CUDA_CALL(drv, err, cuMemcpyDtoH, host, out, bytes);
    if (rc == TETHER_OK) {
        memcpy(cycles, host, (size_t)sms * windows * sizeof *cycles);
        *sms_p = sms;
    }
    if (stream != NULL)
        drv->cuStreamDestroy(stream);
    if (out != 0)
        drv->cuMemFree(out);
    if (module != NULL)
        drv->cuModuleUnload(module);
    free(host);
    return rc;
}
