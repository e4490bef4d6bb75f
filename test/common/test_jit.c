/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_jit.c - the JIT layer (common/plugin_jit.c) on a real -fopenmp-target-jit
 * image: the bitcode of jit_src.c for nvptx64 sm_90, taken from the executable's .llvm.offloading
 * dump and unwrapped as libomptarget does, compiled to PTX through libLLVM-16.
 *
 *   test_jit IMAGE.off SCRATCH_DIR    the compiler and its LIBOMPTARGET_JIT_* knobs; the
 *                                     plugin side (accept, load: once per image and cpu, from
 *                                     several threads at once) over a backend table of the test's
 *   test_jit no-llvm                  with TETHER_JIT_LLVM naming no library: refused, with why
 */
#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_image.h"
#include "capture.h"
#include "plugin_jit.h"
#include "tcheck.h"

static const char *const knobs[] = {
    "LIBOMPTARGET_JIT_OPT_LEVEL",          "LIBOMPTARGET_JIT_SKIP_OPT",
    "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE",  "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE",
    "LIBOMPTARGET_JIT_REPLACEMENT_MODULE", "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT",
};

static void knobs_clear(void)
{
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
        unsetenv(knobs[i]);
    }
}

/* The whole file, NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path, size_t *size_p)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        if (size_p != NULL) {
            *size_p = (size_t)n;
        }
    }
    return buf;
}

static bool same_file(const char *a, const char *b)
{
    char *x = slurp(a, NULL), *y = slurp(b, NULL);
    bool same = x != NULL && y != NULL && strcmp(x, y) == 0;

    free(x);
    free(y);
    return same;
}

static int count(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static bool nonempty_file(const char *path)
{
    size_t n = 0;
    char *x = slurp(path, &n);

    free(x);
    return x != NULL && n > 0;
}

/* Compile with the knobs the environment holds now. */
static tether_status_t compile_env(const struct plugin_image *image, const char *cpu,
                                   struct plugin_jit_code *code_p, struct tether_error *err)
{
    struct plugin_jit_options opts;

    plugin_jit_options_read(&opts);
    return plugin_jit_compile(image->start, image->size, cpu, &opts, code_p, err);
}

/* The PTX of jit_src.c: its two kernels as entries, their exec modes, the target asked for. */
static void check_ptx(const struct plugin_jit_code *code, const char *target_line)
{
    CHECK(code->bytes != NULL && code->bytes[code->size] == '\0');
    CHECK(strlen(code->bytes) == code->size);
    CHECK_MSG(code->bytes, target_line);
    CHECK_MSG(code->bytes, ".entry __omp_offloading_");
    CHECK_MSG(code->bytes, "_jit_saxpy_l");
    CHECK_MSG(code->bytes, "_jit_generic_l");
    /* The saxpy kernel's exec-mode global, named after the kernel (whose name ends in its line). */
    const char *entry = strstr(code->bytes, ".entry __omp_offloading_");
    const char *saxpy = strstr(code->bytes, "_jit_saxpy_l");
    if (entry != NULL && saxpy != NULL) {
        const char *name = saxpy;
        char mode[256];

        while (name > code->bytes && name[-1] != ' ' && name[-1] != '\t' && name[-1] != '\n')
            name--;
        snprintf(mode, sizeof(mode), "%.*s_exec_mode", (int)strcspn(name, "(\n ,;"), name);
        CHECK_MSG(code->bytes, mode);
    }
}

static void test_detect(const struct plugin_image *image)
{
    static const unsigned char elf[8] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    static const unsigned char wrapped[8] = {0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0};
    struct tether_error err = {{0}};
    char triple[128] = "";
    char junk[64];

    CHECK(plugin_jit_is_bitcode(image->start, image->size));
    CHECK(plugin_jit_is_bitcode(wrapped, sizeof(wrapped)));
    CHECK(!plugin_jit_is_bitcode(elf, sizeof(elf)));
    CHECK(!plugin_jit_is_bitcode(image->start, 3));
    CHECK(!plugin_jit_is_bitcode(NULL, 0));
    CHECK(image->arch != NULL && strcmp(image->arch, "sm_90") == 0);

    CHECK_RC(plugin_jit_triple(image->start, image->size, triple, sizeof(triple), &err), TETHER_OK);
    CHECK(strcmp(triple, "nvptx64-nvidia-cuda") == 0);

    /* Bitcode magic, then garbage: refused with a reason, and the process lives on (an LLVM
     * context without a diagnostic handler would exit). */
    memset(junk, 0x5a, sizeof(junk));
    memcpy(junk, "BC\xc0\xde", 4);
    CHECK_RC(plugin_jit_triple(junk, sizeof(junk), triple, sizeof(triple), &err),
             TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "unreadable LLVM bitcode");
}

