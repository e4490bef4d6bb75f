/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_hsa.c - dlopen of libhsa-runtime64.so.1 and the HSA status converter.
 */
#include "amdgpu_hsa.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *amdgpu_hsa_library_name(void)
{
    const char *env = getenv(AMDGPU_HSA_LIBRARY_ENV);

    if (env != NULL && env[0] != '\0')
        return env;
    return AMDGPU_HSA_LIBRARY;
}

__attribute__((format(printf, 2, 3))) static void amdgpu_hsa_error(struct tether_error *err,
                                                                   const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

tether_status_t amdgpu_hsa_open(const char *library, struct amdgpu_hsa *hsa_p,
                                struct tether_error *err)
{
    struct amdgpu_hsa hsa;
    const char *missing = NULL;

    if (hsa_p == NULL) {
        amdgpu_hsa_error(err, "amdgpu_hsa_open: no output table");
        return TETHER_ERR_INVALID;
    }
    if (library == NULL)
        library = amdgpu_hsa_library_name();

    memset(&hsa, 0, sizeof(hsa));
    /* RTLD_LOCAL: the runtime's symbols must not leak into the global scope libomptarget's other
     * plugins resolve against.  RTLD_NOW: a broken install fails here, not in a later call. */
    hsa.handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (hsa.handle == NULL) {
        const char *why = dlerror();

        amdgpu_hsa_error(err, "cannot open the HSA runtime %s: %s", library,
                         why != NULL ? why : "unknown dlopen error");
        return TETHER_ERR_NO_DRIVER;
    }

    /* dlsym returns void *; the POSIX-sanctioned way to turn that into a function pointer is to
     * copy the object representation, which is what the memcpy does. */
#define AMDGPU_HSA_RESOLVE_(name)                                                                  \
    if (missing == NULL) {                                                                         \
        void *sym = dlsym(hsa.handle, #name);                                                      \
        if (sym == NULL)                                                                           \
            missing = #name;                                                                       \
        else                                                                                       \
            memcpy(&hsa.name, &sym, sizeof(hsa.name));                                             \
    }
    AMDGPU_HSA_SYMBOLS(AMDGPU_HSA_RESOLVE_)
#undef AMDGPU_HSA_RESOLVE_

    if (missing != NULL) {
        amdgpu_hsa_error(err, "the HSA runtime %s lacks the symbol %s", library, missing);
        goto close_library;
    }
    *hsa_p = hsa;
    return TETHER_OK;

close_library:
    dlclose(hsa.handle);
    return TETHER_ERR_DRIVER;
}

void amdgpu_hsa_close(struct amdgpu_hsa *hsa)
{
    if (hsa == NULL || hsa->handle == NULL)
        return;
    dlclose(hsa->handle);
    memset(hsa, 0, sizeof(*hsa));
}

tether_status_t amdgpu_hsa_status_map(hsa_status_t status)
{
    switch (status) {
    case HSA_STATUS_SUCCESS:
    case HSA_STATUS_INFO_BREAK:
        return TETHER_OK;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
    case HSA_STATUS_ERROR_INVALID_ALLOCATION:
        return TETHER_ERR_NO_MEMORY;
    case HSA_STATUS_ERROR_NOT_INITIALIZED:
        return TETHER_ERR_NO_DRIVER;
    case HSA_STATUS_ERROR_INVALID_ISA:
    case HSA_STATUS_ERROR_INVALID_ISA_NAME:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER:
    case HSA_STATUS_ERROR_INVALID_EXECUTABLE:
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
    case HSA_STATUS_ERROR_VARIABLE_UNDEFINED:
        return TETHER_ERR_BAD_IMAGE;
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME:
        return TETHER_ERR_NOT_FOUND;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
        return TETHER_ERR_INVALID;
    default:
        return TETHER_ERR_DRIVER;
    }
}

tether_status_t amdgpu_hsa_check(const struct amdgpu_hsa *hsa, hsa_status_t status,
                                 const char *call, struct tether_error *err)
{
    tether_status_t ts = amdgpu_hsa_status_map(status);
    const char *text = NULL;

    if (ts == TETHER_OK)
        return TETHER_OK;
    if (err == NULL)
        return ts;
    if (hsa != NULL && hsa->hsa_status_string != NULL &&
        hsa->hsa_status_string(status, &text) != HSA_STATUS_SUCCESS)
        text = NULL;
    snprintf(err->msg, sizeof(err->msg), "%s: %s (0x%x)", call != NULL ? call : "HSA call",
             text != NULL ? text : "HSA error", (unsigned)status);
    return ts;
}
