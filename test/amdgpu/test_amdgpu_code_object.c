/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_code_object.c - code-object parsing against real code objects built by clang-16,
 * with llvm-readelf-16 as the independent oracle.
 *
 *   test_amdgpu_code_object omp IMAGE READELF ARCH WAVE   OpenMP image for ARCH (saxpy, bump)
 *   test_amdgpu_code_object raw5 IMAGE READELF            plain kernel, code object v5
 *   test_amdgpu_code_object xnack IMAGE                   plain kernel built for gfx90a:xnack+
 *   test_amdgpu_code_object mutate IMAGE                  truncations and byte flips: no crash,
 *                                                         only TETHER_OK or TETHER_ERR_BAD_IMAGE
 *
 * What the oracle gives: `llvm-readelf --notes` prints the NT_AMDGPU_METADATA note as YAML; the
 * test scrapes each kernel's fields from it and requires our MessagePack decoding to agree field
 * by field.  `llvm-readelf -s` gives symbol values; the kernel descriptor's entry offset must
 * lead from <kernel>.kd to <kernel>.
 */
#include <stdint.h>
#include <string.h>

#include "amdgpu_aql.h"
#include "amdgpu_code_object.h"
#include "amdgpu_test.h"

/* ---- the llvm-readelf oracle ---------------------------------------------------------------- */

#define MAX_ORACLE_KERNELS 8
#define MAX_ORACLE_ARGS 32

struct oracle_arg {
    unsigned offset, size;
    char kind[256];
};

struct oracle_kernel {
    char name[256];
    char symbol[256];
    unsigned kernarg_size, kernarg_align, group, private_size, wavefront, sgpr, vgpr, max_wg;
    unsigned num_args;
    struct oracle_arg args[MAX_ORACLE_ARGS];
};

struct oracle {
    unsigned num_kernels;
    struct oracle_kernel kernels[MAX_ORACLE_KERNELS];
    char target[64];
};

static int run_lines(const char *cmd, void (*fn)(void *, char *), void *ctx)
{
    char line[1024];
    FILE *p = popen(cmd, "r");

    REQUIRE(p != NULL);
    while (fgets(line, sizeof(line), p) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        fn(ctx, line);
    }
    return pclose(p);
}

/* One line of the YAML metadata dump: "  - .name: x" starts a kernel (indent 2), "    .key: v" is
 * a kernel field (indent 4), "      - .offset: 0" starts an argument (indent 6), "        .size: 8"
 * an argument field (indent 8). */
static void oracle_note_line(void *ctx, char *line)
{
    struct oracle *o = ctx;
    size_t indent = strspn(line, " ");
    char *p = line + indent;
    char key[64], value[256];
    bool item = false;
    struct oracle_kernel *k;

    if (strncmp(p, "amdhsa.target:", 14) == 0) {
        REQUIRE(sscanf(p + 14, " %63s", o->target) == 1);
        return;
    }
    if (strncmp(p, "- ", 2) == 0) {
        item = true;
        p += 2;
        indent += 2;
    }
    if (*p != '.' || sscanf(p, "%63[^:]: %255s", key, value) < 1)
        return;
    if (indent == 4 && item) { /* "  - .agpr_count" starts a kernel */
        REQUIRE(o->num_kernels < MAX_ORACLE_KERNELS);
        memset(&o->kernels[o->num_kernels], 0, sizeof(o->kernels[0]));
        o->num_kernels++;
    }
    if (o->num_kernels == 0)
        return;
    k = &o->kernels[o->num_kernels - 1];
    if (indent == 4) {
        if (strcmp(key, ".name") == 0)
            snprintf(k->name, sizeof(k->name), "%s", value);
        else if (strcmp(key, ".symbol") == 0)
            snprintf(k->symbol, sizeof(k->symbol), "%s", value);
        else if (strcmp(key, ".kernarg_segment_size") == 0)
            k->kernarg_size = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".kernarg_segment_align") == 0)
            k->kernarg_align = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".group_segment_fixed_size") == 0)
            k->group = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".private_segment_fixed_size") == 0)
            k->private_size = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".wavefront_size") == 0)
            k->wavefront = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".sgpr_count") == 0)
            k->sgpr = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".vgpr_count") == 0)
            k->vgpr = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".max_flat_workgroup_size") == 0)
            k->max_wg = (unsigned)strtoul(value, NULL, 0);
    } else if (indent == 8) {
        struct oracle_arg *a;

        if (item) {
            REQUIRE(k->num_args < MAX_ORACLE_ARGS);
            memset(&k->args[k->num_args], 0, sizeof(k->args[0]));
            k->num_args++;
        }
        REQUIRE(k->num_args > 0);
        a = &k->args[k->num_args - 1];
        if (strcmp(key, ".offset") == 0)
            a->offset = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".size") == 0)
            a->size = (unsigned)strtoul(value, NULL, 0);
        else if (strcmp(key, ".value_kind") == 0)
            snprintf(a->kind, sizeof(a->kind), "%s", value);
    }
}

