/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_image.c - OffloadBinary and ELF decoding (common/plugin_image.c) on crafted
 * images (every malformation the decoder must refuse, plus random mutations) and on real images
 * that clang-16 produced (argv: x86_64 .llvm.offloading dump [, nvptx64 dump]).
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_image.h"
#include "tcheck.h"

/* ---- a crafted ELF ------------------------------------------------------------------------ */

enum { SEC_NULL, SEC_SYMTAB, SEC_STRTAB, SEC_DATA, SEC_BSS, SEC_COUNT };

struct crafted {
    uint8_t bytes[4096];
    size_t size;
};

static const char crafted_strtab[] = "\0k_exec_mode\0bss_sym\0und_sym\0big_sym\0";
enum { STR_EXEC = 1, STR_BSS = 13, STR_UND = 21, STR_BIG = 29 };

/* ELF64 LSB for `machine` with .symtab, .strtab, .data (sh_addr 0x1000) and .bss. */
static void craft_elf(struct crafted *c, uint16_t machine)
{
    Elf64_Ehdr eh;
    Elf64_Shdr sh[SEC_COUNT];
    Elf64_Sym sym[5];
    size_t off_sym = 64, off_str, off_data, off_sh;
    uint8_t data[16] = {0, 0, 0, 0, 1, 0x2a};

    memset(c, 0, sizeof(*c));
    memset(&eh, 0, sizeof(eh));
    memset(sh, 0, sizeof(sh));
    memset(sym, 0, sizeof(sym));
    sym[1].st_name = STR_EXEC;
    sym[1].st_info = ELF64_ST_INFO(STB_WEAK, STT_OBJECT);
    sym[1].st_shndx = SEC_DATA;
    sym[1].st_value = 0x1004;
    sym[1].st_size = 1;
    sym[2].st_name = STR_BSS;
    sym[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    sym[2].st_shndx = SEC_BSS;
    sym[2].st_value = 0x2000;
    sym[2].st_size = 8;
    sym[3].st_name = STR_UND;
    sym[3].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    sym[3].st_shndx = SHN_UNDEF;
    sym[4].st_name = STR_BIG; /* claims more bytes than its section holds */
    sym[4].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    sym[4].st_shndx = SEC_DATA;
    sym[4].st_value = 0x1008;
    sym[4].st_size = 1000;
    off_str = off_sym + sizeof(sym);
    off_data = off_str + sizeof(crafted_strtab);
    off_data = (off_data + 7) & ~(size_t)7;
    off_sh = off_data + sizeof(data);
    sh[SEC_SYMTAB].sh_type = SHT_SYMTAB;
    sh[SEC_SYMTAB].sh_offset = off_sym;
    sh[SEC_SYMTAB].sh_size = sizeof(sym);
    sh[SEC_SYMTAB].sh_entsize = sizeof(Elf64_Sym);
    sh[SEC_SYMTAB].sh_link = SEC_STRTAB;
    sh[SEC_STRTAB].sh_type = SHT_STRTAB;
    sh[SEC_STRTAB].sh_offset = off_str;
    sh[SEC_STRTAB].sh_size = sizeof(crafted_strtab);
    sh[SEC_DATA].sh_type = SHT_PROGBITS;
    sh[SEC_DATA].sh_offset = off_data;
    sh[SEC_DATA].sh_size = sizeof(data);
    sh[SEC_DATA].sh_addr = 0x1000;
    sh[SEC_BSS].sh_type = SHT_NOBITS;
    sh[SEC_BSS].sh_addr = 0x2000;
    sh[SEC_BSS].sh_size = 64;
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = machine;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof(eh);
    eh.e_shoff = off_sh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = SEC_COUNT;
    memcpy(c->bytes, &eh, sizeof(eh));
    memcpy(c->bytes + off_sym, sym, sizeof(sym));
    memcpy(c->bytes + off_str, crafted_strtab, sizeof(crafted_strtab));
    memcpy(c->bytes + off_data, data, sizeof(data));
    memcpy(c->bytes + off_sh, sh, sizeof(sh));
    c->size = off_sh + sizeof(sh);
}

/* OffloadBinary v1 around `inner` with strings triple/arch. */
static size_t craft_wrapper(uint8_t *out, size_t cap, const uint8_t *inner, size_t inner_size,
                            const char *arch)
{
    const char *triple = "nvptx64-nvidia-cuda";
    size_t off_entry = 32, off_strings = off_entry + 40, off_table = off_strings + 2 * 16;
    size_t off_k1, off_v1, off_k2, off_v2, off_image, total;
    uint64_t hdr[4];
    uint8_t magic[4] = {0x10, 0xff, 0x10, 0xad};
    uint32_t version = 1;
    uint64_t u64;
    uint16_t u16;
    uint32_t u32;

    off_k1 = off_table;
    off_v1 = off_k1 + strlen("triple") + 1;
    off_k2 = off_v1 + strlen(triple) + 1;
    off_v2 = off_k2 + strlen("arch") + 1;
    off_image = (off_v2 + strlen(arch) + 1 + 7) & ~(size_t)7;
    total = off_image + inner_size;
    if (total > cap) {
        return 0;
    }
    memset(out, 0, total);
    memcpy(out, magic, 4);
    memcpy(out + 4, &version, 4);
    hdr[1] = total;
    hdr[2] = off_entry;
    hdr[3] = 40;
    memcpy(out + 8, &hdr[1], 24);
    u16 = 3; /* Cubin */
    memcpy(out + off_entry, &u16, 2);
    u16 = 1; /* OpenMP */
    memcpy(out + off_entry + 2, &u16, 2);
    u32 = 0;
    memcpy(out + off_entry + 4, &u32, 4);
    u64 = off_strings;
    memcpy(out + off_entry + 8, &u64, 8);
    u64 = 2;
    memcpy(out + off_entry + 16, &u64, 8);
    u64 = off_image;
    memcpy(out + off_entry + 24, &u64, 8);
    u64 = inner_size;
    memcpy(out + off_entry + 32, &u64, 8);
    u64 = off_k1;
    memcpy(out + off_strings, &u64, 8);
    u64 = off_v1;
    memcpy(out + off_strings + 8, &u64, 8);
    u64 = off_k2;
    memcpy(out + off_strings + 16, &u64, 8);
    u64 = off_v2;
    memcpy(out + off_strings + 24, &u64, 8);
    strcpy((char *)out + off_k1, "triple");
    strcpy((char *)out + off_v1, triple);
    strcpy((char *)out + off_k2, "arch");
    strcpy((char *)out + off_v2, arch);
    memcpy(out + off_image, inner, inner_size);
    return total;
}

static void test_crafted_elf(void)
{
    struct tether_error err = {{0}};
    struct plugin_image img;
    struct image_symbol sym;
    struct crafted c;
    Elf64_Ehdr eh;

    craft_elf(&c, 190);
    img.start = c.bytes;
    img.size = c.size;
    img.arch = NULL;
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_OK);
    CHECK(image_elf_machine(&img) == 190);
    CHECK_RC(image_elf_check(&img, 62, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "e_machine 190");
    CHECK_MSG(err.msg, "runs 62");

    CHECK(image_elf_symbol(&img, "k_exec_mode", &sym));
    CHECK(sym.data != NULL && sym.data_size == 1 && *(const uint8_t *)sym.data == 1);
    CHECK(sym.type == STT_OBJECT && sym.value == 0x1004);
    CHECK(image_elf_symbol(&img, "bss_sym", &sym));
    CHECK(sym.data == NULL && sym.size == 8);
    CHECK(!image_elf_symbol(&img, "und_sym", &sym)); /* undefined does not count */
    CHECK(!image_elf_symbol(&img, "missing", &sym));
    CHECK(image_elf_symbol(&img, "big_sym", &sym));
    CHECK(sym.data != NULL && sym.data_size == 8); /* clipped to the section */

    /* 32-bit, big endian, not ELF, empty. */
    c.bytes[EI_CLASS] = ELFCLASS32;
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "not a 64-bit little-endian ELF");
    CHECK(image_elf_machine(&img) == 0);
    c.bytes[EI_CLASS] = ELFCLASS64;
    c.bytes[EI_DATA] = ELFDATA2MSB;
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    c.bytes[EI_DATA] = ELFDATA2LSB;
    c.bytes[0] = 'X';
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    CHECK(!image_elf_symbol(&img, "k_exec_mode", &sym));
    c.bytes[0] = ELFMAG0;
    img.size = 10;
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    img.size = 0;
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_INVALID);
    img.size = c.size;

    /* Section headers past the end; a broken sh_link. */
    memcpy(&eh, c.bytes, sizeof(eh));
    eh.e_shoff = c.size - 8;
    memcpy(c.bytes, &eh, sizeof(eh));
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "section headers out of range");
    CHECK(!image_elf_symbol(&img, "k_exec_mode", &sym));
    craft_elf(&c, 190);
    {
        Elf64_Shdr sh;
        size_t off;

        memcpy(&eh, c.bytes, sizeof(eh));
        off = eh.e_shoff + SEC_SYMTAB * sizeof(sh);
        memcpy(&sh, c.bytes + off, sizeof(sh));
        sh.sh_link = 77;
        memcpy(c.bytes + off, &sh, sizeof(sh));
        CHECK(!image_elf_symbol(&img, "k_exec_mode", &sym));
    }
}

