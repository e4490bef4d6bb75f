/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_code_object.c - AMDGPU code object metadata and kernel descriptors (see
 * amdgpu_code_object.h).
 */
#include "amdgpu_code_object.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu_msgpack.h"

static const struct {
    const char *text;
    bool hidden;
} amdgpu_arg_kind_table[] = {
#define AMDGPU_ARG_ROW_(name, text, hidden) {text, hidden},
    AMDGPU_ARG_KINDS(AMDGPU_ARG_ROW_)
#undef AMDGPU_ARG_ROW_
};

#define AMDGPU_ARG_KIND_COUNT (sizeof(amdgpu_arg_kind_table) / sizeof(amdgpu_arg_kind_table[0]))

const char *amdgpu_arg_kind_name(enum amdgpu_arg_kind kind)
{
    if ((size_t)kind >= AMDGPU_ARG_KIND_COUNT)
        return "";
    return amdgpu_arg_kind_table[kind].text;
}

bool amdgpu_arg_kind_is_hidden(enum amdgpu_arg_kind kind)
{
    if ((size_t)kind >= AMDGPU_ARG_KIND_COUNT)
        return true;
    return amdgpu_arg_kind_table[kind].hidden;
}

static enum amdgpu_arg_kind amdgpu_arg_kind_parse(const struct amdgpu_mp_value *val)
{
    for (size_t i = 0; i < AMDGPU_ARG_KIND_COUNT; i++)
        if (i != AMDGPU_ARG_UNKNOWN && amdgpu_mp_str_eq(val, amdgpu_arg_kind_table[i].text))
            return (enum amdgpu_arg_kind)i;
    return AMDGPU_ARG_UNKNOWN;
}

__attribute__((format(printf, 2, 3))) static tether_status_t amdgpu_co_bad(struct tether_error *err,
                                                                           const char *fmt, ...)
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

static tether_status_t amdgpu_co_no_memory(struct tether_error *err)
{
    if (err != NULL)
        snprintf(err->msg, sizeof(err->msg), "AMDGPU code object: out of memory");
    return TETHER_ERR_NO_MEMORY;
}

/* A heap copy of a MessagePack string; NULL when out of memory. */
static char *amdgpu_co_strdup(const struct amdgpu_mp_value *val)
{
    char *s = malloc((size_t)val->v.bytes.len + 1);

    if (s == NULL)
        return NULL;
    memcpy(s, val->v.bytes.ptr, val->v.bytes.len);
    s[val->v.bytes.len] = '\0';
    return s;
}

/* Read a string value with no embedded NUL and at most max_len bytes. */
static tether_status_t amdgpu_co_read_str(struct amdgpu_mp_reader *r, size_t max_len,
                                          struct amdgpu_mp_value *val_p)
{
    struct amdgpu_mp_value val;
    tether_status_t st = amdgpu_mp_next(r, &val);

    if (st != TETHER_OK)
        return st;
    if (val.kind != AMDGPU_MP_STR || val.v.bytes.len > max_len ||
        memchr(val.v.bytes.ptr, '\0', val.v.bytes.len) != NULL)
        return TETHER_ERR_BAD_IMAGE;
    *val_p = val;
    return TETHER_OK;
}

static tether_status_t amdgpu_co_read_u32(struct amdgpu_mp_reader *r, uint32_t *out_p)
{
    uint64_t u;
    tether_status_t st = amdgpu_mp_read_uint(r, UINT32_MAX, &u);

    if (st == TETHER_OK)
        *out_p = (uint32_t)u;
    return st;
}

static tether_status_t amdgpu_co_read_bool(struct amdgpu_mp_reader *r, bool *out_p)
{
    struct amdgpu_mp_value val;
    tether_status_t st = amdgpu_mp_next(r, &val);

    if (st != TETHER_OK)
        return st;
    if (val.kind != AMDGPU_MP_BOOL)
        return TETHER_ERR_BAD_IMAGE;
    *out_p = val.v.b;
    return TETHER_OK;
}

