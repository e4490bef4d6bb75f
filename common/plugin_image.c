/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* common/plugin_image.c - OffloadBinary and ELF decoding (see plugin_image.h). */
#include "plugin_image.h"

#include <elf.h>
#include <string.h>

#define OFFLOAD_MAGIC "\x10\xff\x10\xad"

/* OffloadBinary v1 layout, little endian (llvm/Object/OffloadBinary.h). */
struct offload_header {
    uint8_t magic[4];
    uint32_t version;
    uint64_t size;
    uint64_t entry_offset;
    uint64_t entry_size;
};

struct offload_entry {
    uint16_t image_kind;
    uint16_t offload_kind;
    uint32_t flags;
    uint64_t string_offset;
    uint64_t num_strings;
    uint64_t image_offset;
    uint64_t image_size;
};

struct offload_string {
    uint64_t key_offset;
    uint64_t value_offset;
};

_Static_assert(sizeof(struct offload_header) == 32, "OffloadBinary header");
_Static_assert(sizeof(struct offload_entry) == 40, "OffloadBinary entry");

/* True when [off, off + len) lies inside [0, size). */
static bool range_ok(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

/* A NUL-terminated string at off inside the buffer, or NULL. */
static const char *string_at(const uint8_t *base, size_t size, uint64_t off)
{
    if (off >= size) {
        return NULL;
    }
    if (memchr(base + off, '\0', size - off) == NULL) {
        return NULL;
    }
    return (const char *)base + off;
}

tether_status_t image_unwrap(const void *start, size_t size, struct plugin_image *image_p,
                             struct tether_error *err)
{
    const uint8_t *base = start;
    struct offload_header hdr;
    struct offload_entry ent;
    const char *arch = NULL;

    if (start == NULL || size == 0) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "empty image");
    }
    if (size < 4 || memcmp(base, OFFLOAD_MAGIC, 4) != 0) {
        image_p->start = start;
        image_p->size = size;
        image_p->arch = NULL;
        return TETHER_OK;
    }
    if (size < sizeof(hdr)) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "OffloadBinary of %zu bytes is shorter than its header", size);
    }
    memcpy(&hdr, base, sizeof(hdr));
    if (hdr.version != 1) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "OffloadBinary version %u, expected 1",
                                (unsigned)hdr.version);
    }
    if (hdr.size > size) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "OffloadBinary claims %llu bytes, only %zu present",
                                (unsigned long long)hdr.size, size);
    }
    size = (size_t)hdr.size;
    if (hdr.entry_size < sizeof(ent) || !range_ok(size, hdr.entry_offset, sizeof(ent))) {
        return plugin_error_set(
            err, TETHER_ERR_BAD_IMAGE, "OffloadBinary entry (offset %llu, %llu bytes) out of range",
            (unsigned long long)hdr.entry_offset, (unsigned long long)hdr.entry_size);
    }
    memcpy(&ent, base + hdr.entry_offset, sizeof(ent));
    if (ent.num_strings > size / sizeof(struct offload_string) ||
        !range_ok(size, ent.string_offset, ent.num_strings * sizeof(struct offload_string))) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "OffloadBinary string table out of range");
    }
    for (uint64_t i = 0; i < ent.num_strings; i++) {
        struct offload_string s;
        const char *key;

        memcpy(&s, base + ent.string_offset + i * sizeof(s), sizeof(s));
        key = string_at(base, size, s.key_offset);
        if (key == NULL) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                    "OffloadBinary string %llu: key out of range",
                                    (unsigned long long)i);
        }
        if (strcmp(key, "arch") == 0) {
            arch = string_at(base, size, s.value_offset);
            if (arch == NULL) {
                return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                        "OffloadBinary arch value out of range");
            }
        }
    }
    if (ent.image_size == 0 || !range_ok(size, ent.image_offset, ent.image_size)) {
        return plugin_error_set(
            err, TETHER_ERR_BAD_IMAGE, "OffloadBinary image (offset %llu, %llu bytes) out of range",
            (unsigned long long)ent.image_offset, (unsigned long long)ent.image_size);
    }
    image_p->start = base + ent.image_offset;
    image_p->size = (size_t)ent.image_size;
    image_p->arch = arch;
    return TETHER_OK;
}

