/*
 * amdgpu_elf.c - bounds-checked ELF reading for AMDGPU code objects (see amdgpu_elf.h).
 */
#include "amdgpu_elf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 2, 3))) static tether_status_t
amdgpu_elf_bad(struct tether_error *err, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (err == NULL)
        return TETHER_ERR_BAD_IMAGE;
    n = snprintf(err->msg, sizeof(err->msg), "AMDGPU code object: ");
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
    va_end(ap);
    return TETHER_ERR_BAD_IMAGE;
}

/* True when [off, off + len) lies inside an image of size bytes, without overflow. */
static bool amdgpu_elf_range_ok(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

bool amdgpu_elf_is_amdgpu(const void *image, size_t size)
{
    Elf64_Ehdr ehdr;

    if (image == NULL || size < sizeof(ehdr))
        return false;
    memcpy(&ehdr, image, sizeof(ehdr));
    return memcmp(ehdr.e_ident, ELFMAG, SELFMAG) == 0 && ehdr.e_ident[EI_CLASS] == ELFCLASS64 &&
           ehdr.e_ident[EI_DATA] == ELFDATA2LSB && ehdr.e_machine == EM_AMDGPU;
}

bool amdgpu_elf_section(const struct amdgpu_elf *elf, size_t i, Elf64_Shdr *shdr_p)
{
    if (i >= elf->shnum)
        return false;
    memcpy(shdr_p, elf->image + elf->shoff + i * sizeof(Elf64_Shdr), sizeof(*shdr_p));
    return true;
}

tether_status_t amdgpu_elf_open(const void *image, size_t size, struct amdgpu_elf *elf_p,
                                struct tether_error *err)
{
    struct amdgpu_elf elf;
    Elf64_Shdr sh;

    if (image == NULL || elf_p == NULL)
        return TETHER_ERR_INVALID;
    memset(&elf, 0, sizeof(elf));
    elf.image = image;
    elf.size = size;
    if (size < sizeof(Elf64_Ehdr))
        return amdgpu_elf_bad(err, "%zu bytes is too small for an ELF header", size);
    memcpy(&elf.ehdr, image, sizeof(elf.ehdr));
    if (memcmp(elf.ehdr.e_ident, ELFMAG, SELFMAG) != 0)
        return amdgpu_elf_bad(err, "not an ELF file");
    if (elf.ehdr.e_ident[EI_CLASS] != ELFCLASS64 || elf.ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
        return amdgpu_elf_bad(err, "not a 64-bit little-endian ELF file");
    if (elf.ehdr.e_machine != EM_AMDGPU)
        return amdgpu_elf_bad(err, "e_machine is %u, not EM_AMDGPU (%u)",
                              (unsigned)elf.ehdr.e_machine, (unsigned)EM_AMDGPU);
    if (elf.ehdr.e_type != ET_DYN && elf.ehdr.e_type != ET_REL)
        return amdgpu_elf_bad(err, "e_type %u is neither ET_DYN nor ET_REL",
                              (unsigned)elf.ehdr.e_type);

    if (elf.ehdr.e_shoff != 0 && elf.ehdr.e_shnum != 0) {
        if (elf.ehdr.e_shentsize != sizeof(Elf64_Shdr))
            return amdgpu_elf_bad(err, "section header size %u", (unsigned)elf.ehdr.e_shentsize);
        if (!amdgpu_elf_range_ok(size, elf.ehdr.e_shoff,
                                 (uint64_t)elf.ehdr.e_shnum * sizeof(Elf64_Shdr)))
            return amdgpu_elf_bad(err, "section table [%llu, +%u entries) outside the image",
                                  (unsigned long long)elf.ehdr.e_shoff, (unsigned)elf.ehdr.e_shnum);
        elf.shoff = (size_t)elf.ehdr.e_shoff;
        elf.shnum = elf.ehdr.e_shnum;
    } else if (elf.ehdr.e_shoff != 0) {
        return amdgpu_elf_bad(err, "extended section numbering is not supported");
    }

    for (size_t i = 1; i < elf.shnum; i++) {
        amdgpu_elf_section(&elf, i, &sh);
        if (sh.sh_type != SHT_NOBITS && !amdgpu_elf_range_ok(size, sh.sh_offset, sh.sh_size))
            return amdgpu_elf_bad(err, "section %zu [%llu, +%llu) outside the image", i,
                                  (unsigned long long)sh.sh_offset, (unsigned long long)sh.sh_size);
        if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && elf.symtab_index == 0)) {
            Elf64_Shdr strsh;

            if (sh.sh_entsize != sizeof(Elf64_Sym))
                return amdgpu_elf_bad(err, "symbol table entry size %llu",
                                      (unsigned long long)sh.sh_entsize);
            if (!amdgpu_elf_section(&elf, sh.sh_link, &strsh) || sh.sh_link == 0 ||
                strsh.sh_type != SHT_STRTAB)
                return amdgpu_elf_bad(err, "symbol table %zu has no string table", i);
            elf.symtab_index = i;
            elf.strtab_index = sh.sh_link;
        }
    }
    /* String tables are checked when their section is checked above (sh_link < shnum and the
     * section lies inside the image). */
    *elf_p = elf;
    return TETHER_OK;
}

