/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_image.h - reading device images: OffloadBinary wrappers and ELF files.
 *
 * Role: the one reader of device image bytes, bounds-checked: common uses it to validate an image
 * libomptarget hands over (is_valid_binary), to find symbols in it (<kernel>_exec_mode,
 * __tether_rpc_client) and to read their initial bytes, and to decode the target region a
 * kernel's name stands for; backends use it for what their images carry besides (AMDGPU: the
 * header's flags and ABI, the metadata note, kernel descriptors).  Pure functions over a byte
 * range: no allocation, no global state, safe from any thread; nothing else of common is needed
 * but plugin_error.c (the AMDGPU code-object parser and its fuzzer link these two alone).  Every
 * read is checked against the range, headers are copied out (the image may be unaligned), so
 * arbitrary bytes are safe input.
 *
 * Formats: LLVM OffloadBinary version 1 (llvm/Object/OffloadBinary.h) and ELF64 little endian.
 */
#ifndef TETHER_COMMON_PLUGIN_IMAGE_H
#define TETHER_COMMON_PLUGIN_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin.h"

/* A symbol found in an ELF image. */
struct image_symbol {
    uint64_t value;   /* st_value */
    uint64_t size;    /* st_size */
    uint8_t type;     /* ELF64_ST_TYPE: STT_OBJECT, STT_FUNC, ... */
    uint8_t bind;     /* ELF64_ST_BIND: STB_LOCAL, STB_GLOBAL, STB_WEAK */
    const void *data; /* the symbol's initial bytes inside the image, or NULL when it has
                         none there (SHT_NOBITS, absolute, out of range) */
    size_t data_size; /* bytes readable at data (min(size, bytes left in its section)) */
};

/* The ELF header fields backends read (image_elf_header). */
struct image_elf_header {
    uint16_t type;       /* e_type: ET_DYN, ET_REL, ET_EXEC */
    uint16_t machine;    /* e_machine */
    uint32_t flags;      /* e_flags */
    uint8_t osabi;       /* e_ident[EI_OSABI] */
    uint8_t abi_version; /* e_ident[EI_ABIVERSION] */
};

/* When [start, start + size) begins with the OffloadBinary magic, decode it and write the inner
 * image of its first entry (bytes and "arch" string) to *image_p; otherwise write the range
 * itself with arch NULL.  TETHER_ERR_BAD_IMAGE (message in err) for a malformed wrapper;
 * TETHER_ERR_INVALID for a NULL or empty range. */
tether_status_t image_unwrap(const void *start, size_t size, struct plugin_image *image_p,
                             struct tether_error *err);

/* Check that the image is a 64-bit little-endian ELF for `machine` (e_machine) with section
 * headers inside the image.  TETHER_ERR_BAD_IMAGE with the reason otherwise. */
tether_status_t image_elf_check(const struct plugin_image *image, uint16_t machine,
                                struct tether_error *err);

/* Check the whole structure of a 64-bit little-endian ELF, as a loader of it relies on: the
 * section table (when there is one: e_shoff and e_shnum both set) lies inside the image with
 * entries of exactly sizeof(Elf64_Shdr), every section with file bytes lies inside the image,
 * every symbol table has entries of sizeof(Elf64_Sym) and a string table.  Writes the header's
 * fields.  TETHER_ERR_BAD_IMAGE with the reason (err may be NULL); TETHER_ERR_INVALID for a NULL
 * image. */
tether_status_t image_elf_header(const struct plugin_image *image,
                                 struct image_elf_header *header_p, struct tether_error *err);

/* The descriptor of the first note with this owner (name) and type, in the SHT_NOTE sections, or
 * in the PT_NOTE segments when the image has no section table.  TETHER_ERR_NOT_FOUND when there
 * is none; TETHER_ERR_BAD_IMAGE for notes or program headers that run past their bounds. */
tether_status_t image_elf_note(const struct plugin_image *image, const char *owner, uint32_t type,
                               const void **desc_p, size_t *size_p);

/* Find the DEFINED symbol `name` (in .symtab, else .dynsym).  True and *sym_p written when
 * found; false otherwise (also for an image that is not a valid ELF). */
bool image_elf_symbol(const struct plugin_image *image, const char *name,
                      struct image_symbol *sym_p);

/* True when the image's symbol table (.symtab, else .dynsym) lists `name` as UNDEFINED: a
 * function the image calls and something else (the driver, a library) must provide, e.g.
 * vprintf and malloc in a cubin, which the CUDA driver serves. */
bool image_elf_undefined(const struct plugin_image *image, const char *name);

/* The e_machine of a valid ELF image, 0 if it is not one. */
uint16_t image_elf_machine(const struct plugin_image *image);

/* The target region an OpenMP kernel name stands for.  clang names a target region's kernel
 * __omp_offloading_<device id>_<file id>_<function>_l<line>, with _<count> appended when one line
 * has several regions; both ids are hexadecimal (not names), <function> is the enclosing
 * function's linkage name (C++: mangled, e.g. _Z3fooi) and may itself contain underscores. */
struct image_region {
    const char *function; /* points into the kernel name; NOT NUL-terminated */
    size_t function_len;
    uint32_t line; /* source line of the target directive */
};

/* Decode a kernel name.  False (and *region_p untouched) for a name that is not of that form. */
bool image_region_decode(const char *kernel, struct image_region *region_p);

#endif /* TETHER_COMMON_PLUGIN_IMAGE_H */