/* Read the ELF header; false when the image is no ELF64 LSB. */
static bool read_ehdr(const struct plugin_image *image, Elf64_Ehdr *ehdr)
{
    if (image == NULL || image->start == NULL || image->size < sizeof(*ehdr)) {
        return false;
    }
    memcpy(ehdr, image->start, sizeof(*ehdr));
    return memcmp(ehdr->e_ident, ELFMAG, SELFMAG) == 0 && ehdr->e_ident[EI_CLASS] == ELFCLASS64 &&
           ehdr->e_ident[EI_DATA] == ELFDATA2LSB;
}

/* Read section header i; false when out of range. */
static bool read_shdr(const struct plugin_image *image, const Elf64_Ehdr *ehdr, uint64_t i,
                      Elf64_Shdr *shdr)
{
    uint64_t off;

    if (i >= ehdr->e_shnum || ehdr->e_shentsize < sizeof(*shdr)) {
        return false;
    }
    off = ehdr->e_shoff + i * ehdr->e_shentsize;
    if (off < ehdr->e_shoff || !range_ok(image->size, off, sizeof(*shdr))) {
        return false;
    }
    memcpy(shdr, (const uint8_t *)image->start + off, sizeof(*shdr));
    return true;
}

uint16_t image_elf_machine(const struct plugin_image *image)
{
    Elf64_Ehdr ehdr;

    if (!read_ehdr(image, &ehdr)) {
        return 0;
    }
    return ehdr.e_machine;
}

tether_status_t image_elf_check(const struct plugin_image *image, uint16_t machine,
                                struct tether_error *err)
{
    Elf64_Ehdr ehdr;

    if (image == NULL || image->start == NULL || image->size == 0) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "empty image");
    }
    if (!read_ehdr(image, &ehdr)) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "not a 64-bit little-endian ELF (%zu bytes)", image->size);
    }
    if (ehdr.e_machine != machine) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "ELF e_machine %u, this plugin runs %u",
                                (unsigned)ehdr.e_machine, (unsigned)machine);
    }
    if (ehdr.e_shnum != 0 &&
        (ehdr.e_shentsize < sizeof(Elf64_Shdr) ||
         !range_ok(image->size, ehdr.e_shoff, (uint64_t)ehdr.e_shnum * ehdr.e_shentsize))) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "ELF section headers out of range");
    }
    return TETHER_OK;
}

tether_status_t image_elf_header(const struct plugin_image *image,
                                 struct image_elf_header *header_p, struct tether_error *err)
{
    Elf64_Ehdr ehdr;
    uint64_t shnum = 0;

