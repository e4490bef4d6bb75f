/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_code_object.h - what the plugin needs to know about an AMDGPU code object, read on the
 * host before (and without) the HSA runtime: target ID, kernels, their argument layout, their
 * kernel descriptors, their OpenMP execution mode.
 *
 * Sources, in the code object (AMDGPU ABI, code object v3-v5):
 *  - the ELF header: target ID (amdgpu_target.h), code object version (EI_ABIVERSION);
 *  - the NT_AMDGPU_METADATA note, a MessagePack map: "amdhsa.version", "amdhsa.target" and
 *    "amdhsa.kernels", one map per kernel with ".name", ".symbol", ".kernarg_segment_size",
 *    ".kernarg_segment_align", ".group_segment_fixed_size", ".private_segment_fixed_size",
 *    ".wavefront_size", ".sgpr_count", ".vgpr_count", ".max_flat_workgroup_size",
 *    ".uses_dynamic_stack" and ".args" (each with ".offset", ".size", ".value_kind");
 *  - the 64-byte kernel descriptor, symbol "<kernel>.kd" (llvm::amdhsa::kernel_descriptor_t);
 *  - the one-byte symbol "<kernel>_exec_mode" clang emits for OpenMP kernels (1 generic, 2 SPMD,
 *    3 generic-SPMD).
 * Code object v2 (metadata in YAML, note type 10) is refused: LLVM 16 no longer emits it.
 *
 * The image's bytes are read only through common's bounds-checked ELF reader (plugin_image.h:
 * header, notes, symbols).
 *
 * Ownership: amdgpu_code_object_parse() allocates the kernel table and copies every string it
 * keeps; the result does not point into the metadata note.  It does keep the image's range
 * (co->image): kernel descriptors and exec modes are read during parsing, so later reads of the
 * image through co->image are for callers that still hold the image.
 * amdgpu_code_object_fini() frees everything.
 *
 * Thread safety: a parsed code object is read-only; any number of threads may read it.
 * Errors: TETHER_ERR_BAD_IMAGE (malformed or inconsistent, with a message naming the kernel and
 * field), TETHER_ERR_NO_MEMORY, TETHER_ERR_INVALID (NULL arguments).  On failure nothing is left
 * allocated and *co_p is not written.
 */
#ifndef TETHER_AMDGPU_CODE_OBJECT_H
#define TETHER_AMDGPU_CODE_OBJECT_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amdgpu_target.h"
#include "plugin_image.h"
#include "tether/status.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
/* An AMDGPU code object is an ELF64 little-endian shared (or relocatable) object with e_machine
 * EM_AMDGPU and EI_OSABI ELFOSABI_AMDGPU_HSA, whose EI_ABIVERSION is the code object version. */
#define AMDGPU_ELFOSABI_HSA 64
#define AMDGPU_ELFABIVERSION_V2 0
#define AMDGPU_ELFABIVERSION_V3 1
#define AMDGPU_ELFABIVERSION_V4 2
#define AMDGPU_ELFABIVERSION_V5 3
/* The metadata note (code object v3+): owner "AMDGPU", type 32, MessagePack payload. */
#define AMDGPU_NOTE_OWNER "AMDGPU"
#define AMDGPU_NT_METADATA 32

/* Argument kinds (".value_kind").  Explicit kinds are the kernel's own parameters; hidden kinds
 * are filled by the runtime that launches the kernel (code object v5 lists them with offsets). */