/* image_elf_header: the structure a loader relies on, and the header fields backends read. */
static void test_crafted_header(void)
{
    struct tether_error err = {{0}};
    struct image_elf_header h;
    struct plugin_image img;
    struct crafted c;
    Elf64_Ehdr eh;
    Elf64_Shdr sh;
    size_t symtab;

    craft_elf(&c, 224);
    c.bytes[EI_OSABI] = 64;
    c.bytes[EI_ABIVERSION] = 2;
    memcpy(&eh, c.bytes, sizeof(eh));
    eh.e_flags = 0x53f;
    memcpy(c.bytes, &eh, sizeof(eh));
    img = (struct plugin_image){.start = c.bytes, .size = c.size};
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_OK);
    CHECK(h.type == ET_EXEC && h.machine == 224 && h.flags == 0x53f && h.osabi == 64 &&
          h.abi_version == 2);
    symtab = eh.e_shoff + SEC_SYMTAB * sizeof(sh);

    eh.e_shentsize = 80; /* image_elf_check takes it; a loader does not */
    memcpy(c.bytes, &eh, sizeof(eh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "section header size 80");
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 0; /* e_shoff without e_shnum: extended numbering */
    memcpy(c.bytes, &eh, sizeof(eh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "extended section numbering");
    eh.e_shnum = 200;
    memcpy(c.bytes, &eh, sizeof(eh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "section table [", "outside the image");
    eh.e_shnum = SEC_COUNT;
    memcpy(c.bytes, &eh, sizeof(eh));
    memcpy(&sh, c.bytes + symtab, sizeof(sh));
    sh.sh_entsize = 16;
    memcpy(c.bytes + symtab, &sh, sizeof(sh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "symbol table entry size 16");
    sh.sh_entsize = sizeof(Elf64_Sym);
    sh.sh_link = SEC_DATA; /* not a string table */
    memcpy(c.bytes + symtab, &sh, sizeof(sh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "symbol table 1 has no string table");
    sh.sh_link = SEC_STRTAB;
    sh.sh_size = 100000; /* runs past the end of the image */
    memcpy(c.bytes + symtab, &sh, sizeof(sh));
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "section 1 [", "outside the image");
    img.size = 40;
    CHECK_RC(image_elf_header(&img, &h, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "too small for an ELF header");
    CHECK_RC(image_elf_header(NULL, &h, &err), TETHER_ERR_INVALID);
}

/* Notes: [GNU, 3, 4 bytes] [AMDGPU, 32, 5 bytes (padded)], in a SHT_NOTE section, or with no
 * section table in a PT_NOTE segment. */
static size_t craft_notes(uint8_t *out, bool sections)
{
    static const uint8_t notes[] = {
        4, 0, 0, 0, 4,  0, 0, 0, 3,   0,   0,   0,   'G', 'N', 'U', 0, 1, 2, 3, 4, 7, 0, 0, 0,
        5, 0, 0, 0, 32, 0, 0, 0, 'A', 'M', 'D', 'G', 'P', 'U', 0,   0, 9, 8, 7, 6, 5, 0, 0, 0};
    Elf64_Ehdr eh;
    size_t off_notes = 64, off_tab = off_notes + sizeof(notes);

    memset(out, 0, 1024);
    memset(&eh, 0, sizeof(eh));
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_type = ET_DYN;
    eh.e_machine = 224;
    memcpy(out + off_notes, notes, sizeof(notes));
    if (sections) {
        Elf64_Shdr sh[2];

        memset(sh, 0, sizeof(sh));
        sh[1].sh_type = SHT_NOTE;
        sh[1].sh_offset = off_notes;
        sh[1].sh_size = sizeof(notes);
        sh[1].sh_addralign = 4;
        eh.e_shoff = off_tab;
        eh.e_shentsize = sizeof(Elf64_Shdr);
        eh.e_shnum = 2;
        memcpy(out + off_tab, sh, sizeof(sh));
        memcpy(out, &eh, sizeof(eh));
        return off_tab + sizeof(sh);
    } else {
        Elf64_Phdr ph;

        memset(&ph, 0, sizeof(ph));
        ph.p_type = PT_NOTE;
        ph.p_offset = off_notes;
        ph.p_filesz = sizeof(notes);
        ph.p_align = 4;
        eh.e_phoff = off_tab;
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = 1;
        memcpy(out + off_tab, &ph, sizeof(ph));
        memcpy(out, &eh, sizeof(eh));
        return off_tab + sizeof(ph);
    }
}

static void test_crafted_notes(void)
{
    static uint8_t buf[1024];

    for (int sections = 1; sections >= 0; sections--) {
        struct plugin_image img = {.start = buf, .size = craft_notes(buf, sections)};
        const void *desc = NULL;
        size_t size = 0;

        CHECK_RC(image_elf_note(&img, "AMDGPU", 32, &desc, &size), TETHER_OK);
        CHECK(size == 5 && desc != NULL && memcmp(desc, "\x09\x08\x07\x06\x05", 5) == 0);
        CHECK_RC(image_elf_note(&img, "GNU", 3, &desc, &size), TETHER_OK);
        CHECK(size == 4 && memcmp(desc, "\x01\x02\x03\x04", 4) == 0);
        CHECK_RC(image_elf_note(&img, "AMDGPU", 33, &desc, &size), TETHER_ERR_NOT_FOUND);
        CHECK_RC(image_elf_note(&img, "AMD", 32, &desc, &size), TETHER_ERR_NOT_FOUND);
        /* the second note's descriptor claims more bytes than are left */
        buf[64 + 20 + 4] = 200;
        CHECK_RC(image_elf_note(&img, "AMDGPU", 32, &desc, &size), TETHER_ERR_BAD_IMAGE);
        CHECK_RC(image_elf_note(&img, "GNU", 3, &desc, &size), TETHER_OK); /* found first */
    }
}

static void test_crafted_wrapper(void)
{
    static uint8_t buf[8192];
    struct tether_error err = {{0}};
    struct plugin_image img;
    struct crafted c;
    size_t n;
    uint64_t u64;
    uint32_t u32;

    craft_elf(&c, 190);
    /* A plain ELF passes through unchanged. */
    CHECK_RC(image_unwrap(c.bytes, c.size, &img, &err), TETHER_OK);
    CHECK(img.start == c.bytes && img.size == c.size && img.arch == NULL);
    CHECK_RC(image_unwrap(NULL, 10, &img, &err), TETHER_ERR_INVALID);
    CHECK_RC(image_unwrap(c.bytes, 0, &img, &err), TETHER_ERR_INVALID);

    n = craft_wrapper(buf, sizeof(buf), c.bytes, c.size, "sm_90");
    CHECK(n > c.size);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_OK);
    CHECK(img.size == c.size && memcmp(img.start, c.bytes, c.size) == 0);
    CHECK(img.arch != NULL && strcmp(img.arch, "sm_90") == 0);
    CHECK(image_elf_machine(&img) == 190);

    /* Truncated below the header; claims more than present; wrong version. */
    CHECK_RC(image_unwrap(buf, 20, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "shorter than its header");
    CHECK_RC(image_unwrap(buf, n - 1, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "claims");
    u32 = 2;
    memcpy(buf + 4, &u32, 4);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "version 2");
    u32 = 1;
    memcpy(buf + 4, &u32, 4);

    /* Entry offset out of range. */
    u64 = n;
    memcpy(buf + 16, &u64, 8);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "entry");
    u64 = 32;
    memcpy(buf + 16, &u64, 8);

    /* Image range out of bounds. */
    memcpy(&u64, buf + 32 + 32, 8);
    u64 += 1;
    memcpy(buf + 32 + 32, &u64, 8);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "image");
    u64 -= 1;
    memcpy(buf + 32 + 32, &u64, 8);

    /* Too many strings; a value without its NUL (string at the very end). */
    u64 = 1ull << 40;
    memcpy(buf + 32 + 16, &u64, 8);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_ERR_BAD_IMAGE);
    u64 = 2;
    memcpy(buf + 32 + 16, &u64, 8);
    u64 = n; /* arch value offset == size: out of range */
    memcpy(buf + 72 + 24, &u64, 8);
    CHECK_RC(image_unwrap(buf, n, &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "arch value");
}

/* Random corruption must never crash the decoders nor make them read outside the buffer (the
 * ASan build checks the latter). */
static void test_mutations(void)
{
    static uint8_t orig[8192], buf[8192];
    struct tether_error err;
    struct image_symbol sym;
    struct plugin_image img;
    struct crafted c;
    unsigned seed = 12345;
    size_t n;
    int accepted = 0;

    craft_elf(&c, 190);
    n = craft_wrapper(orig, sizeof(orig), c.bytes, c.size, "sm_90");
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = n;
        uint8_t *copy;

        memcpy(buf, orig, n);
        for (int k = 0; k < 1 + iter % 8; k++) {
            seed = seed * 1103515245u + 12345u;
            buf[(seed >> 8) % n] = (uint8_t)(seed >> 20);
        }
        if (iter % 5 == 0) {
            seed = seed * 1103515245u + 12345u;
            len = (seed >> 8) % n + 1;
        }
        /* Exactly-sized heap copy, so ASan sees any overread. */
        copy = malloc(len);
        if (copy == NULL) {
            break;
        }
        memcpy(copy, buf, len);
        if (image_unwrap(copy, len, &img, &err) == TETHER_OK &&
            image_elf_check(&img, 190, &err) == TETHER_OK) {
            accepted++;
            (void)image_elf_symbol(&img, "k_exec_mode", &sym);
            (void)image_elf_symbol(&img, "bss_sym", &sym);
        }
        if (image_unwrap(copy, len, &img, &err) == TETHER_OK) {
            struct image_elf_header h;
            const void *desc;
            size_t desc_size;

            (void)image_elf_header(&img, &h, &err);
            (void)image_elf_note(&img, "AMDGPU", 32, &desc, &desc_size);
        }
        free(copy);
    }
    CHECK(accepted > 0); /* some mutations leave a valid image: the loop really decoded */
}

/* ---- real images -------------------------------------------------------------------------- */

static uint8_t *read_file(const char *path, size_t *size_p)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;

    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        /* 8-byte aligned, as the .llvm.offloading section is. */
        buf = aligned_alloc(8, ((size_t)n + 7) & ~(size_t)7);
        if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *size_p = (size_t)n;
    }
    fclose(f);
    return buf;
}