    if (image == NULL || image->start == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "no image");
    }
    if (image->size < sizeof(ehdr)) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "%zu bytes is too small for an ELF header", image->size);
    }
    memcpy(&ehdr, image->start, sizeof(ehdr));
    if (memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "not an ELF file");
    }
    if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "not a 64-bit little-endian ELF file");
    }
    if (ehdr.e_shoff != 0 && ehdr.e_shnum != 0) {
        if (ehdr.e_shentsize != sizeof(Elf64_Shdr)) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "section header size %u",
                                    (unsigned)ehdr.e_shentsize);
        }
        if (!range_ok(image->size, ehdr.e_shoff, (uint64_t)ehdr.e_shnum * sizeof(Elf64_Shdr))) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                    "section table [%llu, +%u entries) outside the image",
                                    (unsigned long long)ehdr.e_shoff, (unsigned)ehdr.e_shnum);
        }
        shnum = ehdr.e_shnum;
    } else if (ehdr.e_shoff != 0) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "extended section numbering is not supported");
    }
    for (uint64_t i = 1; i < shnum; i++) {
        Elf64_Shdr sh, strsh;

        if (!read_shdr(image, &ehdr, i, &sh)) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "section %llu unreadable",
                                    (unsigned long long)i);
        }
        if (sh.sh_type != SHT_NOBITS && !range_ok(image->size, sh.sh_offset, sh.sh_size)) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                    "section %llu [%llu, +%llu) outside the image",
                                    (unsigned long long)i, (unsigned long long)sh.sh_offset,
                                    (unsigned long long)sh.sh_size);
        }
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) {
            continue;
        }
        if (sh.sh_entsize != sizeof(Elf64_Sym)) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE, "symbol table entry size %llu",
                                    (unsigned long long)sh.sh_entsize);
        }
        if (sh.sh_link == 0 || !read_shdr(image, &ehdr, sh.sh_link, &strsh) ||
            strsh.sh_type != SHT_STRTAB) {
            return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                    "symbol table %llu has no string table", (unsigned long long)i);
        }
    }
    header_p->type = ehdr.e_type;
    header_p->machine = ehdr.e_machine;
    header_p->flags = ehdr.e_flags;
    header_p->osabi = ehdr.e_ident[EI_OSABI];
    header_p->abi_version = ehdr.e_ident[EI_ABIVERSION];
    return TETHER_OK;
}

/* Search the notes in [off, off + len) of the image, padded to align (4 or 8). */
static tether_status_t scan_notes(const struct plugin_image *image, uint64_t off, uint64_t len,
                                  uint64_t align, const char *owner, uint32_t type,
                                  const void **desc_p, size_t *size_p)
{
    const uint8_t *p = (const uint8_t *)image->start + off;
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
        if (name_span > (uint64_t)(end - name)) {
            return TETHER_ERR_BAD_IMAGE;
        }
        desc = name + name_span;
        desc_span = ((uint64_t)descsz + align - 1) & ~(align - 1);
        if (descsz > (uint64_t)(end - desc)) {
            return TETHER_ERR_BAD_IMAGE;
        }
        if (ntype == type && namesz == owner_len && memcmp(name, owner, owner_len) == 0) {
            *desc_p = desc;
            *size_p = descsz;
            return TETHER_OK;
        }
        if (desc_span >= (uint64_t)(end - desc)) {
            break;
        }
        p = desc + desc_span;
    }
    return TETHER_ERR_NOT_FOUND;
}

tether_status_t image_elf_note(const struct plugin_image *image, const char *owner, uint32_t type,
                               const void **desc_p, size_t *size_p)
{
    struct image_elf_header header;
    Elf64_Ehdr ehdr;
    tether_status_t st;

    if (owner == NULL || desc_p == NULL || size_p == NULL) {
        return TETHER_ERR_INVALID;
    }
    st = image_elf_header(image, &header, NULL);
    if (st != TETHER_OK) {
        return st;
    }
    memcpy(&ehdr, image->start, sizeof(ehdr));
    if (ehdr.e_shoff != 0 && ehdr.e_shnum != 0) {
        for (uint64_t i = 1; i < ehdr.e_shnum; i++) {
            Elf64_Shdr sh;

            if (!read_shdr(image, &ehdr, i, &sh)) {
                return TETHER_ERR_BAD_IMAGE;
            }
            if (sh.sh_type != SHT_NOTE) {
                continue;
            }
            st = scan_notes(image, sh.sh_offset, sh.sh_size, sh.sh_addralign, owner, type, desc_p,
                            size_p);
            if (st != TETHER_ERR_NOT_FOUND) {
                return st;
            }
        }
        return TETHER_ERR_NOT_FOUND;
    }
    /* No section table: the program headers. */
    if (ehdr.e_phoff == 0 || ehdr.e_phnum == 0) {
        return TETHER_ERR_NOT_FOUND;
    }
    if (ehdr.e_phentsize != sizeof(Elf64_Phdr) ||
        !range_ok(image->size, ehdr.e_phoff, (uint64_t)ehdr.e_phnum * sizeof(Elf64_Phdr))) {
        return TETHER_ERR_BAD_IMAGE;
    }
    for (uint64_t i = 0; i < ehdr.e_phnum; i++) {
        Elf64_Phdr ph;

        memcpy(&ph, (const uint8_t *)image->start + ehdr.e_phoff + i * sizeof(Elf64_Phdr),
               sizeof(ph));
        if (ph.p_type != PT_NOTE) {
            continue;
        }
        if (!range_ok(image->size, ph.p_offset, ph.p_filesz)) {
            return TETHER_ERR_BAD_IMAGE;
        }
        st = scan_notes(image, ph.p_offset, ph.p_filesz, ph.p_align, owner, type, desc_p, size_p);
        if (st != TETHER_ERR_NOT_FOUND) {
            return st;
        }
    }
    return TETHER_ERR_NOT_FOUND;
}