#define AMDGPU_ARG_KINDS(X)                                                                        \
    X(AMDGPU_ARG_BY_VALUE, "by_value", false)                                                      \
    X(AMDGPU_ARG_GLOBAL_BUFFER, "global_buffer", false)                                            \
    X(AMDGPU_ARG_DYNAMIC_SHARED_POINTER, "dynamic_shared_pointer", false)                          \
    X(AMDGPU_ARG_SAMPLER, "sampler", false)                                                        \
    X(AMDGPU_ARG_IMAGE, "image", false)                                                            \
    X(AMDGPU_ARG_PIPE, "pipe", false)                                                              \
    X(AMDGPU_ARG_QUEUE, "queue", false)                                                            \
    X(AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_X, "hidden_global_offset_x", true)                           \
    X(AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_Y, "hidden_global_offset_y", true)                           \
    X(AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_Z, "hidden_global_offset_z", true)                           \
    X(AMDGPU_ARG_HIDDEN_NONE, "hidden_none", true)                                                 \
    X(AMDGPU_ARG_HIDDEN_PRINTF_BUFFER, "hidden_printf_buffer", true)                               \
    X(AMDGPU_ARG_HIDDEN_HOSTCALL_BUFFER, "hidden_hostcall_buffer", true)                           \
    X(AMDGPU_ARG_HIDDEN_DEFAULT_QUEUE, "hidden_default_queue", true)                               \
    X(AMDGPU_ARG_HIDDEN_COMPLETION_ACTION, "hidden_completion_action", true)                       \
    X(AMDGPU_ARG_HIDDEN_MULTIGRID_SYNC_ARG, "hidden_multigrid_sync_arg", true)                     \
    X(AMDGPU_ARG_HIDDEN_BLOCK_COUNT_X, "hidden_block_count_x", true)                               \
    X(AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Y, "hidden_block_count_y", true)                               \
    X(AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Z, "hidden_block_count_z", true)                               \
    X(AMDGPU_ARG_HIDDEN_GROUP_SIZE_X, "hidden_group_size_x", true)                                 \
    X(AMDGPU_ARG_HIDDEN_GROUP_SIZE_Y, "hidden_group_size_y", true)                                 \
    X(AMDGPU_ARG_HIDDEN_GROUP_SIZE_Z, "hidden_group_size_z", true)                                 \
    X(AMDGPU_ARG_HIDDEN_REMAINDER_X, "hidden_remainder_x", true)                                   \
    X(AMDGPU_ARG_HIDDEN_REMAINDER_Y, "hidden_remainder_y", true)                                   \
    X(AMDGPU_ARG_HIDDEN_REMAINDER_Z, "hidden_remainder_z", true)                                   \
    X(AMDGPU_ARG_HIDDEN_GRID_DIMS, "hidden_grid_dims", true)                                       \
    X(AMDGPU_ARG_HIDDEN_HEAP_V1, "hidden_heap_v1", true)                                           \
    X(AMDGPU_ARG_HIDDEN_DYNAMIC_LDS_SIZE, "hidden_dynamic_lds_size", true)                         \
    X(AMDGPU_ARG_HIDDEN_PRIVATE_BASE, "hidden_private_base", true)                                 \
    X(AMDGPU_ARG_HIDDEN_SHARED_BASE, "hidden_shared_base", true)                                   \
    X(AMDGPU_ARG_HIDDEN_QUEUE_PTR, "hidden_queue_ptr", true)                                       \
    X(AMDGPU_ARG_UNKNOWN, "", true)

enum amdgpu_arg_kind {
#define AMDGPU_ARG_ENUM_(name, text, hidden) name,
    AMDGPU_ARG_KINDS(AMDGPU_ARG_ENUM_)
#undef AMDGPU_ARG_ENUM_
};

/* The ".value_kind" text of a kind ("" for AMDGPU_ARG_UNKNOWN). */
const char *amdgpu_arg_kind_name(enum amdgpu_arg_kind kind);
/* True for the hidden kinds (and unknown ones: a kind we cannot name is not the user's). */
bool amdgpu_arg_kind_is_hidden(enum amdgpu_arg_kind kind);

struct amdgpu_kernel_arg {
    uint32_t offset; /* byte offset in the kernarg segment */
    uint32_t size;   /* bytes */
    enum amdgpu_arg_kind kind;
};

/* llvm::amdhsa::kernel_descriptor_t, 64 bytes, as stored in the code object. */
struct amdgpu_kernel_descriptor {
    uint32_t group_segment_fixed_size;     /* @0 */
    uint32_t private_segment_fixed_size;   /* @4 */
    uint32_t kernarg_size;                 /* @8 */
    uint8_t reserved0[4];                  /* @12 */
    int64_t kernel_code_entry_byte_offset; /* @16, from the descriptor to the code */
    uint8_t reserved1[20];                 /* @24 */
    uint32_t compute_pgm_rsrc3;            /* @44 */
    uint32_t compute_pgm_rsrc1;            /* @48 */
    uint32_t compute_pgm_rsrc2;            /* @52 */
    uint16_t kernel_code_properties;       /* @56 */
    uint16_t kernarg_preload;              /* @58 (v5; 0 before) */
    uint8_t reserved3[4];                  /* @60 */
};
_Static_assert(sizeof(struct amdgpu_kernel_descriptor) == 64, "kernel descriptor is 64 bytes");
_Static_assert(offsetof(struct amdgpu_kernel_descriptor, kernel_code_entry_byte_offset) == 16,
               "kernel_code_entry_byte_offset @16");
