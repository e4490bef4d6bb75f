/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/printf_scan.h - the one printf format scanner, shared by the
 * device client (which must find the %s pointers and the size of the packed
 * argument buffer) and the host formatter (which must find every conversion
 * and the bytes of its argument).  Both sides run this same code on the same
 * format bytes, so they cannot disagree on where an argument lies.
 *
 * Freestanding C11: no libc, no allocation; it compiles unchanged for the
 * host and, inside `#pragma omp declare target`, for nvptx64 and amdgcn.
 *
 * Packed argument buffer (what clang-16's OpenMP printf lowering builds for
 * `__llvm_omp_vprintf(fmt, buf, size)`, checked in the IR it emits for
 * nvptx64 and amdgcn): an LLVM struct of the arguments in call order, after
 * the default argument promotions, each at its natural alignment from the
 * start of the buffer.  So char/short/int -> 4 bytes aligned 4, float/double
 * -> double (8/8), long/long long/size_t/intmax_t/ptrdiff_t/pointers -> 8/8.
 * A `*` width or precision is an int (4/4) placed before its value.  long
 * double (x86_64 offload and amdgcn, which use the x87 format; nvptx64 has
 * none) is 16 bytes aligned 16.
 *
 * What each conversion takes is decided from the format alone, the way glibc
 * decides it, so that a conversion this code does not print still takes the
 * argument the caller passed for it and the arguments after it stay in place:
 *   - every `*` takes an int, whatever the conversion;
 *   - d i u o x X b B take an int, or a 64-bit integer with l ll L q j z Z t;
 *     f F e E g G a A take a double, or a long double with L ll q;
 *     c C take an int (wint_t), s a string (a wide string with l ll j z Z t,
 *     and S), p and n a pointer, whatever the length modifier;
 *   - "%...%" prints '%'; any other conversion character (m, y, ...) and a
 *     format that ends inside a specification take nothing (PSCAN_ARG_BAD).
 *
 * Numbered arguments (POSIX "%n$" and "*m$"): argument n is the n-th in the
 * call, so its offset follows from the sizes of arguments 1..n-1, which only
 * the whole format tells (pscan_pos_scan).  As POSIX requires, such a format
 * numbers every argument it takes (%% and conversions that take nothing
 * excepted) and uses every number from 1 to its highest; one that does not,
 * or uses one number for arguments of different sizes or kinds, or a number
 * above PSCAN_POS_MAX, is refused (struct pscan_pos, err) and none of its
 * arguments is read.
 *
 * Invariants: the scanner never reads past `len` bytes nor past the first NUL;
 * numbers in the format saturate at PSCAN_NUM_MAX instead of overflowing.
 */
#ifndef TETHER_PRINTF_SCAN_H
#define TETHER_PRINTF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a conversion takes from the argument buffer. */
enum pscan_arg {
    PSCAN_ARG_NONE = 0, /* "%%": no argument */
    PSCAN_ARG_BAD,      /* unknown conversion or unfinished spec: no argument */
    PSCAN_ARG_I32,      /* int-sized integer, char or wint_t (4 bytes, align 4) */
    PSCAN_ARG_I64,      /* 64-bit integer (8 bytes, align 8) */
    PSCAN_ARG_F64,      /* double (8 bytes, align 8) */
    PSCAN_ARG_F128,     /* long double (16 bytes, align 16) */
    PSCAN_ARG_PTR,      /* pointer printed as a value: %p, %n, wide strings (8/8) */
    PSCAN_ARG_STR,      /* %s: pointer (8/8) plus a string payload */
};

/* Length modifiers ('q' reads as 'L' and 'Z' as 'z', as glibc reads them).  The order matters:
 * pscan_len_64_, pscan_len_long_. */
enum pscan_len {
    PSCAN_LEN_NONE = 0,
    PSCAN_LEN_HH,
    PSCAN_LEN_H,
    PSCAN_LEN_L,
    PSCAN_LEN_LL,
    PSCAN_LEN_Z,
    PSCAN_LEN_J,
    PSCAN_LEN_T,
    PSCAN_LEN_BIG_L,
};

