/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_driver.c - dlopen libcuda and resolve CUDA_DRIVER_SYMBOLS; the
 * CUresult converter.  See cuda_driver.h.
 */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cuda_driver_symbol_names[CUDA_SLOT_COUNT_] = {
#define CUDA_DRIVER_NAME_(member, symbol, kind, params) [CUDA_SLOT_##member] = #symbol,
    CUDA_DRIVER_SYMBOLS(CUDA_DRIVER_NAME_)
#undef CUDA_DRIVER_NAME_
};

/* The names tried when the caller names no library, in order. */
static const char *const cuda_driver_default_names[] = {"libcuda.so.1", "libcuda.so"};

static void cuda_error_set(struct tether_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void cuda_error_set(struct tether_error *err, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

/* dlsym one entry point into its slot.  Returns false only when a REQ symbol is missing. */
static bool cuda_driver_resolve(struct cuda_driver *drv, const char *symbol, bool required,
                                void *slot, size_t slot_size)
{
    void *sym;

    dlerror();
    sym = dlsym(drv->handle, symbol);
    if (sym == NULL && required)
        return false;
    /* POSIX guarantees that a data pointer from dlsym converts to a function pointer of the
     * same size; copy the bytes rather than cast between object and function pointers. */
    memcpy(slot, &sym, slot_size);
    return true;
}

static void *cuda_driver_dlopen(const char *library, struct cuda_driver *drv,
                                struct tether_error *err)
{
    const char *first_error = NULL;
    char first_copy[TETHER_ERROR_MSG_MAX] = "";
    size_t i;

    if (library != NULL) {
        void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);

        if (handle == NULL) {
            first_error = dlerror();
            cuda_error_set(err, "cannot open the CUDA driver %s: %s", library,
                           first_error != NULL ? first_error : "unknown dlopen error");
            return NULL;
        }
        snprintf(drv->library, sizeof(drv->library), "%s", library);
        return handle;
    }
    for (i = 0; i < sizeof(cuda_driver_default_names) / sizeof(cuda_driver_default_names[0]); i++) {
        void *handle = dlopen(cuda_driver_default_names[i], RTLD_NOW | RTLD_LOCAL);

        if (handle != NULL) {
            snprintf(drv->library, sizeof(drv->library), "%s", cuda_driver_default_names[i]);
            return handle;
        }
        if (first_copy[0] == '\0') {
            first_error = dlerror();
            snprintf(first_copy, sizeof(first_copy), "%s",
                     first_error != NULL ? first_error : "unknown dlopen error");
        }
    }
    cuda_error_set(err, "no CUDA driver (libcuda.so.1, libcuda.so): %s", first_copy);
    return NULL;
}

tether_status_t cuda_driver_open(const char *library, struct cuda_driver **drv_p,
                                 struct tether_error *err)
{
    struct cuda_driver *drv;
    const char *missing = NULL;
    tether_status_t status;

    if (drv_p == NULL) {
        cuda_error_set(err, "cuda_driver_open: drv_p is NULL");
        return TETHER_ERR_INVALID;
    }
    drv = calloc(1, sizeof(*drv));
    if (drv == NULL) {
        cuda_error_set(err, "cuda_driver_open: out of memory");
        return TETHER_ERR_NO_MEMORY;
    }
    drv->handle = cuda_driver_dlopen(library, drv, err);
    if (drv->handle == NULL) {
        status = TETHER_ERR_NO_DRIVER;
        goto free_drv;
    }

#define CUDA_DRIVER_RESOLVE_(member, symbol, kind, params)                                         \
    if (missing == NULL && !cuda_driver_resolve(drv, #symbol, CUDA_DRIVER_KIND_##kind,             \
                                                &drv->member, sizeof(drv->member)))                \
        missing = #symbol;
#define CUDA_DRIVER_KIND_REQ true
#define CUDA_DRIVER_KIND_OPT false
    CUDA_DRIVER_SYMBOLS(CUDA_DRIVER_RESOLVE_)
#undef CUDA_DRIVER_KIND_OPT
#undef CUDA_DRIVER_KIND_REQ
#undef CUDA_DRIVER_RESOLVE_

    if (missing != NULL) {
        status = TETHER_ERR_DRIVER;
        cuda_error_set(err, "CUDA driver %s lacks %s (driver too old for tether?)", drv->library,
                       missing);
        goto close_handle;
    }
    *drv_p = drv;
    return TETHER_OK;

close_handle:
    dlclose(drv->handle);
free_drv:
    free(drv);
    return status;
}

void cuda_driver_close(struct cuda_driver *drv)
{
    if (drv == NULL)
        return;
    dlclose(drv->handle);
    free(drv);
}

void cuda_driver_free(struct cuda_driver *drv)
{
    free(drv);
}

static tether_status_t cuda_result_to_status(CUresult result)
{
    switch (result) {
    case CUDA_SUCCESS:
        return TETHER_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return TETHER_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
        return TETHER_ERR_INVALID;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
        return TETHER_ERR_NO_DEVICE;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        return TETHER_ERR_BAD_IMAGE;
    case CUDA_ERROR_NOT_READY:
        return TETHER_ERR_NOT_READY;
    case CUDA_ERROR_NOT_SUPPORTED:
        return TETHER_ERR_UNSUPPORTED;
    case CUDA_ERROR_NOT_FOUND:
        return TETHER_ERR_NOT_FOUND;
    default:
        return TETHER_ERR_DRIVER;
    }
}

tether_status_t cuda_driver_check(const struct cuda_driver *drv, CUresult result, const char *call,
                                  struct tether_error *err)
{
    const char *name = NULL;
    const char *text = NULL;
    char fallback[32];

    if (result == CUDA_SUCCESS)
        return TETHER_OK;
    /* The driver's own words; both calls are documented to work before cuInit. */
    if (drv == NULL || drv->cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL) {
        snprintf(fallback, sizeof(fallback), "CUresult %d", result);
        name = fallback;
    }
    if (drv == NULL || drv->cuGetErrorString(result, &text) != CUDA_SUCCESS || text == NULL)
        text = "no description from the driver";
    cuda_error_set(err, "%s: %s: %s", call, name, text);
    plugin_log(drv != NULL ? drv->plugin : NULL, NULL, PLUGIN_LOG_DEBUG, "%s: %s: %s", call, name,
               text);
    return cuda_result_to_status(result);
}