/* Read a map or array header, refusing counts that cannot fit in the bytes left. */
static tether_status_t amdgpu_co_read_container(struct amdgpu_mp_reader *r,
                                                enum amdgpu_mp_kind kind, uint32_t *count_p)
{
    struct amdgpu_mp_value val;
    tether_status_t st = amdgpu_mp_next(r, &val);

    if (st != TETHER_OK)
        return st;
    if (val.kind != kind || val.v.count > (size_t)(r->end - r->pos))
        return TETHER_ERR_BAD_IMAGE;
    *count_p = val.v.count;
    return TETHER_OK;
}

static tether_status_t amdgpu_co_parse_arg(struct amdgpu_mp_reader *r,
                                           struct amdgpu_kernel_arg *arg)
{
    bool have_offset = false, have_size = false, have_kind = false;
    uint32_t pairs;
    tether_status_t st = amdgpu_co_read_container(r, AMDGPU_MP_MAP, &pairs);

    if (st != TETHER_OK)
        return st;
    for (uint32_t i = 0; i < pairs; i++) {
        struct amdgpu_mp_value key, val;

        st = amdgpu_mp_next(r, &key);
        if (st != TETHER_OK)
            return st;
        if (amdgpu_mp_str_eq(&key, ".offset")) {
            st = amdgpu_co_read_u32(r, &arg->offset);
            have_offset = true;
        } else if (amdgpu_mp_str_eq(&key, ".size")) {
            st = amdgpu_co_read_u32(r, &arg->size);
            have_size = true;
        } else if (amdgpu_mp_str_eq(&key, ".value_kind")) {
            st = amdgpu_co_read_str(r, 64, &val);
            if (st == TETHER_OK)
                arg->kind = amdgpu_arg_kind_parse(&val);
            have_kind = true;
        } else {
            st = amdgpu_mp_skip(r);
        }
        if (st != TETHER_OK)
            return st;
    }
    return have_offset && have_size && have_kind ? TETHER_OK : TETHER_ERR_BAD_IMAGE;
}

static void amdgpu_kernel_fini(struct amdgpu_kernel *k)
{
    free(k->name);
    free(k->symbol);
    free(k->args);
    memset(k, 0, sizeof(*k));
}

/* Field presence bits of one kernel map. */
enum {
    AMDGPU_HAVE_NAME = 1 << 0,
    AMDGPU_HAVE_SYMBOL = 1 << 1,
    AMDGPU_HAVE_KERNARG_SIZE = 1 << 2,
    AMDGPU_HAVE_KERNARG_ALIGN = 1 << 3,
    AMDGPU_HAVE_GROUP = 1 << 4,
    AMDGPU_HAVE_PRIVATE = 1 << 5,
    AMDGPU_HAVE_WAVEFRONT = 1 << 6,
    AMDGPU_HAVE_REQUIRED = (1 << 7) - 1,
};

static tether_status_t amdgpu_co_parse_kernel(struct amdgpu_mp_reader *r, uint32_t index,
                                              struct amdgpu_kernel *k, struct tether_error *err)
{
    unsigned have = 0;
    uint32_t pairs;
    tether_status_t st = amdgpu_co_read_container(r, AMDGPU_MP_MAP, &pairs);

