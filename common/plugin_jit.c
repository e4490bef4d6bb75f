/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* common/plugin_jit.c - LLVM bitcode images compiled at load time (see plugin_jit.h). */
#include "plugin_jit.h"
#include "plugin_state.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "plugin_image.h"

/* ---- libLLVM's C API, found at run time ------------------------------------------------------ */

/* The types of llvm-c/ (Types.h, Core.h, Target.h, TargetMachine.h, Error.h,
 * Transforms/PassBuilder.h) the JIT uses, with their ABI, so that no LLVM header is needed to
 * build.  Enum parameters are passed as int, which is what a C enum of these values is. */
typedef int LLVMBool;
typedef struct LLVMOpaqueContext *LLVMContextRef;
typedef struct LLVMOpaqueModule *LLVMModuleRef;
typedef struct LLVMOpaqueValue *LLVMValueRef;
typedef struct LLVMOpaqueMemoryBuffer *LLVMMemoryBufferRef;
typedef struct LLVMOpaqueDiagnosticInfo *LLVMDiagnosticInfoRef;
typedef struct LLVMTarget *LLVMTargetRef;
typedef struct LLVMOpaqueTargetMachine *LLVMTargetMachineRef;
typedef struct LLVMOpaquePassBuilderOptions *LLVMPassBuilderOptionsRef;
typedef struct LLVMOpaqueError *LLVMErrorRef;
typedef void (*LLVMDiagnosticHandler)(LLVMDiagnosticInfoRef info, void *arg);

enum {
    JIT_LLVM_DS_ERROR = 0,           /* LLVMDiagnosticSeverity LLVMDSError */
    JIT_LLVM_RELOC_DEFAULT = 0,      /* LLVMRelocMode LLVMRelocDefault */
    JIT_LLVM_CODE_MODEL_DEFAULT = 0, /* LLVMCodeModel LLVMCodeModelDefault */
    JIT_LLVM_ASSEMBLY_FILE = 0,      /* LLVMCodeGenFileType LLVMAssemblyFile */
    JIT_LLVM_OBJECT_FILE = 1,        /* LLVMCodeGenFileType LLVMObjectFile */
};

/* X(function, return type, (parameters)): every entry point the JIT calls.  All are required. */
#define JIT_LLVM_SYMBOLS(X)                                                                        \
    X(LLVMContextCreate, LLVMContextRef, (void))                                                   \
    X(LLVMContextDispose, void, (LLVMContextRef ctx))                                              \
    X(LLVMContextSetDiagnosticHandler, void,                                                       \
      (LLVMContextRef ctx, LLVMDiagnosticHandler handler, void *arg))                              \
    X(LLVMGetDiagInfoDescription, char *, (LLVMDiagnosticInfoRef info))                            \
    X(LLVMGetDiagInfoSeverity, int, (LLVMDiagnosticInfoRef info))                                  \
    X(LLVMCreateMemoryBufferWithMemoryRange, LLVMMemoryBufferRef,                                  \
      (const char *data, size_t size, const char *name, LLVMBool nul_terminated))                  \
    X(LLVMCreateMemoryBufferWithContentsOfFile, LLVMBool,                                          \
      (const char *path, LLVMMemoryBufferRef *buf, char **msg))                                    \
    X(LLVMGetBufferStart, const char *, (LLVMMemoryBufferRef buf))                                 \
    X(LLVMGetBufferSize, size_t, (LLVMMemoryBufferRef buf))                                        \
    X(LLVMDisposeMemoryBuffer, void, (LLVMMemoryBufferRef buf))                                    \
    X(LLVMGetBitcodeModuleInContext2, LLVMBool,                                                    \
      (LLVMContextRef ctx, LLVMMemoryBufferRef buf, LLVMModuleRef * mod))                          \
    X(LLVMParseIRInContext, LLVMBool,                                                              \
      (LLVMContextRef ctx, LLVMMemoryBufferRef buf, LLVMModuleRef * mod, char **msg))              \
    X(LLVMGetTarget, const char *, (LLVMModuleRef mod))                                            \
    X(LLVMGetNamedFunction, LLVMValueRef, (LLVMModuleRef mod, const char *name))                   \
    X(LLVMIsDeclaration, LLVMBool, (LLVMValueRef global))                                          \
    X(LLVMPrintModuleToFile, LLVMBool, (LLVMModuleRef mod, const char *path, char **msg))          \
    X(LLVMDisposeModule, void, (LLVMModuleRef mod))                                                \
    X(LLVMGetTargetFromTriple, LLVMBool, (const char *triple, LLVMTargetRef *target, char **msg))  \
    X(LLVMCreateTargetMachine, LLVMTargetMachineRef,                                               \
      (LLVMTargetRef target, const char *triple, const char *cpu, const char *features,            \
       int opt_level, int reloc, int code_model))                                                  \
    X(LLVMDisposeTargetMachine, void, (LLVMTargetMachineRef tm))                                   \
    X(LLVMTargetMachineEmitToMemoryBuffer, LLVMBool,                                               \
      (LLVMTargetMachineRef tm, LLVMModuleRef mod, int file_type, char **msg,                      \
       LLVMMemoryBufferRef *buf))                                                                  \
    X(LLVMCreatePassBuilderOptions, LLVMPassBuilderOptionsRef, (void))                             \
    X(LLVMDisposePassBuilderOptions, void, (LLVMPassBuilderOptionsRef opts))                       \
    X(LLVMRunPasses, LLVMErrorRef,                                                                 \
      (LLVMModuleRef mod, const char *passes, LLVMTargetMachineRef tm,                             \
       LLVMPassBuilderOptionsRef opts))                                                            \
    X(LLVMGetErrorMessage, char *, (LLVMErrorRef error))                                           \
    X(LLVMDisposeErrorMessage, void, (char *msg))                                                  \
    X(LLVMDisposeMessage, void, (char *msg))