/* Search one symbol table section for `name`: defined, or (`undefined`) an undefined one, which
 * only `sym_p->bind` describes. */
static bool find_in_table(const struct plugin_image *image, const Elf64_Ehdr *ehdr,
                          const Elf64_Shdr *symtab, const char *name, bool undefined,
                          struct image_symbol *sym_p)
{
    const uint8_t *base = image->start;
    Elf64_Shdr strtab;
    uint64_t count;

    if (symtab->sh_entsize < sizeof(Elf64_Sym) ||
        !range_ok(image->size, symtab->sh_offset, symtab->sh_size)) {
        return false;
    }
    if (!read_shdr(image, ehdr, symtab->sh_link, &strtab) || strtab.sh_type != SHT_STRTAB ||
        !range_ok(image->size, strtab.sh_offset, strtab.sh_size)) {
        return false;
    }
    count = symtab->sh_size / symtab->sh_entsize;
    for (uint64_t i = 1; i < count; i++) {
        Elf64_Sym sym;
        const char *sym_name;
        Elf64_Shdr sec;
        uint64_t off;

        memcpy(&sym, base + symtab->sh_offset + i * symtab->sh_entsize, sizeof(sym));
        if ((sym.st_shndx == SHN_UNDEF) != undefined || sym.st_name >= strtab.sh_size) {
            continue;
        }
        sym_name = string_at(base + strtab.sh_offset, (size_t)strtab.sh_size, sym.st_name);
        if (sym_name == NULL || strcmp(sym_name, name) != 0) {
            continue;
        }
        if (undefined) {
            memset(sym_p, 0, sizeof(*sym_p));
            sym_p->type = ELF64_ST_TYPE(sym.st_info);
            sym_p->bind = ELF64_ST_BIND(sym.st_info);
            return true;
        }
        sym_p->value = sym.st_value;
        sym_p->size = sym.st_size;
        sym_p->type = ELF64_ST_TYPE(sym.st_info);
        sym_p->bind = ELF64_ST_BIND(sym.st_info);
        sym_p->data = NULL;
        sym_p->data_size = 0;
        if (sym.st_shndx < SHN_LORESERVE && read_shdr(image, ehdr, sym.st_shndx, &sec) &&
            sec.sh_type != SHT_NOBITS && range_ok(image->size, sec.sh_offset, sec.sh_size)) {
            /* Executables and shared objects hold addresses; relocatable files offsets. */
            off = ehdr->e_type == ET_REL ? sym.st_value : sym.st_value - sec.sh_addr;
            if (sym.st_value >= (ehdr->e_type == ET_REL ? 0 : sec.sh_addr) && off < sec.sh_size) {
                sym_p->data = base + sec.sh_offset + off;
                sym_p->data_size = (size_t)(sec.sh_size - off);
                if (sym.st_size < sym_p->data_size) {
                    sym_p->data_size = (size_t)sym.st_size;
                }
            }
        }
        return true;
    }
    return false;
}