    if (st != TETHER_OK)
        return amdgpu_co_bad(err, "amdhsa.kernels[%u] is not a map", index);
    for (uint32_t i = 0; i < pairs; i++) {
        struct amdgpu_mp_value key, val;
        const char *field = "?";

        st = amdgpu_mp_next(r, &key);
        if (st != TETHER_OK)
            return amdgpu_co_bad(err, "amdhsa.kernels[%u] is truncated", index);
        if (amdgpu_mp_str_eq(&key, ".name") || amdgpu_mp_str_eq(&key, ".symbol")) {
            bool is_name = key.v.bytes.len == 5;
            char **dst = is_name ? &k->name : &k->symbol;

            field = is_name ? ".name" : ".symbol";
            st = amdgpu_co_read_str(r, 4096, &val);
            if (st == TETHER_OK && *dst == NULL) {
                *dst = amdgpu_co_strdup(&val);
                if (*dst == NULL)
                    return amdgpu_co_no_memory(err);
            }
            have |= is_name ? AMDGPU_HAVE_NAME : AMDGPU_HAVE_SYMBOL;
        } else if (amdgpu_mp_str_eq(&key, ".kernarg_segment_size")) {
            field = ".kernarg_segment_size";
            st = amdgpu_co_read_u32(r, &k->kernarg_segment_size);
            have |= AMDGPU_HAVE_KERNARG_SIZE;
        } else if (amdgpu_mp_str_eq(&key, ".kernarg_segment_align")) {
            field = ".kernarg_segment_align";
            st = amdgpu_co_read_u32(r, &k->kernarg_segment_align);
            have |= AMDGPU_HAVE_KERNARG_ALIGN;
        } else if (amdgpu_mp_str_eq(&key, ".group_segment_fixed_size")) {
            field = ".group_segment_fixed_size";
            st = amdgpu_co_read_u32(r, &k->group_segment_fixed_size);
            have |= AMDGPU_HAVE_GROUP;
        } else if (amdgpu_mp_str_eq(&key, ".private_segment_fixed_size")) {
            field = ".private_segment_fixed_size";
            st = amdgpu_co_read_u32(r, &k->private_segment_fixed_size);
            have |= AMDGPU_HAVE_PRIVATE;
        } else if (amdgpu_mp_str_eq(&key, ".wavefront_size")) {
            field = ".wavefront_size";
            st = amdgpu_co_read_u32(r, &k->wavefront_size);
            have |= AMDGPU_HAVE_WAVEFRONT;
        } else if (amdgpu_mp_str_eq(&key, ".sgpr_count")) {
            field = ".sgpr_count";
            st = amdgpu_co_read_u32(r, &k->sgpr_count);
        } else if (amdgpu_mp_str_eq(&key, ".vgpr_count")) {
            field = ".vgpr_count";
            st = amdgpu_co_read_u32(r, &k->vgpr_count);
        } else if (amdgpu_mp_str_eq(&key, ".max_flat_workgroup_size")) {
            field = ".max_flat_workgroup_size";
            st = amdgpu_co_read_u32(r, &k->max_flat_workgroup_size);
        } else if (amdgpu_mp_str_eq(&key, ".uses_dynamic_stack")) {
            field = ".uses_dynamic_stack";
            st = amdgpu_co_read_bool(r, &k->uses_dynamic_stack);
        } else if (amdgpu_mp_str_eq(&key, ".args")) {
            uint32_t n;

            field = ".args";
            if (k->args != NULL)
                return amdgpu_co_bad(err, "amdhsa.kernels[%u] has two .args", index);
            st = amdgpu_co_read_container(r, AMDGPU_MP_ARRAY, &n);
            if (st == TETHER_OK && n > 0) {
                k->args = calloc(n, sizeof(*k->args));
                if (k->args == NULL)
                    return amdgpu_co_no_memory(err);
                k->num_args = n;
                for (uint32_t a = 0; a < n && st == TETHER_OK; a++)
                    st = amdgpu_co_parse_arg(r, &k->args[a]);
            }
        } else {
            st = amdgpu_mp_skip(r);
        }
        if (st != TETHER_OK)
            return amdgpu_co_bad(err, "amdhsa.kernels[%u]: bad or truncated %s", index, field);
    }
    if ((have & AMDGPU_HAVE_REQUIRED) != AMDGPU_HAVE_REQUIRED)
        return amdgpu_co_bad(err, "amdhsa.kernels[%u] (%s) lacks a required field (0x%x)", index,
                             k->name != NULL ? k->name : "?",
                             (unsigned)(~have & AMDGPU_HAVE_REQUIRED));
    return TETHER_OK;
}

