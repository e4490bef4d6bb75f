/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tether/tether.h - the public API of tether's OpenMP offload plugins.
 *
 * tether's plugins (libomptarget.rtl.{x86_64,cuda,amdgpu}.nextgen.so) are loaded by LLVM 16's
 * libomptarget, not linked into programs.  A program asks them questions through
 * tether_device_query() below, which finds the plugins at run time (dlsym), so a program that
 * uses it still links and runs without tether (the query then says so).
 *
 * Also declared here: the LLVM 16 memory extensions that libomptarget.so.16 exports but no
 * installed LLVM 16 header declares (define TETHER_NO_LLVM_OMP_DECLS to leave them out).  With
 * tether's plugins they behave as docs/plugin-interface.md describes: lock_mem follows the pinned
 * map's rules (a range inside a locked range is counted; extending or overlapping ones are
 * refused with NULL), alloc_host works before the first target region on every backend.
 *
 * Thread safety: every function may be called from any thread at any time after main() starts.
 */
#ifndef TETHER_TETHER_H
#define TETHER_TETHER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tether/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_DEVICE_INFO_VERSION 1

/* What a tether plugin says about one OpenMP device. */
struct tether_device_info {
    uint32_t version;       /* TETHER_DEVICE_INFO_VERSION */
    int32_t omp_device;     /* the global OpenMP device number asked about */
    int32_t local_id;       /* the plugin's own (local) id of that device */
    int32_t plugin_devices; /* devices this plugin offers */
    char plugin[16];        /* backend: "x86_64", "cuda", "amdgpu" */
    char library[64];       /* "libomptarget.rtl.<backend>.nextgen.so" (tether's) */
    char name[96];          /* device description, e.g. "NVIDIA H200 (sm_90)" */
    uint64_t pinned_ranges; /* ranges in the plugin's pinned map (one per plugin) right now */
    uint64_t images_loaded; /* device images loaded on the device so far */
};

/* Exported by every tether plugin: describe global OpenMP device omp_device.  Returns TETHER_OK,
 * TETHER_ERR_NO_DEVICE (no such device), TETHER_ERR_NOT_FOUND (the device is served by a plugin
 * that is not tether's).  Initialises the device if it was not yet. */
int32_t tether_rtl_device_query(int32_t omp_device, struct tether_device_info *info_p);

/* Call tether_rtl_device_query if a tether plugin is loaded in this process; otherwise return
 * TETHER_ERR_NOT_FOUND.  *info_p is written only on success. */
static inline int tether_device_query(int omp_device, struct tether_device_info *info_p)
{
    extern void *dlsym(void *handle, const char *symbol);
    int32_t (*query)(int32_t, struct tether_device_info *);
    void *sym = dlsym((void *)0 /* RTLD_DEFAULT */, "tether_rtl_device_query");

    if (sym == NULL) {
        return TETHER_ERR_NOT_FOUND;
    }
    memcpy(&query, &sym, sizeof(query));
    return (int)query(omp_device, info_p);
}

#ifndef TETHER_NO_LLVM_OMP_DECLS
/* LLVM 16 extensions exported by libomptarget.so.16 (src/api.cpp). */
void *llvm_omp_target_alloc_device(size_t size, int device_num);
void *llvm_omp_target_alloc_host(size_t size, int device_num);
void *llvm_omp_target_alloc_shared(size_t size, int device_num);
void llvm_omp_target_free_device(void *ptr, int device_num);
void llvm_omp_target_free_host(void *ptr, int device_num);
void llvm_omp_target_free_shared(void *ptr, int device_num);
void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TETHER_TETHER_H */