static void test_options(void)
{
    struct plugin_jit_options opts;

    knobs_clear();
    plugin_jit_options_read(&opts);
    CHECK(opts.opt_level == 3 && !opts.skip_opt);
    CHECK(opts.pre_opt_ir == NULL && opts.post_opt_ir == NULL);
    CHECK(opts.replacement_module == NULL && opts.replacement_object == NULL);

    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "1", 1);
    setenv("LIBOMPTARGET_JIT_SKIP_OPT", "TRUE", 1);
    setenv("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", "/x/pre.ll", 1);
    setenv("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", "", 1); /* empty: unset */
    plugin_jit_options_read(&opts);
    CHECK(opts.opt_level == 1 && opts.skip_opt);
    CHECK(opts.pre_opt_ir != NULL && strcmp(opts.pre_opt_ir, "/x/pre.ll") == 0);
    CHECK(opts.replacement_object == NULL);

    setenv("LIBOMPTARGET_JIT_SKIP_OPT", "off", 1);
    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "7", 1);
    plugin_jit_options_read(&opts);
    CHECK(opts.opt_level == 3 && !opts.skip_opt);
    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "two", 1);
    plugin_jit_options_read(&opts);
    CHECK(opts.opt_level == 3);
    knobs_clear();
}

static void test_compile(const struct plugin_image *image, const char *dir)
{
    struct plugin_jit_code code = {NULL, 0};
    struct tether_error err = {{0}};
    char pre3[512], post3[512], pre0[512], post0[512], pre_s[512], post_s[512];
    long pid = (long)getpid();

    snprintf(pre3, sizeof(pre3), "%s/jit-%ld-pre-O3.ll", dir, pid);
    snprintf(post3, sizeof(post3), "%s/jit-%ld-post-O3.ll", dir, pid);
    snprintf(pre0, sizeof(pre0), "%s/jit-%ld-pre-O0.ll", dir, pid);
    snprintf(post0, sizeof(post0), "%s/jit-%ld-post-O0.ll", dir, pid);
    snprintf(pre_s, sizeof(pre_s), "%s/jit-%ld-pre-skip.ll", dir, pid);
    snprintf(post_s, sizeof(post_s), "%s/jit-%ld-post-skip.ll", dir, pid);

    /* Defaults: -O3 for the cpu asked for. */
    knobs_clear();
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_OK);
    if (code.bytes != NULL) {
        check_ptx(&code, "\n.target sm_90\n");
    }
    free(code.bytes);
    code.bytes = NULL;

    /* The device's cpu, not the image's arch string, picks the target. */
    CHECK_RC(compile_env(image, "sm_80", &code, &err), TETHER_OK);
    if (code.bytes != NULL) {
        check_ptx(&code, "\n.target sm_80\n");
    }
    free(code.bytes);
    code.bytes = NULL;

    /* -O3 with the IR written before and after the passes. */
    setenv("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", pre3, 1);
    setenv("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE", post3, 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_OK);
    free(code.bytes);
    code.bytes = NULL;
    CHECK(nonempty_file(pre3) && nonempty_file(post3));
    CHECK(!same_file(pre3, post3));

    /* -O0: same input, different output from -O3's. */
    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "0", 1);
    setenv("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", pre0, 1);
    setenv("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE", post0, 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_OK);
    free(code.bytes);
    code.bytes = NULL;
    CHECK(nonempty_file(post0));
    CHECK(same_file(pre0, pre3));
    CHECK(!same_file(post0, post3));

    /* SKIP_OPT: no pass runs, the IR after is the IR before. */
    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "3", 1);
    setenv("LIBOMPTARGET_JIT_SKIP_OPT", "1", 1);
    setenv("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", pre_s, 1);
    setenv("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE", post_s, 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_OK);
    if (code.bytes != NULL) {
        check_ptx(&code, "\n.target sm_90\n");
    }
    free(code.bytes);
    code.bytes = NULL;
    CHECK(nonempty_file(post_s));
    CHECK(same_file(pre_s, post_s));
    CHECK(same_file(pre_s, pre3));
    knobs_clear();

    /* An IR file that cannot be written: the step and the path are named. */
    setenv("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE", "/nonexistent-dir/post.ll", 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_ERR_INVALID);
    CHECK_MSG(err.msg, "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE /nonexistent-dir/post.ll");
    knobs_clear();

    /* The replacement module (IR text here) is compiled instead of the image, which may then be
     * anything at all. */
    setenv("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", pre3, 1);
    CHECK_RC(compile_env(&(struct plugin_image){"not bitcode", 11, "sm_90"}, "sm_90", &code, &err),
             TETHER_OK);
    if (code.bytes != NULL) {
        check_ptx(&code, "\n.target sm_90\n");
    }
    free(code.bytes);
    code.bytes = NULL;
    setenv("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", "/nonexistent-dir/m.bc", 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "LIBOMPTARGET_JIT_REPLACEMENT_MODULE /nonexistent-dir/m.bc");
    knobs_clear();

    /* The replacement object is the output, as it is: nothing is compiled. */
    setenv("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", post3, 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_OK);
    {
        size_t n = 0;
        char *want = slurp(post3, &n);

        CHECK(want != NULL && code.bytes != NULL && code.size == n &&
              memcmp(code.bytes, want, n) == 0 && code.bytes[n] == '\0');
        free(want);
    }
    free(code.bytes);
    code.bytes = NULL;
    setenv("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", "/nonexistent-dir/o.ptx", 1);
    CHECK_RC(compile_env(image, "sm_90", &code, &err), TETHER_ERR_NOT_FOUND);
    CHECK_MSG(err.msg, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT /nonexistent-dir/o.ptx");
    knobs_clear();

    /* Truncated bitcode: refused with LLVM's reason, nothing kept, the process lives on. */
    CHECK_RC(plugin_jit_compile(image->start, image->size / 2, "sm_90",
                                &(struct plugin_jit_options){.opt_level = 3}, &code, &err),
             TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "parsing the image's bitcode: ");
    CHECK(code.bytes == NULL);

    unlink(pre3);
    unlink(post3);
    unlink(pre0);
    unlink(post0);
    unlink(pre_s);
    unlink(post_s);
}

