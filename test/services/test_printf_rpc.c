/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/test_printf_rpc.c - printf calls larger than a packet, numbered arguments, the
 * thousands flag and bad conversions, through the whole path: the device library (rpc/device,
 * compiled for the host) sends each call over the ports to a server and its thread, whose
 * output must equal the host printf's (or the documented markers) call for call.
 *
 *   test_printf_rpc wide    one caller's message spread over 32 lanes (2 KiB packets)
 *   test_printf_rpc lanes   one lane per call (64-byte packets)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../rpc/device/device_internal.h"
#include "tether/rpc.h"
#include "../rpc/server/svc_rig.h"
#include "tcheck.h"

static tether_rpc_server_t *srv;
static FILE *out;

static struct svc_dev_mem dev_mem;

static void server_up(bool wide)
{
    out = tmpfile();
    struct tether_rpc_server_config cfg = {
        .port_count = 4,
        .lane_count = 32,
        .host_client = wide,
        .device_alloc = svc_device_alloc,
        .device_free = svc_device_free,
        .device_ctx = &dev_mem,
        .out = out,
        .err = stderr,
    };
    srv = svc_server_up(cfg, true);
}

/* The server's output since the last call of this, compared with `want` (n bytes). */
static void output_is(int line, const char *fmt, const char *want, size_t n)
{
    static long seen;
    tether_rpc_server_kernel_finished(srv); /* everything written when it returns */
    tether_rpc_server_kernel_started(srv);
    fflush(out);
    long end = ftell(out);
    size_t len = (size_t)(end - seen);
    char *got = malloc(len + 1);
    fseek(out, seen, SEEK_SET);
    size_t k = fread(got, 1, len, out);
    fseek(out, end, SEEK_SET);
    seen = end;
    CHECKF(k == len && len == n && memcmp(got, want, n) == 0,
           "line %d: fmt \"%.120s\": %zu bytes, want %zu:\n got  \"%.300s\"\n want \"%.300s\"",
           line, fmt, k, n, got, want);
    free(got);
}

/* printf through the device library; the output must be the host printf's. */
static void check_at(int line, const char *fmt, ...)
{
    static char want[1 << 18];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(want, sizeof want, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    int r = tether_device_vprintf(TETHER_RPC_STDOUT, fmt, ap);
    va_end(ap);
    CHECKF(n >= 0 && (size_t)n < sizeof want && r == n, "line %d: returned %d, host %d", line, r,
           n);
    output_is(line, fmt, want, n < 0 ? 0 : (size_t)n);
}
#define check(...) check_at(__LINE__, __VA_ARGS__)

/* printf through the device library; the output must be `want`. */
static void expect_at(int line, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = tether_device_vprintf(TETHER_RPC_STDOUT, fmt, ap);
    va_end(ap);
    CHECKF(r >= 0 || errno == EINVAL, "line %d: returned %d, errno %d", line, r, errno);
    output_is(line, fmt, want, strlen(want));
}
#define expect(...) expect_at(__LINE__, __VA_ARGS__)

#define A10(a, b)                                                                                  \
    (a)[(b)], (a)[(b) + 1], (a)[(b) + 2], (a)[(b) + 3], (a)[(b) + 4], (a)[(b) + 5], (a)[(b) + 6],  \
        (a)[(b) + 7], (a)[(b) + 8], (a)[(b) + 9]
#define A100(a)                                                                                    \
    A10(a, 0), A10(a, 10), A10(a, 20), A10(a, 30), A10(a, 40), A10(a, 50), A10(a, 60), A10(a, 70), \
        A10(a, 80), A10(a, 90)

static void run(void)
{
    static char fmt[200 * 8];
    /* 13..100 %s: NULLs, precisions, strings of a few bytes to 3 KiB. */
    static char longs[3][3000];
    for (int i = 0; i < 3; i++) {
        memset(longs[i], 'p' + i, sizeof longs[i] - 1);
        longs[i][sizeof longs[i] - 1] = '\0';
    }
    const char *s[100];
    for (int i = 0; i < 100; i++)
        s[i] = i % 13 == 4 ? NULL : i % 9 == 2 ? longs[i % 3] : i % 2 ? "odd" : "";
    static const int counts[] = {13, 14, 31, 64, 100};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        size_t at = 0;
        for (int i = 0; i < counts[c]; i++)
            at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%s", i % 3 ? "%s|" : "[%.5s]");
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "\n");
        check(fmt, A100(s));
    }

    /* Arguments over 1 KiB (1600 bytes), and over a 2 KiB packet (3200 bytes), with strings. */
    long long ll[200];
    double dv[200];
    for (int i = 0; i < 200; i++) {
        ll[i] = (long long)i * 999331 - 12345;
        dv[i] = i * 1.25 - 7;
    }
    size_t at = 0;
    for (int i = 0; i < 200; i++)
        at += (size_t)snprintf(fmt + at, sizeof fmt - at, "%%lld ");
    check(fmt, A100(ll), A100(ll + 100));
    static char fmt2[200 * 12];
    at = (size_t)snprintf(fmt2, sizeof fmt2, "%%s ");
    for (int i = 0; i < 400; i++)
        at += (size_t)snprintf(fmt2 + at, sizeof fmt2 - at, "%s", i < 200 ? "%lld " : "%.3g ");
    snprintf(fmt2 + at, sizeof fmt2 - at, "%%s\n");
    check(fmt2, "head", A100(ll), A100(ll + 100), A100(dv), A100(dv + 100), "tail");

    /* Numbered arguments. */
    check("%3$s|%1$*2$d|%1$-*2$x|%4$.*2$f|%%\n", 255, 6, "third", 2.0 / 3);
    check("%2$s %1$s %2$s %1$s\n", longs[0], longs[1]);
    expect("<bad %2$d: argument 1 unused>\n", "%2$d\n", 1, 2);
    expect("<bad %1$d: numbered and unnumbered arguments mixed> <bad %s: numbered and unnumbered "
           "arguments mixed>\n",
           "%1$d %s\n", 1, "s");

    /* The thousands flag and conversions that are not printed: the arguments after them stay. */
    check("%'d|%'i|%'u|%'o|%'x|%'X|%'ld|%'lld|%'zu|%'hd|%'hhu|%d|%s\n", 1234567, -7654321,
          4000000000u, 0777777u, 0xabcdefu, 0xabcdefu, -123456789012L, 123456789012345LL,
          (size_t)98765, (short)-12345, (unsigned char)200, 42, "end");
    expect("<bad %y>|1|two|<bad %*m>|3.500000\n", "%y|%d|%s|%*m|%f\n", 1, "two", 9, 3.5);
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "wide") != 0 && strcmp(argv[1], "lanes") != 0)) {
        fprintf(stderr, "usage: %s wide|lanes\n", argv[0]);
        return 2;
    }
    server_up(strcmp(argv[1], "wide") == 0);
    run();
    struct tether_rpc_stats st;
    tether_rpc_server_stats(srv, &st);
    CHECKF(st.malformed == 0, "%llu malformed messages", (unsigned long long)st.malformed);
    svc_server_down(srv);
    fclose(out);
    return tcheck_exit(argv[1]);
}