/* Flag bits. */
#define PSCAN_FLAG_MINUS 0x01u
#define PSCAN_FLAG_PLUS 0x02u
#define PSCAN_FLAG_SPACE 0x04u
#define PSCAN_FLAG_HASH 0x08u
#define PSCAN_FLAG_ZERO 0x10u
#define PSCAN_FLAG_GROUP 0x20u /* ' : thousands grouping of the host's locale */
#define PSCAN_FLAG_I18N 0x40u  /* I : the locale's digits (glibc) */

/* Width/precision sentinels and the saturation point of written numbers. */
#define PSCAN_NONE (-1)
#define PSCAN_STAR (-2)
#define PSCAN_NUM_MAX 0x7fffffff

/* Highest argument number a numbered format may use. */
#define PSCAN_POS_MAX 128u

/* One conversion specification, as found in the format. */
struct pscan_spec {
    size_t start;       /* offset of the '%' */
    size_t end;         /* offset one past the conversion character */
    unsigned flags;     /* PSCAN_FLAG_* */
    int32_t width;      /* >= 0, PSCAN_NONE or PSCAN_STAR */
    int32_t precision;  /* >= 0, PSCAN_NONE or PSCAN_STAR */
    uint32_t pos;       /* n of "%n$" (>= 1), 0 if unnumbered */
    uint32_t width_pos; /* m of a "*m$" width, 0 otherwise */
    uint32_t prec_pos;  /* m of a ".*m$" precision, 0 otherwise */
    enum pscan_len length;
    char conv;          /* conversion character, 0 if the format ended inside the spec */
    enum pscan_arg arg; /* what the conversion takes besides its '*' ints */
};

/* Bytes and alignment of an argument class in the packed buffer. */
static inline size_t pscan_arg_size(enum pscan_arg arg)
{
    switch (arg) {
    case PSCAN_ARG_I32:
        return 4;
    case PSCAN_ARG_I64:
    case PSCAN_ARG_F64:
    case PSCAN_ARG_PTR:
    case PSCAN_ARG_STR:
        return 8;
    case PSCAN_ARG_F128:
        return 16;
    case PSCAN_ARG_NONE:
    case PSCAN_ARG_BAD:
        break;
    }
    return 0;
}

/* Offset of the next argument of class `arg` at or after `off`. */
static inline size_t pscan_align(size_t off, enum pscan_arg arg)
{
    size_t a = pscan_arg_size(arg);
    if (a == 0)
        return off;
    return (off + a - 1) & ~(a - 1);
}

/* Does the conversion take a value (besides its '*' ints)? */
static inline bool pscan_takes_value(const struct pscan_spec *spec)
{
    return spec->arg != PSCAN_ARG_NONE && spec->arg != PSCAN_ARG_BAD;
}

/* Does the specification number any argument ("%n$", "*m$")? */
static inline bool pscan_numbered(const struct pscan_spec *spec)
{
    return (spec->pos | spec->width_pos | spec->prec_pos) != 0;
}

/* Does the conversion take any argument at all? */
static inline bool pscan_takes_any(const struct pscan_spec *spec)
{
    return pscan_takes_value(spec) || spec->width == PSCAN_STAR || spec->precision == PSCAN_STAR;
}

static inline bool pscan_at_(const char *fmt, size_t len, size_t i)
{
    return i < len && fmt[i] != '\0';
}

static inline bool pscan_digit_(const char *fmt, size_t len, size_t i)
{
    return pscan_at_(fmt, len, i) && fmt[i] >= '0' && fmt[i] <= '9';
}

static inline int32_t pscan_number_(const char *fmt, size_t len, size_t *i)
{
    int32_t v = 0;
    while (pscan_digit_(fmt, len, *i)) {
        int32_t d = fmt[*i] - '0';
        v = v > (PSCAN_NUM_MAX - d) / 10 ? PSCAN_NUM_MAX : v * 10 + d;
        (*i)++;
    }
    return v;
}

