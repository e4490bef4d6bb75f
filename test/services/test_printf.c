/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/test_printf.c - device printf against the host's own printf.
 *
 * The device library's printf (rpc/device/device_stdio.c, compiled into this program for the
 * host: the real packer, not a copy) builds each call's message as it does on a device; the call
 * layer below takes the place of the ports, collects the message in packet-sized pieces of
 * varying length, and hands it to the host formatter (rpc/server/rpc_printf.c).  The text must
 * equal vsnprintf's and the return value its count: every common conversion with flags
 * (' included), widths, precisions, `*` and length modifiers (~200,000 formats), 13 to 100 %s in
 * one call, argument buffers over 1 KiB and over one packet, numbered arguments, conversions
 * glibc reads oddly and bad ones followed by good ones.  The CUDA entry point is checked with
 * argument buffers laid out the way clang-16 lays them out, and the host formatter alone with
 * garbage input (every marker).
 *
 *   test_printf [locale]   with a locale name: run everything under it (LC_ALL), and check
 *                          that ' groups digits; exits 77 (skip) if the locale is missing
 */
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "../../rpc/device/device_internal.h"
#include "../../rpc/printf_scan.h"
#include "../../rpc/server/rpc_printf.h"
#include "tcheck.h"

/* ---- the call layer of the device library, for its printf ------------------------------- */

static struct {
    bool detached;                    /* no server: calls fail */
    int calls;                        /* calls made */
    struct tether_rpc_printf_hdr hdr; /* header of the last message */
    size_t len;                       /* length of the last message */
    struct rpc_outbuf text;           /* what the host formatted, all calls */
    uint32_t nconv;                   /* the host's count of arguments used, last call */
    uint64_t chunk;                   /* state of the piece-length generator */
} layer;

/* 1..64 bytes, as a packet's worth of one piece may be. */
static uint64_t next_chunk(void)
{
    layer.chunk = layer.chunk * 6364136223846793005ull + 1442695040888963407ull;
    return 1 + (layer.chunk >> 33) % 64;
}

int64_t tether_device_call(uint32_t opcode, const struct dev_iov *iov, uint32_t niov, bool answer,
                           void *dst, uint64_t cap)
{
    (void)dst;
    (void)cap;
    if (layer.detached)
        return -(int64_t)TETHER_RPC_CALL_NO_SERVER;
    CHECKF(opcode == TETHER_RPC_OP_PRINTF && !answer, "call %u answer %d", opcode, answer);
    size_t len = 0;
    for (uint32_t i = 0; i < niov; i++)
        len += iov[i].len & ~DEV_IOV_PRINTF_STRS;
    unsigned char *msg = malloc(len + 1);
    size_t at = 0;
    for (uint32_t i = 0; i < niov; i++) {
        uint64_t n = iov[i].len & ~DEV_IOV_PRINTF_STRS;
        if (iov[i].len & DEV_IOV_PRINTF_STRS) {
            for (uint64_t k; n > 0; n -= k, at += k) {
                k = next_chunk();
                k = k < n ? k : n;
                tether_device_printf_strs((void *)(uintptr_t)iov[i].base, msg + at, k);
            }
        } else if (n > 0) {
            memcpy(msg + at, iov[i].base, n);
            at += n;
        }
    }
    layer.calls++;
    layer.len = len;
    memcpy(&layer.hdr, msg, len < sizeof layer.hdr ? len : sizeof layer.hdr);
    tether_status_t st = rpc_printf_format_msg(&layer.text, msg, len, NULL, NULL, &layer.nconv);
    CHECKF(st == TETHER_OK, "format_msg: status %d", (int)st);
    free(msg);
    return 0;
}

/* The call layer's entry for calls whose %s records are made while they are sent: as above. */
bool tether_device_call_printf(const struct dev_iov *iov, uint32_t niov)
{
    return tether_device_call(TETHER_RPC_OP_PRINTF, iov, niov, false, NULL, 0) == 0;
}

/* ---- comparisons ------------------------------------------------------------------------- */

/* printf through the device library; its text in layer.text (from the start). */
static int dev_vprintf(const char *fmt, va_list ap)
{
    layer.text.len = 0;
    layer.calls = 0;
    return tether_device_vprintf(TETHER_RPC_STDOUT, fmt, ap);
}

static bool text_is(const char *want, size_t n)
{
    return layer.text.len == n && (n == 0 || memcmp(layer.text.data, want, n) == 0);
}

/* Formats with the host's printf and the device library; they must agree, the return value
 * too, and one call must carry it. */
static void check_va(int line, const char *fmt, va_list ap)
{
    static char expect[1 << 20];
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(expect, sizeof expect, fmt, aq);
    va_end(aq);
    CHECKF(n >= 0 && (size_t)n < sizeof expect, "line %d: host printf gave %d", line, n);
    if (n < 0 || (size_t)n >= sizeof expect)
        return;
    int r = dev_vprintf(fmt, ap);
    CHECKF(r == n && layer.calls == 1, "line %d: fmt \"%.200s\": returned %d (host %d), %d calls",
           line, fmt, r, n, layer.calls);
    CHECKF(text_is(expect, (size_t)n),
           "line %d: fmt \"%.200s\": host \"%.300s\" (%d) vs ours \"%.*s\" (%zu)", line, fmt,
           expect, n, (int)(layer.text.len < 300 ? layer.text.len : 300),
           layer.text.data ? layer.text.data : "", layer.text.len);
}

__attribute__((format(printf, 2, 3))) static void check_at(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    check_va(line, fmt, ap);
    va_end(ap);
}
#define check(...) check_at(__LINE__, __VA_ARGS__)

/* The same, for formats the compiler's format check rejects but glibc prints (and positional
 * formats built at run time). */
static void check_any_at(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    check_va(line, fmt, ap);
    va_end(ap);
}
#define check_any(...) check_any_at(__LINE__, __VA_ARGS__)

/* printf through the device library must print `want` (markers, where glibc prints otherwise). */
static void dev_expect_at(int line, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = dev_vprintf(fmt, ap);
    va_end(ap);
    /* The return value is libc's count, -1 for a format that ends inside a conversion. */
    CHECKF(layer.calls == 1, "line %d: returned %d, %d calls", line, r, layer.calls);
    CHECKF(text_is(want, strlen(want)), "line %d: fmt \"%s\": want \"%s\" got \"%.*s\"", line, fmt,
           want, (int)layer.text.len, layer.text.data ? layer.text.data : "");
}
#define dev_expect(...) dev_expect_at(__LINE__, __VA_ARGS__)

/* __llvm_omp_vprintf(fmt, buffer as clang packs it, its size) as tether/device_libc.h serves it
 * on NVIDIA, through the device library, must print `want` and send exactly `args_len` argument
 * bytes. */
static void packed_expect_at(int line, const char *want, const char *fmt, const void *args,
                             size_t args_len)
{
    layer.text.len = 0;
    layer.calls = 0;
    int r = tether_device_printf_packed(TETHER_RPC_STDOUT, fmt, args, args_len);
    CHECKF(r >= 0 && layer.calls == 1 && layer.hdr.args_len == args_len,
           "line %d: returned %d, %d calls, %u argument bytes (want %zu)", line, r, layer.calls,
           layer.hdr.args_len, args_len);
    CHECKF(text_is(want, strlen(want)), "line %d: fmt \"%s\": want \"%s\" got \"%.*s\"", line, fmt,
           want, (int)layer.text.len, layer.text.data ? layer.text.data : "");
}
#define packed_expect(want, fmt, args, args_len)                                                   \
    packed_expect_at(__LINE__, want, fmt, args, args_len)

/* The host formatter alone on raw inputs must print `want`. */
static void expect_at(int line, const char *want, const char *fmt, size_t fmt_len, const void *args,
                      size_t args_len, const struct rpc_printf_str *strs, size_t nstrs)
{
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    tether_status_t st =
        rpc_printf_format(&out, fmt, fmt_len, args, args_len, strs, nstrs, NULL, NULL);
    CHECKF(st == TETHER_OK, "line %d: status %d", line, (int)st);
    CHECKF(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
           "line %d: want \"%s\" got \"%.*s\"", line, want, (int)out.len, out.data ? out.data : "");
    rpc_outbuf_free(&out);
}
#define expect(want, fmt, args, args_len, strs, nstrs)                                             \
    expect_at(__LINE__, want, fmt, strlen(fmt), args, args_len, strs, nstrs)

/* Argument lists longer than anyone writes out: A10(a, b) is a[b] .. a[b + 9]. */
#define A10(a, b)                                                                                  \
    (a)[(b)], (a)[(b) + 1], (a)[(b) + 2], (a)[(b) + 3], (a)[(b) + 4], (a)[(b) + 5], (a)[(b) + 6],  \
        (a)[(b) + 7], (a)[(b) + 8], (a)[(b) + 9]
#define A100(a)                                                                                    \
    A10(a, 0), A10(a, 10), A10(a, 20), A10(a, 30), A10(a, 40), A10(a, 50), A10(a, 60), A10(a, 70), \
        A10(a, 80), A10(a, 90)

/* ---- cases -------------------------------------------------------------------------------- */

static void test_basic(void)
{
    check("plain text, no conversions");
    check("%%");
    check("100%% sure");
    check("%d %i %u %o %x %X", -42, 42, 42u, 42u, 0xbeefu, 0xbeefu);
    check("%c%c%c", 'a', 'b', 0x7e);
    check("%s and %s", "first", "second");
    check("%s", "");
    check("%p %p", (void *)0x1234, (void *)0);
    check("%f %F %e %E %g %G %a %A", 3.25, -2.5, 1e300, 1e-300, 0.0001, 123456789.0, 1.0, -0.5);
    check("%f %f %f %e", 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, -0.0);
    check("%.0f %.20f %.3e %.0e", 2.5, 0.1, 12345.678, 9.5);
    check("%Lf %Le %Lg %La", 1.5L, LDBL_MAX, LDBL_MIN, 3.0L);
    check("%hhd %hhu %hd %hu", 300, 300, 70000, 70000);
    check("%ld %lu %lld %llu", LONG_MIN, ULONG_MAX, LLONG_MIN, ULLONG_MAX);
    check("%zd %zu %jd %ju %td", (ssize_t)-5, SIZE_MAX, INTMAX_MIN, UINTMAX_MAX, (ptrdiff_t)-7);
    check("%lc", (wint_t)'w');
    check("%d %d", INT_MIN, INT_MAX);
    check("%lf %le", 2.0, 3.0);
    check_any("%b %B %#b %#B %.10b %hhb %lb", 5u, 6u, 5u, 0u, 3u, 1023u, ~0ul);
    check_any("[%s] [%.3s] [%8s]", (char *)NULL, (char *)NULL, (char *)NULL);
    /* No server: nothing is sent and printf says so. */
    layer.detached = true;
    layer.calls = 0;
    int r = tether_device_printf_packed(TETHER_RPC_STDOUT, "%d", &r, 4);
    CHECKF(r == -1 && layer.calls == 0, "detached printf returned %d", r);
    layer.detached = false;
}

static void test_width_precision(void)
{
    check("[%5d] [%-5d] [%05d] [%+d] [% d] [%+05d]", 42, 42, 42, 42, 42, -42);
    check("[%.3d] [%8.3d] [%-8.3d] [%8.3d] [%.0d]", 7, 7, 7, 7, 0);
    check("[%#o] [%#x] [%#X] [%#.0o] [%#x]", 8u, 255u, 255u, 0u, 0u);
    check("[%10s] [%-10s] [%.2s] [%10.2s] [%.0s]", "abc", "abc", "abc", "abc", "abc");
    check("[%*d] [%-*d] [%.*d] [%*.*d]", 6, 1, 6, 2, 4, 3, 8, 3, 4);
    check("[%*d] [%.*f] [%.*s]", -6, 1, -1, 2.5, -3, "xyz");
    check("[%*s] [%*.*s]", 12, "star", -9, 2, "star");
    check("[%10c] [%-3c]", 'x', 'y');
    check("[%20p] [%-20p]", (void *)0xabc, (void *)0xabc);
    check("[%#g] [%#.0f] [%#e] [%#a]", 1.0, 3.0, 2.0, 4.0);
    check("[%+.3e] [% 12.4f] [%-12.4g] [%012.3f] [%+012.3e]", 1.5, -2.25, 1e-5, 3.14159, -1e10);
}

/* CUDA's vprintf: arguments laid out as clang-16 lays them out (an LLVM struct, natural
 * alignment), the buffer's size found from the format. */
static void test_clang_layout(void)
{
    /* printf("%c %hd %f %d %zu %lld %s %p %f\n", c, s, f, 5, z, ll, "str", p, 2.0)
     * becomes %printf_args = { i32, i32, double, i32, i64, i64, ptr, ptr, double }. */
    static const char str[] = "str";
    struct {
        int32_t c;
        int32_t s;
        double f;
        int32_t d;
        uint64_t z;
        int64_t ll;
        uint64_t str;
        uint64_t p;
        double g;
    } a = {'a', 2, 1.5, 5, 3, -4, (uint64_t)(uintptr_t)str, 0xdead0, 2.0};
    _Static_assert(sizeof a == 64, "clang's struct is 64 bytes");
    struct rpc_printf_str payload = {"str", 4};
    char want[128];
    snprintf(want, sizeof want, "%c %hd %f %d %zu %lld %s %p %f\n", 'a', (short)2, 1.5, 5,
             (size_t)3, -4LL, "str", (void *)0xdead0, 2.0);
    expect(want, "%c %hd %f %d %zu %lld %s %p %f\n", &a, sizeof a, &payload, 1);
    packed_expect(want, "%c %hd %f %d %zu %lld %s %p %f\n", &a, sizeof a);

    /* printf("%c%f\n", (char)1, 2.0f) -> { i32, double }, 16 bytes. */
    struct {
        int32_t c;
        double f;
    } b = {'Z', 2.0};
    expect("Z2.000000\n", "%c%f\n", &b, sizeof b, NULL, 0);
    packed_expect("Z2.000000\n", "%c%f\n", &b, sizeof b);

    /* `*` width is an int before its value: { i32, i32, i32 }. */
    int32_t c[3] = {5, 3, 42};
    expect("  042", "%*.*d", c, sizeof c, NULL, 0);
    packed_expect("  042", "%*.*d", c, sizeof c);

    /* Numbered: printf("%3$s %1$.*2$f %1$e\n", 1.5, 2, "x") -> { double, i32, ptr }. */
    struct {
        double v;
        int32_t prec;
        uint64_t s;
    } n = {1.5, 2, (uint64_t)(uintptr_t) "x"};
    packed_expect("x 1.50 1.500000e+00\n", "%3$s %1$.*2$f %1$e\n", &n, sizeof n);

    /* A %s pointer in the buffer is never dereferenced by the host: payloads come separately. */
    uint64_t bogus = 0x1;
    struct rpc_printf_str hello = {"hello", 5}; /* unterminated payload */
    expect("[hello]", "[%s]", &bogus, 8, &hello, 1);

    /* No buffer (clang passes none without arguments): nothing is read, nothing claimed. */
    packed_expect("no args\n", "no args\n", NULL, 0);
    packed_expect("<missing arg>", "%d", NULL, 0);
}

/* The host formatter alone on what a device could send. */
static void test_bad_input(void)
{
    int32_t one = 1;
    expect("<bad %q>", "%q", NULL, 0, NULL, 0);
    expect("x<bad %>", "x%", NULL, 0, NULL, 0);
    expect("%", "%5%", NULL, 0, NULL, 0);
    expect("<bad %m>", "%m", NULL, 0, NULL, 0);
    expect("<bad %y>1", "%y%d", &one, 4, NULL, 0);
    expect("<bad %*y>|<missing arg>", "%*y|%d", &one, 4, NULL, 0);
    expect("<missing arg>", "%d", NULL, 0, NULL, 0);
    expect("<missing arg>", "%d", &one, 3, NULL, 0);
    expect("1 <missing arg> <missing arg>", "%d %d %s", &one, 4, NULL, 0);
    expect("<missing arg>", "%*d", &one, 4, NULL, 0);
    expect("<missing arg> 1", "%2$d %1$d", &one, 4, NULL, 0);
    uint64_t ptr = 0x1000;
    expect("<missing string>", "%s", &ptr, 8, NULL, 0);
    struct rpc_printf_str null_str = {NULL, 0};
    uint64_t nulls[3] = {0, 0, 0};
    struct rpc_printf_str null_strs[3] = {null_str, null_str, null_str};
    expect("[(null)] [] [  (null)]", "[%s] [%.3s] [%8s]", nulls, sizeof nulls, null_strs, 3);
    struct rpc_printf_str embedded = {"ab\0cd", 5};
    expect("ab", "%s", &ptr, 8, &embedded, 1);
    expect("<unsupported %ls>", "%ls", &ptr, 8, NULL, 0);
    expect("<unsupported %ls>", "%S", &ptr, 8, NULL, 0);
    expect("", "%n", &ptr, 8, NULL, 0);

    /* Absurd widths and precisions are clamped to RPC_PRINTF_NUM_MAX. */
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    rpc_printf_format(&out, "%99999999999999999999d", 22, &one, 4, NULL, 0, NULL, NULL);
    CHECKF(out.len == RPC_PRINTF_NUM_MAX, "clamped width gives %zu bytes", out.len);
    rpc_outbuf_free(&out);
    int32_t star[2] = {INT32_MIN, 1};
    rpc_printf_format(&out, "%*d|", 4, star, 8, NULL, 0, NULL, NULL);
    CHECKF(out.len == RPC_PRINTF_NUM_MAX + 1 && out.data[0] == '1' && out.data[1] == ' ',
           "INT_MIN star width left-justifies and clamps (%zu)", out.len);
    rpc_outbuf_free(&out);
    double big = 1e308;
    rpc_printf_format(&out, "%.999999f", 9, &big, 8, NULL, 0, NULL, NULL);
    CHECKF(out.len == 309 + 1 + RPC_PRINTF_NUM_MAX, "clamped precision gives %zu bytes", out.len);
    rpc_outbuf_free(&out);

    /* Format not NUL-terminated within fmt_len: stops at fmt_len. */
    expect_at(__LINE__, "abc", "abcdef", 3, NULL, 0, NULL, 0);
    expect_at(__LINE__, "<bad %>", "%d", 1, &one, 4, NULL, 0);
    /* NULL format and NULL arguments. */
    expect_at(__LINE__, "", NULL, 10, NULL, 10, NULL, 3);

    /* Invalid x87 encodings (an unnormal: exponent set, explicit bit clear). */
    unsigned char ld[16] = {0};
    ld[8] = 0x01;
    ld[9] = 0x40;
    expect("<bad long double>", "%Lf", ld, 16, NULL, 0);
    /* long double is aligned to 16 after an int. */
    unsigned char ld2[32] = {0};
    long double v = 2.5L;
    memcpy(ld2, &one, 4);
    memcpy(ld2 + 16, &v, 10);
    expect("1 2.5", "%d %Lg", ld2, 32, NULL, 0);
}

/* A conversion that is not printed takes what glibc takes (its '*' ints only), and one that glibc
 * reads oddly takes what glibc reads: the arguments after it stay in place. */
/* ---- output of any size ------------------------------------------------------------------ */

/* A sink that keeps every piece, checking its size. */
struct pieces {
    struct rpc_outbuf all;
    int n;
};

static void pieces_take(void *ctx, const char *bytes, size_t n)
{
    struct pieces *p = ctx;
    CHECKF(n == RPC_PRINTF_PIECE, "piece %d of %zu bytes", p->n, n);
    rpc_outbuf_append(&p->all, bytes, n);
    p->n++;
}

/* Formats with and without a sink, after `before` already in the buffer: without one the whole
 * text must be `want`; with one, the pieces and what stays behind `before` must make `want`, the
 * buffer keeping less than a piece.  Returns the number of pieces. */
static int check_pieces(int line, const char *want, size_t want_len, const char *fmt,
                        const void *args, size_t args_len, const struct rpc_printf_str *strs,
                        size_t nstrs)
{
    static const char before[] = "before";
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    tether_status_t st =
        rpc_printf_format(&out, fmt, strlen(fmt), args, args_len, strs, nstrs, NULL, NULL);
    CHECKF(st == TETHER_OK && out.len == want_len && memcmp(out.data, want, want_len) == 0,
           "line %d: without a sink: status %d, %zu bytes (want %zu)", line, (int)st, out.len,
           want_len);
    out.len = 0;
    rpc_outbuf_append(&out, before, sizeof before - 1);
    struct pieces p = {RPC_OUTBUF_INIT, 0};
    struct rpc_printf_sink sink = {pieces_take, &p};
    st = rpc_printf_format(&out, fmt, strlen(fmt), args, args_len, strs, nstrs, &sink, NULL);
    CHECKF(st == TETHER_OK && out.len >= sizeof before - 1 &&
               memcmp(out.data, before, sizeof before - 1) == 0 &&
               out.len - (sizeof before - 1) < RPC_PRINTF_PIECE,
           "line %d: with a sink: status %d, %zu bytes left", line, (int)st, out.len);
    rpc_outbuf_append(&p.all, out.data + sizeof before - 1, out.len - (sizeof before - 1));
    CHECKF(p.all.len == want_len && memcmp(p.all.data, want, want_len) == 0,
           "line %d: with a sink: %d pieces and %zu bytes make %zu bytes (want %zu)", line, p.n,
           out.len - (sizeof before - 1), p.all.len, want_len);
    rpc_outbuf_free(&out);
    rpc_outbuf_free(&p.all);
    return p.n;
}

/* A call's text is never cut: 8 MiB from an 8 KiB format, a 3 MiB %s, numbered arguments, and a
 * format found to mix numbered and unnumbered arguments after a piece's worth of text. */
static void test_large_output(void)
{
    static char many[4 * 2000 + 1];
    static int32_t wide[4000];
    for (int i = 0; i < 2000; i++) {
        memcpy(many + 4 * i, "%*c ", 4);
        wide[2 * i] = 4096;
        wide[2 * i + 1] = 'a' + i % 26;
    }
    size_t len = 2000 * 4097;
    char *want = malloc(len);
    CHECKF(want != NULL, "out of memory");
    for (int i = 0; i < 2000; i++) {
        memset(want + (size_t)i * 4097, ' ', 4095);
        want[(size_t)i * 4097 + 4095] = (char)('a' + i % 26);
        want[(size_t)i * 4097 + 4096] = ' ';
    }
    int n = check_pieces(__LINE__, want, len, many, wide, sizeof wide, NULL, 0);
    CHECKF(n == (int)(len / RPC_PRINTF_PIECE), "%d pieces of 8 MiB", n);
    free(want);

    /* 3 MiB and a bit of %s, unnumbered and numbered. */
    size_t slen = 3 * RPC_PRINTF_PIECE + 12345;
    char *str = malloc(slen);
    want = malloc(slen + 64);
    CHECKF(str != NULL && want != NULL, "out of memory");
    for (size_t i = 0; i < slen; i++)
        str[i] = i % 61 == 60 ? '\n' : (char)('0' + i % 61 % 10);
    struct rpc_printf_str sarg = {str, slen};
    uint64_t ptr = 0x1000;
    memcpy(want, "<", 1);
    memcpy(want + 1, str, slen);
    memcpy(want + 1 + slen, ">\n", 2);
    check_pieces(__LINE__, want, slen + 3, "<%s>\n", &ptr, 8, &sarg, 1);
    struct {
        uint64_t p;
        int32_t i;
    } num = {0x1000, 42};
    memcpy(want + 1 + slen, "|42|", 4);
    memcpy(want + 5 + slen, str, 10);
    memcpy(want + 15 + slen, ">", 1);
    struct rpc_printf_str sargs[2] = {sarg, sarg};
    check_pieces(__LINE__, want, slen + 16, "<%1$s|%2$d|%1$.10s>", &num, sizeof num, sargs, 2);
    free(want);
    free(str);

    /* The plain run meets %1$d after 3 MiB of text: it hands nothing to the sink, and the full
     * run refuses the format. */
    uint64_t ptrs[2] = {0x1000, 0x1000};
    static const char mixed[] = "<bad %s: numbered and unnumbered arguments mixed> "
                                "<bad %1$d: numbered and unnumbered arguments mixed>";
    str = malloc(slen);
    CHECKF(str != NULL, "out of memory");
    memset(str, 'z', slen);
    sargs[0].data = sargs[1].data = str;
    check_pieces(__LINE__, mixed, sizeof mixed - 1, "%s %1$d", ptrs, sizeof ptrs, sargs, 2);
    free(str);
}

static void test_bad_then_good(void)
{
    dev_expect("<bad %y> 1 two 3.000000", "%y %d %s %f", 1, "two", 3.0);
    dev_expect("<bad %-5.3y>|7|x", "%-5.3y|%d|%s", 7, "x");
    dev_expect("<bad %*y>|2|<bad %.*m>|4", "%*y|%d|%.*m|%d", 1, 2, 3, 4);
    dev_expect("<bad %m> 5", "%m %d", 5);
    dev_expect("<bad %k><bad %w>12", "%k%w%d", 12);
    dev_expect("a<bad %>", "a%");
    dev_expect("<bad %'>", "%'");
    dev_expect("% 4|%|%|6", "%*% %d|%-5%|%.*%|%d", 3, 4, 5, 6);
    /* The thousands flag used to end the conversion and shift every later argument. */
    check("%'d %d %s %'u", 1234567, 42, "after", 4000000000u);
    /* Length modifiers C leaves undefined that glibc reads: q = L, Z = z, L with integers = ll,
     * ll with floats = L, h/l/z/j/t ignored by floats, 'long' ones make c and s wide. */
    check_any("%hf|%d|%lf|%zf|%jg", 2.5, 7, 3.5, 4.5, 5.5);
    check_any("%Ld|%d|%qd|%Zu|%Lx|%qu", 123456789012LL, 8, -5LL, (size_t)9, ~0ULL, 12ULL);
    check_any("%llf|%qf|%d", 2.25L, 3.5L, 9);
    check_any("%hs|%hhs|%Ls|%qs|%d", "h", "hh", "L", "q", 10);
    check_any("%hc|%hhc|%Lc|%zc|%jc|%tc|%llc|%C|%d", 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 11);
    check_any("%lp|%hp|%Lp|%d", (void *)0x10, (void *)0x20, (void *)0x30, 12);
    long long dummy = 0; /* the host printf writes through it: room for the widest */
    check_any("%hn%ln%lln%Ln%zn%d", &dummy, &dummy, &dummy, &dummy, &dummy, 13);
    /* A wide string is not printed, but its pointer is taken. */
    dev_expect("<unsupported %ls>|<unsupported %ls>|<unsupported %ls>|14", "%ls|%S|%zs|%d", L"w",
               L"x", L"y", 14);
}

/* Flags x width x precision x every conversion, against the host printf. */
static void test_matrix(void)
{
    static const char *flags[] = {"", "-", "+", " ", "#", "0", "-+", "+0", "# ", "-0#", "'", "'-0"};
    static const char *widths[] = {"", "1", "7", "23"};
    static const char *precs[] = {"", ".", ".0", ".1", ".5", ".17"};
    static const int ivals[] = {0, 1, -1, 42, -12345, INT_MAX, INT_MIN};
    static const long long lvals[] = {0, -1, LLONG_MAX, LLONG_MIN, 1234567890123LL};
    static const double dvals[] = {0.0,    -0.0,  1.0,       -1.5, 3.14159265358979,
                                   1e-310, 1e300, 123456.789};
    char fmt[64];
    for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            for (size_t p = 0; p < sizeof precs / sizeof *precs; p++) {
                for (const char *c = "diouxXbB"; *c; c++) {
                    for (size_t v = 0; v < sizeof ivals / sizeof *ivals; v++) {
                        snprintf(fmt, sizeof fmt, "[%%%s%s%s%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check_any(fmt, ivals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%shh%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check_any(fmt, ivals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%sh%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check_any(fmt, ivals[v]);
                    }
                    for (size_t v = 0; v < sizeof lvals / sizeof *lvals; v++) {
                        static const char *lens[] = {"l", "ll", "z", "j", "t"};
                        for (size_t l = 0; l < 5; l++) {
                            snprintf(fmt, sizeof fmt, "[%%%s%s%s%s%c]", flags[f], widths[w],
                                     precs[p], lens[l], *c);
                            check_any(fmt, lvals[v]);
                        }
                    }
                }
                for (const char *c = "fFeEgGaA"; *c; c++) {
                    for (size_t v = 0; v < sizeof dvals / sizeof *dvals; v++) {
                        snprintf(fmt, sizeof fmt, "[%%%s%s%s%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check_any(fmt, dvals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%sL%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check_any(fmt, (long double)dvals[v]);
                    }
                }
                snprintf(fmt, sizeof fmt, "[%%%s%s%ss]", flags[f], widths[w], precs[p]);
                check_any(fmt, "hello, world");
                snprintf(fmt, sizeof fmt, "[%%%s%sc]", flags[f], widths[w]);
                check_any(fmt, 'q');
                snprintf(fmt, sizeof fmt, "[%%%s%sp]", flags[f], widths[w]);
                check_any(fmt, (void *)0x7fff1234);
            }
        }
    }
}

/* check() with the `*` arguments a format takes (0, 1 or 2, first s0, then s1) before v. */
#define CHECK_STARRED(fmt, nstars, s0, s1, v)                                                      \
    ((nstars) == 2   ? check_any(fmt, s0, s1, v)                                                   \
     : (nstars) == 1 ? check_any(fmt, s0, v)                                                       \
                     : check_any(fmt, v))

/* Random integer conversions (the server formats them without snprintf unless ' or I asks for
 * the locale): flags in any order and number, widths and precisions given or by `*` (negative
 * ones included), every length modifier, values near the edges of their types. */
static void test_int_random(void)
{
    static const char *lens32[] = {"", "hh", "h"};
    static const char *lens64[] = {"l", "ll", "z", "j", "t", "L", "q", "Z"};
    static const long long edges[] = {0,       1,       -1,       127,       128,      255,
                                      256,     -128,    -129,     32767,     -32768,   65535,
                                      INT_MAX, INT_MIN, UINT_MAX, LLONG_MAX, LLONG_MIN};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char fmt[64];
    for (int i = 0; i < 50000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = x >> 11;
        size_t n = 0;
        fmt[n++] = '<';
        fmt[n++] = '%';
        for (int f = (int)(r % 4); f > 0; f--) {
            r /= 6;
            fmt[n++] = "-+ #0'"[r % 6];
        }
        r /= 7;
        int wkind = (int)(r % 4), pkind = (int)(r / 4 % 4);
        int width = (int)(r / 16 % 30), prec = (int)(r / 512 % 26);
        int star_w = wkind == 3 ? (r & (1ull << 40) ? -width : width) : 0;
        int star_p = pkind == 3 ? (r & (1ull << 41) ? -prec : prec) : 0;
        if (wkind == 1)
            n += (size_t)snprintf(fmt + n, 8, "%d", width);
        else if (wkind == 3)
            fmt[n++] = '*';
        if (pkind == 1)
            n += (size_t)snprintf(fmt + n, 8, ".%d", prec);
        else if (pkind == 2)
            fmt[n++] = '.';
        else if (pkind == 3) {
            fmt[n++] = '.';
            fmt[n++] = '*';
        }
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r2 = x >> 7;
        bool wide = r2 % 2;
        const char *len = wide ? lens64[r2 / 2 % 8] : lens32[r2 / 2 % 3];
        n += (size_t)snprintf(fmt + n, sizeof fmt - n, "%s%c>", len, "diouxXbB"[r2 / 16 % 8]);
        long long v = r2 / 128 % 3 == 0 ? edges[r2 / 1024 % (sizeof edges / sizeof *edges)]
                                        : (long long)(x ^ (x << 13));
        int nstars = (wkind == 3) + (pkind == 3), s0 = wkind == 3 ? star_w : star_p;
        if (wide)
            CHECK_STARRED(fmt, nstars, s0, star_p, v);
        else
            CHECK_STARRED(fmt, nstars, s0, star_p, (int)v);
    }
}

/* The thousands flag with every integer conversion and length modifier, and with the floating
 * ones; in a locale that groups (test_printf <locale>), the digits must be grouped. */
static void test_grouping(bool grouping_locale)
{
    static const char *convs = "diuoxXbB";
    static const char *lens[] = {"", "hh", "h", "l", "ll", "L", "q", "j", "z", "Z", "t"};
    static const char *forms[] = {"%'", "%'12", "%'-15", "%'012", "%'.9", "%'+", "%' ", "%'#"};
    static const long long vals[] = {
        0, 7, -1234, 1234567, -987654321, 4000000000LL, -1234567890123456789LL};
    char fmt[32];
    for (const char *c = convs; *c; c++) {
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            bool wide = l >= 3;
            for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
                snprintf(fmt, sizeof fmt, "[%s%s%c]", forms[f], lens[l], *c);
                for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
                    if (wide)
                        check_any(fmt, vals[v]);
                    else
                        check_any(fmt, (int)vals[v]);
                }
            }
        }
    }
    check_any("%'f %'.2f %'g %'e %'a %'Lf %'10.1F %'G", 1234567.891, -9876543.21, 123456789.0,
              1234567.0, 1234567.0, 12345678.5L, 1e7, 1e9);
    check("%I'd %'Id %Ii", 1234567, 7654321, 42);
    if (grouping_locale) {
        const char *sep = localeconv()->thousands_sep;
        char want[64];
        snprintf(want, sizeof want, "1%s234%s567", sep, sep);
        CHECKF(sep[0] != '\0', "the locale has no thousands separator");
        dev_expect(want, "%'d", 1234567);
    }
}

