/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_jit.c - plugin_ops.jit for NVIDIA: LLVM bitcode images (-fopenmp-target-jit) are compiled
 * by common for the device's sm_XY (LLVM's NVPTX backend writes PTX); here the driver's linker
 * turns that PTX into a cubin, so that common reads its symbols and module_load loads it as it
 * does any image.  docs/cuda.md, "JIT images".
 */
#include "cuda_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_LINK_LOG_BYTES 2048

/* The device's architecture as LLVM's NVPTX backend names it: compute capability 9.0 -> sm_90. */
static void cuda_jit_cpu(struct plugin_device *dev, char *buf, size_t len)
{
    struct cuda_device *cd = cuda_device_of(dev);

    snprintf(buf, len, "sm_%d%d", cd->cc_major, cd->cc_minor);
}

/* PTX (or, from LIBOMPTARGET_JIT_REPLACEMENT_OBJECT, a cubin) -> a cubin for the device. */
static tether_status_t cuda_jit_link(struct plugin_device *dev, const void *code, size_t size,
                                     void **image_p, size_t *size_p, struct tether_error *err)
{
    struct cuda_device *cd = cuda_device_of(dev);
    const struct cuda_driver *drv = cd->drv;
    char log[CUDA_LINK_LOG_BYTES] = "";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)sizeof(log)};
    bool cubin = size >= 4 && memcmp(code, "\177ELF", 4) == 0;
    CUlinkState state = NULL;
    const char *call;
    void *out = NULL, *copy;
    size_t out_size = 0;
    tether_status_t rc;
    CUresult res;

    if (drv->cuLinkCreate == NULL || drv->cuLinkAddData == NULL || drv->cuLinkComplete == NULL ||
        drv->cuLinkDestroy == NULL) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "CUDA driver %s lacks the cuLink* entry points", drv->library);
    }
    rc = cuda_ctx_enter(cd, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = CUDA_CALL(drv, err, cuLinkCreate, 2, options, values, &state);
    if (rc != TETHER_OK) {
        return rc;
    }
    /* PTX goes in as a C string: its NUL (after size, per the slot's contract) included. */
    res =
        drv->cuLinkAddData(state, cubin ? CU_JIT_INPUT_CUBIN : CU_JIT_INPUT_PTX, (void *)code,
                           cubin ? size : size + 1, cubin ? "jit.cubin" : "jit.ptx", 0, NULL, NULL);
    call = cuda_driver_symbol_names[CUDA_SLOT_cuLinkAddData];
    if (res == CUDA_SUCCESS) {
        res = drv->cuLinkComplete(state, &out, &out_size);
        call = cuda_driver_symbol_names[CUDA_SLOT_cuLinkComplete];
    }
    if (res != CUDA_SUCCESS) {
        char msg[TETHER_ERROR_MSG_MAX];

        rc = cuda_driver_check(drv, res, call, err);
        log[strcspn(log, "\n")] = '\0';
        snprintf(msg, sizeof(msg), "%s", err->msg);
        plugin_error_set(err, rc, "linking the JIT-compiled %s: %s%s%s%s", cubin ? "cubin" : "PTX",
                         msg, log[0] != '\0' ? " (" : "", log, log[0] != '\0' ? ")" : "");
        goto destroy_link;
    }
    /* The cubin belongs to the link state: copy it out before destroying that. */
    copy = malloc(out_size);
    if (copy == NULL) {
        rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "cubin of %zu bytes", out_size);
        goto destroy_link;
    }
    memcpy(copy, out, out_size);
    *image_p = copy;
    *size_p = out_size;
destroy_link:
    cuda_log_teardown(cd, drv->cuLinkDestroy(state), "cuLinkDestroy");
    return rc;
}

const struct plugin_jit_ops cuda_jit_ops = {
    .triple = "nvptx64",
    .refusal = NULL,
    .cpu = cuda_jit_cpu,
    .link = cuda_jit_link,
};