/* Checks on one kernel that need no image bytes. */
static tether_status_t amdgpu_co_check_kernel(struct amdgpu_kernel *k, struct tether_error *err)
{
    uint64_t prev_end = 0;
    bool seen_hidden = false;

    if (k->kernarg_segment_align == 0 ||
        (k->kernarg_segment_align & (k->kernarg_segment_align - 1)) != 0)
        return amdgpu_co_bad(err, "kernel %s: kernarg_segment_align %u is not a power of two",
                             k->name, k->kernarg_segment_align);
    if (k->wavefront_size != 32 && k->wavefront_size != 64)
        return amdgpu_co_bad(err, "kernel %s: wavefront_size %u", k->name, k->wavefront_size);
    k->num_explicit_args = 0;
    for (uint32_t i = 0; i < k->num_args; i++) {
        const struct amdgpu_kernel_arg *a = &k->args[i];
        uint64_t end = (uint64_t)a->offset + a->size;

        if (a->offset < prev_end || end > k->kernarg_segment_size)
            return amdgpu_co_bad(err,
                                 "kernel %s: argument %u [%u, +%u) overlaps another or lies "
                                 "outside the %u-byte kernarg segment",
                                 k->name, i, a->offset, a->size, k->kernarg_segment_size);
        prev_end = end;
        if (amdgpu_arg_kind_is_hidden(a->kind)) {
            seen_hidden = true;
        } else {
            if (seen_hidden)
                return amdgpu_co_bad(err, "kernel %s: explicit argument %u after hidden ones",
                                     k->name, i);
            k->num_explicit_args++;
        }
    }
    return TETHER_OK;
}

/* Kernel descriptor and OpenMP exec mode, read from the image's symbols. */
static tether_status_t amdgpu_co_read_symbols(const struct amdgpu_code_object *co,
                                              struct amdgpu_kernel *k, struct tether_error *err)
{
    struct image_symbol sym;
    char *mode_name;
    size_t n;
    bool found;

    if (image_elf_symbol(&co->image, k->symbol, &sym) && sym.data != NULL &&
        sym.data_size >= sizeof(k->kd)) {
        bool wave32;

        memcpy(&k->kd, sym.data, sizeof(k->kd));
        k->has_kd = true;
        if (k->kd.kernarg_size != k->kernarg_segment_size ||
            k->kd.group_segment_fixed_size != k->group_segment_fixed_size ||
            k->kd.private_segment_fixed_size != k->private_segment_fixed_size)
            return amdgpu_co_bad(err,
                                 "kernel %s: descriptor (kernarg %u, group %u, private %u) "
                                 "disagrees with metadata (kernarg %u, group %u, private %u)",
                                 k->name, k->kd.kernarg_size, k->kd.group_segment_fixed_size,
                                 k->kd.private_segment_fixed_size, k->kernarg_segment_size,
                                 k->group_segment_fixed_size, k->private_segment_fixed_size);
        wave32 = (k->kd.kernel_code_properties & AMDGPU_KCP_ENABLE_WAVEFRONT_SIZE32) != 0;
        if (wave32 != (k->wavefront_size == 32))
            return amdgpu_co_bad(err, "kernel %s: descriptor wave%u, metadata wavefront_size %u",
                                 k->name, wave32 ? 32u : 64u, k->wavefront_size);
    } else if (co->header.type == ET_DYN) {
        return amdgpu_co_bad(err, "kernel %s: no 64-byte kernel descriptor %s", k->name, k->symbol);
    }