/* 13..100 %s in one call: strings empty, short, NULL, cut by precisions, and long enough that
 * one call's records span many packets. */
static void test_many_strings(void)
{
    static char longs[4][700];
    const char *s[100];
    for (int i = 0; i < 4; i++) {
        memset(longs[i], 'a' + i, sizeof longs[i] - 1);
        longs[i][sizeof longs[i] - 1] = '\0';
    }
    static const char *shorts[] = {"", "x", "two", "a somewhat longer string"};
    for (int i = 0; i < 100; i++)
        s[i] = i % 11 == 5 ? NULL : i % 7 == 3 ? longs[i % 4] : shorts[i % 4];
    static const char *forms[] = {"%s", "[%.3s]", "%-9s|", "%5.2s", "<%.0s>", "%30s"};
    static char fmt[100 * 8];
    for (int n = 13; n <= 100; n++) {
        size_t at = 0;
        for (int i = 0; i < n; i++)
            at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%s", forms[(i + n) % 6]);
        check_any(fmt, A100(s));
        CHECKF(layer.hdr.nstrs == (uint32_t)n, "%d %%s: %u records", n, layer.hdr.nstrs);
    }
    /* Strings with `*` precisions between them, and a string longer than many packets. */
    static char huge[100000];
    memset(huge, 'h', sizeof huge - 1);
    check("%.*s|%s|%*.*s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s", 3, "abcdef", huge, 8, 2, "xyz", "a",
          "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", huge);
}