/* The NUL-terminated string at offset off of string section strsh, or NULL when it does not end
 * inside the section. */
static const char *amdgpu_elf_string(const struct amdgpu_elf *elf, const Elf64_Shdr *strsh,
                                     uint64_t off)
{
    const char *base = (const char *)elf->image + strsh->sh_offset;

    if (off >= strsh->sh_size)
        return NULL;
    if (memchr(base + off, '\0', (size_t)(strsh->sh_size - off)) == NULL)
        return NULL;
    return base + off;
}

tether_status_t amdgpu_elf_find_symbol(const struct amdgpu_elf *elf, const char *name,
                                       struct amdgpu_elf_symbol *sym_p)
{
    Elf64_Shdr symsh, strsh;
    size_t count;

    if (elf == NULL || name == NULL || sym_p == NULL)
        return TETHER_ERR_INVALID;
    if (elf->symtab_index == 0 || !amdgpu_elf_section(elf, elf->symtab_index, &symsh) ||
        !amdgpu_elf_section(elf, elf->strtab_index, &strsh))
        return TETHER_ERR_NOT_FOUND;
    count = (size_t)(symsh.sh_size / sizeof(Elf64_Sym));
    for (size_t i = 1; i < count; i++) {
        struct amdgpu_elf_symbol sym;
        Elf64_Sym es;
        Elf64_Shdr sh;
        const char *sname;

        memcpy(&es, elf->image + symsh.sh_offset + i * sizeof(Elf64_Sym), sizeof(es));
        if (es.st_shndx == SHN_UNDEF)
            continue;
        sname = amdgpu_elf_string(elf, &strsh, es.st_name);
        if (sname == NULL || strcmp(sname, name) != 0)
            continue;

        memset(&sym, 0, sizeof(sym));
        sym.value = es.st_value;
        sym.size = es.st_size;
        sym.type = ELF64_ST_TYPE(es.st_info);
        sym.bind = ELF64_ST_BIND(es.st_info);
        sym.visibility = ELF64_ST_VISIBILITY(es.st_other);
        sym.shndx = es.st_shndx;
        /* In a shared object st_value is an address and sh_addr the section's address; in a
         * relocatable object both are section-relative (sh_addr 0).  Either way the symbol's
         * bytes are at sh_offset + (st_value - sh_addr) when they lie inside the section. */
        if (es.st_shndx < SHN_LORESERVE && amdgpu_elf_section(elf, es.st_shndx, &sh) &&
            sh.sh_type != SHT_NOBITS && es.st_value >= sh.sh_addr &&
            amdgpu_elf_range_ok((size_t)sh.sh_size, es.st_value - sh.sh_addr, es.st_size))
            sym.bytes = elf->image + sh.sh_offset + (es.st_value - sh.sh_addr);
        *sym_p = sym;
        return TETHER_OK;
    }
    return TETHER_ERR_NOT_FOUND;
}

