/*
 * rpc/device/printf_scan.h - the one printf format scanner, shared by the
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
 * nvptx64 and amdgcn): an LLVM struct of the arguments after the default
 * argument promotions, each at its natural alignment from the start of the
 * buffer.  So char/short/int -> 4 bytes aligned 4, float/double -> double
 * (8/8), long/long long/size_t/intmax_t/ptrdiff_t/pointers -> 8/8.  A `*`
 * width or precision is an int (4/4) placed before its value.  long double
 * (only possible in host-offload images) is 16 bytes aligned 16.
 *
 * Invariants: the scanner never reads past `len` bytes nor past the first NUL;
 * numbers in the format saturate at PSCAN_NUM_MAX instead of overflowing; a
 * conversion it does not understand is reported as PSCAN_ARG_BAD and takes
 * no argument, so scanning continues after it.
 */
#ifndef TETHER_PRINTF_SCAN_H
#define TETHER_PRINTF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a conversion takes from the argument buffer. */
enum pscan_arg {
    PSCAN_ARG_NONE = 0, /* "%%": no argument */
    PSCAN_ARG_BAD,      /* malformed or unsupported: no argument */
    PSCAN_ARG_I32,      /* int-sized integer or char (4 bytes, align 4) */
    PSCAN_ARG_I64,      /* 64-bit integer (8 bytes, align 8) */
    PSCAN_ARG_F64,      /* double (8 bytes, align 8) */
    PSCAN_ARG_F128,     /* long double (16 bytes, align 16) */
    PSCAN_ARG_PTR,      /* pointer printed as a value: %p, %n, %ls (8/8) */
    PSCAN_ARG_STR,      /* %s: pointer (8/8) plus a string payload */
};

/* Length modifiers. */
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

/* Width/precision sentinels and the saturation point of written numbers. */
#define PSCAN_NONE (-1)
#define PSCAN_STAR (-2)
#define PSCAN_NUM_MAX 0x7fffffff

/* One conversion specification, as found in the format. */
struct pscan_spec {
    size_t start;      /* offset of the '%' */
    size_t end;        /* offset one past the conversion character */
    unsigned flags;    /* PSCAN_FLAG_* */
    int32_t width;     /* >= 0, PSCAN_NONE or PSCAN_STAR */
    int32_t precision; /* >= 0, PSCAN_NONE or PSCAN_STAR */
    enum pscan_len length;
    char conv;          /* conversion character, 0 if the format ended inside the spec */
    enum pscan_arg arg; /* what the conversion consumes */
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

static inline bool pscan_at_(const char *fmt, size_t len, size_t i)
{
    return i < len && fmt[i] != '\0';
}

static inline int32_t pscan_number_(const char *fmt, size_t len, size_t *i)
{
    int32_t v = 0;
    while (pscan_at_(fmt, len, *i) && fmt[*i] >= '0' && fmt[*i] <= '9') {
        int32_t d = fmt[*i] - '0';
        v = v > (PSCAN_NUM_MAX - d) / 10 ? PSCAN_NUM_MAX : v * 10 + d;
        (*i)++;
    }
    return v;
}

/* The argument class of a complete (conv, length) pair. */
static inline enum pscan_arg pscan_classify_(char conv, enum pscan_len len)
{
    switch (conv) {
    case 'd':
    case 'i':
    case 'u':
    case 'o':
    case 'x':
    case 'X':
        switch (len) {
        case PSCAN_LEN_NONE:
        case PSCAN_LEN_HH:
        case PSCAN_LEN_H:
            return PSCAN_ARG_I32;
        case PSCAN_LEN_L:
        case PSCAN_LEN_LL:
        case PSCAN_LEN_Z:
        case PSCAN_LEN_J:
        case PSCAN_LEN_T:
            return PSCAN_ARG_I64;
        case PSCAN_LEN_BIG_L:
            break;
        }
        return PSCAN_ARG_BAD;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        if (len == PSCAN_LEN_NONE || len == PSCAN_LEN_L)
            return PSCAN_ARG_F64;
        return len == PSCAN_LEN_BIG_L ? PSCAN_ARG_F128 : PSCAN_ARG_BAD;
    case 'c':
        return len == PSCAN_LEN_NONE || len == PSCAN_LEN_L ? PSCAN_ARG_I32 : PSCAN_ARG_BAD;
    case 's':
        if (len == PSCAN_LEN_NONE)
            return PSCAN_ARG_STR;
        return len == PSCAN_LEN_L ? PSCAN_ARG_PTR : PSCAN_ARG_BAD;
    case 'p':
        return len == PSCAN_LEN_NONE ? PSCAN_ARG_PTR : PSCAN_ARG_BAD;
    case 'n':
        return len == PSCAN_LEN_BIG_L ? PSCAN_ARG_BAD : PSCAN_ARG_PTR;
    default:
        break;
    }
    return PSCAN_ARG_BAD;
}

/*
 * Finds the next conversion at or after *pos in the first `len` bytes of
 * `fmt` (pass SIZE_MAX for a NUL-terminated format).  Returns false at the end
 * of the format.  On true, *spec describes the conversion and *pos is set to
 * spec->end.  Literal text lies between the previous end and spec->start.
 */
static inline bool pscan_next(const char *fmt, size_t len, size_t *pos, struct pscan_spec *spec)
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
    spec->length = PSCAN_LEN_NONE;
    spec->conv = 0;
    spec->arg = PSCAN_ARG_BAD;

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
    } else if (pscan_at_(fmt, len, i) && fmt[i] >= '1' && fmt[i] <= '9') {
        spec->width = pscan_number_(fmt, len, &i);
    }
    if (pscan_at_(fmt, len, i) && fmt[i] == '.') {
        i++;
        if (pscan_at_(fmt, len, i) && fmt[i] == '*') {
            spec->precision = PSCAN_STAR;
            i++;
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
    if (spec->conv == '%') {
        bool plain = spec->end - spec->start == 2;
        spec->arg = plain ? PSCAN_ARG_NONE : PSCAN_ARG_BAD;
        if (!plain) {
            /* "%5%" and the like: undefined in C; take nothing. */
            spec->width = spec->width == PSCAN_STAR ? PSCAN_NONE : spec->width;
            spec->precision = spec->precision == PSCAN_STAR ? PSCAN_NONE : spec->precision;
        }
        return true;
    }
    spec->arg = pscan_classify_(spec->conv, spec->length);
    if (spec->arg == PSCAN_ARG_BAD) {
        /* A bad conversion consumes nothing, not even its '*' arguments. */
        spec->width = spec->width == PSCAN_STAR ? PSCAN_NONE : spec->width;
        spec->precision = spec->precision == PSCAN_STAR ? PSCAN_NONE : spec->precision;
    }
    return true;
}

#endif /* TETHER_PRINTF_SCAN_H */