struct jit_llvm {
#define JIT_LLVM_SLOT_(name, ret, params) ret(*name) params;
    JIT_LLVM_SYMBOLS(JIT_LLVM_SLOT_)
#undef JIT_LLVM_SLOT_
    void *handle;
    char library[128]; /* the name that was opened */
    char error[TETHER_ERROR_MSG_MAX];
};

/* The backends LLVM can compile for, by triple architecture, with the name in its
 * LLVMInitialize<name>{TargetInfo,Target,TargetMC,AsmPrinter} functions. */
static const struct jit_target {
    const char *arch;
    const char *llvm_name;
} jit_targets[] = {
    {"nvptx64", "NVPTX"},
    {"amdgcn", "AMDGPU"},
    {"x86_64", "X86"},
};
#define JIT_TARGETS (sizeof(jit_targets) / sizeof(jit_targets[0]))

static struct jit_llvm jit_llvm;
static pthread_once_t jit_llvm_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t jit_target_lock = PTHREAD_MUTEX_INITIALIZER;
static bool jit_target_ready[JIT_TARGETS]; /* under jit_target_lock */

/* dlsym into a function-pointer slot (POSIX: a dlsym result converts to a function pointer of the
 * same size; copy the bytes rather than cast between object and function pointers). */
static bool jit_llvm_resolve(void *handle, const char *name, void *slot, size_t slot_size)
{
    void *sym = dlsym(handle, name);

    memcpy(slot, &sym, slot_size);
    return sym != NULL;
}

static void *jit_llvm_open(const char *name)
{
    void *handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD);

    return handle != NULL ? handle : dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

static void jit_llvm_load(void)
{
    const char *names[2] = {"libLLVM-16.so.1", "libLLVM-16.so"};
    const char *env = getenv("TETHER_JIT_LLVM");
    const char *missing = NULL;
    char first[TETHER_ERROR_MSG_MAX / 2] = "";
    size_t n = 2;

    if (env != NULL && env[0] != '\0') {
        names[0] = env;
        n = 1;
    }
    for (size_t i = 0; i < n && jit_llvm.handle == NULL; i++) {
        jit_llvm.handle = jit_llvm_open(names[i]);
        if (jit_llvm.handle != NULL) {
            snprintf(jit_llvm.library, sizeof(jit_llvm.library), "%s", names[i]);
        } else if (first[0] == '\0') {
            const char *why = dlerror();

            snprintf(first, sizeof(first), "%s", why != NULL ? why : names[i]);
        }
    }
    if (jit_llvm.handle == NULL) {
        snprintf(jit_llvm.error, sizeof(jit_llvm.error),
                 "no libLLVM to compile it with (%s; TETHER_JIT_LLVM names another)", first);
        return;
    }
#define JIT_LLVM_RESOLVE_(name, ret, params)                                                       \
    if (missing == NULL &&                                                                         \
        !jit_llvm_resolve(jit_llvm.handle, #name, &jit_llvm.name, sizeof(jit_llvm.name))) {        \
        missing = #name;                                                                           \
    }
    JIT_LLVM_SYMBOLS(JIT_LLVM_RESOLVE_)
#undef JIT_LLVM_RESOLVE_
    if (missing != NULL) {
        snprintf(jit_llvm.error, sizeof(jit_llvm.error), "%s lacks %s (not LLVM 16's C API?)",
                 jit_llvm.library, missing);
        dlclose(jit_llvm.handle);
        jit_llvm.handle = NULL;
    }
}

/* The loaded libLLVM, or TETHER_ERR_NO_DRIVER with the reason.  It stays loaded until exit. */
static tether_status_t jit_llvm_get(const struct jit_llvm **llvm_p, struct tether_error *err)
{
    pthread_once(&jit_llvm_once, jit_llvm_load);
    if (jit_llvm.handle == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_DRIVER, "%s", jit_llvm.error);
    }
    *llvm_p = &jit_llvm;
    return TETHER_OK;
}

