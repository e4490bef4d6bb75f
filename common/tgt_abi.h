/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/tgt_abi.h - the data structures libomptarget 16.0.6 shares with a plugin.
 *
 * Role: C declarations of libomptarget 16's include/omptarget.h structs that cross the
 * __tgt_rtl_* boundary, with their x86-64 layouts checked by _Static_assert.  Names keep
 * libomptarget's fields (so they can be compared with its source) under tether's tgt_ prefix.
 * Reference: /work/shared/docs/libomptarget16-abi.md, section 2.
 *
 * Invariants: pure declarations; no state, no functions.  Only common/ includes this header.
 */
#ifndef TETHER_COMMON_TGT_ABI_H
#define TETHER_COMMON_TGT_ABI_H

#include <stddef.h>
#include <stdint.h>

#define TGT_OFFLOAD_SUCCESS 0
#define TGT_OFFLOAD_FAIL (~0)

/* __tgt_offload_entry: 32 bytes.  size 0 = kernel, otherwise a global of that many bytes. */
struct tgt_offload_entry {
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t reserved;
};

/* OpenMPOffloadingDeclareTargetFlags in entry.flags. */
#define TGT_ENTRY_LINK 0x01
#define TGT_ENTRY_CTOR 0x02
#define TGT_ENTRY_DTOR 0x04

/* OMP_REQ_* flags of `#pragma omp requires` (__tgt_rtl_init_requires). */
#define TGT_REQ_UNIFIED_SHARED_MEMORY 0x008

/* __tgt_device_image: 32 bytes.  Entries point into the host table (same for every image). */
struct tgt_device_image {
    void *ImageStart;
    void *ImageEnd;
    struct tgt_offload_entry *EntriesBegin;
    struct tgt_offload_entry *EntriesEnd;
};

/* __tgt_bin_desc: 32 bytes; one per registered library (executable or shared object). */
struct tgt_bin_desc {
    int32_t NumDeviceImages;
    struct tgt_device_image *DeviceImages;
    struct tgt_offload_entry *HostEntriesBegin;
    struct tgt_offload_entry *HostEntriesEnd;
};

/* __tgt_image_info: only passed to is_valid_binary_info. */
struct tgt_image_info {
    const char *Arch;
};

/* __tgt_target_table: what load_binary returns. */
struct tgt_target_table {
    struct tgt_offload_entry *EntriesBegin;
    struct tgt_offload_entry *EntriesEnd;
};

/* __tgt_async_info: Queue is the plugin's (tether: a struct plugin_async *). */
struct tgt_async_info {
    void *Queue;
};

/* __tgt_device_info: what interop objects report as omp_ipr_device and omp_ipr_device_context. */
struct tgt_device_info {
    void *Context;
    void *Device;
};

/* KernelArgsTy: 104 bytes.  Version 1 (libomptarget's constructor/destructor kernels) and 2 (clang
 * 16).  NumArgs is overwritten by libomptarget with the number of TgtArgs; the Arg* arrays keep
 * the host-side length and must not be indexed with it. */
struct tgt_kernel_args {
    uint32_t Version;
    uint32_t NumArgs;
    void **ArgBasePtrs;
    void **ArgPtrs;
    int64_t *ArgSizes;
    int64_t *ArgTypes;
    void **ArgNames;
    void **ArgMappers;
    uint64_t Tripcount;
    uint64_t Flags; /* bit 0: NoWait */
    uint32_t NumTeams[3];
    uint32_t ThreadLimit[3];
    uint32_t DynCGroupMem;
};

/* DeviceEnvironmentTy, written to __omp_rtl_device_environment after an image loads. */
struct tgt_device_environment {
    uint32_t DebugKind;
    uint32_t NumDevices;
    uint32_t DeviceNum;
    uint32_t DynamicMemSize;
};

#define TGT_DEVICE_ENVIRONMENT_SYMBOL "__omp_rtl_device_environment"

_Static_assert(sizeof(struct tgt_offload_entry) == 32, "__tgt_offload_entry layout");
_Static_assert(sizeof(struct tgt_device_image) == 32, "__tgt_device_image layout");
_Static_assert(sizeof(struct tgt_bin_desc) == 32, "__tgt_bin_desc layout");
_Static_assert(sizeof(struct tgt_target_table) == 16, "__tgt_target_table layout");
_Static_assert(sizeof(struct tgt_async_info) == 8, "__tgt_async_info layout");
_Static_assert(sizeof(struct tgt_device_info) == 16, "__tgt_device_info layout");
_Static_assert(sizeof(struct tgt_kernel_args) == 104, "KernelArgsTy layout");
_Static_assert(offsetof(struct tgt_kernel_args, Tripcount) == 56, "KernelArgsTy.Tripcount");
_Static_assert(offsetof(struct tgt_kernel_args, Flags) == 64, "KernelArgsTy.Flags");
_Static_assert(offsetof(struct tgt_kernel_args, NumTeams) == 72, "KernelArgsTy.NumTeams");
_Static_assert(offsetof(struct tgt_kernel_args, ThreadLimit) == 84, "KernelArgsTy.ThreadLimit");
_Static_assert(offsetof(struct tgt_kernel_args, DynCGroupMem) == 96, "KernelArgsTy.DynCGroupMem");
_Static_assert(sizeof(struct tgt_device_environment) == 16, "DeviceEnvironmentTy layout");

#endif /* TETHER_COMMON_TGT_ABI_H */
