/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_printf.c - host-side formatting of device printf calls.
 * See rpc_printf.h for the contract and the markers.
 */
#include "rpc_printf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "../printf_scan.h"
#include "tether/rpc_opcodes.h"

void rpc_outbuf_free(struct rpc_outbuf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
}

static tether_status_t outbuf_reserve(struct rpc_outbuf *buf, size_t extra)
{
    if (buf->cap - buf->len > extra)
        return TETHER_OK;
    if (extra > SIZE_MAX / 2 - buf->len)
        return TETHER_ERR_NO_MEMORY;
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap - buf->len <= extra)
        cap *= 2;
    char *p = realloc(buf->data, cap);
    if (p == NULL)
        return TETHER_ERR_NO_MEMORY;
    buf->data = p;
    buf->cap = cap;
    return TETHER_OK;
}

tether_status_t rpc_outbuf_append(struct rpc_outbuf *buf, const void *bytes, size_t n)
{
    tether_status_t st = outbuf_reserve(buf, n);
    if (st != TETHER_OK)
        return st;
    if (n > 0)
        memcpy(buf->data + buf->len, bytes, n);
    buf->len += n;
    return TETHER_OK;
}

/* Formatting state of one call. */
struct fmt_state {
    struct rpc_outbuf *out;
    size_t base;                        /* out->len when the call started */
    size_t limit;                       /* with a sink RPC_PRINTF_PIECE, else SIZE_MAX */
    const struct rpc_printf_sink *sink; /* takes each piece of `limit` bytes; NULL: none */
    bool full;                          /* the full run (pscan_next), else the plain run */
    bool missing;                       /* the argument buffer ran out */
    tether_status_t st;
    const unsigned char *args;
    size_t args_len;
    size_t off;                  /* unnumbered formats: next argument offset */
    const struct pscan_pos *pos; /* numbered formats: where each argument lies; else NULL */
    bool again; /* the plain run met a conversion that may number an argument, or filled a piece */
    const struct rpc_printf_str *strs;
    size_t nstrs;
    size_t next_str;
    uint32_t nconv;
};

/* Output that fills a piece: the sink takes each whole piece, and out keeps less than one.  The
 * plain run hands nothing over, as a later conversion may show that the format numbers its
 * arguments and its output is another: it stops, and the caller formats again with the full
 * run. */
static void emit_pieces(struct fmt_state *s, const char *bytes, size_t n)
{
    if (!s->full) {
        s->again = true;
        return;
    }
    while (n > 0 && s->st == TETHER_OK) {
        size_t room = s->limit - (s->out->len - s->base);
        size_t k = n < room ? n : room;
        s->st = rpc_outbuf_append(s->out, bytes, k);
        bytes += k;
        n -= k;
        if (s->st == TETHER_OK && k == room) {
            s->sink->take(s->sink->ctx, s->out->data + s->base, s->limit);
            s->out->len = s->base;
        }
    }
}

static void emit(struct fmt_state *s, const char *bytes, size_t n)
{
    if (s->st != TETHER_OK || s->again)
        return;
    if (n >= s->limit - (s->out->len - s->base)) {
        emit_pieces(s, bytes, n);
        return;
    }
    s->st = rpc_outbuf_append(s->out, bytes, n);
}

static void emit_str(struct fmt_state *s, const char *str)
{
    emit(s, str, strlen(str));
}

/* "<bad %...>" echoing at most 32 bytes of the spec, non-printables as '?', and why when a
 * numbered format is refused. */
static void emit_bad(struct fmt_state *s, const char *fmt, const struct pscan_spec *spec)
{
    char text[48];
    size_t n = 0;
    size_t len = spec->end - spec->start;
    bool cut = len > 32;
    if (cut)
        len = 32;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)fmt[spec->start + i];
        text[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    emit_str(s, "<bad ");
    emit(s, text, n);
    if (cut)
        emit_str(s, "...");
    const struct pscan_pos *p = s->pos;
    if (p != NULL && p->err != PSCAN_POS_OK && pscan_takes_any(spec)) {
        char why[64];
        switch (p->err) {
        case PSCAN_POS_MIXED:
            snprintf(why, sizeof why, ": numbered and unnumbered arguments mixed");
            break;
        case PSCAN_POS_UNUSED:
            snprintf(why, sizeof why, ": argument %u unused", p->err_arg);
            break;
        case PSCAN_POS_CONFLICT:
            snprintf(why, sizeof why, ": argument %u of two types", p->err_arg);
            break;
        default:
            snprintf(why, sizeof why, ": argument number above %u", PSCAN_POS_MAX);
            break;
        }
        emit_str(s, why);
    }
    emit_str(s, ">");
}