/* ---- the plugin side, over a backend of the test's -------------------------------------- */

static atomic_int links;

/* sm_90 for even devices, sm_80 for odd ones. */
static void t_cpu(struct plugin_device *dev, char *buf, size_t len)
{
    snprintf(buf, len, "%s", dev->id % 2 == 0 ? "sm_90" : "sm_80");
}

/* "Link": an ELF header of EM_CUDA followed by the PTX, so that the test can read what was
 * compiled for which cpu. */
static tether_status_t t_link(struct plugin_device *dev, const void *code, size_t size,
                              void **image_p, size_t *size_p, struct tether_error *err)
{
    Elf64_Ehdr eh;
    char *out = malloc(sizeof(eh) + size + 1);

    (void)dev;
    if (out == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "link");
    }
    memset(&eh, 0, sizeof(eh));
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_machine = 190;
    memcpy(out, &eh, sizeof(eh));
    memcpy(out + sizeof(eh), code, size + 1);
    atomic_fetch_add(&links, 1);
    *image_p = out;
    *size_p = sizeof(eh) + size + 1;
    return TETHER_OK;
}

static const struct plugin_jit_ops t_jit = {.triple = "nvptx64", .cpu = t_cpu, .link = t_link};
static const struct plugin_jit_ops t_jit_amd = {.triple = "amdgcn", .refusal = "needs X"};
static const struct plugin_jit_ops t_jit_refuse = {.triple = "nvptx64",
                                                   .refusal = "needs a linker we lack"};

struct t_load {
    struct plugin_device *dev;
    struct plugin_image image;
    tether_status_t rc;
};

static void *t_load_thread(void *arg)
{
    struct t_load *l = arg;
    struct tether_error err = {{0}};

    l->rc = plugin_jit_load(l->dev, &l->image, &err);
    return NULL;
}