/* The architecture part of a triple ("nvptx64" of "nvptx64-nvidia-cuda") is `arch`. */
static bool jit_triple_is(const char *triple, const char *arch)
{
    size_t n = strlen(arch);

    return strncmp(triple, arch, n) == 0 && (triple[n] == '\0' || triple[n] == '-');
}

/* Register the LLVM backend for `triple` (once per backend). */
static tether_status_t jit_target_init(const struct jit_llvm *llvm, const char *triple,
                                       struct tether_error *err)
{
    static const char *const parts[] = {"TargetInfo", "Target", "TargetMC", "AsmPrinter"};
    tether_status_t rc = TETHER_OK;
    size_t t;

    for (t = 0; t < JIT_TARGETS; t++) {
        if (jit_triple_is(triple, jit_targets[t].arch)) {
            break;
        }
    }
    if (t == JIT_TARGETS) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED, "no LLVM backend for triple '%s'",
                                triple);
    }
    pthread_mutex_lock(&jit_target_lock);
    for (size_t i = 0; i < 4 && !jit_target_ready[t]; i++) {
        char name[64];
        void (*init)(void) = NULL;

        snprintf(name, sizeof(name), "LLVMInitialize%s%s", jit_targets[t].llvm_name, parts[i]);
        if (!jit_llvm_resolve(llvm->handle, name, &init, sizeof(init))) {
            rc = plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                  "%s lacks %s (built without the %s backend)", llvm->library, name,
                                  jit_targets[t].llvm_name);
            break;
        }
        init();
    }
    if (rc == TETHER_OK) {
        jit_target_ready[t] = true;
    }
    pthread_mutex_unlock(&jit_target_lock);
    return rc;
}

/* LLVM reports some errors through the context (an LLVMContext without a handler prints them and
 * exits the process): every context gets this handler, which keeps the first error. */
struct jit_diag {
    bool error;
    char msg[TETHER_ERROR_MSG_MAX - 64];
};

static void jit_diag_handler(LLVMDiagnosticInfoRef info, void *arg)
{
    struct jit_diag *diag = arg;
    char *text;

    if (diag->error || jit_llvm.LLVMGetDiagInfoSeverity(info) != JIT_LLVM_DS_ERROR) {
        return;
    }
    text = jit_llvm.LLVMGetDiagInfoDescription(info);
    snprintf(diag->msg, sizeof(diag->msg), "%s", text != NULL ? text : "(no description)");
    jit_llvm.LLVMDisposeMessage(text);
    diag->error = true;
}

static tether_status_t jit_context(const struct jit_llvm *llvm, struct jit_diag *diag,
                                   LLVMContextRef *ctx_p, struct tether_error *err)
{
    LLVMContextRef ctx = llvm->LLVMContextCreate();

    if (ctx == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "LLVMContextCreate failed");
    }
    llvm->LLVMContextSetDiagnosticHandler(ctx, jit_diag_handler, diag);
    *ctx_p = ctx;
    return TETHER_OK;
}

/* An error whose cause is an LLVM message (freed here); `what` names the step. */
static tether_status_t jit_llvm_error(const struct jit_llvm *llvm, struct tether_error *err,
                                      tether_status_t rc, const char *what, char *msg,
                                      const struct jit_diag *diag)
{
    const char *cause = msg != NULL && msg[0] != '\0' ? msg
                        : diag->error                 ? diag->msg
                                                      : "no reason given";

    plugin_error_set(err, rc, "%s: %s", what, cause);
    if (msg != NULL) {
        llvm->LLVMDisposeMessage(msg);
    }
    return rc;
}