_Static_assert(offsetof(struct amdgpu_kernel_descriptor, compute_pgm_rsrc3) == 44, "rsrc3 @44");
_Static_assert(offsetof(struct amdgpu_kernel_descriptor, kernel_code_properties) == 56,
               "kernel_code_properties @56");

/* kernel_code_properties bits used by the plugin. */
#define AMDGPU_KCP_ENABLE_SGPR_DISPATCH_PTR (1u << 1)
#define AMDGPU_KCP_ENABLE_SGPR_QUEUE_PTR (1u << 2)
#define AMDGPU_KCP_ENABLE_SGPR_KERNARG_SEGMENT_PTR (1u << 3)
#define AMDGPU_KCP_ENABLE_WAVEFRONT_SIZE32 (1u << 10)
#define AMDGPU_KCP_USES_DYNAMIC_STACK (1u << 11)

/* OpenMP execution modes (llvm/Frontend/OpenMP/OMPDeviceConstants.h). */
#define AMDGPU_EXEC_MODE_NONE 0 /* no <kernel>_exec_mode symbol */
#define AMDGPU_EXEC_MODE_GENERIC 1
#define AMDGPU_EXEC_MODE_SPMD 2
#define AMDGPU_EXEC_MODE_GENERIC_SPMD 3

struct amdgpu_kernel {
    char *name;   /* ".name": the kernel's function name (what libomptarget entries name) */
    char *symbol; /* ".symbol": the kernel descriptor symbol, "<name>.kd" */
    uint32_t kernarg_segment_size;
    uint32_t kernarg_segment_align; /* a power of two, >= 1 */
    uint32_t group_segment_fixed_size;
    uint32_t private_segment_fixed_size;
    uint32_t wavefront_size; /* 32 or 64 */
    uint32_t sgpr_count;
    uint32_t vgpr_count;
    uint32_t max_flat_workgroup_size; /* 0 when the metadata does not say */
    bool uses_dynamic_stack;
    uint32_t num_args;              /* all arguments, explicit and hidden, in metadata order */
    struct amdgpu_kernel_arg *args; /* num_args entries */
    uint32_t num_explicit_args;     /* the leading explicit ones */
    struct amdgpu_kernel_descriptor kd;
    bool has_kd;       /* kd was found in the image (always for a valid shared object) */
    uint8_t exec_mode; /* AMDGPU_EXEC_MODE_* */
};

struct amdgpu_code_object {
    struct plugin_image image;      /* the bytes parsed (not owned) */
    struct image_elf_header header; /* their ELF header */
    struct amdgpu_target_id target; /* from e_flags (else from "amdhsa.target") */
    unsigned version;               /* code object version: 3, 4 or 5 */
    uint32_t metadata_version[2];   /* "amdhsa.version" */
    char target_name[64];           /* "amdhsa.target", e.g. "amdgcn-amd-amdhsa--gfx90a" */
    uint32_t num_kernels;
    struct amdgpu_kernel *kernels;
};

/* Parse [image, image + size) (see the header comment).  Each kernel's ".args" must be sorted by
 * offset, lie inside its kernarg segment and not overlap; kernarg_segment_align must be a power
 * of two; wavefront_size 32 or 64; when the kernel descriptor exists, its kernarg_size and segment
 * sizes must equal the metadata's. */
tether_status_t amdgpu_code_object_parse(const void *image, size_t size,
                                         struct amdgpu_code_object *co_p, struct tether_error *err);

/* Free what amdgpu_code_object_parse() allocated.  NULL is accepted. */
void amdgpu_code_object_fini(struct amdgpu_code_object *co);

/* The kernel whose ".name" is name, or NULL. */
const struct amdgpu_kernel *amdgpu_code_object_find_kernel(const struct amdgpu_code_object *co,
                                                           const char *name);

#endif /* TETHER_AMDGPU_CODE_OBJECT_H */
