/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_cuda_link.c - the driver's linker (cuLinkCreate_v2, cuLinkAddData_v2, cuLinkComplete,
 * cuLinkDestroy) for fake_cuda_sim.c's simulated sm_90 GPU, so that a -fopenmp-target-jit
 * program's PTX becomes a module there (test_jit_sim.c).
 *
 * PTX in: it must be NUL-terminated within the size given and target sm_90 (`.target sm_90`), as
 * the GPU is; else CUDA_ERROR_INVALID_PTX with a line in the error log buffer, as ptxas writes.
 * Out: a minimal cubin-like ELF (ELF64 LSB, ET_EXEC, EM_CUDA) whose symbol table carries what the
 * plugin reads of a real cubin: every `.entry` as a FUNC symbol, and every `.u8 NAME = V;` global
 * (the <kernel>_exec_mode bytes) as a 1-byte OBJECT in .nv.global.init.  A cubin added as input
 * is the output unchanged.  The output belongs to the link state: cuLinkDestroy overwrites it
 * before freeing it, so a caller that keeps using it sees garbage.
 *
 * `fake_cuda_sim_links` counts completed links, for the test to read through dlsym.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define FAKE_CUDA_ERROR_INVALID_PTX 218 /* cuda.h */
#define FAKE_LINK_MAX_SYMS 256

__attribute__((visibility("default"))) int fake_cuda_sim_links;

struct fake_sym {
    char name[256];
    bool func;
    unsigned char value; /* data symbols */
};

struct CUlinkState_st {
    char *log;       /* CU_JIT_ERROR_LOG_BUFFER, may be NULL */
    size_t log_size; /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
    struct fake_sym syms[FAKE_LINK_MAX_SYMS];
    size_t nsyms;
    bool added;
    unsigned char *cubin; /* a cubin input, or NULL */
    size_t cubin_size;
    unsigned char *out;
    size_t out_size;
};

static void link_log(CUlinkState state, const char *msg)
{
    if (state->log != NULL && state->log_size > 0) {
        snprintf(state->log, state->log_size, "%s", msg);
    }
}

CUresult cuLinkCreate_v2(unsigned int num_options, CUjit_option *options, void **option_values,
                         CUlinkState *state_p)
{
    CUlinkState state = calloc(1, sizeof(*state));

    if (state == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned int i = 0; i < num_options; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
            state->log = option_values[i];
        } else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            state->log_size = (size_t)(uintptr_t)option_values[i];
        }
    }
    *state_p = state;
    return CUDA_SUCCESS;
}

/* The identifier at p (PTX names: letters, digits, _ $ .), copied into out. */
static bool ptx_name(const char *p, char *out, size_t len)
{
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.");

    if (n == 0 || n >= len) {
        return false;
    }
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* One line of PTX: the target, a kernel entry or a byte global. */
static CUresult ptx_line(CUlinkState state, const char *p, bool *target_p)
{
    const char *entry = strstr(p, ".entry ");
    const char *u8 = strstr(p, ".global ") != NULL ? strstr(p, ".u8 ") : NULL;
    struct fake_sym *sym = &state->syms[state->nsyms];
    const char *eq;
    char arch[32];

    p += strspn(p, " \t");
    if (strncmp(p, ".target ", 8) == 0) {
        if (!ptx_name(p + 8, arch, sizeof(arch)) || strcmp(arch, "sm_90") != 0) {
            link_log(state, "ptxas fatal   : the PTX is not for this GPU (sm_90)");
            return FAKE_CUDA_ERROR_INVALID_PTX;
        }
        *target_p = true;
    } else if (state->nsyms == FAKE_LINK_MAX_SYMS) {
        return CUDA_SUCCESS;
    } else if (entry != NULL && ptx_name(entry + 7, sym->name, sizeof(sym->name))) {
        sym->func = true;
        state->nsyms++;
    } else if (u8 != NULL && ptx_name(u8 + 4, sym->name, sizeof(sym->name)) &&
               (eq = strstr(u8, " = ")) != NULL) {
        sym->func = false;
        sym->value = (unsigned char)strtoul(eq + 3, NULL, 0);
        state->nsyms++;
    }
    return CUDA_SUCCESS;
}

static CUresult ptx_parse(CUlinkState state, const char *ptx)
{
    bool target = false;

    while (*ptx != '\0') {
        size_t len = strcspn(ptx, "\n");
        char line[512];

        if (len < sizeof(line)) {
            CUresult res;

            memcpy(line, ptx, len);
            line[len] = '\0';
            res = ptx_line(state, line, &target);
            if (res != CUDA_SUCCESS) {
                return res;
            }
        }
        ptx += len + (ptx[len] == '\n');
    }
    if (!target) {
        link_log(state, "ptxas fatal   : no .target directive");
        return FAKE_CUDA_ERROR_INVALID_PTX;
    }
    return CUDA_SUCCESS;
}

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                          const char *name, unsigned int num_options, CUjit_option *options,
                          void **option_values)
{
    (void)name, (void)num_options, (void)options, (void)option_values;
    if (state == NULL || data == NULL || size == 0 || state->added) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type == CU_JIT_INPUT_CUBIN) {
        if (size < 4 || memcmp(data, "\177ELF", 4) != 0) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        state->cubin = malloc(size);
        if (state->cubin == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(state->cubin, data, size);
        state->cubin_size = size;
        state->added = true;
        return CUDA_SUCCESS;
    }
    if (type != CU_JIT_INPUT_PTX) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (((const char *)data)[size - 1] != '\0') {
        link_log(state, "ptxas fatal   : PTX not NUL-terminated within its size");
        return FAKE_CUDA_ERROR_INVALID_PTX;
    }
    state->added = true;
    return ptx_parse(state, data);
}