static void oracle_load(struct oracle *o, const char *readelf, const char *image)
{
    char cmd[2048];

    memset(o, 0, sizeof(*o));
    snprintf(cmd, sizeof(cmd), "'%s' --notes '%s'", readelf, image);
    REQUIRE(run_lines(cmd, oracle_note_line, o) == 0);
    REQUIRE(o->num_kernels > 0);
}

struct symbol_query {
    const char *name;
    bool found;
    uint64_t value, size;
};

/* "   Num:    Value          Size Type    Bind   Vis       Ndx Name" */
static void oracle_symbol_line(void *ctx, char *line)
{
    struct symbol_query *q = ctx;
    unsigned long long value, size;
    char name[512];

    if (sscanf(line, " %*u: %llx %llu %*s %*s %*s %*s %511s", &value, &size, name) == 3 &&
        strcmp(name, q->name) == 0) {
        q->found = true;
        q->value = value;
        q->size = size;
    }
}

static struct symbol_query oracle_symbol(const char *readelf, const char *image, const char *name)
{
    struct symbol_query q = {.name = name};
    char cmd[2048];

    snprintf(cmd, sizeof(cmd), "'%s' -s --wide '%s'", readelf, image);
    REQUIRE(run_lines(cmd, oracle_symbol_line, &q) == 0);
    return q;
}

/* ---- checks shared by the modes ----------------------------------------------------------- */

/* Our parse agrees with llvm-readelf on every kernel field and argument, and the kernel
 * descriptors and symbols are consistent. */