/* Runs snprintf with one validated spec into the output buffer. */
static void emit_printf(struct fmt_state *s, const char *spec, ...)
{
    if (s->st != TETHER_OK || s->again)
        return;
    char small[512];
    va_list ap;
    va_start(ap, spec);
    int n = vsnprintf(small, sizeof small, spec, ap);
    va_end(ap);
    if (n < 0) {
        emit_str(s, "<bad conversion>");
        return;
    }
    if ((size_t)n < sizeof small) {
        emit(s, small, (size_t)n);
        return;
    }
    /* Widths and precisions are capped, so n is bounded (about 10 KiB). */
    char *big = malloc((size_t)n + 1);
    if (big == NULL) {
        s->st = TETHER_ERR_NO_MEMORY;
        return;
    }
    va_start(ap, spec);
    int m = vsnprintf(big, (size_t)n + 1, spec, ap);
    va_end(ap);
    if (m == n)
        emit(s, big, (size_t)n);
    else
        emit_str(s, "<bad conversion>");
    free(big);
}

static void emit_fill(struct fmt_state *s, char c, size_t n)
{
    char run[64];
    memset(run, c, sizeof run);
    while (n > 0) {
        size_t k = n < sizeof run ? n : sizeof run;
        emit(s, run, k);
        n -= k;
    }
}

/*
 * An integer conversion (d i u o x X b B with hh h l ll L j z t) formatted here, as C's printf
 * does, without snprintf: building the spec string and running vsnprintf cost several hundred ns
 * per conversion, most of a short printf line's time on the server thread, and printf throughput is
 * bound by that one thread.  Flags: '-' pads on the right; '0' pads with zeros after the sign and
 * prefix, unless '-' or a precision is given; '+' and ' ' give non-negative signed values a sign;
 * '#' gives 0x/0X (0b/0B) to non-zero hex (binary) and a leading zero to octal. A precision is the
 * least number of digits (0 with value 0: no digits).  The ' and I flags depend on the locale:
 * those conversions go to snprintf instead.  test_printf compares it with glibc.
 */
