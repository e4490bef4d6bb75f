/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_libc.c - the C library names device code calls, routed
 * to the library (compiled into libtether-device.a only, never into a plain
 * host build).
 *
 * NVIDIA: `malloc`, `free` and `vprintf` are CUDA system calls to ptxas, whose callers keep
 * their values in registers a C function may use: the library defines none of them there, and
 * tether/device_libc.h (force-included into the program) routes the program's malloc, free and
 * printf to the library instead.
 * Defined here: calloc, realloc, aligned_alloc, posix_memalign, puts, fputs, fwrite, fputc, putc,
 * putchar, fflush, exit, abort, and on AMD GPUs malloc and free (GPUs: stdio to the host's
 * stdout/stderr, see TETHER_RPC_HOST_FILE).
 * AMD (clang-16): printf reaches the library through tether/device_libc.h as on NVIDIA (the
 * device runtime's own returns -1).
 * x86_64 offload: the image is a shared object linked -Bsymbolic, so these
 * definitions bind the image's own calls and the host program keeps libc's.
 * printf-family and stdio writes to stdout/stderr go through the server, so
 * their order with other device output is kept; other streams, and every
 * call made while no server is attached, go to libc (found with
 * dlsym(RTLD_NEXT)), and malloc falls back to libc's heap then.
 */
#include "device_internal.h"

#if !RPC_ARCH_SIMT
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

DEV_BEGIN

#if RPC_ARCH_SIMT

void *calloc(size_t n, size_t size);
void *realloc(void *ptr, size_t size);
void *aligned_alloc(size_t align, size_t size);
int puts(const char *s);
void exit(int status) __attribute__((noreturn));
void abort(void) __attribute__((noreturn));

#if !defined(RPC_ARCH_NVPTX)
void *malloc(size_t size);
void free(void *ptr);

void *malloc(size_t size)
{
    return tether_device_malloc(size);
}

void free(void *ptr)
{
    tether_device_free(ptr);
}
#endif

void *calloc(size_t n, size_t size)
{
    return tether_device_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
    return tether_device_realloc(ptr, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    return tether_device_aligned_alloc(align, size);
}

/* POSIX: EINVAL (22) unless align is a power of two and a multiple of sizeof(void *); ENOMEM
 * (12) when there is no block; *ptr_p is written only on success. */
int posix_memalign(void **ptr_p, size_t align, size_t size);
int posix_memalign(void **ptr_p, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return 22;
    void *p = tether_device_aligned_alloc(align, size);
    if (p == (void *)0)
        return 12;
    *ptr_p = p;
    return 0;
}

int puts(const char *s)
{
    uint64_t n = 0;
    while (s[n] != '\0')
        n++;
    return tether_device_write(TETHER_RPC_STDOUT, s, n, true);
}

/* stdio to a FILE: a target region receives the host's `stdout`/`stderr` values (firstprivate
 * pointers), which the server recognises; EOF is returned only when no server is attached.
 * (fprintf is variadic, which clang-16 cannot compile for a GPU: use printf, or fputs.) */
int fputs(const char *s, void *f);
size_t fwrite(const void *ptr, size_t size, size_t n, void *f);
int fputc(int c, void *f);
int putc(int c, void *f);
int putchar(int c);
int fflush(void *f);

int fputs(const char *s, void *f)
{
    uint64_t n = 0;
    while (s[n] != '\0')
        n++;
    return tether_device_write_file((uint64_t)(uintptr_t)f, s, n, false) < 0 ? -1 : 0;
}

size_t fwrite(const void *ptr, size_t size, size_t n, void *f)
{
    if (size == 0 || n == 0)
        return 0;
    return tether_device_write_file((uint64_t)(uintptr_t)f, ptr, (uint64_t)size * n, false) < 0 ? 0
                                                                                                : n;
}

int fputc(int c, void *f)
{
    unsigned char b = (unsigned char)c;
    return tether_device_write_file((uint64_t)(uintptr_t)f, &b, 1, false) < 0 ? -1 : b;
}

int putc(int c, void *f)
{
    return fputc(c, f);
}

int putchar(int c)
{
    unsigned char b = (unsigned char)c;
    return tether_device_write(TETHER_RPC_STDOUT, &b, 1, false) < 0 ? -1 : b;
}

int fflush(void *f)
{
    (void)f;
    return 0; /* the server flushes at least every millisecond and after each kernel */
}

void exit(int status)
{
    tether_device_exit(status);
}

void abort(void)
{
    tether_device_abort();
}

#else /* x86_64 offload image */

static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static uint32_t stream_id(FILE *f)
{
    if (f == stdout)
        return TETHER_RPC_STDOUT;
    if (f == stderr)
        return TETHER_RPC_STDERR;
    return 0;
}

static bool attached(void)
{
    return tether_device_attached();
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    uint32_t id = stream_id(f);
    if (id != 0 && attached())
        return tether_device_vprintf(id, fmt, ap);
    int (*real)(FILE *, const char *, va_list) =
        (int (*)(FILE *, const char *, va_list))next_sym("vfprintf");
    return real != NULL ? real(f, fmt, ap) : -1;
}

int vprintf(const char *fmt, va_list ap)
{
    return vfprintf(stdout, fmt, ap);
}

int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return n;
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}

size_t fwrite(const void *ptr, size_t size, size_t n, FILE *f)
{
    uint32_t id = stream_id(f);
    if (id != 0 && attached()) {
        if (size != 0 && n > SIZE_MAX / size)
            return 0;
        return tether_device_write(id, ptr, size * n, false) < 0 ? 0 : n;
    }
    size_t (*real)(const void *, size_t, size_t, FILE *) =
        (size_t(*)(const void *, size_t, size_t, FILE *))next_sym("fwrite");
    return real != NULL ? real(ptr, size, n, f) : 0;
}

int fputs(const char *s, FILE *f)
{
    uint32_t id = stream_id(f);
    if (id != 0 && attached())
        return tether_device_write(id, s, strlen(s), false) < 0 ? EOF : 0;
    int (*real)(const char *, FILE *) = (int (*)(const char *, FILE *))next_sym("fputs");
    return real != NULL ? real(s, f) : EOF;
}

int puts(const char *s)
{
    if (attached())
        return tether_device_write(TETHER_RPC_STDOUT, s, strlen(s), true) < 0 ? EOF : 0;
    int (*real)(const char *) = (int (*)(const char *))next_sym("puts");
    return real != NULL ? real(s) : EOF;
}

int fputc(int c, FILE *f)
{
    uint32_t id = stream_id(f);
    if (id != 0 && attached()) {
        unsigned char b = (unsigned char)c;
        return tether_device_write(id, &b, 1, false) < 0 ? EOF : b;
    }
    int (*real)(int, FILE *) = (int (*)(int, FILE *))next_sym("fputc");
    return real != NULL ? real(c, f) : EOF;
}

int putc(int c, FILE *f)
{
    return fputc(c, f);
}

int putchar(int c)
{
    return fputc(c, stdout);
}

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_memalign(size_t, size_t);

/* The heap's result, with errno ENOMEM for no block, as libc's functions do. */
static void *heap_result(void *p)
{
    if (p == NULL)
        errno = ENOMEM;
    return p;
}

void *malloc(size_t size)
{
    return attached() ? heap_result(tether_device_malloc(size)) : __libc_malloc(size);
}

void free(void *ptr)
{
    tether_device_free(ptr); /* pointers from libc's heap go back to libc */
}

void *calloc(size_t n, size_t size)
{
    return attached() ? heap_result(tether_device_calloc(n, size)) : __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
    if (!attached() && ptr == NULL)
        return __libc_malloc(size);
    void *p = tether_device_realloc(ptr, size);
    return size == 0 ? p : heap_result(p);
}

/* C17 and POSIX: an alignment that is not a power of two gives NULL with errno EINVAL. */
void *aligned_alloc(size_t align, size_t size)
{
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return attached() ? heap_result(tether_device_aligned_alloc(align, size))
                      : __libc_memalign(align, size);
}

/* POSIX: EINVAL unless align is a power of two and a multiple of sizeof(void *); ENOMEM when
 * there is no block; *ptr_p is written only on success, errno is left alone. */
int posix_memalign(void **ptr_p, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    int saved = errno;
    void *p = aligned_alloc(align, size);
    errno = saved;
    if (p == NULL)
        return ENOMEM;
    *ptr_p = p;
    return 0;
}

void exit(int status)
{
    if (attached())
        tether_device_exit(status);
    void (*real)(int) = (void (*)(int))next_sym("exit");
    if (real != NULL)
        real(status);
    _Exit(status);
}

void abort(void)
{
    if (attached())
        tether_device_abort();
    void (*real)(void) = (void (*)(void))next_sym("abort");
    if (real != NULL)
        real();
    _Exit(134);
}

#endif

DEV_END
