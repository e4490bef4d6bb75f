/*
 * test/services/test_printf.c - the host printf formatter against the host's
 * own printf: every common conversion with flags, widths, precisions, `*` and
 * length modifiers, argument buffers laid out the way clang-16 lays them out,
 * and every bad-input marker.
 */
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "../../rpc/device/printf_scan.h"
#include "../../rpc/server/rpc_printf.h"
#include "svc_test.h"

#define MAX_STRS 16

/* Packs variadic arguments the way the scanner says a device packs them. */
static size_t pack(const char *fmt, va_list ap, unsigned char *buf, size_t cap,
                   struct rpc_printf_str *strs, size_t *nstrs)
{
    size_t pos = 0;
    size_t off = 0;
    struct pscan_spec spec;
    *nstrs = 0;
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
            off = pscan_align(off, slots[k]);
            if (off + pscan_arg_size(slots[k]) > cap)
                return off;
            switch (slots[k]) {
            case PSCAN_ARG_I32: {
                int v = va_arg(ap, int);
                memcpy(buf + off, &v, 4);
                break;
            }
            case PSCAN_ARG_I64: {
                long long v = va_arg(ap, long long);
                memcpy(buf + off, &v, 8);
                break;
            }
            case PSCAN_ARG_F64: {
                double v = va_arg(ap, double);
                memcpy(buf + off, &v, 8);
                break;
            }
            case PSCAN_ARG_F128: {
                long double v = va_arg(ap, long double);
                memset(buf + off, 0, 16);
                memcpy(buf + off, &v, 10);
                break;
            }
            case PSCAN_ARG_PTR:
            case PSCAN_ARG_STR: {
                const char *v = va_arg(ap, const char *);
                uint64_t u = (uint64_t)(uintptr_t)v;
                memcpy(buf + off, &u, 8);
                if (slots[k] == PSCAN_ARG_STR && *nstrs < MAX_STRS) {
                    strs[*nstrs].data = v;
                    strs[*nstrs].len = v == NULL ? 0 : strlen(v) + 1;
                    (*nstrs)++;
                }
                break;
            }
            case PSCAN_ARG_NONE:
            case PSCAN_ARG_BAD:
                break;
            }
            off += pscan_arg_size(slots[k]);
        }
    }
    return off;
}

/* Formats with both the host printf and rpc_printf_format; they must agree. */
__attribute__((format(printf, 2, 3))) static void check_at(int line, const char *fmt, ...)
{
    char expect[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(expect, sizeof expect, fmt, ap);
    va_end(ap);

    unsigned char args[1024];
    struct rpc_printf_str strs[MAX_STRS];
    size_t nstrs;
    va_start(ap, fmt);
    size_t args_len = pack(fmt, ap, args, sizeof args, strs, &nstrs);
    va_end(ap);

    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    tether_status_t st =
        rpc_printf_format(&out, fmt, strlen(fmt) + 1, args, args_len, strs, nstrs, NULL);
    CHECK(st == TETHER_OK, "line %d: status %d", line, (int)st);
    CHECK(n >= 0 && (size_t)n == out.len && memcmp(out.data, expect, out.len) == 0,
          "line %d: fmt \"%s\": host \"%s\" (%d) vs ours \"%.*s\" (%zu)", line, fmt,
          n >= 0 ? expect : "<error>", n, (int)out.len, out.data ? out.data : "", out.len);
    rpc_outbuf_free(&out);
}
#define check(...) check_at(__LINE__, __VA_ARGS__)

/* Formats raw inputs and compares with an expected string. */
static void expect_at(int line, const char *want, const char *fmt, size_t fmt_len, const void *args,
                      size_t args_len, const struct rpc_printf_str *strs, size_t nstrs)
{
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    tether_status_t st = rpc_printf_format(&out, fmt, fmt_len, args, args_len, strs, nstrs, NULL);
    CHECK(st == TETHER_OK, "line %d: status %d", line, (int)st);
    CHECK(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
          "line %d: want \"%s\" got \"%.*s\"", line, want, (int)out.len, out.data ? out.data : "");
    rpc_outbuf_free(&out);
}
#define expect(want, fmt, args, args_len, strs, nstrs)                                             \
    expect_at(__LINE__, want, fmt, strlen(fmt), args, args_len, strs, nstrs)

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

/* Arguments laid out as clang-16 lays them out (an LLVM struct, natural alignment). */
static void test_clang_layout(void)
{
    /* printf("%c %hd %f %d %zu %lld %s %p %f\n", c, s, f, 5, z, ll, "str", p, 2.0)
     * becomes %printf_args = { i32, i32, double, i32, i64, i64, ptr, ptr, double }. */
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
    } a = {'a', 2, 1.5, 5, 3, -4, 0x1000, 0xdead0, 2.0};
    _Static_assert(sizeof a == 64, "clang's struct is 64 bytes");
    struct rpc_printf_str str = {"str", 4};
    char want[128];
    snprintf(want, sizeof want, "%c %hd %f %d %zu %lld %s %p %f\n", 'a', (short)2, 1.5, 5,
             (size_t)3, -4LL, "str", (void *)0xdead0, 2.0);
    expect(want, "%c %hd %f %d %zu %lld %s %p %f\n", &a, sizeof a, &str, 1);

    /* printf("%c%f\n", (char)1, 2.0f) -> { i32, double }, 16 bytes. */
    struct {
        int32_t c;
        double f;
    } b = {'Z', 2.0};
    expect("Z2.000000\n", "%c%f\n", &b, sizeof b, NULL, 0);

    /* `*` width is an int before its value: { i32, i32, i32 }. */
    int32_t c[3] = {5, 3, 42};
    expect("  042", "%*.*d", c, sizeof c, NULL, 0);

    /* A %s pointer in the buffer is never dereferenced: payloads come separately. */
    uint64_t bogus = 0x1;
    struct rpc_printf_str hello = {"hello", 5}; /* unterminated payload */
    expect("[hello]", "[%s]", &bogus, 8, &hello, 1);
}