/* ---- options ------------------------------------------------------------------------------ */

static const char *jit_env_path(const char *name)
{
    const char *s = getenv(name);

    return s != NULL && s[0] != '\0' ? s : NULL;
}

static bool jit_env_bool(const char *name)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    const char *s = getenv(name);

    for (size_t i = 0; s != NULL && i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* The opt level as written, or -1 when it is no number in 0..3. */
static int jit_env_opt_level(void)
{
    const char *s = getenv("LIBOMPTARGET_JIT_OPT_LEVEL");

    if (s == NULL || s[0] == '\0') {
        return 3;
    }
    if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0') {
        return s[0] - '0';
    }
    return -1;
}

void plugin_jit_options_read(struct plugin_jit_options *opts_p)
{
    int level = jit_env_opt_level();

    opts_p->opt_level = level < 0 ? 3u : (unsigned)level;
    opts_p->skip_opt = jit_env_bool("LIBOMPTARGET_JIT_SKIP_OPT");
    opts_p->pre_opt_ir = jit_env_path("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE");
    opts_p->post_opt_ir = jit_env_path("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE");
    opts_p->replacement_module = jit_env_path("LIBOMPTARGET_JIT_REPLACEMENT_MODULE");
    opts_p->replacement_object = jit_env_path("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT");
}

/* ---- bitcode ------------------------------------------------------------------------------- */

bool plugin_jit_is_bitcode(const void *start, size_t size)
{
    static const unsigned char raw[4] = {'B', 'C', 0xc0, 0xde};
    static const unsigned char wrapper[4] = {0xde, 0xc0, 0x17, 0x0b}; /* 0x0B17C0DE, LE */

    return start != NULL && size >= 4 &&
           (memcmp(start, raw, 4) == 0 || memcmp(start, wrapper, 4) == 0);
}

tether_status_t plugin_jit_triple(const void *bitcode, size_t size, char *buf, size_t len,
                                  struct tether_error *err)
{
    const struct jit_llvm *llvm;
    struct jit_diag diag = {0};
    LLVMMemoryBufferRef mem;
    LLVMModuleRef mod = NULL;
    LLVMContextRef ctx = NULL;
    tether_status_t rc;
    const char *triple;

    rc = jit_llvm_get(&llvm, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = jit_context(llvm, &diag, &ctx, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    mem = llvm->LLVMCreateMemoryBufferWithMemoryRange(bitcode, size, "image", 0);
    if (mem == NULL) {
        rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "LLVM memory buffer of %zu bytes", size);
        goto dispose_context;
    }
    /* Lazy: reads the module's header records, not the function bodies.  On success the module
     * owns the buffer; on failure it stays ours. */
    if (llvm->LLVMGetBitcodeModuleInContext2(ctx, mem, &mod) != 0) {
        llvm->LLVMDisposeMemoryBuffer(mem);
        rc =
            jit_llvm_error(llvm, err, TETHER_ERR_BAD_IMAGE, "unreadable LLVM bitcode", NULL, &diag);
        goto dispose_context;
    }
    triple = llvm->LLVMGetTarget(mod);
    snprintf(buf, len, "%s", triple != NULL ? triple : "");
    llvm->LLVMDisposeModule(mod);
dispose_context:
    llvm->LLVMContextDispose(ctx);
    return rc;
}

/* ---- compilation ---------------------------------------------------------------------------- */

/* Code compiled with tether/device_libc.h (or calling tether_rpc_call) calls libtether-device.a,
 * which the device link puts into a JIT image's bitcode when the program links it; a program that
 * does not compiles without complaint (a JIT image's device code is linked here, not at build
 * time).  Say which function is missing and how to link it, rather than leave it to the driver's
 * linker. */
static tether_status_t jit_check_library(const struct jit_llvm *llvm, LLVMModuleRef mod,
                                         struct tether_error *err)
{
    static const char *const names[] = {"tether_device_printf_packed", "tether_device_malloc",
                                        "tether_device_free", "tether_rpc_call",
                                        "tether_rpc_attached"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        LLVMValueRef fn = llvm->LLVMGetNamedFunction(mod, names[i]);

        if (fn != NULL && llvm->LLVMIsDeclaration(fn)) {
            return plugin_error_set(
                err, TETHER_ERR_BAD_IMAGE,
                "the image calls %s() of libtether-device.a but does not contain it: link the "
                "program with -ltether-device after its sources (`pkg-config --libs tether`)",
                names[i]);
        }
    }
    return TETHER_OK;
}

/* The whole file at `path` (knob `name`), NUL-terminated. */
static tether_status_t jit_read_file(const char *path, const char *name,
                                     struct plugin_jit_code *code_p, struct tether_error *err)
{
    tether_status_t rc = TETHER_OK;
    char *bytes = NULL;
    size_t size = 0, cap = 0;
    FILE *f;

