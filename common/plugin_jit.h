/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_jit.h - LLVM bitcode images (clang -fopenmp-target-jit), compiled at load time.
 *
 * Role: such a program embeds the device code as LLVM bitcode instead of a device ELF;
 * libomptarget 16 strips the OffloadBinary and hands the plugin the raw bitcode.  Common accepts
 * it at is_valid_binary when its triple is the backend's (plugin_ops.jit), and at load_binary
 * compiles it for the device with libLLVM's C API, then lets the backend turn the output into its
 * image (jit->link: PTX -> cubin for CUDA).  Everything after that (symbol reads, module_load, the
 * target table, RPC) sees an ordinary ELF.
 *
 * libLLVM: never linked.  libomptarget 16 links libLLVM-16.so.1, so it is already in every
 * process that loads a plugin; the functions are found at run time (dlopen with RTLD_NOLOAD
 * first, then a normal dlopen of libLLVM-16.so.1, then libLLVM-16.so; TETHER_JIT_LLVM names
 * another library) through one X-macro list into one struct of function pointers.  Without it,
 * bitcode images are refused with a message naming the cause.
 *
 * Knobs (environment, read at each compilation; the names and meanings of LLVM 16's plugins):
 *   LIBOMPTARGET_JIT_OPT_LEVEL          0..3, default 3: the pass pipeline default<ON> and the
 *                                       code generator's level
 *   LIBOMPTARGET_JIT_SKIP_OPT           true/1/yes/on: run no IR passes (code generation only)
 *   LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE  write the module's IR (text) to this file before the
 *                                       passes
 *   LIBOMPTARGET_JIT_POST_OPT_IR_MODULE the same after them
 *   LIBOMPTARGET_JIT_REPLACEMENT_MODULE compile this IR or bitcode file instead of the image's
 *   LIBOMPTARGET_JIT_REPLACEMENT_OBJECT skip the compiler: hand this file to jit->link as its
 *                                       output
 *
 * Thread safety: every function may be called from any thread.  Each compilation has its own
 * LLVM context; the cache of plugin_jit_load is guarded by one mutex, held while an image
 * compiles (so an image is compiled once per cpu even when several devices load it at once).
 * Common's other locks are never held here.
 */
#ifndef TETHER_COMMON_PLUGIN_JIT_H
#define TETHER_COMMON_PLUGIN_JIT_H

#include <stdbool.h>
#include <stddef.h>

#include "plugin.h"

/* What the knobs above say; plugin_jit_options_read() fills it from the environment.  The
 * strings point into the environment (or the caller's storage in tests). */
struct plugin_jit_options {
    unsigned opt_level;             /* 0..3 */
    bool skip_opt;                  /* no IR passes */
    const char *pre_opt_ir;         /* NULL: not written */
    const char *post_opt_ir;        /* NULL: not written */
    const char *replacement_module; /* NULL: the image's bitcode */
    const char *replacement_object; /* NULL: compile */
};

/* The compiler's output: malloc'ed bytes followed by a NUL that size does not count. */
struct plugin_jit_code {
    char *bytes;
    size_t size;
};

/* True when [start, start + size) is LLVM bitcode (raw, or in the bitcode wrapper). */
bool plugin_jit_is_bitcode(const void *start, size_t size);

/* Fill *opts_p from the environment.  An opt level that is no number in 0..3 is reported (once,
 * as a warning naming the value) and taken as 3. */
void plugin_jit_options_read(struct plugin_jit_options *opts_p);

/* The target triple of a bitcode image ("nvptx64-nvidia-cuda"), NUL-terminated into buf, read
 * without materialising the module.  TETHER_ERR_NO_DRIVER when libLLVM cannot be found,
 * TETHER_ERR_BAD_IMAGE when the bytes are no readable bitcode; the message says which. */
tether_status_t plugin_jit_triple(const void *bitcode, size_t size, char *buf, size_t len,
                                  struct tether_error *err);

/* Compile a bitcode image for `cpu` as opts say: the module (the image's, or the replacement
 * module), its target from its own triple, the passes, code generation (assembly for nvptx, an
 * object file for the others) into *code_p, which the caller frees with free(code_p->bytes).  With
 * a replacement object, *code_p is that file and nothing is compiled.  On failure nothing is
 * left allocated and the message names the step and LLVM's own words. */
tether_status_t plugin_jit_compile(const void *bitcode, size_t size, const char *cpu,
                                   const struct plugin_jit_options *opts,
                                   struct plugin_jit_code *code_p, struct tether_error *err);

/* is_valid_binary of a bitcode image: true when the backend runs bitcode of its triple.  False,
 * quietly (a debug line), for bitcode of another triple or a backend without plugin_ops.jit;
 * false with the reason, printed once per reason (info level, or a warning under
 * OMP_TARGET_OFFLOAD=MANDATORY), when the triple is the backend's but the backend refuses such
 * images or libLLVM is missing. */
bool plugin_jit_accept(struct plugin *plugin, const struct plugin_image *image);

/* load_binary of a bitcode image on dev: replace *image_p (the bitcode) by the backend's image of
 * it, compiled for the device's cpu and linked; the same (image, cpu) is compiled only once, and
 * its result kept until plugin_jit_shutdown().  Prints the LIBOMPTARGET_INFO line "image ...
 * JIT-compiled for <cpu> in N ms at -ON" when it compiles.  *image_p is written only on success. */
tether_status_t plugin_jit_load(struct plugin_device *dev, struct plugin_image *image_p,
                                struct tether_error *err);

/* Free every cached JIT image.  At plugin shutdown, after every module was unloaded. */
void plugin_jit_shutdown(void);

#endif /* TETHER_COMMON_PLUGIN_JIT_H */