/* An argument number "n$" at *i: returns n and moves past it, or returns 0 and leaves *i alone
 * (digits without '$', or "0$", are not one). */
static inline uint32_t pscan_argnum_(const char *fmt, size_t len, size_t *i)
{
    size_t j = *i;
    int32_t n = pscan_number_(fmt, len, &j);
    if (n == 0 || j == *i || !pscan_at_(fmt, len, j) || fmt[j] != '$')
        return 0;
    *i = j + 1;
    return (uint32_t)n;
}

/* Length modifiers that make an integer 64 bits: l ll z j t L (the enum's order). */
static inline bool pscan_len_64_(enum pscan_len len)
{
    return len >= PSCAN_LEN_L;
}

/* glibc's 'long' modifiers, which make c and s wide: l ll z j t (not L). */
static inline bool pscan_len_long_(enum pscan_len len)
{
    return len >= PSCAN_LEN_L && len <= PSCAN_LEN_T;
}

/* The argument class of a complete (conv, length) pair; see the opening comment. */
static inline enum pscan_arg pscan_classify_(char conv, enum pscan_len len)
{
    switch (conv) {
    case 'd':
    case 'i':
    case 'u':
    case 'o':
    case 'x':
    case 'X':
    case 'b':
    case 'B':
        return pscan_len_64_(len) ? PSCAN_ARG_I64 : PSCAN_ARG_I32;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        return len == PSCAN_LEN_BIG_L || len == PSCAN_LEN_LL ? PSCAN_ARG_F128 : PSCAN_ARG_F64;
    case 'c':
    case 'C':
        return PSCAN_ARG_I32;
    case 's':
        return pscan_len_long_(len) ? PSCAN_ARG_PTR : PSCAN_ARG_STR;
    case 'S':
    case 'p':
    case 'n':
        return PSCAN_ARG_PTR;
    default:
        break;
    }
    return PSCAN_ARG_BAD;
}

/* Is the conversion wide (wint_t or wchar_t *)?  %lc %C %ls %S, and glibc's other 'long'
 * modifiers with c and s. */
static inline bool pscan_wide(const struct pscan_spec *spec)
{
    if (spec->conv == 'C' || spec->conv == 'S')
        return true;
    return (spec->conv == 'c' || spec->conv == 's') && pscan_len_long_(spec->length);
}