static void check_against_oracle(const struct amdgpu_code_object *co, const char *readelf,
                                 const char *image)
{
    struct oracle o;

    oracle_load(&o, readelf, image);
    REQUIRE(co->num_kernels == o.num_kernels);
    REQUIRE(strcmp(co->target_name, o.target) == 0);
    for (unsigned i = 0; i < o.num_kernels; i++) {
        const struct oracle_kernel *ok = &o.kernels[i];
        const struct amdgpu_kernel *k = amdgpu_code_object_find_kernel(co, ok->name);
        struct image_symbol kd_sym, fn_sym;
        struct symbol_query q;

        printf("  kernel %s: kernarg %u align %u group %u private %u wave %u args %u\n", ok->name,
               ok->kernarg_size, ok->kernarg_align, ok->group, ok->private_size, ok->wavefront,
               ok->num_args);
        REQUIRE(k != NULL);
        REQUIRE(strcmp(k->symbol, ok->symbol) == 0);
        REQUIRE(k->kernarg_segment_size == ok->kernarg_size);
        REQUIRE(k->kernarg_segment_align == ok->kernarg_align);
        REQUIRE(k->group_segment_fixed_size == ok->group);
        REQUIRE(k->private_segment_fixed_size == ok->private_size);
        REQUIRE(k->wavefront_size == ok->wavefront);
        REQUIRE(k->sgpr_count == ok->sgpr);
        REQUIRE(k->vgpr_count == ok->vgpr);
        REQUIRE(k->max_flat_workgroup_size == ok->max_wg);
        REQUIRE(k->num_args == ok->num_args);
        for (unsigned a = 0; a < ok->num_args; a++) {
            REQUIRE(k->args[a].offset == ok->args[a].offset);
            REQUIRE(k->args[a].size == ok->args[a].size);
            REQUIRE(strcmp(amdgpu_arg_kind_name(k->args[a].kind), ok->args[a].kind) == 0);
        }

        /* the 64-byte descriptor: found, agrees with the metadata, and its entry offset leads
         * to the kernel's code */
        REQUIRE(k->has_kd);
        REQUIRE(k->kd.kernarg_size == ok->kernarg_size);
        REQUIRE(((k->kd.kernel_code_properties & AMDGPU_KCP_ENABLE_WAVEFRONT_SIZE32) != 0) ==
                (ok->wavefront == 32));
        REQUIRE(k->kd.kernel_code_properties & AMDGPU_KCP_ENABLE_SGPR_KERNARG_SEGMENT_PTR ||
                ok->kernarg_size == 0);
        REQUIRE(image_elf_symbol(&co->image, k->symbol, &kd_sym));
        REQUIRE(image_elf_symbol(&co->image, k->name, &fn_sym));
        REQUIRE(kd_sym.size == 64 && kd_sym.type == STT_OBJECT);
        REQUIRE(fn_sym.type == STT_FUNC);
        REQUIRE((int64_t)kd_sym.value + k->kd.kernel_code_entry_byte_offset ==
                (int64_t)fn_sym.value);
        q = oracle_symbol(readelf, image, k->symbol);
        REQUIRE(q.found && q.value == kd_sym.value && q.size == kd_sym.size);
        q = oracle_symbol(readelf, image, k->name);
        REQUIRE(q.found && q.value == fn_sym.value && q.size == fn_sym.size);
    }
}

static const struct amdgpu_kernel *kernel_containing(const struct amdgpu_code_object *co,
                                                     const char *part)
{
    const struct amdgpu_kernel *found = NULL;

    for (uint32_t i = 0; i < co->num_kernels; i++)
        if (strstr(co->kernels[i].name, part) != NULL) {
            REQUIRE(found == NULL);
            found = &co->kernels[i];
        }
    REQUIRE(found != NULL);
    return found;
}