static bool find_symbol(const struct plugin_image *image, const char *name, bool undefined,
                        struct image_symbol *sym_p)
{
    static const uint32_t order[2] = {SHT_SYMTAB, SHT_DYNSYM};
    Elf64_Ehdr ehdr;

    if (name == NULL || !read_ehdr(image, &ehdr)) {
        return false;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t i = 0; i < ehdr.e_shnum; i++) {
            Elf64_Shdr shdr;

            if (!read_shdr(image, &ehdr, i, &shdr)) {
                return false;
            }
            if (shdr.sh_type == order[pass] &&
                find_in_table(image, &ehdr, &shdr, name, undefined, sym_p)) {
                return true;
            }
        }
    }
    return false;
}

bool image_elf_symbol(const struct plugin_image *image, const char *name,
                      struct image_symbol *sym_p)
{
    return find_symbol(image, name, false, sym_p);
}

bool image_elf_undefined(const struct plugin_image *image, const char *name)
{
    struct image_symbol sym;

    return find_symbol(image, name, true, &sym);
}

/* ---- kernel names --------------------------------------------------------------------------- */

#define REGION_PREFIX "__omp_offloading_"

/* Length of the run of hexadecimal digits at s. */
static size_t hex_run(const char *s)
{
    size_t n = 0;

    while ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
           (s[n] >= 'A' && s[n] <= 'F')) {
        n++;
    }
    return n;
}

/* Length of the run of decimal digits that ends just before end (start is the lower bound). */
static size_t dec_run_before(const char *start, const char *end)
{
    size_t n = 0;

    while (end - n > start && end[-(ptrdiff_t)n - 1] >= '0' && end[-(ptrdiff_t)n - 1] <= '9') {
        n++;
    }
    return n;
}

/* The "_l<line>" that ends at end, if any: its start, else NULL. */
static const char *line_suffix(const char *start, const char *end, uint32_t *line_p)
{
    size_t digits = dec_run_before(start, end);
    const char *l;
    uint64_t line = 0;

    if (digits == 0 || digits > 9 || (size_t)(end - start) < digits + 2) {
        return NULL;
    }
    l = end - digits - 2;
    if (l[0] != '_' || l[1] != 'l') {
        return NULL;
    }
    for (const char *p = end - digits; p < end; p++) {
        line = line * 10 + (uint64_t)(*p - '0');
    }
    *line_p = (uint32_t)line;
    return l;
}

bool image_region_decode(const char *kernel, struct image_region *region_p)
{
    const char *p, *end, *l;
    size_t n;
    uint32_t line = 0;

    if (kernel == NULL || strncmp(kernel, REGION_PREFIX, sizeof(REGION_PREFIX) - 1) != 0) {
        return false;
    }
    /* <device id>_<file id>_, both hexadecimal. */
    p = kernel + sizeof(REGION_PREFIX) - 1;
    for (int field = 0; field < 2; field++) {
        n = hex_run(p);
        if (n == 0 || p[n] != '_') {
            return false;
        }
        p += n + 1;
    }
    /* <function>_l<line>, or <function>_l<line>_<count> (several regions on one line).  The
     * function may hold underscores and even "_l<digits>" of its own: the line is the last such
     * suffix, and a count only when the name does not end in "_l<digits>". */
    end = p + strlen(p);
    l = line_suffix(p, end, &line);
    if (l == NULL) {
        n = dec_run_before(p, end);
        if (n == 0 || (size_t)(end - p) < n + 1 || end[-(ptrdiff_t)n - 1] != '_') {
            return false;
        }
        l = line_suffix(p, end - n - 1, &line);
    }
    if (l == NULL || l == p) {
        return false;
    }
    region_p->function = p;
    region_p->function_len = (size_t)(l - p);
    region_p->line = line;
    return true;
}