/* The cubin-like ELF of the symbols found. */
static CUresult link_elf(CUlinkState state)
{
    static const char shstr[] = "\0.text\0.nv.global.init\0.strtab\0.symtab\0.shstrtab";
    enum { SH_NULL, SH_TEXT, SH_DATA, SH_STR, SH_SYM, SH_SHSTR, SH_COUNT };
    size_t ndata = 0, strsize = 1, off_data, off_str, off_shstr, off_sym, off_sh, total;
    unsigned char *out;
    Elf64_Ehdr *eh;
    Elf64_Shdr *sh;
    Elf64_Sym *sym;
    size_t at_str = 1, at_data = 0;

    for (size_t i = 0; i < state->nsyms; i++) {
        ndata += !state->syms[i].func;
        strsize += strlen(state->syms[i].name) + 1;
    }
    off_data = sizeof(Elf64_Ehdr);
    off_str = off_data + ndata;
    off_shstr = off_str + strsize;
    off_sym = (off_shstr + sizeof(shstr) + 7) & ~(size_t)7;
    off_sh = off_sym + (state->nsyms + 1) * sizeof(Elf64_Sym);
    total = off_sh + SH_COUNT * sizeof(Elf64_Shdr);
    out = calloc(1, total);
    if (out == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    eh = (Elf64_Ehdr *)(void *)out;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_EXEC;
    eh->e_machine = 190; /* EM_CUDA */
    eh->e_version = EV_CURRENT;
    eh->e_ehsize = sizeof(Elf64_Ehdr);
    eh->e_shoff = off_sh;
    eh->e_shentsize = sizeof(Elf64_Shdr);
    eh->e_shnum = SH_COUNT;
    eh->e_shstrndx = SH_SHSTR;
    memcpy(out + off_shstr, shstr, sizeof(shstr));
    sym = (Elf64_Sym *)(void *)(out + off_sym);
    for (size_t i = 0; i < state->nsyms; i++) {
        const struct fake_sym *s = &state->syms[i];
        Elf64_Sym *e = &sym[i + 1];

        e->st_name = (Elf64_Word)at_str;
        memcpy(out + off_str + at_str, s->name, strlen(s->name) + 1);
        at_str += strlen(s->name) + 1;
        if (s->func) {
            e->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
            e->st_shndx = SH_TEXT;
        } else {
            e->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
            e->st_shndx = SH_DATA;
            e->st_value = at_data;
            e->st_size = 1;
            out[off_data + at_data++] = s->value;
        }
    }
    sh = (Elf64_Shdr *)(void *)(out + off_sh);
    sh[SH_TEXT] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = off_data};
    sh[SH_DATA] = (Elf64_Shdr){
        .sh_name = 7, .sh_type = SHT_PROGBITS, .sh_offset = off_data, .sh_size = ndata};
    sh[SH_STR] = (Elf64_Shdr){
        .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = off_str, .sh_size = strsize};
    sh[SH_SYM] = (Elf64_Shdr){.sh_name = 31,
                              .sh_type = SHT_SYMTAB,
                              .sh_offset = off_sym,
                              .sh_size = (state->nsyms + 1) * sizeof(Elf64_Sym),
                              .sh_link = SH_STR,
                              .sh_info = 1,
                              .sh_entsize = sizeof(Elf64_Sym)};
    sh[SH_SHSTR] = (Elf64_Shdr){
        .sh_name = 39, .sh_type = SHT_STRTAB, .sh_offset = off_shstr, .sh_size = sizeof(shstr)};
    state->out = out;
    state->out_size = total;
    return CUDA_SUCCESS;
}

CUresult cuLinkComplete(CUlinkState state, void **cubin_p, size_t *size_p)
{
    CUresult res;

    if (state == NULL || !state->added || state->out != NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (state->cubin != NULL) {
        state->out = state->cubin;
        state->out_size = state->cubin_size;
        state->cubin = NULL;
    } else {
        res = link_elf(state);
        if (res != CUDA_SUCCESS) {
            return res;
        }
    }
    __atomic_fetch_add(&fake_cuda_sim_links, 1, __ATOMIC_SEQ_CST);
    *cubin_p = state->out;
    *size_p = state->out_size;
    return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state)
{
    if (state == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (state->out != NULL) {
        memset(state->out, 0xa5, state->out_size);
    }
    free(state->out);
    free(state->cubin);
    free(state);
    return CUDA_SUCCESS;
}