static void emit_int(struct fmt_state *s, const struct pscan_spec *spec, unsigned flags,
                     int32_t width, int32_t precision, const unsigned char *raw)
{
    char conv = spec->conv;
    bool is_signed = conv == 'd' || conv == 'i', neg = false;
    uint64_t mag;
    if (spec->arg == PSCAN_ARG_I64) {
        uint64_t u;
        memcpy(&u, raw, 8);
        neg = is_signed && (int64_t)u < 0;
        mag = neg ? 0 - u : u;
    } else {
        uint32_t u;
        memcpy(&u, raw, 4);
        if (spec->length == PSCAN_LEN_HH)
            u = is_signed ? (uint32_t)(int32_t)(signed char)u : (unsigned char)u;
        else if (spec->length == PSCAN_LEN_H)
            u = is_signed ? (uint32_t)(int32_t)(short)u : (unsigned short)u;
        neg = is_signed && (int32_t)u < 0;
        mag = neg ? 0 - (uint64_t)(int64_t)(int32_t)u : (uint64_t)u;
    }
    bool hex = conv == 'x' || conv == 'X', bin = conv == 'b' || conv == 'B';
    unsigned base = conv == 'o' ? 8u : hex ? 16u : bin ? 2u : 10u;
    const char *digit = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char digits[64]; /* 64 binary digits at most */
    size_t nd = 0;
    for (uint64_t m = mag; m != 0; m /= base)
        digits[sizeof digits - 1 - nd++] = digit[m % base];
    size_t zeros = 0;
    if (precision >= 0)
        zeros = (size_t)precision > nd ? (size_t)precision - nd : 0;
    else if (nd == 0)
        zeros = 1; /* 0 prints "0" */
    if (conv == 'o' && (flags & PSCAN_FLAG_HASH) && zeros == 0)
        zeros = 1; /* '#': a leading zero (the first digit of a non-zero value never is one) */
    char prefix[3];
    size_t np = 0;
    if (is_signed && neg)
        prefix[np++] = '-';
    else if (is_signed && (flags & PSCAN_FLAG_PLUS))
        prefix[np++] = '+';
    else if (is_signed && (flags & PSCAN_FLAG_SPACE))
        prefix[np++] = ' ';
    if ((hex || bin) && (flags & PSCAN_FLAG_HASH) && mag != 0) {
        prefix[np++] = '0';
        prefix[np++] = conv;
    }
    size_t total = np + zeros + nd;
    size_t pad = width > 0 && (size_t)width > total ? (size_t)width - total : 0;
    if (flags & PSCAN_FLAG_MINUS) {
        emit(s, prefix, np);
        emit_fill(s, '0', zeros);
        emit(s, digits + sizeof digits - nd, nd);
        emit_fill(s, ' ', pad);
        return;
    }
    if ((flags & PSCAN_FLAG_ZERO) && precision < 0) {
        zeros += pad;
        pad = 0;
    }
    emit_fill(s, ' ', pad);
    emit(s, prefix, np);
    emit_fill(s, '0', zeros);
    emit(s, digits + sizeof digits - nd, nd);
}

/* Takes argument k (1..) of a numbered format, of class `arg`; false if the buffer ends before
 * it. */
static bool take_numbered(struct fmt_state *s, enum pscan_arg arg, uint32_t k, void *dst)
{
    size_t size = pscan_arg_size(arg);
    size_t off = pscan_pos_offset(s->pos, k);
    if (off > s->args_len || s->args_len - off < size)
        return false;
    memcpy(dst, s->args + off, size);
    return true;
}

/* Takes an argument of class `arg`: in an unnumbered format the next one (every later one is
 * missing too once one is), in a numbered one argument k.  False if the buffer ends before it. */
static inline bool take_arg(struct fmt_state *s, enum pscan_arg arg, uint32_t k, void *dst)
{
    if (s->pos != NULL)
        return take_numbered(s, arg, k, dst);
    size_t size = pscan_arg_size(arg);
    size_t off = pscan_align(s->off, arg);
    if (s->missing || off < s->off || off > s->args_len || s->args_len - off < size) {
        s->missing = true;
        return false;
    }
    memcpy(dst, s->args + off, size);
    s->off = off + size;
    return true;
}