    n = strlen(k->name) + sizeof("_exec_mode");
    mode_name = malloc(n);
    if (mode_name == NULL)
        return amdgpu_co_no_memory(err);
    snprintf(mode_name, n, "%s_exec_mode", k->name);
    found = image_elf_symbol(&co->image, mode_name, &sym);
    free(mode_name);
    k->exec_mode = AMDGPU_EXEC_MODE_NONE;
    if (found && sym.data != NULL && sym.size == 1 && sym.data_size == 1) {
        k->exec_mode = *(const uint8_t *)sym.data;
        if (k->exec_mode < AMDGPU_EXEC_MODE_GENERIC || k->exec_mode > AMDGPU_EXEC_MODE_GENERIC_SPMD)
            return amdgpu_co_bad(err, "kernel %s: exec mode %u", k->name, k->exec_mode);
    }
    return TETHER_OK;
}

static tether_status_t amdgpu_co_parse_metadata(struct amdgpu_code_object *co, const uint8_t *desc,
                                                size_t size, struct tether_error *err)
{
    struct amdgpu_mp_reader r;
    uint32_t pairs;
    bool have_kernels = false;
    tether_status_t st;

    amdgpu_mp_init(&r, desc, size);
    if (amdgpu_co_read_container(&r, AMDGPU_MP_MAP, &pairs) != TETHER_OK)
        return amdgpu_co_bad(err, "metadata note is not a MessagePack map");
    for (uint32_t i = 0; i < pairs; i++) {
        struct amdgpu_mp_value key, val;

        if (amdgpu_mp_next(&r, &key) != TETHER_OK)
            return amdgpu_co_bad(err, "metadata note is truncated");
        if (amdgpu_mp_str_eq(&key, "amdhsa.version")) {
            uint32_t n;

            if (amdgpu_co_read_container(&r, AMDGPU_MP_ARRAY, &n) != TETHER_OK || n != 2 ||
                amdgpu_co_read_u32(&r, &co->metadata_version[0]) != TETHER_OK ||
                amdgpu_co_read_u32(&r, &co->metadata_version[1]) != TETHER_OK)
                return amdgpu_co_bad(err, "bad amdhsa.version");
        } else if (amdgpu_mp_str_eq(&key, "amdhsa.target")) {
            if (amdgpu_co_read_str(&r, sizeof(co->target_name) - 1, &val) != TETHER_OK)
                return amdgpu_co_bad(err, "bad amdhsa.target");
            memcpy(co->target_name, val.v.bytes.ptr, val.v.bytes.len);
            co->target_name[val.v.bytes.len] = '\0';
        } else if (amdgpu_mp_str_eq(&key, "amdhsa.kernels")) {
            uint32_t n;

            if (have_kernels || amdgpu_co_read_container(&r, AMDGPU_MP_ARRAY, &n) != TETHER_OK)
                return amdgpu_co_bad(err, "bad amdhsa.kernels");
            have_kernels = true;
            if (n == 0)
                continue;
            co->kernels = calloc(n, sizeof(*co->kernels));
            if (co->kernels == NULL)
                return amdgpu_co_no_memory(err);
            co->num_kernels = n;
            for (uint32_t k = 0; k < n; k++) {
                st = amdgpu_co_parse_kernel(&r, k, &co->kernels[k], err);
                if (st != TETHER_OK)
                    return st;
            }
        } else if (amdgpu_mp_skip(&r) != TETHER_OK) {
            return amdgpu_co_bad(err, "metadata note is truncated");
        }
    }
    if (co->metadata_version[0] == 0)
        return amdgpu_co_bad(err, "metadata lacks amdhsa.version");
    return TETHER_OK;
}

tether_status_t amdgpu_code_object_parse(const void *image, size_t size,
                                         struct amdgpu_code_object *co_p, struct tether_error *err)
{
    struct amdgpu_code_object co;
    struct tether_error why;
    const void *desc;
    size_t desc_size;
    uint8_t abi;
    tether_status_t st;

