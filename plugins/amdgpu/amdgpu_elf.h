/*
 * amdgpu_elf.h - a bounds-checked reader of AMDGPU code objects as ELF files.
 *
 * Role: the plugin's only view of the raw bytes of a device image: the ELF header, the section
 * table, notes and symbols.  An AMDGPU code object is an ELF64 little-endian shared object with
 * e_machine EM_AMDGPU (224) and EI_OSABI ELFOSABI_AMDGPU_HSA (64).  The bytes come from the user's
 * program, so every offset and size is checked against the image before it is read, and headers
 * are copied out with memcpy (the image may be unaligned).  Nothing is allocated: the reader
 * keeps pointers into the image, which must stay valid and unchanged while the reader is used.
 *
 * Thread safety: an opened struct amdgpu_elf is read-only; any number of threads may query it.
 * Errors: TETHER_ERR_BAD_IMAGE for malformed input (with a message when err is not NULL),
 * TETHER_ERR_NOT_FOUND for a missing symbol/note, TETHER_ERR_INVALID for NULL arguments.  Output
 * parameters are written only on success.
 */
#ifndef TETHER_AMDGPU_ELF_H
#define TETHER_AMDGPU_ELF_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/status.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define AMDGPU_ELFOSABI_HSA 64
/* EI_ABIVERSION values of ELFOSABI_AMDGPU_HSA: code object v2 .. v5. */
#define AMDGPU_ELFABIVERSION_V2 0
#define AMDGPU_ELFABIVERSION_V3 1
#define AMDGPU_ELFABIVERSION_V4 2
#define AMDGPU_ELFABIVERSION_V5 3
/* The metadata note (code object v3+): owner "AMDGPU", type 32, MessagePack payload. */
#define AMDGPU_NOTE_OWNER "AMDGPU"
#define AMDGPU_NT_METADATA 32

struct amdgpu_elf {
    const uint8_t *image;
    size_t size;
    Elf64_Ehdr ehdr;     /* copied from the image */
    size_t shoff;        /* section table offset (0 when there is none) */
    uint16_t shnum;      /* number of section headers */
    size_t symtab_index; /* section index of .symtab, else .dynsym, else 0 (no symbols) */
    size_t strtab_index; /* its string table */
};

/* A symbol as found by amdgpu_elf_find_symbol(). */
struct amdgpu_elf_symbol {
    uint64_t value;       /* st_value: the virtual address in the loaded code object */
    uint64_t size;        /* st_size */
    uint8_t type;         /* ELF64_ST_TYPE: STT_FUNC, STT_OBJECT, ... */
    uint8_t bind;         /* ELF64_ST_BIND */
    uint8_t visibility;   /* ELF64_ST_VISIBILITY */
    uint16_t shndx;       /* st_shndx */
    const uint8_t *bytes; /* the symbol's initial bytes inside the image, or NULL when it has none
                             in the file (undefined, SHN_ABS, .bss) */
};

/* Quick test used by is_valid_binary: a 64-bit little-endian ELF header fits and e_machine is
 * EM_AMDGPU.  No further validation. */
bool amdgpu_elf_is_amdgpu(const void *image, size_t size);

/* Validate the header and section table of [image, image + size) and prepare symbol lookups.
 * Requires ELFCLASS64, ELFDATA2LSB, EM_AMDGPU, ET_DYN or ET_REL; the section table (when present)
 * must lie inside the image with sh_entsize-sized entries, and every section that occupies file
 * bytes must lie inside the image. */
tether_status_t amdgpu_elf_open(const void *image, size_t size, struct amdgpu_elf *elf_p,
                                struct tether_error *err);

/* Section header i, copied out; false when i is out of range. */
bool amdgpu_elf_section(const struct amdgpu_elf *elf, size_t i, Elf64_Shdr *shdr_p);

/* Find the defined symbol called name in .symtab (else .dynsym).  TETHER_ERR_NOT_FOUND when
 * absent or undefined. */
tether_status_t amdgpu_elf_find_symbol(const struct amdgpu_elf *elf, const char *name,
                                       struct amdgpu_elf_symbol *sym_p);

/* Find the first note with the given owner and type in the SHT_NOTE sections (or, when the image
 * has no section table, in the PT_NOTE segments).  desc_p and size_p receive its descriptor. */
tether_status_t amdgpu_elf_find_note(const struct amdgpu_elf *elf, const char *owner, uint32_t type,
                                     const uint8_t **desc_p, size_t *size_p);

#endif /* TETHER_AMDGPU_ELF_H */