/* pscan_next, or with `numbered` false pscan_next_plain. */
__attribute__((always_inline)) static inline bool
pscan_next_(const char *fmt, size_t len, size_t *pos, struct pscan_spec *spec, bool numbered)
{
    size_t i = *pos;
    while (pscan_at_(fmt, len, i) && fmt[i] != '%')
        i++;
    if (!pscan_at_(fmt, len, i))
        return false;

    spec->start = i++;
    spec->flags = 0;
    spec->width = PSCAN_NONE;
    spec->precision = PSCAN_NONE;
    spec->pos = 0;
    spec->width_pos = 0;
    spec->prec_pos = 0;
    spec->length = PSCAN_LEN_NONE;
    spec->conv = 0;
    spec->arg = PSCAN_ARG_BAD;

    if (numbered && pscan_digit_(fmt, len, i))
        spec->pos = pscan_argnum_(fmt, len, &i);
    for (; pscan_at_(fmt, len, i); i++) {
        unsigned f = 0;
        switch (fmt[i]) {
        case '-':
            f = PSCAN_FLAG_MINUS;
            break;
        case '+':
            f = PSCAN_FLAG_PLUS;
            break;
        case ' ':
            f = PSCAN_FLAG_SPACE;
            break;
        case '#':
            f = PSCAN_FLAG_HASH;
            break;
        case '0':
            f = PSCAN_FLAG_ZERO;
            break;
        case '\'':
            f = PSCAN_FLAG_GROUP;
            break;
        case 'I':
            f = PSCAN_FLAG_I18N;
            break;
        default:
            break;
        }
        if (f == 0)
            break;
        spec->flags |= f;
    }
    if (pscan_at_(fmt, len, i) && fmt[i] == '*') {
        spec->width = PSCAN_STAR;
        i++;
        if (numbered)
            spec->width_pos = pscan_argnum_(fmt, len, &i);
    } else if (pscan_digit_(fmt, len, i)) {
        spec->width = pscan_number_(fmt, len, &i);
    }
    if (pscan_at_(fmt, len, i) && fmt[i] == '.') {
        i++;
        if (pscan_at_(fmt, len, i) && fmt[i] == '*') {
            spec->precision = PSCAN_STAR;
            i++;
            if (numbered)
                spec->prec_pos = pscan_argnum_(fmt, len, &i);
        } else {
            spec->precision = pscan_number_(fmt, len, &i);
        }
    }
    if (pscan_at_(fmt, len, i)) {
        switch (fmt[i]) {
        case 'h':
            spec->length = PSCAN_LEN_H;
            if (pscan_at_(fmt, len, i + 1) && fmt[i + 1] == 'h') {
                spec->length = PSCAN_LEN_HH;
                i++;
            }
            i++;
            break;
        case 'l':
            spec->length = PSCAN_LEN_L;
            if (pscan_at_(fmt, len, i + 1) && fmt[i + 1] == 'l') {
                spec->length = PSCAN_LEN_LL;
                i++;
            }
            i++;
            break;
        case 'z':
        case 'Z':
            spec->length = PSCAN_LEN_Z;
            i++;
            break;
        case 'j':
            spec->length = PSCAN_LEN_J;
            i++;
            break;
        case 't':
            spec->length = PSCAN_LEN_T;
            i++;
            break;
        case 'L':
        case 'q':
            spec->length = PSCAN_LEN_BIG_L;
            i++;
            break;
        default:
            break;
        }
    }
    if (!pscan_at_(fmt, len, i)) {
        /* The format ended inside the specification. */
        spec->end = i;
        *pos = i;
        return true;
    }
    spec->conv = fmt[i++];
    spec->end = i;
    *pos = i;
    spec->arg = spec->conv == '%' ? PSCAN_ARG_NONE : pscan_classify_(spec->conv, spec->length);
    return true;
}

/*
 * Finds the next conversion at or after *pos in the first `len` bytes of
 * `fmt` (pass SIZE_MAX for a NUL-terminated format).  Returns false at the end
 * of the format.  On true, *spec describes the conversion and *pos is set to
 * spec->end.  Literal text lies between the previous end and spec->start.
 */
static inline bool pscan_next(const char *fmt, size_t len, size_t *pos, struct pscan_spec *spec)
{
    return pscan_next_(fmt, len, pos, spec, true);
}

/*
 * pscan_next without argument numbers, for the walk of ordinary formats (less code, fewer
 * registers on a GPU).  It reads every conversion as pscan_next does, except one that numbers
 * an argument, which it takes for a conversion character '$' or a digit (pscan_maybe_numbered):
 * walk such a format again with pscan_next.
 */
static inline bool pscan_next_plain(const char *fmt, size_t len, size_t *pos,
                                    struct pscan_spec *spec)
{
    return pscan_next_(fmt, len, pos, spec, false);
}

/* Might pscan_next read this conversion of pscan_next_plain differently ("%1$d" reads as a '$'
 * conversion, "%*1$d" and "%.*1$d" as a '1' one)? */
static inline bool pscan_maybe_numbered(const struct pscan_spec *spec)
{
    return spec->conv == '$' || (spec->conv >= '0' && spec->conv <= '9');
}

/* ---- numbered arguments ---------------------------------------------------------------- */

