/*
 * common/plugin_image.h - reading device images: OffloadBinary wrappers and ELF files.
 *
 * Role: the bounds-checked decoders common uses to validate an image libomptarget hands over
 * (is_valid_binary), to find symbols in it (<kernel>_exec_mode, __tether_rpc_client) and to read
 * their initial bytes, and to decode the target region a kernel's name stands for.  Pure functions
 * over a byte range: no allocation, no global state, safe from any thread.  Every read is checked
 * against the range, so arbitrary bytes are safe input.
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