static void test_real_x86_64(const char *path)
{
    struct tether_error err = {{0}};
    struct plugin_image img;
    struct image_symbol sym;
    uint8_t *bytes;
    size_t size = 0;

    bytes = read_file(path, &size);
    CHECK(bytes != NULL);
    if (bytes == NULL) {
        return;
    }
    CHECK_RC(image_unwrap(bytes, size, &img, &err), TETHER_OK);
    CHECK(img.start != bytes && img.size < size);
    CHECK(img.arch != NULL && img.arch[0] == '\0'); /* x86_64 images carry arch "" */
    CHECK_RC(image_elf_check(&img, 62, &err), TETHER_OK);
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_ERR_BAD_IMAGE);
    CHECK(image_elf_symbol(&img, "tether_test_global", &sym));
    CHECK(sym.size == 4 && sym.data != NULL && sym.data_size == 4 && *(const int *)sym.data == 5);
    CHECK(image_elf_symbol(&img, "tether_test_array", &sym));
    CHECK(sym.size == 16 * sizeof(long) && sym.data == NULL); /* .bss */
    CHECK(image_elf_symbol(&img, "tether_test_twice", &sym));
    CHECK(sym.type == STT_FUNC);
    CHECK(!image_elf_symbol(&img, "__omp_rtl_device_environment", &sym));
    {
        struct image_elf_header h;

        CHECK_RC(image_elf_header(&img, &h, &err), TETHER_OK); /* what a linker writes passes */
        CHECK(h.machine == 62 && h.type == ET_DYN);
    }
    free(bytes);
}