    f = fopen(path, "rb");
    if (f == NULL) {
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "%s %s: %s", name, path,
                                strerror(errno));
    }
    for (;;) {
        size_t got;

        if (cap - size < 4096) {
            char *grown = realloc(bytes, cap + cap / 2 + 65536);

            if (grown == NULL) {
                rc = plugin_error_set(err, TETHER_ERR_NO_MEMORY, "%s %s: %zu bytes", name, path,
                                      cap);
                goto free_bytes;
            }
            bytes = grown;
            cap = cap + cap / 2 + 65536;
        }
        got = fread(bytes + size, 1, cap - size - 1, f);
        size += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        rc = plugin_error_set(err, TETHER_ERR_INVALID, "%s %s: read error", name, path);
        goto free_bytes;
    }
    fclose(f);
    bytes[size] = '\0';
    code_p->bytes = bytes;
    code_p->size = size;
    return TETHER_OK;

free_bytes:
    free(bytes);
    fclose(f);
    return rc;
}

/* The module to compile: the replacement module's file, or the image's bitcode. */
static tether_status_t jit_module(const struct jit_llvm *llvm, LLVMContextRef ctx,
                                  const struct jit_diag *diag, const void *bitcode, size_t size,
                                  const char *replacement, LLVMModuleRef *mod_p,
                                  struct tether_error *err)
{
    LLVMMemoryBufferRef mem = NULL;
    char *msg = NULL;
    char what[TETHER_ERROR_MSG_MAX / 2];

    if (replacement != NULL) {
        if (llvm->LLVMCreateMemoryBufferWithContentsOfFile(replacement, &mem, &msg) != 0) {
            snprintf(what, sizeof(what), "LIBOMPTARGET_JIT_REPLACEMENT_MODULE %.*s", 80,
                     replacement);
            return jit_llvm_error(llvm, err, TETHER_ERR_NOT_FOUND, what, msg, diag);
        }
        snprintf(what, sizeof(what), "parsing LIBOMPTARGET_JIT_REPLACEMENT_MODULE %.*s", 80,
                 replacement);
    } else {
        mem = llvm->LLVMCreateMemoryBufferWithMemoryRange(bitcode, size, "image", 0);
        if (mem == NULL) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "LLVM memory buffer of %zu bytes",
                                    size);
        }
        snprintf(what, sizeof(what), "parsing the image's bitcode");
    }
    /* Bitcode or IR text; takes the buffer in every case. */
    if (llvm->LLVMParseIRInContext(ctx, mem, mod_p, &msg) != 0) {
        return jit_llvm_error(llvm, err, TETHER_ERR_BAD_IMAGE, what, msg, diag);
    }
    return TETHER_OK;
}

static tether_status_t jit_print_ir(const struct jit_llvm *llvm, LLVMModuleRef mod,
                                    const char *path, const char *knob, const struct jit_diag *diag,
                                    struct tether_error *err)
{
    char what[TETHER_ERROR_MSG_MAX / 2];
    char *msg = NULL;

    if (path == NULL || llvm->LLVMPrintModuleToFile(mod, path, &msg) == 0) {
        return TETHER_OK;
    }
    snprintf(what, sizeof(what), "writing the IR to %s %.*s", knob, 80, path);
    return jit_llvm_error(llvm, err, TETHER_ERR_INVALID, what, msg, diag);
}

static tether_status_t jit_passes(const struct jit_llvm *llvm, LLVMModuleRef mod,
                                  LLVMTargetMachineRef tm, unsigned opt_level,
                                  struct tether_error *err)
{
    LLVMPassBuilderOptionsRef options;
    LLVMErrorRef error;
    char pipeline[16];
    char *msg;

