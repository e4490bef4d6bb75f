/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_stdio.c - printf, puts/fputs/fwrite and exit/abort of
 * device code, as fire-and-forget calls: the device hands its bytes over and
 * goes on; the host formats (rpc/server/rpc_printf.c) and writes each call
 * with one fwrite.
 *
 * printf sends one message: struct tether_rpc_printf_hdr, the format, the
 * packed argument buffer exactly as clang built it, then one record per %s
 * (its length, then its bytes, bounded by its precision).  The records are
 * made while the message is sent (tether_device_printf_strs), so a call may
 * have any number of strings of any length; a message longer than a packet
 * simply takes more packets of the one call.  The format scanner is shared
 * with the host (printf_scan.h), so both agree on where every argument lies,
 * numbered arguments ("%2$d") included.
 *
 * Return values: on GPUs printf returns the number of arguments it used, as
 * CUDA's vprintf does (the host formats later); on host-like targets it
 * returns the number of characters, computed locally.  Without a server
 * attached, or for a message over TETHER_RPC_MSG_MAX, printf/puts return -1
 * and write nothing.
 */
#include "device_internal.h"
#include "../printf_scan.h"

#if !RPC_ARCH_SIMT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#endif

DEV_BEGIN

static uint64_t dev_strnlen(const char *s, uint64_t max)
{
    uint64_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

/* A walk over the conversions of one printf call: where each argument lies, and the %s records
 * (found once to count them, and again while they are sent). */
struct dev_printf {
    const char *fmt;
    const unsigned char *args;
    uint64_t args_len;           /* bytes at args */
    const struct pscan_pos *pos; /* a numbered format's layout, else NULL */
    size_t at;                   /* format offset of the next conversion */
    uint64_t off;                /* unnumbered: offset of the next argument */
    const char *str;             /* the current %s record: the string, */
    uint32_t rec_len;            /* its length field (TETHER_RPC_PRINTF_NULL for NULL), */
    uint64_t rec_size;           /* its bytes (4 + the string's), */
    uint64_t rec_at;             /* and how many of them are sent */
};

/* dev_va_pack's result for an unnumbered walk that met a numbered conversion. */
#define DEV_ARGS_UNSIZED (~(uint64_t)0)

/* What one step of a printf walk found. */
enum dev_step {
    DEV_STEP_END,      /* the format ended */
    DEV_STEP_NOARG,    /* a conversion without a value (%%, bad ones; '*' ints are taken) */
    DEV_STEP_ARG,      /* a conversion with a value */
    DEV_STEP_STR,      /* a %s whose pointer is in the buffer: its record is in the walk */
    DEV_STEP_NUMBERED, /* a plain walk met a conversion that may number an argument */
};

static int32_t dev_read_i32(const struct dev_printf *w, uint64_t off)
{
    int32_t v = -1; /* a missing precision: none */
    if (off <= w->args_len && w->args_len - off >= 4)
        __builtin_memcpy(&v, w->args + off, 4);
    return v;
}

/* One conversion of the walk: where its arguments lie, and for a %s its string's record.
 * `plain`: with pscan_next_plain, the walk of ordinary formats. */
static enum dev_step dev_printf_walk(struct dev_printf *w, bool plain);

/* On NVIDIA the walk's callers reach it through a pointer the compiler cannot see through.  A
 * direct call lets ptxas give a caller the callee's registers plus its own values kept across
 * the call, and every kernel that may print gets the most any function on the path needs: sm_90,
 * 102 registers with the direct call, 68 with this one (docs/usage.md, "What the library costs a
 * kernel"). */
static inline enum dev_step dev_printf_step(struct dev_printf *w, bool plain)
{
#if defined(RPC_ARCH_NVPTX)
    enum dev_step (*walk)(struct dev_printf *, bool) = dev_printf_walk;
    __asm__ volatile("" : "+l"(walk));
    return walk(w, plain);
#else
    return dev_printf_walk(w, plain);
#endif
}

#if defined(RPC_ARCH_NVPTX)
__attribute__((noinline))
#endif
static enum dev_step
dev_printf_walk(struct dev_printf *w, bool plain)
{
    struct pscan_spec spec;
    if (!(plain ? pscan_next_plain(w->fmt, (size_t)-1, &w->at, &spec)
                : pscan_next(w->fmt, (size_t)-1, &w->at, &spec)))
        return DEV_STEP_END;
    int32_t precision = spec.precision;
    uint64_t off;
    if (w->pos != (const struct pscan_pos *)0) {
        if (w->pos->err != PSCAN_POS_OK)
            return DEV_STEP_NOARG; /* refused: the host reads no argument either */
        if (spec.precision == PSCAN_STAR)
            precision = dev_read_i32(w, pscan_pos_offset(w->pos, spec.prec_pos));
        if (!pscan_takes_value(&spec))
            return DEV_STEP_NOARG;
        off = pscan_pos_offset(w->pos, spec.pos);
    } else {
        if (plain && pscan_maybe_numbered(&spec))
            return DEV_STEP_NUMBERED;
        if (spec.width == PSCAN_STAR)
            w->off = pscan_align(w->off, PSCAN_ARG_I32) + 4;
        if (spec.precision == PSCAN_STAR) {
            w->off = pscan_align(w->off, PSCAN_ARG_I32);
            precision = dev_read_i32(w, w->off);
            w->off += 4;
        }
        if (!pscan_takes_value(&spec))
            return DEV_STEP_NOARG;
        off = pscan_align(w->off, spec.arg);
        w->off = off + pscan_arg_size(spec.arg);
    }
    if (spec.arg != PSCAN_ARG_STR || off > w->args_len || w->args_len - off < 8)
        return DEV_STEP_ARG;
    uint64_t p;
    __builtin_memcpy(&p, w->args + off, 8);
    w->str = (const char *)(uintptr_t)p;
    uint64_t max = precision >= 0 ? (uint64_t)precision : (uint64_t)TETHER_RPC_PRINTF_NULL - 1;
    w->rec_len =
        w->str == (const char *)0 ? TETHER_RPC_PRINTF_NULL : (uint32_t)dev_strnlen(w->str, max);
    w->rec_size = 4 + (w->str == (const char *)0 ? 0 : (uint64_t)w->rec_len);
    w->rec_at = 0;
    return DEV_STEP_STR;
}

/* Called by the packet filler of printf calls with strings (device_client.c, tx_fill_strs), a
 * function of its own into which it is inlined: the record walk's registers stay out of the
 * other calls' code. */
void tether_device_printf_strs(void *walk, unsigned char *dst, uint64_t n)
{
    struct dev_printf *w = (struct dev_printf *)walk;
    while (n > 0) {
        if (w->rec_at == w->rec_size) {
            enum dev_step step;
            do
                step = dev_printf_step(w, false);
            while (step != DEV_STEP_STR && step != DEV_STEP_END);
            if (step == DEV_STEP_END) {
                /* Only if a string got shorter since the first walk: pad to the length sent. */
                for (uint64_t k = 0; k < n; k++)
                    dst[k] = 0;
                return;
            }
        }
        uint64_t k = w->rec_size - w->rec_at;
        if (k > n)
            k = n;
        for (uint64_t i = 0; i < k; i++, w->rec_at++)
            dst[i] = w->rec_at < 4 ? (unsigned char)(w->rec_len >> (8 * w->rec_at))
                                   : (unsigned char)w->str[w->rec_at - 4];
        dst += k;
        n -= k;
    }
}

/* A message longer than the host takes (TETHER_RPC_MSG_MAX; it would drop it) is not sent: one
 * line on stderr says so, and the caller returns libc's failure value. */
_Static_assert(TETHER_RPC_MSG_MAX == 64u << 20, "the text below names the limit");
static bool dev_too_big(uint64_t n, const char *what, uint64_t what_len)
{
    static const char pre[] = "tether: a device ",
                      post[] = " message over 64 MiB (the most one call carries) was not "
                               "written; the call returned an error\n";
    if (n <= TETHER_RPC_MSG_MAX)
        return false;
    struct tether_rpc_write_hdr hdr = {TETHER_RPC_STDERR, 0};
    struct dev_iov say[4] = {
        {&hdr, sizeof hdr}, {pre, sizeof pre - 1}, {what, what_len}, {post, sizeof post - 1}};
    tether_device_call(TETHER_RPC_OP_WRITE, say, 4, false, (void *)0, 0);
    return true;
}

/* Sends a printf call after its first walk *w: `nstrs` %s records of `strs_len` bytes in all. */
static int dev_printf_send(uint32_t stream, struct dev_printf *w, uint32_t nstrs, uint64_t strs_len,
                           int nargs)
{
    struct tether_rpc_printf_hdr hdr;
    hdr.stream = stream;
    hdr.fmt_len = (uint32_t)dev_strnlen(w->fmt, 0xffffffffu);
    hdr.args_len = (uint32_t)w->args_len;
    hdr.nstrs = nstrs;
    /* The records are made again while they are sent: the walk starts over. */
    w->at = 0;
    w->off = 0;
    w->rec_size = 0;
    w->rec_at = 0;
    struct dev_iov iov[4] = {
        {&hdr, sizeof hdr},
        {w->fmt, hdr.fmt_len},
        {w->args, hdr.args_len},
        {w, strs_len | DEV_IOV_PRINTF_STRS},
    };
    if (dev_too_big(sizeof hdr + hdr.fmt_len + hdr.args_len + strs_len, "printf", 6))
        return -1;
    bool sent = nstrs > 0
                    ? tether_device_call_printf(iov, 4)
                    : tether_device_call(TETHER_RPC_OP_PRINTF, iov, 3, false, (void *)0, 0) == 0;
    return sent ? nargs : -1;
}

/* A format that may number its arguments, walked again with pscan_next and, if it does, with
 * its layout, which lives here, off the path of ordinary formats. */
#if RPC_ARCH_SIMT
__attribute__((noinline))
#endif
static int
dev_printf_numbered(uint32_t stream, struct dev_printf *w)
{
    struct pscan_pos pos;
    pscan_pos_scan(w->fmt, (size_t)-1, &pos);
    if (pos.numbered)
        w->pos = &pos;
    w->at = 0;
    w->off = 0;
    uint32_t nstrs = 0;
    uint64_t strs_len = 0;
    int nargs = 0;
    for (enum dev_step step; (step = dev_printf_step(w, false)) != DEV_STEP_END;) {
        nargs += step != DEV_STEP_NOARG;
        if (step == DEV_STEP_STR) {
            nstrs++;
            strs_len += w->rec_size;
        }
    }
    return dev_printf_send(stream, w, nstrs, strs_len, nargs);
}

DEV_OUT_OF_LINE int tether_device_printf_packed(uint32_t stream, const char *fmt, const void *args,
                                                uint64_t args_len)
{
    if (fmt == (const char *)0)
        return -1;
    struct dev_printf w = {.fmt = fmt,
                           .args = (const unsigned char *)args,
                           .args_len = args == (const void *)0 ? 0 : args_len};
    uint32_t nstrs = 0;
    uint64_t strs_len = 0;
    int nargs = 0;
    for (;;) {
        enum dev_step step = dev_printf_step(&w, true);
        if (step == DEV_STEP_END)
            break;
        if (step == DEV_STEP_NUMBERED)
            return dev_printf_numbered(stream, &w);
        nargs += step != DEV_STEP_NOARG;
        if (step == DEV_STEP_STR) {
            nstrs++;
            strs_len += w.rec_size;
        }
    }
    return dev_printf_send(stream, &w, nstrs, strs_len, nargs);
}

/* One WRITE call: the header, the host FILE * when `file` is given (TETHER_RPC_HOST_FILE),
 * the bytes. */
static int dev_write(uint32_t stream, const uint64_t *file, const void *bytes, uint64_t n,
                     bool newline)
{
    struct tether_rpc_write_hdr hdr = {stream, newline ? 1u : 0u};
    struct dev_iov iov[3];
    uint32_t niov = 0;
    iov[niov++] = (struct dev_iov){&hdr, sizeof hdr};
    if (file != (const uint64_t *)0)
        iov[niov++] = (struct dev_iov){file, sizeof *file};
    iov[niov++] = (struct dev_iov){bytes, bytes == (const void *)0 ? 0 : n};
    if (dev_too_big(sizeof hdr + (file != (const uint64_t *)0 ? sizeof *file : 0) +
                        (bytes == (const void *)0 ? 0 : n),
                    "write", 5))
        return -1;
    if (tether_device_call(TETHER_RPC_OP_WRITE, iov, niov, false, (void *)0, 0) != 0)
        return -1;
    return (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

DEV_OUT_OF_LINE int tether_device_write_file(uint64_t file, const void *bytes, uint64_t n,
                                             bool newline)
{
    return dev_write(TETHER_RPC_HOST_FILE, &file, bytes, n, newline);
}

DEV_OUT_OF_LINE int tether_device_write(uint32_t stream, const void *bytes, uint64_t n,
                                        bool newline)
{
    return dev_write(stream, (const uint64_t *)0, bytes, n, newline);
}

#if !RPC_ARCH_SIMT
/* glibc's own allocator: in the x86_64 offload image `malloc` is the device heap, a call to the
 * host each. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

/* Takes the next variadic argument of class `arg` into dst (16 bytes at most). */
static void dev_va_take(enum pscan_arg arg, va_list *ap, unsigned char *dst)
{
    switch (arg) {
    case PSCAN_ARG_I32: {
        int v = va_arg(*ap, int);
        memcpy(dst, &v, 4);
        break;
    }
    case PSCAN_ARG_I64: {
        long long v = va_arg(*ap, long long);
        memcpy(dst, &v, 8);
        break;
    }
    case PSCAN_ARG_F64: {
        double v = va_arg(*ap, double);
        memcpy(dst, &v, 8);
        break;
    }
    case PSCAN_ARG_F128: {
        long double v = va_arg(*ap, long double);
        memset(dst, 0, 16);
        memcpy(dst, &v, 10);
        break;
    }
    case PSCAN_ARG_PTR:
    case PSCAN_ARG_STR: {
        uint64_t u = (uint64_t)(uintptr_t)va_arg(*ap, void *);
        memcpy(dst, &u, 8);
        break;
    }
    case PSCAN_ARG_NONE:
    case PSCAN_ARG_BAD:
        break;
    }
}

/* Puts the next argument at its aligned place at or after *off, if it fits in cap. */
static void dev_va_put(enum pscan_arg arg, va_list *ap, unsigned char *buf, uint64_t cap,
                       uint64_t *off)
{
    unsigned char v[16];
    uint64_t at = pscan_align(*off, arg), size = pscan_arg_size(arg);
    dev_va_take(arg, ap, v);
    if (at + size <= cap)
        memcpy(buf + at, v, size);
    *off = at + size;
}

/*
 * Packs the arguments as clang packs them for a GPU: in call order, promoted, at natural
 * alignment; in a numbered format (pos not NULL) in the order of their numbers.  Writes what fits
 * in cap bytes; returns the size of the whole buffer, or DEV_ARGS_UNSIZED if an unnumbered walk
 * met a numbered conversion.
 */
static uint64_t dev_va_pack(const char *fmt, const struct pscan_pos *pos, va_list ap,
                            unsigned char *buf, uint64_t cap)
{
    va_list aq;
    va_copy(aq, ap);
    uint64_t off = 0;
    if (pos != NULL) {
        for (uint32_t k = 1; pos->err == PSCAN_POS_OK && k <= pos->nargs; k++)
            dev_va_put((enum pscan_arg)pos->kind[k - 1], &aq, buf, cap, &off);
        va_end(aq);
        return off;
    }
    size_t at = 0;
    struct pscan_spec spec;
    while (pscan_next(fmt, SIZE_MAX, &at, &spec)) {
        if (pscan_numbered(&spec)) {
            off = DEV_ARGS_UNSIZED;
            break;
        }
        if (spec.width == PSCAN_STAR)
            dev_va_put(PSCAN_ARG_I32, &aq, buf, cap, &off);
        if (spec.precision == PSCAN_STAR)
            dev_va_put(PSCAN_ARG_I32, &aq, buf, cap, &off);
        if (pscan_takes_value(&spec))
            dev_va_put(spec.arg, &aq, buf, cap, &off);
    }
    va_end(aq);
    return off;
}

DEV_OUT_OF_LINE int tether_device_vprintf(uint32_t stream, const char *fmt, va_list ap)
{
    if (fmt == NULL)
        return -1;
    /* Most calls fit the buffer on the stack; larger ones get one from libc. */
    _Alignas(16) unsigned char small[1024];
    unsigned char *buf = small;
    struct pscan_pos pos;
    const struct pscan_pos *posp = NULL;
    uint64_t size = dev_va_pack(fmt, NULL, ap, buf, sizeof small);
    if (size == DEV_ARGS_UNSIZED) {
        pscan_pos_scan(fmt, SIZE_MAX, &pos);
        posp = &pos;
        size = dev_va_pack(fmt, posp, ap, buf, sizeof small);
    }

    /* The character count printf must return, computed here; not for a numbered format that
     * the host refuses (it prints markers), with which libc's own printf may crash. */
    int chars = -1;
    if (posp != NULL && posp->err != PSCAN_POS_OK) {
        errno = EINVAL;
    } else {
        va_list count_ap;
        va_copy(count_ap, ap);
        chars = vsnprintf(NULL, 0, fmt, count_ap);
        va_end(count_ap);
    }

    if (size > sizeof small) {
        buf = __libc_malloc(size);
        if (buf == NULL) {
            errno = ENOMEM;
            return -1;
        }
        dev_va_pack(fmt, posp, ap, buf, size);
    }
    int sent = tether_device_printf_packed(stream, fmt, buf, size);
    if (buf != small)
        __libc_free(buf);
    return sent < 0 ? -1 : chars;
}
#endif

DEV_OUT_OF_LINE void tether_device_exit(int status)
{
    struct tether_rpc_exit_req req = {status, 0};
    struct dev_iov iov = {&req, sizeof req};
    bool sent = tether_device_call(TETHER_RPC_OP_EXIT, &iov, 1, false, (void *)0, 0) == 0;
#if RPC_ARCH_SIMT
    /* The host ends the process; if it does not within ~1 s, fail the kernel. */
    for (uint32_t i = 0; sent && i < (1u << 20); i++)
        rpc_arch_pause();
    __builtin_trap();
#else
    if (!sent) {
        fflush(NULL);
        _Exit(status);
    }
    for (;;)
        pause();
#endif
}

DEV_OUT_OF_LINE void tether_device_abort(void)
{
    bool sent = tether_device_call(TETHER_RPC_OP_ABORT, (const struct dev_iov *)0, 0, false,
                                   (void *)0, 0) == 0;
#if RPC_ARCH_SIMT
    for (uint32_t i = 0; sent && i < (1u << 20); i++)
        rpc_arch_pause();
    __builtin_trap();
#else
    if (!sent)
        _Exit(134);
    for (;;)
        pause();
#endif
}

DEV_END