/* Argument buffers of more than 1 KiB and more than one packet, with every alignment. */
static void test_big_args(void)
{
    long long ll[200];
    int iv[200];
    long double ld[100];
    double dv[200];
    for (int i = 0; i < 200; i++) {
        ll[i] = (long long)i * 1000003 - 77777;
        iv[i] = i * 31 - 500;
        dv[i] = i * 0.5 - 3.25;
        if (i < 100)
            ld[i] = (long double)i / 3;
    }
    static char fmt[200 * 8];
    size_t at = 0;
    for (int i = 0; i < 200; i++)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%s", i % 2 ? "%lld," : "%llx ");
    check_any(fmt, A100(ll), A100(ll + 100)); /* 1600 bytes */
    CHECKF(layer.hdr.args_len == 1600, "args %u bytes", layer.hdr.args_len);
    at = 0;
    for (int i = 0; i < 100; i++)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%s", "%.3Lf ");
    check_any(fmt, A100(ld)); /* 1600 bytes of long doubles */
    /* int, double, int, double ...: 4 bytes of padding after each int. */
    check("%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g %d:%g "
          "%d:%g %d:%g",
          iv[0], dv[0], iv[1], dv[1], iv[2], dv[2], iv[3], dv[3], iv[4], dv[4], iv[5], dv[5], iv[6],
          dv[6], iv[7], dv[7], iv[8], dv[8], iv[9], dv[9], iv[10], dv[10], iv[11], dv[11], iv[12],
          dv[12], iv[13], dv[13], iv[14], dv[14], iv[15], dv[15], iv[16], dv[16], iv[17], dv[17],
          iv[18], dv[18], iv[19], dv[19], iv[20], dv[20], iv[21], dv[21], iv[22], dv[22], iv[23],
          dv[23], iv[24], dv[24], iv[25], dv[25], iv[26], dv[26], iv[27], dv[27], iv[28], dv[28],
          iv[29], dv[29], iv[30], dv[30], iv[31], dv[31], iv[32], dv[32], iv[33], dv[33], iv[34],
          dv[34], iv[35], dv[35], iv[36], dv[36], iv[37], dv[37], iv[38], dv[38], iv[39], dv[39],
          iv[40], dv[40], iv[41], dv[41], iv[42], dv[42], iv[43], dv[43], iv[44], dv[44], iv[45],
          dv[45], iv[46], dv[46], iv[47], dv[47], iv[48], dv[48], iv[49], dv[49], iv[50], dv[50],
          iv[51], dv[51], iv[52], dv[52], iv[53], dv[53], iv[54], dv[54], iv[55], dv[55], iv[56],
          dv[56], iv[57], dv[57], iv[58], dv[58], iv[59], dv[59], iv[60], dv[60], iv[61], dv[61],
          iv[62], dv[62], iv[63], dv[63], iv[64], dv[64], iv[65], dv[65], iv[66], dv[66], iv[67],
          dv[67], iv[68], dv[68], iv[69], dv[69], iv[70], dv[70], iv[71], dv[71], iv[72], dv[72],
          iv[73], dv[73], iv[74], dv[74], iv[75], dv[75], iv[76], dv[76], iv[77], dv[77], iv[78],
          dv[78], iv[79], dv[79], iv[80], dv[80], iv[81], dv[81], iv[82], dv[82], iv[83], dv[83],
          iv[84], dv[84], iv[85], dv[85], iv[86], dv[86], iv[87], dv[87], iv[88], dv[88], iv[89],
          dv[89], iv[90], dv[90], iv[91], dv[91], iv[92], dv[92], iv[93], dv[93], iv[94], dv[94],
          iv[95], dv[95], iv[96], dv[96], iv[97], dv[97], iv[98], dv[98], iv[99], dv[99]);
    CHECKF(layer.hdr.args_len == 1600, "int/double pairs: %u bytes", layer.hdr.args_len);
    /* Over 1 KiB of arguments and over 13 strings in one call. */
    const char *s[100];
    for (int i = 0; i < 100; i++)
        s[i] = i % 2 ? "odd" : "even";
    at = 0;
    for (int i = 0; i < 100; i++)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%s", "%s ");
    check_any(fmt, A100(s));
    CHECKF(layer.hdr.args_len == 800 && layer.hdr.nstrs == 100, "100 strings: %u bytes, %u records",
           layer.hdr.args_len, layer.hdr.nstrs);
}