/* Search the notes in [off, off + len) of the image, padded to align (4 or 8). */
static tether_status_t amdgpu_elf_scan_notes(const struct amdgpu_elf *elf, uint64_t off,
                                             uint64_t len, uint64_t align, const char *owner,
                                             uint32_t type, const uint8_t **desc_p, size_t *size_p)
{
    const uint8_t *p = elf->image + off;
    const uint8_t *end = p + len;
    size_t owner_len = strlen(owner) + 1;

    align = align == 8 ? 8 : 4;
    while ((size_t)(end - p) >= 3 * sizeof(uint32_t)) {
        uint32_t namesz, descsz, ntype;
        uint64_t name_span, desc_span;
        const uint8_t *name, *desc;

        memcpy(&namesz, p, 4);
        memcpy(&descsz, p + 4, 4);
        memcpy(&ntype, p + 8, 4);
        name = p + 12;
        name_span = ((uint64_t)namesz + align - 1) & ~(align - 1);
        if (name_span > (uint64_t)(end - name))
            return TETHER_ERR_BAD_IMAGE;
        desc = name + name_span;
        desc_span = ((uint64_t)descsz + align - 1) & ~(align - 1);
        if (descsz > (uint64_t)(end - desc))
            return TETHER_ERR_BAD_IMAGE;
        if (ntype == type && namesz == owner_len && memcmp(name, owner, owner_len) == 0) {
            *desc_p = desc;
            *size_p = descsz;
            return TETHER_OK;
        }
        if (desc_span >= (uint64_t)(end - desc))
            break;
        p = desc + desc_span;
    }
    return TETHER_ERR_NOT_FOUND;
}

tether_status_t amdgpu_elf_find_note(const struct amdgpu_elf *elf, const char *owner, uint32_t type,
                                     const uint8_t **desc_p, size_t *size_p)
{
    tether_status_t st;

    if (elf == NULL || owner == NULL || desc_p == NULL || size_p == NULL)
        return TETHER_ERR_INVALID;
    if (elf->shnum > 0) {
        for (size_t i = 1; i < elf->shnum; i++) {
            Elf64_Shdr sh;

            amdgpu_elf_section(elf, i, &sh);
            if (sh.sh_type != SHT_NOTE)
                continue;
            st = amdgpu_elf_scan_notes(elf, sh.sh_offset, sh.sh_size, sh.sh_addralign, owner, type,
                                       desc_p, size_p);
            if (st != TETHER_ERR_NOT_FOUND)
                return st;
        }
        return TETHER_ERR_NOT_FOUND;
    }
    /* No section table: fall back to the program headers. */
    if (elf->ehdr.e_phoff == 0 || elf->ehdr.e_phnum == 0)
        return TETHER_ERR_NOT_FOUND;
    if (elf->ehdr.e_phentsize != sizeof(Elf64_Phdr) ||
        !amdgpu_elf_range_ok(elf->size, elf->ehdr.e_phoff,
                             (uint64_t)elf->ehdr.e_phnum * sizeof(Elf64_Phdr)))
        return TETHER_ERR_BAD_IMAGE;
    for (size_t i = 0; i < elf->ehdr.e_phnum; i++) {
        Elf64_Phdr ph;

        memcpy(&ph, elf->image + elf->ehdr.e_phoff + i * sizeof(Elf64_Phdr), sizeof(ph));
        if (ph.p_type != PT_NOTE)
            continue;
        if (!amdgpu_elf_range_ok(elf->size, ph.p_offset, ph.p_filesz))
            return TETHER_ERR_BAD_IMAGE;
        st = amdgpu_elf_scan_notes(elf, ph.p_offset, ph.p_filesz, ph.p_align, owner, type, desc_p,
                                   size_p);
        if (st != TETHER_ERR_NOT_FOUND)
            return st;
    }
    return TETHER_ERR_NOT_FOUND;
}