/* Why a numbered format is refused. */
enum pscan_pos_err {
    PSCAN_POS_OK = 0,
    PSCAN_POS_MIXED,    /* an unnumbered conversion or '*' takes an argument too */
    PSCAN_POS_UNUSED,   /* err_arg is below the highest number and never used */
    PSCAN_POS_CONFLICT, /* err_arg is used for arguments of different sizes or kinds */
    PSCAN_POS_RANGE,    /* err_arg is above PSCAN_POS_MAX */
};

/* The arguments of a numbered format. */
struct pscan_pos {
    bool numbered;               /* the format numbers an argument at all */
    uint32_t nargs;              /* the highest argument number used */
    enum pscan_pos_err err;      /* PSCAN_POS_OK, or why the format is refused */
    uint32_t err_arg;            /* the argument number err names */
    uint8_t kind[PSCAN_POS_MAX]; /* enum pscan_arg of argument k + 1, as first used */
};

/* The register class and size an argument is passed in: I32, I64 (also pointers), F64, F128. */
static inline enum pscan_arg pscan_slot_(enum pscan_arg arg)
{
    return arg == PSCAN_ARG_PTR || arg == PSCAN_ARG_STR ? PSCAN_ARG_I64 : arg;
}

static inline void pscan_pos_use_(struct pscan_pos *p, uint32_t k, enum pscan_arg arg)
{
    if (p->err != PSCAN_POS_OK)
        return;
    if (k == 0) {
        p->err = PSCAN_POS_MIXED;
    } else if (k > PSCAN_POS_MAX) {
        p->err = PSCAN_POS_RANGE;
        p->err_arg = k;
    } else if (p->kind[k - 1] == 0) {
        p->kind[k - 1] = (uint8_t)arg;
        p->nargs = k > p->nargs ? k : p->nargs;
    } else if (pscan_slot_((enum pscan_arg)p->kind[k - 1]) != pscan_slot_(arg)) {
        p->err = PSCAN_POS_CONFLICT;
        p->err_arg = k;
    }
}

/* Fills *p from a format (as pscan_next reads it: `len` bytes at most).  If p->numbered comes
 * back false, nothing else in *p applies: the arguments come in order. */
static inline void pscan_pos_scan(const char *fmt, size_t len, struct pscan_pos *p)
{
    p->numbered = false;
    p->nargs = 0;
    p->err = PSCAN_POS_OK;
    p->err_arg = 0;
    for (uint32_t k = 0; k < PSCAN_POS_MAX; k++)
        p->kind[k] = 0;
    size_t at = 0;
    struct pscan_spec spec;
    while (pscan_next(fmt, len, &at, &spec)) {
        p->numbered = p->numbered || pscan_numbered(&spec);
        if (spec.width == PSCAN_STAR)
            pscan_pos_use_(p, spec.width_pos, PSCAN_ARG_I32);
        if (spec.precision == PSCAN_STAR)
            pscan_pos_use_(p, spec.prec_pos, PSCAN_ARG_I32);
        if (pscan_takes_value(&spec))
            pscan_pos_use_(p, spec.pos, spec.arg);
    }
    for (uint32_t k = 0; p->err == PSCAN_POS_OK && k < p->nargs; k++) {
        if (p->kind[k] == 0) {
            p->err = PSCAN_POS_UNUSED;
            p->err_arg = k + 1;
        }
    }
}

/* Offset of argument k (1..p->nargs) in the packed buffer of a format p accepts; with
 * k = p->nargs + 1, the size of the whole buffer. */
static inline size_t pscan_pos_offset(const struct pscan_pos *p, uint32_t k)
{
    size_t off = 0;
    for (uint32_t j = 1; j < k && j <= p->nargs; j++) {
        enum pscan_arg a = (enum pscan_arg)p->kind[j - 1];
        off = pscan_align(off, a) + pscan_arg_size(a);
    }
    return k >= 1 && k <= p->nargs ? pscan_align(off, (enum pscan_arg)p->kind[k - 1]) : off;
}

#endif /* TETHER_PRINTF_SCAN_H */