static void test_bad_input(void)
{
    int32_t one = 1;
    expect("<bad %q>", "%q", NULL, 0, NULL, 0);
    expect("x<bad %>", "x%", NULL, 0, NULL, 0);
    expect("<bad %5%>", "%5%", NULL, 0, NULL, 0);
    expect("<bad %hf>1", "%hf%d", &one, 4, NULL, 0);
    expect("<bad %1$>d", "%1$d", &one, 4, NULL, 0);
    expect("<bad %m>", "%m", NULL, 0, NULL, 0);
    expect("<bad %Ld>", "%Ld", NULL, 0, NULL, 0);
    expect("<missing arg>", "%d", NULL, 0, NULL, 0);
    expect("<missing arg>", "%d", &one, 3, NULL, 0);
    expect("1 <missing arg> <missing arg>", "%d %d %s", &one, 4, NULL, 0);
    expect("<missing arg>", "%*d", &one, 4, NULL, 0);
    uint64_t ptr = 0x1000;
    expect("<missing string>", "%s", &ptr, 8, NULL, 0);
    struct rpc_printf_str null_str = {NULL, 0};
    uint64_t nulls[3] = {0, 0, 0};
    struct rpc_printf_str null_strs[3] = {null_str, null_str, null_str};
    expect("[(null)] [] [  (null)]", "[%s] [%.3s] [%8s]", nulls, sizeof nulls, null_strs, 3);
    struct rpc_printf_str embedded = {"ab\0cd", 5};
    expect("ab", "%s", &ptr, 8, &embedded, 1);
    expect("<unsupported %ls>", "%ls", &ptr, 8, NULL, 0);
    expect("", "%n", &ptr, 8, NULL, 0);

    /* Absurd widths and precisions are clamped to RPC_PRINTF_NUM_MAX. */
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    rpc_printf_format(&out, "%99999999999999999999d", 22, &one, 4, NULL, 0, NULL);
    CHECK(out.len == RPC_PRINTF_NUM_MAX, "clamped width gives %zu bytes", out.len);
    rpc_outbuf_free(&out);
    int32_t star[2] = {INT32_MIN, 1};
    rpc_printf_format(&out, "%*d|", 4, star, 8, NULL, 0, NULL);
    CHECK(out.len == RPC_PRINTF_NUM_MAX + 1 && out.data[0] == '1' && out.data[1] == ' ',
          "INT_MIN star width left-justifies and clamps (%zu)", out.len);
    rpc_outbuf_free(&out);
    double big = 1e308;
    rpc_printf_format(&out, "%.999999f", 9, &big, 8, NULL, 0, NULL);
    CHECK(out.len == 309 + 1 + RPC_PRINTF_NUM_MAX, "clamped precision gives %zu bytes", out.len);
    rpc_outbuf_free(&out);

    /* Output of one call is cut at RPC_PRINTF_OUT_MAX with a marker. */
    static char many[4 * 2000 + 1];
    for (int i = 0; i < 2000; i++)
        memcpy(many + 4 * i, "%*c ", 4);
    static int32_t wide[4000];
    for (int i = 0; i < 2000; i++) {
        wide[2 * i] = 4096;
        wide[2 * i + 1] = 'x';
    }
    rpc_printf_format(&out, many, strlen(many), wide, sizeof wide, NULL, 0, NULL);
    CHECK(out.len == RPC_PRINTF_OUT_MAX + 11 &&
              memcmp(out.data + RPC_PRINTF_OUT_MAX, "<truncated>", 11) == 0,
          "output capped (%zu)", out.len);
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

/* Flags x width x precision x every conversion, against the host printf. */
static void test_matrix(void)
{
    static const char *flags[] = {"", "-", "+", " ", "#", "0", "-+", "+0", "# ", "-0#"};
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
                for (const char *c = "diouxX"; *c; c++) {
                    for (size_t v = 0; v < sizeof ivals / sizeof *ivals; v++) {
                        snprintf(fmt, sizeof fmt, "[%%%s%s%s%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check(fmt, ivals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%shh%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check(fmt, ivals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%sh%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check(fmt, ivals[v]);
                    }
                    for (size_t v = 0; v < sizeof lvals / sizeof *lvals; v++) {
                        static const char *lens[] = {"l", "ll", "z", "j", "t"};
                        for (size_t l = 0; l < 5; l++) {
                            snprintf(fmt, sizeof fmt, "[%%%s%s%s%s%c]", flags[f], widths[w],
                                     precs[p], lens[l], *c);
                            check(fmt, lvals[v]);
                        }
                    }
                }
                for (const char *c = "fFeEgGaA"; *c; c++) {
                    for (size_t v = 0; v < sizeof dvals / sizeof *dvals; v++) {
                        snprintf(fmt, sizeof fmt, "[%%%s%s%s%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check(fmt, dvals[v]);
                        snprintf(fmt, sizeof fmt, "[%%%s%s%sL%c]", flags[f], widths[w], precs[p],
                                 *c);
                        check(fmt, (long double)dvals[v]);
                    }
                }
                snprintf(fmt, sizeof fmt, "[%%%s%s%ss]", flags[f], widths[w], precs[p]);
                check(fmt, "hello, world");
                snprintf(fmt, sizeof fmt, "[%%%s%sc]", flags[f], widths[w]);
                check(fmt, 'q');
                snprintf(fmt, sizeof fmt, "[%%%s%sp]", flags[f], widths[w]);
                check(fmt, (void *)0x7fff1234);
            }
        }
    }
}

