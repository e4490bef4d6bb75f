/*
 * rpc/device/device_stdio.c - printf, puts/fputs/fwrite and exit/abort of
 * device code, as fire-and-forget calls: the device hands its bytes over and
 * goes on; the host formats (rpc/server/rpc_printf.c) and writes each call
 * with one fwrite.
 *
 * printf sends one message: struct tether_rpc_printf_hdr, the format, the
 * packed argument buffer exactly as clang built it, then each %s string
 * (bounded by its precision).  The format scanner is shared with the host
 * (printf_scan.h), so both agree on where every argument lies.
 *
 * Return values: on GPUs printf returns the number of arguments it used, as
 * CUDA's vprintf does (the host formats later); on host-like targets it
 * returns the number of characters, computed locally.  Without a server
 * attached, or for a message over TETHER_RPC_MSG_MAX, printf/puts return -1
 * and write nothing.
 */
#include "device_internal.h"
#include "printf_scan.h"

#if !RPC_ARCH_SIMT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#endif

/* %s arguments sent with one printf; more are replaced by a marker. */
#define DEV_PRINTF_STRS 12

DEV_BEGIN

static const char dev_too_many_strs[] = "<too many %s>";

static uint64_t dev_strnlen(const char *s, uint64_t max)
{
    uint64_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

static uint64_t dev_read_u64(const unsigned char *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}

static int32_t dev_read_i32(const unsigned char *p)
{
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* A message longer than the host takes (TETHER_RPC_MSG_MAX; it would drop it) is not sent: one
 * line on stderr says so, and the caller returns libc's failure value. */
_Static_assert(TETHER_RPC_MSG_MAX == 64u << 20, "the text below names the limit");
static bool dev_too_big(const struct dev_iov *iov, uint32_t niov, const char *what,
                        uint64_t what_len)
{
    static const char pre[] = "tether: a device ",
                      post[] = " message over 64 MiB (the most one call carries) was not "
                               "written; the call returned an error\n";
    uint64_t n = 0;
    for (uint32_t i = 0; i < niov; i++)
        n += iov[i].len;
    if (n <= TETHER_RPC_MSG_MAX)
        return false;
    struct tether_rpc_write_hdr hdr = {TETHER_RPC_STDERR, 0};
    struct dev_iov say[4] = {
        {&hdr, sizeof hdr}, {pre, sizeof pre - 1}, {what, what_len}, {post, sizeof post - 1}};
    tether_device_call(TETHER_RPC_OP_WRITE, say, 4, false, (void *)0, 0, (uint64_t *)0,
                       (uint32_t *)0);
    return true;
}

int tether_device_printf_packed(uint32_t stream, const char *fmt, const void *args,
                                uint64_t args_len)
{
    if (fmt == (const char *)0)
        return -1;
    const unsigned char *a = (const unsigned char *)args;
    struct tether_rpc_printf_hdr hdr;
    uint32_t lens[DEV_PRINTF_STRS + 1];
    struct dev_iov iov[3 + 2 * (DEV_PRINTF_STRS + 1)];
    uint32_t niov = 3;
    uint32_t nstrs = 0;
    int nargs = 0;

    /* Walk the conversions: find the strings, count the arguments. */
    size_t pos = 0;
    uint64_t off = 0;
    struct pscan_spec spec;
    while (pscan_next(fmt, (size_t)-1, &pos, &spec)) {
        int64_t precision = spec.precision;
        if (spec.width == PSCAN_STAR)
            off = pscan_align(off, PSCAN_ARG_I32) + 4;
        if (spec.precision == PSCAN_STAR) {
            off = pscan_align(off, PSCAN_ARG_I32);
            precision = off + 4 <= args_len ? dev_read_i32(a + off) : -1;
            off += 4;
        }
        if (spec.arg == PSCAN_ARG_NONE || spec.arg == PSCAN_ARG_BAD)
            continue;
        off = pscan_align(off, spec.arg);
        nargs++;
        if (spec.arg == PSCAN_ARG_STR && off + 8 <= args_len) {
            const char *s = (const char *)(uintptr_t)dev_read_u64(a + off);
            if (nstrs == DEV_PRINTF_STRS) {
                lens[nstrs] = sizeof dev_too_many_strs - 1;
                iov[niov++] = (struct dev_iov){&lens[nstrs], 4};
                iov[niov++] = (struct dev_iov){dev_too_many_strs, lens[nstrs]};
                nstrs++;
            } else if (nstrs < DEV_PRINTF_STRS) {
                uint64_t max = precision >= 0 ? (uint64_t)precision : (uint64_t)0xffffffffu - 1;
                lens[nstrs] =
                    s == (const char *)0 ? TETHER_RPC_PRINTF_NULL : (uint32_t)dev_strnlen(s, max);
                iov[niov++] = (struct dev_iov){&lens[nstrs], 4};
                if (s != (const char *)0)
                    iov[niov++] = (struct dev_iov){s, lens[nstrs]};
                nstrs++;
            }
        }
        off += pscan_arg_size(spec.arg);
    }
    hdr.stream = stream;
    hdr.fmt_len = (uint32_t)dev_strnlen(fmt, 0xffffffffu);
    hdr.args_len = (uint32_t)args_len;
    hdr.nstrs = nstrs;
    iov[0] = (struct dev_iov){&hdr, sizeof hdr};
    iov[1] = (struct dev_iov){fmt, hdr.fmt_len};
    iov[2] = (struct dev_iov){args, args == (const void *)0 ? 0 : args_len};
    if (dev_too_big(iov, niov, "printf", 6))
        return -1;
    if (!tether_device_call(TETHER_RPC_OP_PRINTF, iov, niov, false, (void *)0, 0, (uint64_t *)0,
                            (uint32_t *)0))
        return -1;
    return nargs;
}

/* Size of the packed argument buffer a format needs (CUDA's vprintf does not
 * pass it): the end of its last argument. */
static uint64_t dev_printf_args_size(const char *fmt)
{
    size_t pos = 0;
    uint64_t off = 0;
    struct pscan_spec spec;
    while (pscan_next(fmt, (size_t)-1, &pos, &spec)) {
        if (spec.width == PSCAN_STAR)
            off = pscan_align(off, PSCAN_ARG_I32) + 4;
        if (spec.precision == PSCAN_STAR)
            off = pscan_align(off, PSCAN_ARG_I32) + 4;
        if (spec.arg != PSCAN_ARG_NONE && spec.arg != PSCAN_ARG_BAD)
            off = pscan_align(off, spec.arg) + pscan_arg_size(spec.arg);
    }
    return off;
}

int tether_device_vprintf_cuda(const char *fmt, const void *args)
{
    if (fmt == (const char *)0)
        return -1;
    uint64_t size = args == (const void *)0 ? 0 : dev_printf_args_size(fmt);
    return tether_device_printf_packed(TETHER_RPC_STDOUT, fmt, args, size);
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
    if (dev_too_big(iov, niov, "write", 5))
        return -1;
    if (!tether_device_call(TETHER_RPC_OP_WRITE, iov, niov, false, (void *)0, 0, (uint64_t *)0,
                            (uint32_t *)0))
        return -1;
    return (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

int tether_device_write_file(uint64_t file, const void *bytes, uint64_t n, bool newline)
{
    return dev_write(TETHER_RPC_HOST_FILE, &file, bytes, n, newline);
}

int tether_device_write(uint32_t stream, const void *bytes, uint64_t n, bool newline)
{
    return dev_write(stream, (const uint64_t *)0, bytes, n, newline);
}

#if !RPC_ARCH_SIMT
int tether_device_vprintf(uint32_t stream, const char *fmt, va_list ap)
{
    if (fmt == NULL)
        return -1;
    /* The character count printf must return, computed here. */
    va_list count_ap;
    va_copy(count_ap, ap);
    int chars = vsnprintf(NULL, 0, fmt, count_ap);
    va_end(count_ap);

    /* Pack as clang packs for a GPU: promoted types at natural alignment. */
    _Alignas(16) unsigned char buf[1024];
    uint64_t off = 0;
    size_t pos = 0;
    struct pscan_spec spec;
    while (pscan_next(fmt, SIZE_MAX, &pos, &spec)) {
        enum pscan_arg slots[3];
        int n = 0;
        if (spec.width == PSCAN_STAR)
            slots[n++] = PSCAN_ARG_I32;
        if (spec.precision == PSCAN_STAR)
            slots[n++] = PSCAN_ARG_I32;
        if (spec.arg != PSCAN_ARG_NONE && spec.arg != PSCAN_ARG_BAD)
            slots[n++] = spec.arg;
        for (int k = 0; k < n; k++) {
            uint64_t at = pscan_align(off, slots[k]);
            uint64_t size = pscan_arg_size(slots[k]);
            if (at + size > sizeof buf)
                goto send; /* the host shows <missing arg> for the rest */
            switch (slots[k]) {
            case PSCAN_ARG_I32: {
                int v = va_arg(ap, int);
                memcpy(buf + at, &v, 4);
                break;
            }
            case PSCAN_ARG_I64: {
                long long v = va_arg(ap, long long);
                memcpy(buf + at, &v, 8);
                break;
            }
            case PSCAN_ARG_F64: {
                double v = va_arg(ap, double);
                memcpy(buf + at, &v, 8);
                break;
            }
            case PSCAN_ARG_F128: {
                long double v = va_arg(ap, long double);
                memset(buf + at, 0, 16);
                memcpy(buf + at, &v, 10);
                break;
            }
            case PSCAN_ARG_PTR:
            case PSCAN_ARG_STR: {
                void *v = va_arg(ap, void *);
                uint64_t u = (uint64_t)(uintptr_t)v;
                memcpy(buf + at, &u, 8);
                break;
            }
            case PSCAN_ARG_NONE:
            case PSCAN_ARG_BAD:
                break;
            }
            off = at + size;
        }
    }
send:
    if (tether_device_printf_packed(stream, fmt, buf, off) < 0)
        return -1;
    return chars;
}
#endif

void tether_device_exit(int status)
{
    struct tether_rpc_exit_req req = {status, 0};
    struct dev_iov iov = {&req, sizeof req};
    bool sent = tether_device_call(TETHER_RPC_OP_EXIT, &iov, 1, false, (void *)0, 0, (uint64_t *)0,
                                   (uint32_t *)0);
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

void tether_device_abort(void)
{
    bool sent = tether_device_call(TETHER_RPC_OP_ABORT, (const struct dev_iov *)0, 0, false,
                                   (void *)0, 0, (uint64_t *)0, (uint32_t *)0);
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