/* POSIX numbered arguments: %n$, *m$ and .*m$, reuse, any order; formats C rejects print
 * markers and read no argument. */
static void test_numbered(void)
{
    check("%2$s %1$d", 5, "x");
    check("%1$d %1$d %1$x|%2$s|%2$.2s", 255, "reuse");
    check("%3$*1$.*2$f|%3$-*1$e|%%|%4$c", 12, 3, 3.14159, 'z');
    check("%1$*2$d|%1$-*2$d|%3$.*2$f", 7, 5, 3.14159);
    check("%4$Lf %3$lld %2$hhd %1$p", (void *)0x1234, 300, -5LL, 2.5L);
    check("%1$s %1$p", "pointer both ways");
    check("%2$'d %1$'.2f", 1234567.891, 7654321);
    check("%1$s %2$s %3$s %4$s %5$s %6$s %7$s %8$s %9$s %10$s %11$s %12$s %13$s %14$s", "a", "b",
          "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n");
    /* All PSCAN_POS_MAX (128) arguments, ints and doubles, printed backwards. */
    int iv[128];
    double dv[128];
    for (int i = 0; i < 128; i++) {
        iv[i] = i * 7 - 300;
        dv[i] = i / 4.0;
    }
    static char fmt[128 * 12];
    size_t at = 0;
    for (int k = 128; k >= 1; k--)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%%%d$d ", k);
    check_any(fmt, A100(iv), A10(iv, 100), A10(iv, 110), iv[120], iv[121], iv[122], iv[123],
              iv[124], iv[125], iv[126], iv[127]);
    at = 0;
    for (int k = 128; k >= 1; k -= 2)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%%%d$g %%%d$d ", k, k - 1);
    /* odd numbers ints, even ones doubles */
    check_any(fmt, iv[0], dv[1], iv[2], dv[3], iv[4], dv[5], iv[6], dv[7], iv[8], dv[9], iv[10],
              dv[11], iv[12], dv[13], iv[14], dv[15], iv[16], dv[17], iv[18], dv[19], iv[20],
              dv[21], iv[22], dv[23], iv[24], dv[25], iv[26], dv[27], iv[28], dv[29], iv[30],
              dv[31], iv[32], dv[33], iv[34], dv[35], iv[36], dv[37], iv[38], dv[39], iv[40],
              dv[41], iv[42], dv[43], iv[44], dv[45], iv[46], dv[47], iv[48], dv[49], iv[50],
              dv[51], iv[52], dv[53], iv[54], dv[55], iv[56], dv[57], iv[58], dv[59], iv[60],
              dv[61], iv[62], dv[63], iv[64], dv[65], iv[66], dv[67], iv[68], dv[69], iv[70],
              dv[71], iv[72], dv[73], iv[74], dv[75], iv[76], dv[77], iv[78], dv[79], iv[80],
              dv[81], iv[82], dv[83], iv[84], dv[85], iv[86], dv[87], iv[88], dv[89], iv[90],
              dv[91], iv[92], dv[93], iv[94], dv[95], iv[96], dv[97], iv[98], dv[99], iv[100],
              dv[101], iv[102], dv[103], iv[104], dv[105], iv[106], dv[107], iv[108], dv[109],
              iv[110], dv[111], iv[112], dv[113], iv[114], dv[115], iv[116], dv[117], iv[118],
              dv[119], iv[120], dv[121], iv[122], dv[123], iv[124], dv[125], iv[126], dv[127]);

    /* Refused: nothing is read, every conversion that would read says why. */
    dev_expect("<bad %1$d: numbered and unnumbered arguments mixed> <bad %d: numbered and "
               "unnumbered arguments mixed>",
               "%1$d %d", 1, 2);
    dev_expect("<bad %d: numbered and unnumbered arguments mixed> <bad %1$d: numbered and "
               "unnumbered arguments mixed>",
               "%d %1$d", 1, 2);
    dev_expect("<bad %1$*d: numbered and unnumbered arguments mixed>", "%1$*d", 5, 1);
    int r = tether_device_printf_packed(TETHER_RPC_STDOUT, "%1$s %s", NULL, 0);
    CHECKF(r == 0 && layer.hdr.nstrs == 0, "refused: %d arguments used, %u strings", r,
           layer.hdr.nstrs);
    dev_expect("<bad %2$d: argument 1 unused>|%", "%2$d|%%", 1, 2);
    dev_expect("<bad %1$d: argument 1 of two types> <bad %1$lld: argument 1 of two types>",
               "%1$d %1$lld", 1LL);
    dev_expect("<bad %1$d: argument 1 of two types> <bad %1$f: argument 1 of two types>",
               "%1$d %1$f", 1);
    dev_expect("<bad %129$d: argument number above 128>", "%129$d", 1);
    dev_expect("<bad %0$>d", "%0$d", 1);
    /* Conversions that take nothing are no argument's: fine in a numbered format. */
    dev_expect("<bad %1$y> 5 %", "%1$y %1$d %%", 5);
    CHECKF(layer.hdr.nstrs == 0, "refused formats send no strings");
}

int main(int argc, char **argv)
{
    bool grouping_locale = false;
    if (argc > 1) {
        if (setlocale(LC_ALL, argv[1]) == NULL) {
            printf("SKIP: locale %s is not available (LOCPATH=%s)\n", argv[1],
                   getenv("LOCPATH") ? getenv("LOCPATH") : "");
            return 77;
        }
        grouping_locale = true;
    }
    test_basic();
    test_width_precision();
    test_clang_layout();
    test_bad_input();
    test_bad_then_good();
    test_large_output();
    test_matrix();
    test_int_random();
    test_grouping(grouping_locale);
    test_many_strings();
    test_big_args();
    test_numbered();
    rpc_outbuf_free(&layer.text);
    return tcheck_exit("test_printf");
}