/* check() with the `*` arguments a format takes (0, 1 or 2, first s0, then s1) before v. */
#define CHECK_STARRED(fmt, nstars, s0, s1, v)                                                      \
    ((nstars) == 2 ? check(fmt, s0, s1, v) : (nstars) == 1 ? check(fmt, s0, v) : check(fmt, v))

/* Random integer conversions (the server formats them without snprintf): flags in any order
 * and number, widths and precisions given or by `*` (negative ones included), every length
 * modifier, values near the edges of their types. */
static void test_int_random(void)
{
    static const char *lens32[] = {"", "hh", "h"}, *lens64[] = {"l", "ll", "z", "j", "t"};
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
            r /= 5;
            fmt[n++] = "-+ #0"[r % 5];
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
        const char *len = wide ? lens64[r2 / 2 % 5] : lens32[r2 / 2 % 3];
        n += (size_t)snprintf(fmt + n, sizeof fmt - n, "%s%c>", len, "diouxX"[r2 / 16 % 6]);
        long long v = r2 / 128 % 3 == 0 ? edges[r2 / 512 % (sizeof edges / sizeof *edges)]
                                        : (long long)(x ^ (x << 13));
        int nstars = (wkind == 3) + (pkind == 3), s0 = wkind == 3 ? star_w : star_p;
        if (wide)
            CHECK_STARRED(fmt, nstars, s0, star_p, v);
        else
            CHECK_STARRED(fmt, nstars, s0, star_p, (int)v);
    }
}

int main(void)
{
    test_basic();
    test_width_precision();
    test_clang_layout();
    test_bad_input();
    test_matrix();
    test_int_random();
    return svc_test_exit("test_printf");
}