static void test_plugin_side(const struct plugin_image *image)
{
    struct plugin_ops ops = {.version = PLUGIN_OPS_VERSION, .name = "jit-test", .elf_machine = 190};
    struct plugin plugin = {.ops = &ops, .num_devices = 4};
    struct plugin_device devs[4];
    struct t_load loads[4];
    pthread_t threads[4];
    struct tether_error err = {{0}};
    struct plugin_image img;
    struct capture cap;
    char out[2048];

    for (int i = 0; i < 4; i++) {
        devs[i] = (struct plugin_device){.plugin = &plugin, .id = i};
    }

    /* No jit table: bitcode is not this backend's, quietly. */
    setenv("LIBOMPTARGET_INFO", "16", 1);
    capture_begin(&cap, 2);
    CHECK(!plugin_jit_accept(&plugin, image));
    img = *image;
    CHECK_RC(plugin_jit_load(&devs[0], &img, &err), TETHER_ERR_BAD_IMAGE);
    /* Another triple's backend, even one that refuses its own: quiet too. */
    ops.jit = &t_jit_amd;
    CHECK(!plugin_jit_accept(&plugin, image));
    capture_end(&cap, out, sizeof(out));
    CHECK(out[0] == '\0');

    /* The backend's triple but a refusal: refused, the reason told once (info level). */
    ops.jit = &t_jit_refuse;
    capture_begin(&cap, 2);
    CHECK(!plugin_jit_accept(&plugin, image));
    CHECK(!plugin_jit_accept(&plugin, image));
    capture_end(&cap, out, sizeof(out));
    CHECK_MSG(out, "tether (jit-test): refusing image ");
    CHECK_MSG(out, "LLVM bitcode for nvptx64-nvidia-cuda (-fopenmp-target-jit): running it needs a "
                   "linker we lack; build without -fopenmp-target-jit");
    CHECK(count(out, "refusing image") == 1);
    img = *image;
    CHECK_RC(plugin_jit_load(&devs[0], &img, &err), TETHER_ERR_UNSUPPORTED);
    CHECK_MSG(err.msg, "needs a linker we lack");

    /* A table without its link slot: refused, loudly (a backend's mistake). */
    {
        const struct plugin_jit_ops broken = {.triple = "nvptx64", .cpu = t_cpu};

        ops.jit = &broken;
        capture_begin(&cap, 2);
        CHECK(!plugin_jit_accept(&plugin, image));
        capture_end(&cap, out, sizeof(out));
        CHECK_MSG(out, "warning: the backend's jit table has no link slot");
        img = *image;
        CHECK_RC(plugin_jit_load(&devs[0], &img, &err), TETHER_ERR_INTERNAL);
    }

    /* A backend that runs it: accepted; loaded on four devices by four threads at once, it is
     * compiled once per cpu, the images shared by the devices of one cpu. */
    ops.jit = &t_jit;
    CHECK(plugin_jit_accept(&plugin, image));
    capture_begin(&cap, 2);
    for (int i = 0; i < 4; i++) {
        loads[i] = (struct t_load){.dev = &devs[i], .image = *image, .rc = TETHER_ERR_INTERNAL};
        pthread_create(&threads[i], NULL, t_load_thread, &loads[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK_RC(loads[i].rc, TETHER_OK);
    }
    capture_end(&cap, out, sizeof(out));
    CHECK(atomic_load(&links) == 2);
    CHECK(loads[0].image.start == loads[2].image.start);
    CHECK(loads[1].image.start == loads[3].image.start);
    CHECK(loads[0].image.start != loads[1].image.start);
    CHECK(loads[0].image.start != image->start);
    CHECK(strstr((const char *)loads[0].image.start + sizeof(Elf64_Ehdr), ".target sm_90") != NULL);
    CHECK(strstr((const char *)loads[1].image.start + sizeof(Elf64_Ehdr), ".target sm_80") != NULL);
    CHECK(loads[0].image.arch == image->arch);
    CHECK(count(out, "JIT-compiled") == 2);
    CHECK_MSG(out, "tether (jit-test): device ");
    CHECK_MSG(out, " JIT-compiled for sm_90 in ");
    CHECK_MSG(out, " ms at -O3 (LLVM ");
    CHECK_MSG(out, " JIT-compiled for sm_80 in ");
    /* Loaded again: from the cache, nothing compiled. */
    img = *image;
    CHECK_RC(plugin_jit_load(&devs[2], &img, &err), TETHER_OK);
    CHECK(img.start == loads[0].image.start && atomic_load(&links) == 2);

    /* A bad opt level is named and taken as 3. */
    plugin_jit_shutdown();
    setenv("LIBOMPTARGET_JIT_OPT_LEVEL", "9", 1);
    capture_begin(&cap, 2);
    img = *image;
    CHECK_RC(plugin_jit_load(&devs[0], &img, &err), TETHER_OK);
    capture_end(&cap, out, sizeof(out));
    CHECK_MSG(out, "warning: LIBOMPTARGET_JIT_OPT_LEVEL=9 is not 0, 1, 2 or 3: using 3");
    CHECK_MSG(out, "at -O3");
    CHECK(atomic_load(&links) == 3);
    knobs_clear();

    /* A compilation that fails: the load fails with the reason, nothing is cached. */
    plugin_jit_shutdown();
    img = (struct plugin_image){image->start, image->size / 2, image->arch};
    CHECK_RC(plugin_jit_load(&devs[0], &img, &err), TETHER_ERR_BAD_IMAGE);
    CHECK_MSG(err.msg, "parsing the image's bitcode");
    CHECK(img.start == image->start);
    plugin_jit_shutdown();
    unsetenv("LIBOMPTARGET_INFO");
}

static int run_no_llvm(void)
{
    struct plugin_jit_code code = {NULL, 0};
    struct tether_error err = {{0}};
    char triple[64];

    CHECK_RC(plugin_jit_triple("BC\xc0\xde", 4, triple, sizeof(triple), &err),
             TETHER_ERR_NO_DRIVER);
    CHECK_MSG(err.msg, "no libLLVM to compile it with");
    CHECK_MSG(err.msg, "/nonexistent/libLLVM-16.so.1");
    CHECK_RC(plugin_jit_compile("BC\xc0\xde", 4, "sm_90",
                                &(struct plugin_jit_options){.opt_level = 3}, &code, &err),
             TETHER_ERR_NO_DRIVER);

    /* is_valid_binary: refused, the reason told once, on stderr under MANDATORY. */
    {
        struct plugin_ops ops = {.version = PLUGIN_OPS_VERSION, .name = "jit-test", .jit = &t_jit};
        struct plugin plugin = {.ops = &ops, .num_devices = 1};
        struct plugin_image image = {"BC\xc0\xde", 4, "sm_90"};
        struct capture cap;
        char out[1024];

        setenv("OMP_TARGET_OFFLOAD", "mandatory", 1);
        capture_begin(&cap, 2);
        CHECK(!plugin_jit_accept(&plugin, &image));
        CHECK(!plugin_jit_accept(&plugin, &image));
        capture_end(&cap, out, sizeof(out));
        CHECK_MSG(out, "tether (jit-test): warning: refusing image ");
        CHECK_MSG(out, "LLVM bitcode (-fopenmp-target-jit): no libLLVM to compile it with");
        CHECK(count(out, "refusing image") == 1);
        unsetenv("OMP_TARGET_OFFLOAD");
    }
    return tcheck_exit("test_jit no-llvm");
}

int main(int argc, char **argv)
{
    struct tether_error err = {{0}};
    struct plugin_image image;
    size_t size = 0;
    char *file;

    if (argc == 2 && strcmp(argv[1], "no-llvm") == 0) {
        setenv("TETHER_JIT_LLVM", "/nonexistent/libLLVM-16.so.1", 1);
        return run_no_llvm();
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s IMAGE.off SCRATCH_DIR | no-llvm\n", argv[0]);
        return 2;
    }
    file = slurp(argv[1], &size);
    if (file == NULL) {
        fprintf(stderr, "test_jit: cannot read %s\n", argv[1]);
        return 1;
    }
    /* What libomptarget hands the plugin: the OffloadBinary's image, its arch aside. */
    CHECK_RC(image_unwrap(file, size, &image, &err), TETHER_OK);
    test_detect(&image);
    test_options();
    test_compile(&image, argv[2]);
    test_plugin_side(&image);
    free(file);
    return tcheck_exit("test_jit");
}