    options = llvm->LLVMCreatePassBuilderOptions();
    if (options == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "LLVMCreatePassBuilderOptions failed");
    }
    snprintf(pipeline, sizeof(pipeline), "default<O%u>", opt_level);
    error = llvm->LLVMRunPasses(mod, pipeline, tm, options);
    llvm->LLVMDisposePassBuilderOptions(options);
    if (error == NULL) {
        return TETHER_OK;
    }
    msg = llvm->LLVMGetErrorMessage(error);
    plugin_error_set(err, TETHER_ERR_INTERNAL, "passes %s: %s", pipeline,
                     msg != NULL ? msg : "no reason given");
    llvm->LLVMDisposeErrorMessage(msg);
    return TETHER_ERR_INTERNAL;
}

/* Code generation into *code_p. */
static tether_status_t jit_emit(const struct jit_llvm *llvm, LLVMModuleRef mod,
                                LLVMTargetMachineRef tm, bool assembly, const struct jit_diag *diag,
                                struct plugin_jit_code *code_p, struct tether_error *err)
{
    LLVMMemoryBufferRef out = NULL;
    char *msg = NULL;
    size_t size;

    if (llvm->LLVMTargetMachineEmitToMemoryBuffer(
            tm, mod, assembly ? JIT_LLVM_ASSEMBLY_FILE : JIT_LLVM_OBJECT_FILE, &msg, &out) != 0 ||
        diag->error) {
        if (out != NULL) {
            llvm->LLVMDisposeMemoryBuffer(out);
        }
        return jit_llvm_error(llvm, err, TETHER_ERR_INTERNAL, "code generation", msg, diag);
    }
    size = llvm->LLVMGetBufferSize(out);
    code_p->bytes = malloc(size + 1);
    if (code_p->bytes == NULL) {
        llvm->LLVMDisposeMemoryBuffer(out);
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "%zu bytes of generated code", size);
    }
    memcpy(code_p->bytes, llvm->LLVMGetBufferStart(out), size);
    code_p->bytes[size] = '\0';
    code_p->size = size;
    llvm->LLVMDisposeMemoryBuffer(out);
    return TETHER_OK;
}

tether_status_t plugin_jit_compile(const void *bitcode, size_t size, const char *cpu,
                                   const struct plugin_jit_options *opts,
                                   struct plugin_jit_code *code_p, struct tether_error *err)
{
    struct plugin_jit_code code = {NULL, 0};
    const struct jit_llvm *llvm;
    struct jit_diag diag = {0};
    LLVMTargetMachineRef tm;
    LLVMTargetRef target;
    LLVMModuleRef mod = NULL;
    LLVMContextRef ctx = NULL;
    tether_status_t rc;
    char triple[128];
    char *msg = NULL;