static uint64_t load_le(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = size; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

/* ---- modes ---------------------------------------------------------------------------------- */

static int mode_omp(const char *image, const char *readelf, const char *arch, unsigned wave)
{
    struct amdgpu_code_object co;
    struct tether_error err = {{0}};
    const struct amdgpu_kernel *saxpy, *bump;
    struct amdgpu_target_id agent;
    size_t size;
    void *bytes = test_read_file(image, &size);
    char agent_isa[96];

    REQUIRE(image_elf_machine(&(struct plugin_image){.start = bytes, .size = size}) == EM_AMDGPU);
    REQUIRE_RC(amdgpu_code_object_parse(bytes, size, &co, &err), TETHER_OK);
    printf("%s: code object v%u, target %s, %u kernels\n", image, co.version, co.target_name,
           co.num_kernels);
    REQUIRE(co.version == 4); /* clang-16's default */
    REQUIRE(strcmp(co.target.processor, arch) == 0);
    REQUIRE(co.target.xnack == AMDGPU_FEATURE_ANY && co.target.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE(co.metadata_version[0] == 1);
    check_against_oracle(&co, readelf, image);

    /* the two OpenMP kernels of omp_kernels.c and their modes */
    REQUIRE(co.num_kernels == 2);
    saxpy = kernel_containing(&co, "_saxpy_l");
    bump = kernel_containing(&co, "_bump_l");
    REQUIRE(saxpy->exec_mode == AMDGPU_EXEC_MODE_SPMD);
    REQUIRE(bump->exec_mode == AMDGPU_EXEC_MODE_GENERIC ||
            bump->exec_mode == AMDGPU_EXEC_MODE_GENERIC_SPMD);
    REQUIRE(saxpy->num_explicit_args == 4 && saxpy->num_args == 4);
    REQUIRE(bump->num_explicit_args == 1);
    for (uint32_t i = 0; i < saxpy->num_args; i++)
        REQUIRE(saxpy->args[i].size == 8 && saxpy->args[i].offset == 8 * i);
    REQUIRE(saxpy->wavefront_size == wave && bump->wavefront_size == wave);

    /* the image runs on an agent of its processor whatever the agent's features */
    snprintf(agent_isa, sizeof(agent_isa), "amdgcn-amd-amdhsa--%s", arch);
    REQUIRE_RC(amdgpu_target_id_parse(agent_isa, &agent), TETHER_OK);
    REQUIRE(amdgpu_target_id_compatible(&co.target, &agent));
    agent.xnack = AMDGPU_FEATURE_ON;
    agent.sramecc = AMDGPU_FEATURE_OFF;
    REQUIRE(amdgpu_target_id_compatible(&co.target, &agent));
    snprintf(agent.processor, sizeof(agent.processor), "gfx908");
    REQUIRE(!amdgpu_target_id_compatible(&co.target, &agent));

    /* kernarg packing for saxpy: each value at its offset, the rest zero */
    {
        void *args[4] = {(void *)(uintptr_t)7, (void *)(uintptr_t)0x1122334455667788ull,
                         (void *)(uintptr_t)0x40000000u, (void *)(uintptr_t)0xdeadbeef0ull};
        struct amdgpu_dispatch d = {.num_groups = 3, .group_size = 256};
        uint8_t buf[64];

        REQUIRE(amdgpu_kernargs_size(saxpy) == 32);
        REQUIRE(amdgpu_kernargs_align(saxpy) == 16);
        memset(buf, 0xee, sizeof(buf));
        REQUIRE_RC(amdgpu_kernargs_pack(saxpy, args, 4, &d, NULL, buf, sizeof(buf), &err),
                   TETHER_OK);
        for (unsigned i = 0; i < 4; i++)
            REQUIRE(load_le(buf + 8 * i, 8) == (uint64_t)(uintptr_t)args[i]);
        for (unsigned i = 32; i < sizeof(buf); i++)
            REQUIRE(buf[i] == 0);
        REQUIRE_RC(amdgpu_kernargs_pack(saxpy, args, 3, &d, NULL, buf, sizeof(buf), &err),
                   TETHER_ERR_INVALID);
        REQUIRE(strstr(err.msg, "takes 4 arguments, the launch passes 3") != NULL);
        REQUIRE_RC(amdgpu_kernargs_pack(saxpy, args, 4, &d, NULL, buf, 16, &err),
                   TETHER_ERR_INVALID);
    }

    amdgpu_code_object_fini(&co);
    free(bytes);
    printf("omp %s: ok\n", arch);
    return 0;
}

static int mode_raw5(const char *image, const char *readelf)
{
    struct amdgpu_code_object co;
    struct tether_error err = {{0}};
    const struct amdgpu_kernel *k;
    size_t size;
    void *bytes = test_read_file(image, &size);
    struct amdgpu_dispatch d = {.num_groups = 5, .group_size = 128, .dynamic_lds = 512};
    struct amdgpu_kernarg_env env = {
        .hostcall_buffer = 0x1000, .heap = 0x2000, .queue_ptr = 0x3000};
    void *args[2] = {(void *)(uintptr_t)0xabcdef000ull, (void *)(uintptr_t)0xfffffff9u};
    uint8_t *buf;
    unsigned hidden = 0;

    REQUIRE_RC(amdgpu_code_object_parse(bytes, size, &co, &err), TETHER_OK);
    REQUIRE(co.version == 5);
    check_against_oracle(&co, readelf, image);
    k = amdgpu_code_object_find_kernel(&co, "tether_raw");
    REQUIRE(k != NULL);
    REQUIRE(k->exec_mode == AMDGPU_EXEC_MODE_NONE);
    REQUIRE(k->num_explicit_args == 2 && k->num_args > 2);
    REQUIRE(k->args[0].kind == AMDGPU_ARG_GLOBAL_BUFFER && k->args[0].size == 8);
    REQUIRE(k->args[1].kind == AMDGPU_ARG_BY_VALUE && k->args[1].size == 4);

    buf = malloc(amdgpu_kernargs_size(k));
    REQUIRE(buf != NULL);
    REQUIRE_RC(amdgpu_kernargs_pack(k, args, 2, &d, &env, buf, amdgpu_kernargs_size(k), &err),
               TETHER_OK);
    REQUIRE(load_le(buf + k->args[0].offset, 8) == 0xabcdef000ull);
    REQUIRE(load_le(buf + k->args[1].offset, 4) == 0xfffffff9u); /* int -7, 4 bytes only */
    REQUIRE(load_le(buf + k->args[1].offset + 4, 4) == 0);
    for (uint32_t i = k->num_explicit_args; i < k->num_args; i++) {
        const struct amdgpu_kernel_arg *a = &k->args[i];
        uint64_t v = load_le(buf + a->offset, a->size);

        switch (a->kind) {
        case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_X:
            REQUIRE(v == 5);
            hidden++;
            break;
        case AMDGPU_ARG_HIDDEN_GROUP_SIZE_X:
            REQUIRE(a->size == 2 && v == 128);
            hidden++;
            break;
        case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Y:
        case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Z:
        case AMDGPU_ARG_HIDDEN_GROUP_SIZE_Y:
        case AMDGPU_ARG_HIDDEN_GROUP_SIZE_Z:
        case AMDGPU_ARG_HIDDEN_GRID_DIMS:
            REQUIRE(v == 1);
            hidden++;
            break;
        case AMDGPU_ARG_HIDDEN_REMAINDER_X:
        case AMDGPU_ARG_HIDDEN_REMAINDER_Y:
        case AMDGPU_ARG_HIDDEN_REMAINDER_Z:
        case AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_X:
        case AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_Y:
        case AMDGPU_ARG_HIDDEN_GLOBAL_OFFSET_Z:
            REQUIRE(v == 0);
            hidden++;
            break;
        case AMDGPU_ARG_HIDDEN_HOSTCALL_BUFFER:
            REQUIRE(v == 0x1000);
            break;
        case AMDGPU_ARG_HIDDEN_HEAP_V1:
            REQUIRE(v == 0x2000);
            break;
        case AMDGPU_ARG_HIDDEN_QUEUE_PTR:
            REQUIRE(v == 0x3000);
            break;
        case AMDGPU_ARG_HIDDEN_DYNAMIC_LDS_SIZE:
            REQUIRE(v == 512);
            break;
        default:
            break;
        }
    }
    /* the v5 kernel lists (at least) the 3 block counts, 3 group sizes, 3 remainders, 3 global
     * offsets and grid dims: all found and filled */
    REQUIRE(hidden >= 13);
    free(buf);
    amdgpu_code_object_fini(&co);
    free(bytes);
    printf("raw v5: ok (%u hidden arguments checked)\n", hidden);
    return 0;
}

static int mode_xnack(const char *image)
{
    struct amdgpu_code_object co;
    struct tether_error err = {{0}};
    struct amdgpu_target_id on, off, nofeat;
    size_t size;
    void *bytes = test_read_file(image, &size);
    char text[64];

    REQUIRE_RC(amdgpu_code_object_parse(bytes, size, &co, &err), TETHER_OK);
    REQUIRE(strcmp(co.target.processor, "gfx90a") == 0);
    REQUIRE(co.target.xnack == AMDGPU_FEATURE_ON && co.target.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE(strcmp(co.target_name, "amdgcn-amd-amdhsa--gfx90a:xnack+") == 0);
    amdgpu_target_id_format(&co.target, text, sizeof(text));
    REQUIRE(strcmp(text, "gfx90a:xnack+") == 0);
    REQUIRE_RC(amdgpu_target_id_parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+", &on), TETHER_OK);
    REQUIRE_RC(amdgpu_target_id_parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", &off),
               TETHER_OK);
    REQUIRE_RC(amdgpu_target_id_parse("gfx90a", &nofeat), TETHER_OK);
    REQUIRE(amdgpu_target_id_compatible(&co.target, &on));
    REQUIRE(!amdgpu_target_id_compatible(&co.target, &off));
    REQUIRE(!amdgpu_target_id_compatible(&co.target, &nofeat));
    amdgpu_code_object_fini(&co);
    free(bytes);
    printf("xnack+: ok\n");
    return 0;
}

/* A small deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void parse_expect_clean(const uint8_t *buf, size_t size, unsigned *ok, unsigned *bad)
{
    struct amdgpu_code_object co;
    struct tether_error err;
    tether_status_t st = amdgpu_code_object_parse(buf, size, &co, &err);

    if (st == TETHER_OK) {
        (*ok)++;
        amdgpu_code_object_fini(&co);
        return;
    }
    if (st != TETHER_ERR_BAD_IMAGE) {
        fprintf(stderr, "unexpected status %d (%s): %s\n", (int)st, tether_status_str(st), err.msg);
        exit(1);
    }
    REQUIRE(strncmp(err.msg, "AMDGPU code object: ", 20) == 0);
    (*bad)++;
}

static int mode_mutate(const char *image)
{
    size_t size;
    uint8_t *orig = test_read_file(image, &size);
    uint8_t *buf = malloc(size);
    uint64_t seed = 0x7e7e7e7e12345ull;
    unsigned ok = 0, bad = 0;
    struct plugin_image whole = {.start = orig, .size = size};
    const void *note;
    size_t note_size, note_off;

    REQUIRE(buf != NULL);
    /* every truncation (in steps, and every byte of the header and metadata note) */
    REQUIRE_RC(image_elf_note(&whole, AMDGPU_NOTE_OWNER, AMDGPU_NT_METADATA, &note, &note_size),
               TETHER_OK);
    note_off = (size_t)((const uint8_t *)note - orig);
    for (size_t n = 0; n < size; n += (n < note_off + note_size ? 1 : 61)) {
        uint8_t *cut = malloc(n ? n : 1); /* a fresh allocation, so ASan sees overreads */

        REQUIRE(cut != NULL);
        memcpy(cut, orig, n);
        parse_expect_clean(cut, n, &ok, &bad);
        free(cut);
    }
    /* random byte flips: half of them aimed at the metadata note */
    for (unsigned round = 0; round < 3000; round++) {
        unsigned flips = 1 + (unsigned)(rng_next(&seed) % 4);

        memcpy(buf, orig, size);
        for (unsigned f = 0; f < flips; f++) {
            uint64_t r = rng_next(&seed);
            size_t at = (round & 1) ? note_off + (size_t)(r % note_size) : (size_t)(r % size);

            buf[at] ^= (uint8_t)(1u << ((r >> 32) % 8));
        }
        parse_expect_clean(buf, size, &ok, &bad);
    }
    /* the image itself still parses */
    parse_expect_clean(orig, size, &ok, &bad);
    REQUIRE(ok > 0 && bad > 0);
    printf("mutate: %u parsed, %u refused, no crash\n", ok, bad);
    free(buf);
    free(orig);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "omp") == 0)
        return amdgpu_test_end(
            argv[1], mode_omp(argv[2], argv[3], argv[4], (unsigned)strtoul(argv[5], NULL, 0)));
    if (argc == 4 && strcmp(argv[1], "raw5") == 0)
        return amdgpu_test_end(argv[1], mode_raw5(argv[2], argv[3]));
    if (argc == 3 && strcmp(argv[1], "xnack") == 0)
        return amdgpu_test_end(argv[1], mode_xnack(argv[2]));
    if (argc == 3 && strcmp(argv[1], "mutate") == 0)
        return amdgpu_test_end(argv[1], mode_mutate(argv[2]));
    fprintf(stderr,
            "usage: %s omp IMAGE READELF ARCH WAVE | raw5 IMAGE READELF | xnack IMAGE | "
            "mutate IMAGE\n",
            argv[0]);
    return 2;
}