    if (image == NULL || co_p == NULL)
        return TETHER_ERR_INVALID;
    memset(&co, 0, sizeof(co));
    co.image.start = image;
    co.image.size = size;
    st = image_elf_header(&co.image, &co.header, &why);
    if (st != TETHER_OK)
        return amdgpu_co_bad(err, "%s", why.msg);
    if (co.header.machine != EM_AMDGPU)
        return amdgpu_co_bad(err, "e_machine is %u, not EM_AMDGPU (%u)",
                             (unsigned)co.header.machine, (unsigned)EM_AMDGPU);
    if (co.header.type != ET_DYN && co.header.type != ET_REL)
        return amdgpu_co_bad(err, "e_type %u is neither ET_DYN nor ET_REL",
                             (unsigned)co.header.type);
    if (co.header.osabi != AMDGPU_ELFOSABI_HSA)
        return amdgpu_co_bad(err, "EI_OSABI %u is not ELFOSABI_AMDGPU_HSA (64)",
                             (unsigned)co.header.osabi);
    abi = co.header.abi_version;
    if (abi < AMDGPU_ELFABIVERSION_V3 || abi > AMDGPU_ELFABIVERSION_V5)
        return amdgpu_co_bad(err, "code object ABI version %u is not v3, v4 or v5", (unsigned)abi);
    co.version = abi + 2u;

    st = image_elf_note(&co.image, AMDGPU_NOTE_OWNER, AMDGPU_NT_METADATA, &desc, &desc_size);
    if (st != TETHER_OK)
        return amdgpu_co_bad(err, "%s NT_AMDGPU_METADATA note",
                             st == TETHER_ERR_NOT_FOUND ? "no" : "malformed");
    st = amdgpu_co_parse_metadata(&co, desc, desc_size, err);
    if (st != TETHER_OK)
        goto free_kernels;

    st = amdgpu_target_id_from_elf(abi, co.header.flags, &co.target);
    if (st == TETHER_OK && co.target_name[0] != '\0') {
        struct amdgpu_target_id named;

        if (amdgpu_target_id_parse(co.target_name, &named) != TETHER_OK ||
            strcmp(named.processor, co.target.processor) != 0) {
            st = amdgpu_co_bad(err, "amdhsa.target \"%s\" disagrees with e_flags (%s)",
                               co.target_name, co.target.processor);
            goto free_kernels;
        }
    } else if (st == TETHER_ERR_NOT_FOUND && co.target_name[0] != '\0') {
        st = amdgpu_target_id_parse(co.target_name, &co.target);
    }
    if (st != TETHER_OK) {
        st = amdgpu_co_bad(err, "unknown processor (e_flags 0x%x, amdhsa.target \"%s\")",
                           (unsigned)co.header.flags, co.target_name);
        goto free_kernels;
    }

    for (uint32_t i = 0; i < co.num_kernels; i++) {
        st = amdgpu_co_check_kernel(&co.kernels[i], err);
        if (st == TETHER_OK)
            st = amdgpu_co_read_symbols(&co, &co.kernels[i], err);
        if (st != TETHER_OK)
            goto free_kernels;
    }
    *co_p = co;
    return TETHER_OK;

free_kernels:
    amdgpu_code_object_fini(&co);
    return st;
}

void amdgpu_code_object_fini(struct amdgpu_code_object *co)
{
    if (co == NULL)
        return;
    for (uint32_t i = 0; i < co->num_kernels; i++)
        amdgpu_kernel_fini(&co->kernels[i]);
    free(co->kernels);
    co->kernels = NULL;
    co->num_kernels = 0;
}

const struct amdgpu_kernel *amdgpu_code_object_find_kernel(const struct amdgpu_code_object *co,
                                                           const char *name)
{
    if (co == NULL || name == NULL)
        return NULL;
    for (uint32_t i = 0; i < co->num_kernels; i++)
        if (strcmp(co->kernels[i].name, name) == 0)
            return &co->kernels[i];
    return NULL;
}