    if (opts->replacement_object != NULL) {
        return jit_read_file(opts->replacement_object, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT",
                             code_p, err);
    }
    rc = jit_llvm_get(&llvm, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = jit_context(llvm, &diag, &ctx, err);
    if (rc != TETHER_OK) {
        return rc;
    }
    rc = jit_module(llvm, ctx, &diag, bitcode, size, opts->replacement_module, &mod, err);
    if (rc != TETHER_OK) {
        goto dispose_context;
    }
    rc = jit_check_library(llvm, mod, err);
    if (rc != TETHER_OK) {
        goto dispose_module;
    }
    snprintf(triple, sizeof(triple), "%s", llvm->LLVMGetTarget(mod));
    rc = jit_target_init(llvm, triple, err);
    if (rc != TETHER_OK) {
        goto dispose_module;
    }
    if (llvm->LLVMGetTargetFromTriple(triple, &target, &msg) != 0) {
        rc = jit_llvm_error(llvm, err, TETHER_ERR_UNSUPPORTED, "LLVMGetTargetFromTriple", msg,
                            &diag);
        goto dispose_module;
    }
    tm = llvm->LLVMCreateTargetMachine(target, triple, cpu, "", (int)opts->opt_level,
                                       JIT_LLVM_RELOC_DEFAULT, JIT_LLVM_CODE_MODEL_DEFAULT);
    if (tm == NULL) {
        rc = plugin_error_set(err, TETHER_ERR_UNSUPPORTED, "no LLVM target machine for %s, cpu %s",
                              triple, cpu);
        goto dispose_module;
    }
    rc =
        jit_print_ir(llvm, mod, opts->pre_opt_ir, "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", &diag, err);
    if (rc == TETHER_OK && !opts->skip_opt) {
        rc = jit_passes(llvm, mod, tm, opts->opt_level, err);
    }
    if (rc == TETHER_OK) {
        rc = jit_print_ir(llvm, mod, opts->post_opt_ir, "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE",
                          &diag, err);
    }
    if (rc == TETHER_OK) {
        rc = jit_emit(llvm, mod, tm, jit_triple_is(triple, "nvptx64"), &diag, &code, err);
    }
    llvm->LLVMDisposeTargetMachine(tm);
    if (rc == TETHER_OK) {
        *code_p = code;
    }
dispose_module:
    llvm->LLVMDisposeModule(mod);
dispose_context:
    llvm->LLVMContextDispose(ctx);
    return rc;
}

/* ---- the plugin's side: acceptance, the cache of compiled images ---------------------------- */

/* Once per reason and plugin library: why a bitcode image is refused. */
static atomic_bool jit_said_no_llvm, jit_said_refusal;

__attribute__((format(printf, 3, 4))) static void
jit_refuse_once(struct plugin *plugin, atomic_bool *said, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (atomic_exchange(said, true)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    plugin_log(plugin, NULL, plugin_offload_mandatory() ? PLUGIN_LOG_WARN : PLUGIN_LOG_INFO, "%s",
               line);
}

bool plugin_jit_accept(struct plugin *plugin, const struct plugin_image *image)
{
    const struct plugin_jit_ops *jit = plugin->ops->jit;
    struct tether_error err = {{0}};
    char triple[128];
    tether_status_t rc;

    if (jit == NULL) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p is LLVM bitcode: not for this plugin",
                   image->start);
        return false;
    }
    rc = plugin_jit_triple(image->start, image->size, triple, sizeof(triple), &err);
    if (rc == TETHER_ERR_NO_DRIVER) {
        jit_refuse_once(plugin, &jit_said_no_llvm,
                        "refusing image %p, LLVM bitcode (-fopenmp-target-jit): %s", image->start,
                        err.msg);
        return false;
    }
    if (rc != TETHER_OK) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p: %s", image->start, err.msg);
        return false;
    }
    if (!jit_triple_is(triple, jit->triple)) {
        plugin_log(plugin, NULL, PLUGIN_LOG_DEBUG, "image %p is LLVM bitcode for %s, not %s",
                   image->start, triple, jit->triple);
        return false;
    }
    if (jit->refusal == NULL && (jit->cpu == NULL || jit->link == NULL)) {
        plugin_log(plugin, NULL, PLUGIN_LOG_WARN,
                   "the backend's jit table has no %s: LLVM bitcode images refused",
                   jit->cpu == NULL ? "cpu slot" : "link slot");
        return false;
    }
    if (jit->refusal != NULL) {
        jit_refuse_once(plugin, &jit_said_refusal,
                        "refusing image %p, LLVM bitcode for %s (-fopenmp-target-jit): running it "
                        "%s; build without -fopenmp-target-jit to run on this device",
                        image->start, triple, jit->refusal);
        return false;
    }
    return true;
}

/* One compiled image: the bitcode it came from, the cpu it was compiled for, the result. */
struct jit_entry {
    const void *bitcode;
    size_t bitcode_size;
    char cpu[64];
    void *image;
    size_t image_size;
    struct jit_entry *next;
};

static pthread_mutex_t jit_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jit_entry *jit_cache; /* under jit_cache_lock */