static void test_real_nvptx(const char *path)
{
    struct tether_error err = {{0}};
    struct plugin_image img;
    struct image_symbol sym;
    uint8_t *bytes;
    size_t size = 0;
    const char *p;
    char kernel[256] = "";

    bytes = read_file(path, &size);
    CHECK(bytes != NULL);
    if (bytes == NULL) {
        return;
    }
    CHECK_RC(image_unwrap(bytes, size, &img, &err), TETHER_OK);
    CHECK(img.arch != NULL && strncmp(img.arch, "sm_", 3) == 0);
    CHECK_RC(image_elf_check(&img, 190, &err), TETHER_OK); /* EM_CUDA */
    CHECK_RC(image_elf_check(&img, 62, &err), TETHER_ERR_BAD_IMAGE);
    CHECK(image_elf_symbol(&img, "__omp_rtl_device_environment", &sym));
    CHECK(sym.size == 16);
    /* The kernel's name from the string table, then its exec mode byte. */
    p = memmem(img.start, img.size, "__omp_offloading_", 17);
    while (p != NULL && strstr(p, "_exec_mode") == NULL) {
        size_t off = (size_t)(p - (const char *)img.start) + 1;

        p = memmem((const char *)img.start + off, img.size - off, "__omp_offloading_", 17);
    }
    CHECK(p != NULL);
    if (p != NULL) {
        size_t len = strlen(p) - strlen("_exec_mode");

        if (len < sizeof(kernel)) {
            memcpy(kernel, p, len);
            kernel[len] = '\0';
        }
        snprintf(kernel + strlen(kernel), sizeof(kernel) - strlen(kernel), "_exec_mode");
        CHECK(image_elf_symbol(&img, kernel, &sym));
        CHECK(sym.data != NULL && sym.data_size == 1);
        CHECK(sym.data != NULL && *(const uint8_t *)sym.data >= 1 &&
              *(const uint8_t *)sym.data <= 3);
    }
    free(bytes);
}

int main(int argc, char **argv)
{
    test_crafted_elf();
    test_crafted_header();
    test_crafted_notes();
    test_crafted_wrapper();
    test_mutations();
    if (argc > 1) {
        test_real_x86_64(argv[1]);
    }
    if (argc > 2) {
        test_real_nvptx(argv[2]);
    }
    return tcheck_exit("test_image");
}