/* Writes v in decimal (no NUL); returns the number of digits. */
static size_t put_decimal(char *dst, uint32_t v)
{
    char tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

/* Appends flags, width and precision of a resolved spec to `spec` (snprintf's conversions other
 * than the integer ones, which emit_int formats itself). */
static size_t build_spec(char *spec, unsigned flags, int32_t width, int32_t precision)
{
    size_t n = 0;
    spec[n++] = '%';
    if (flags & PSCAN_FLAG_MINUS)
        spec[n++] = '-';
    if (flags & PSCAN_FLAG_PLUS)
        spec[n++] = '+';
    if (flags & PSCAN_FLAG_SPACE)
        spec[n++] = ' ';
    if (flags & PSCAN_FLAG_HASH)
        spec[n++] = '#';
    if (flags & PSCAN_FLAG_ZERO)
        spec[n++] = '0';
    if (flags & PSCAN_FLAG_GROUP)
        spec[n++] = '\'';
    if (flags & PSCAN_FLAG_I18N)
        spec[n++] = 'I';
    if (width >= 0)
        n += put_decimal(spec + n, (uint32_t)width);
    if (precision >= 0) {
        spec[n++] = '.';
        n += put_decimal(spec + n, (uint32_t)precision);
    }
    spec[n] = '\0';
    return n;
}

/* Ends a spec built by build_spec with `tail` (length modifier and conversion). */
static void end_spec(char *spec, size_t n, const char *tail)
{
    size_t k = strlen(tail);
    memcpy(spec + n, tail, k + 1);
}

/* True if the 16 bytes hold a valid x87 80-bit extended value. */
static bool ldouble_valid(const unsigned char *bytes)
{
    uint64_t mant;
    uint16_t se;
    memcpy(&mant, bytes, 8);
    memcpy(&se, bytes + 8, 2);
    unsigned exp = se & 0x7fffu;
    bool explicit_one = (mant >> 63) != 0;
    if (exp == 0)
        return true;     /* zero, denormal or pseudo-denormal: all print fine */
    return explicit_one; /* unnormals, pseudo-infinities and pseudo-NaNs are invalid */
}

/* An integer conversion with the ' or I flag, through snprintf in the host's locale. */
static void emit_int_locale(struct fmt_state *s, const struct pscan_spec *spec, unsigned flags,
                            int32_t width, int32_t precision, const unsigned char *raw)
{
    char sp[48];
    size_t n = build_spec(sp, flags, width, precision);
    if (spec->arg == PSCAN_ARG_I64) {
        long long v;
        memcpy(&v, raw, 8);
        char tail[4] = {'l', 'l', spec->conv, '\0'};
        end_spec(sp, n, tail);
        emit_printf(s, sp, v);
        return;
    }
    int v;
    memcpy(&v, raw, 4);
    char tail[4] = {spec->conv, '\0', '\0', '\0'};
    if (spec->length == PSCAN_LEN_H || spec->length == PSCAN_LEN_HH) {
        tail[0] = 'h';
        tail[1] = spec->length == PSCAN_LEN_HH ? 'h' : spec->conv;
        tail[2] = spec->length == PSCAN_LEN_HH ? spec->conv : '\0';
    }
    end_spec(sp, n, tail);
    emit_printf(s, sp, v);
}

static void format_conv(struct fmt_state *s, const char *fmt, const struct pscan_spec *spec)
{
    if (s->pos != NULL && s->pos->err != PSCAN_POS_OK && pscan_takes_any(spec)) {
        emit_bad(s, fmt, spec); /* a refused numbered format: no argument is read */
        return;
    }
    unsigned flags = spec->flags;
    int32_t width = spec->width;
    int32_t precision = spec->precision;
    bool missing = false;
    /* Every '*' takes its int, whatever the conversion (as glibc), so that nothing after it
     * moves. */
    if (width == PSCAN_STAR) {
        int32_t w = 0;
        missing = !take_arg(s, PSCAN_ARG_I32, spec->width_pos, &w);
        if (w < 0) {
            flags |= PSCAN_FLAG_MINUS;
            w = w == INT32_MIN ? PSCAN_NUM_MAX : -w;
        }
        width = w;
    }
    if (precision == PSCAN_STAR) {
        int32_t p = 0;
        missing = !take_arg(s, PSCAN_ARG_I32, spec->prec_pos, &p) || missing;
        precision = p < 0 ? PSCAN_NONE : p;
    }
    if (spec->arg == PSCAN_ARG_NONE) {
        emit(s, "%", 1);
        return;
    }
    if (spec->arg == PSCAN_ARG_BAD) {
        emit_bad(s, fmt, spec);
        return;
    }
    if (missing) {
        emit_str(s, "<missing arg>");
        return;
    }
    if (width > RPC_PRINTF_NUM_MAX)
        width = RPC_PRINTF_NUM_MAX;
    if (precision > RPC_PRINTF_NUM_MAX)
        precision = RPC_PRINTF_NUM_MAX;

    unsigned char raw[16];
    if (!take_arg(s, spec->arg, spec->pos, raw)) {
        emit_str(s, "<missing arg>");
        return;
    }
    s->nconv++;

    bool is_char = spec->conv == 'c' || spec->conv == 'C';
    if ((spec->arg == PSCAN_ARG_I32 && !is_char) || spec->arg == PSCAN_ARG_I64) {
        if (flags & (PSCAN_FLAG_GROUP | PSCAN_FLAG_I18N))
            emit_int_locale(s, spec, flags, width, precision, raw);
        else
            emit_int(s, spec, flags, width, precision, raw);
        return;
    }
    char sp[48];
    size_t n = build_spec(sp, flags, width, precision);
    switch (spec->arg) {
    case PSCAN_ARG_I32: { /* %c %lc %C: the other integer conversions went to emit_int */
        int32_t v;
        memcpy(&v, raw, 4);
        if (pscan_wide(spec)) {
            end_spec(sp, n, "lc");
            emit_printf(s, sp, (wint_t)(uint32_t)v);
        } else {
            end_spec(sp, n, "c");
            emit_printf(s, sp, (int)v);
        }
        break;
    }
    case PSCAN_ARG_F64: {
        double v;
        memcpy(&v, raw, 8);
        char conv[2] = {spec->conv, '\0'};
        end_spec(sp, n, conv);
        emit_printf(s, sp, v);
        break;
    }
    case PSCAN_ARG_F128: {
        if (!ldouble_valid(raw)) {
            emit_str(s, "<bad long double>");
            break;
        }
        long double v = 0;
        memcpy(&v, raw, 10);
        char conv[3] = {'L', spec->conv, '\0'};
        end_spec(sp, n, conv);
        emit_printf(s, sp, v);
        break;
    }
    case PSCAN_ARG_PTR: {
        uint64_t v;
        memcpy(&v, raw, 8);
        if (spec->conv == 'n')
            break; /* never written: the pointer is a device address */
        if (spec->conv != 'p') {
            emit_str(s, "<unsupported %ls>");
            break;
        }
        end_spec(sp, n, "p");
        emit_printf(s, sp, (void *)(uintptr_t)v);
        break;
    }
    case PSCAN_ARG_STR: {
        if (s->next_str >= s->nstrs) {
            emit_str(s, "<missing string>");
            break;
        }
        const struct rpc_printf_str *str = &s->strs[s->next_str++];
        const char *data = str->data;
        size_t len = str->len;
        if (data == NULL) {
            /* glibc prints "(null)", or nothing if the precision cuts it. */
            data = "(null)";
            len = precision >= 0 && precision < 6 ? 0 : 6;
        } else {
            const char *nul = memchr(data, '\0', len);
            if (nul != NULL)
                len = (size_t)(nul - data);
            if (precision >= 0 && (size_t)precision < len)
                len = (size_t)precision;
        }
        /* Pad by hand: the payload may be far longer than any int. */
        size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
        if (!(flags & PSCAN_FLAG_MINUS))
            emit_fill(s, ' ', pad);
        emit(s, data, len);
        if (flags & PSCAN_FLAG_MINUS)
            emit_fill(s, ' ', pad);
        break;
    }
    case PSCAN_ARG_I64: /* emit_int */
    case PSCAN_ARG_NONE:
    case PSCAN_ARG_BAD:
        break;
    }
}

/* Formats the whole format once.  The plain run (!s->full: pscan_next_plain) stops at the first
 * conversion that may number an argument, or when its output fills a piece for the sink, and sets
 * s->again: the caller runs again with pscan_next and, if the format numbers its arguments, their
 * layout. */
static void format_run(struct fmt_state *s, const char *fmt, size_t fmt_len)
{
    size_t pos = 0;
    size_t lit = 0;
    struct pscan_spec spec;
    while (s->st == TETHER_OK && !s->again &&
           (s->full ? pscan_next(fmt, fmt_len, &pos, &spec)
                    : pscan_next_plain(fmt, fmt_len, &pos, &spec))) {
        if (!s->full && pscan_maybe_numbered(&spec)) {
            s->again = true;
            return;
        }
        emit(s, fmt + lit, spec.start - lit);
        format_conv(s, fmt, &spec);
        lit = pos;
    }
    if (s->st == TETHER_OK && !s->again) {
        size_t end = lit;
        while (end < fmt_len && fmt[end] != '\0')
            end++;
        emit(s, fmt + lit, end - lit);
    }
}

tether_status_t rpc_printf_format(struct rpc_outbuf *out, const char *fmt, size_t fmt_len,
                                  const void *args, size_t args_len,
                                  const struct rpc_printf_str *strs, size_t nstrs,
                                  const struct rpc_printf_sink *sink, uint32_t *nconv_p)
{
    struct fmt_state s = {
        .out = out,
        .base = out->len,
        .limit = sink != NULL ? RPC_PRINTF_PIECE : SIZE_MAX,
        .sink = sink,
        .st = TETHER_OK,
        .args = args,
        .args_len = args == NULL ? 0 : args_len,
        .strs = strs,
        .nstrs = strs == NULL ? 0 : nstrs,
    };
    if (fmt == NULL)
        fmt_len = 0;
    format_run(&s, fmt, fmt_len);
    struct pscan_pos pos;
    if (s.again) {
        /* Maybe numbered arguments, or a piece for the sink: again, from the start, with each
         * argument's place. */
        out->len = s.base;
        pscan_pos_scan(fmt, fmt_len, &pos);
        s = (struct fmt_state){
            .out = out,
            .base = out->len,
            .limit = s.limit,
            .sink = sink,
            .full = true,
            .st = TETHER_OK,
            .args = s.args,
            .args_len = s.args_len,
            .strs = s.strs,
            .nstrs = s.nstrs,
            .pos = pos.numbered ? &pos : NULL,
        };
        format_run(&s, fmt, fmt_len);
    }
    if (s.st == TETHER_OK && nconv_p != NULL)
        *nconv_p = s.nconv;
    return s.st;
}

/* Takes n bytes off the front of a message; false if fewer remain. */
static bool msg_take(const unsigned char **p, size_t *left, size_t n, const unsigned char **out)
{
    if (n > *left)
        return false;
    *out = *p;
    *p += n;
    *left -= n;
    return true;
}

tether_status_t rpc_printf_format_msg(struct rpc_outbuf *out, const void *msg, size_t msg_len,
                                      const struct rpc_printf_sink *sink, uint32_t *stream_p,
                                      uint32_t *nconv_p)
{
    struct tether_rpc_printf_hdr hdr;
    if (msg == NULL || msg_len < sizeof hdr)
        return TETHER_ERR_INVALID;
    memcpy(&hdr, msg, sizeof hdr);
    const unsigned char *p = (const unsigned char *)msg + sizeof hdr;
    size_t left = msg_len - sizeof hdr;

    const unsigned char *fmt = p;
    size_t fmt_len = hdr.fmt_len < left ? hdr.fmt_len : left;
    msg_take(&p, &left, fmt_len, &fmt);
    const unsigned char *args = p;
    size_t args_len = hdr.args_len < left ? hdr.args_len : left;
    msg_take(&p, &left, args_len, &args);

    /* Each record takes at least 4 bytes, which bounds the array. */
    size_t nstrs = hdr.nstrs;
    if (nstrs > left / 4)
        nstrs = left / 4;
    struct rpc_printf_str small[16] = {{0}};
    struct rpc_printf_str *strs = small;
    if (nstrs > sizeof small / sizeof *small) {
        strs = calloc(nstrs, sizeof *strs);
        if (strs == NULL)
            return TETHER_ERR_NO_MEMORY;
    }
    size_t got = 0;
    for (; got < nstrs; got++) {
        const unsigned char *lenp;
        const unsigned char *bytes;
        uint32_t len;
        if (!msg_take(&p, &left, 4, &lenp))
            break;
        memcpy(&len, lenp, 4);
        if (len == TETHER_RPC_PRINTF_NULL) {
            strs[got].data = NULL;
            strs[got].len = 0;
            continue;
        }
        if (!msg_take(&p, &left, len, &bytes))
            break;
        strs[got].data = (const char *)bytes;
        strs[got].len = len;
    }
    tether_status_t st = rpc_printf_format(out, (const char *)fmt, fmt_len, args, args_len, strs,
                                           got, sink, nconv_p);
    if (strs != small)
        free(strs);
    if (st == TETHER_OK && stream_p != NULL)
        *stream_p = hdr.stream;
    return st;
}