static uint64_t jit_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Compile and link `image` for dev into a new entry. */
static tether_status_t jit_build(struct plugin_device *dev, const struct plugin_image *image,
                                 const char *cpu, struct jit_entry **entry_p,
                                 struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_jit_options opts;
    struct plugin_jit_code code;
    struct plugin_image linked;
    struct jit_entry *entry;
    uint64_t t0, t1, t2;
    tether_status_t rc;
    void *bytes = NULL;
    size_t size = 0;

    plugin_jit_options_read(&opts);
    if (jit_env_opt_level() < 0) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_WARN,
                   "LIBOMPTARGET_JIT_OPT_LEVEL=%s is not 0, 1, 2 or 3: using 3",
                   getenv("LIBOMPTARGET_JIT_OPT_LEVEL"));
    }
    entry = calloc(1, sizeof(*entry));
    if (entry == NULL) {
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "JIT cache entry");
    }
    t0 = jit_now_ms();
    rc = plugin_jit_compile(image->start, image->size, cpu, &opts, &code, err);
    if (rc != TETHER_OK) {
        goto free_entry;
    }
    t1 = jit_now_ms();
    rc = ops->jit->link(dev, code.bytes, code.size, &bytes, &size, err);
    free(code.bytes);
    if (rc != TETHER_OK) {
        goto free_entry;
    }
    t2 = jit_now_ms();
    linked.start = bytes;
    linked.size = size;
    linked.arch = cpu;
    rc = image_elf_check(&linked, ops->elf_machine, err);
    if (rc != TETHER_OK) {
        char msg[TETHER_ERROR_MSG_MAX];

        snprintf(msg, sizeof(msg), "%s", err->msg);
        plugin_error_set(err, rc, "the JIT image the %s backend linked for %s: %s", ops->name, cpu,
                         msg);
        free(bytes);
        goto free_entry;
    }
    entry->bitcode = image->start;
    entry->bitcode_size = image->size;
    snprintf(entry->cpu, sizeof(entry->cpu), "%s", cpu);
    entry->image = bytes;
    entry->image_size = size;
    if (opts.replacement_object != NULL) {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                   "image %p replaced by LIBOMPTARGET_JIT_REPLACEMENT_OBJECT %s, linked for %s in "
                   "%llu ms",
                   image->start, opts.replacement_object, cpu, (unsigned long long)(t2 - t0));
    } else {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_INFO,
                   "image %p JIT-compiled for %s in %llu ms at -O%u%s (LLVM %llu ms, link %llu "
                   "ms): %zu bytes%s%s",
                   image->start, cpu, (unsigned long long)(t2 - t0), opts.opt_level,
                   opts.skip_opt ? " without IR passes" : "", (unsigned long long)(t1 - t0),
                   (unsigned long long)(t2 - t1), size,
                   opts.replacement_module ? ", from LIBOMPTARGET_JIT_REPLACEMENT_MODULE " : "",
                   opts.replacement_module ? opts.replacement_module : "");
    }
    *entry_p = entry;
    return TETHER_OK;

free_entry:
    free(entry);
    return rc;
}

tether_status_t plugin_jit_load(struct plugin_device *dev, struct plugin_image *image_p,
                                struct tether_error *err)
{
    const struct plugin_jit_ops *jit = dev->plugin->ops->jit;
    struct jit_entry *entry;
    tether_status_t rc = TETHER_OK;
    char cpu[64] = "";

    if (jit == NULL) {
        return plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                                "image is LLVM bitcode (-fopenmp-target-jit), not for this plugin");
    }
    if (jit->refusal != NULL) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "image is LLVM bitcode (-fopenmp-target-jit): running it %s",
                                jit->refusal);
    }
    if (jit->cpu == NULL || jit->link == NULL) {
        return plugin_error_set(err, TETHER_ERR_INTERNAL, "the backend's jit table has no %s",
                                jit->cpu == NULL ? "cpu slot" : "link slot");
    }
    jit->cpu(dev, cpu, sizeof(cpu));
    pthread_mutex_lock(&jit_cache_lock);
    for (entry = jit_cache; entry != NULL; entry = entry->next) {
        if (entry->bitcode == image_p->start && entry->bitcode_size == image_p->size &&
            strcmp(entry->cpu, cpu) == 0) {
            break;
        }
    }
    if (entry == NULL) {
        rc = jit_build(dev, image_p, cpu, &entry, err);
        if (rc == TETHER_OK) {
            entry->next = jit_cache;
            jit_cache = entry;
        }
    } else {
        plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG, "image %p: JIT image for %s reused",
                   image_p->start, cpu);
    }
    pthread_mutex_unlock(&jit_cache_lock);
    if (rc != TETHER_OK) {
        return rc;
    }
    image_p->start = entry->image;
    image_p->size = entry->image_size;
    return TETHER_OK;
}

void plugin_jit_shutdown(void)
{
    struct jit_entry *entry;

    pthread_mutex_lock(&jit_cache_lock);
    entry = jit_cache;
    jit_cache = NULL;
    pthread_mutex_unlock(&jit_cache_lock);
    while (entry != NULL) {
        struct jit_entry *next = entry->next;

        free(entry->image);
        free(entry);
        entry = next;
    }
}
