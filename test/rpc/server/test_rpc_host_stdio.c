/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_stdio.c - test_rpc_host's printf-wide, printf-lanes and write:
 * device printf from many threads in wide and lane mode against the host printf, and puts/fwrite to
 * both streams and to host FILE * values.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "test_rpc_host.h"

/* Prints line n of thread t through the device library and writes the host
 * printf's version of it to expect; every common conversion is used. */
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int want = snprintf(expect, cap, __VA_ARGS__);                                             \
        if (print) {                                                                               \
            int got = dprintf_(__VA_ARGS__);                                                       \
            CHECKF(got == want, "printf returned %d, want %d", got, want);                         \
        }                                                                                          \
    } while (0)

static void emit_line(int t, int n, char *expect, size_t cap, bool print)
{
    static const char *words[] = {"alpha", "", "a much longer string with spaces", "x"};
    const char *w = words[n % 4];
    switch (n % 9) {
    case 0:
        EMIT("t%d n%d ints %d %i %u %x %X %o %5d|%-5d|%05d\n", t, n, -n, n * 7, (unsigned)n,
             (unsigned)n * 255u, (unsigned)n * 4095u, (unsigned)n, n, n, n);
        break;
    case 1:
        EMIT("t%d n%d longs %ld %lu %lld %llx %zu %zd %jd %td\n", t, n, -1000000007L * n,
             3000000000UL + (unsigned long)n, -(long long)n * (1LL << 33), 0xdeadbeefcafeULL + n,
             (size_t)n * 1000, (ssize_t)-n, (intmax_t)n << 40, (ptrdiff_t)-n);
        break;
    case 2:
        EMIT("t%d n%d floats %f %.3f %e %E %g %G %a %10.4f|%-12.2e|\n", t, n, n * 0.5, -n / 3.0,
             n * 1e10, n * 1e-10, n * 123.456, 1e-5 * n, n * 0.25, n / 7.0, -n * 1e3);
        break;
    case 3:
        EMIT("t%d n%d strs [%s] [%10s] [%-10s] [%.3s] [%*s] [%.*s]\n", t, n, w, w, w, w, 12, w, 2,
             w);
        break;
    case 4:
        EMIT("t%d n%d chars %c%c%c [%3c] [%-3c] %% done\n", t, n, 'a' + n % 26, 'A' + n % 26,
             '0' + n % 10, 'q', 'r');
        break;
    case 5:
        EMIT("t%d n%d small %hhd %hhu %hd %hu %#x %#o %+d % d\n", t, n, n, n, n * 1000, n * 1000,
             (unsigned)n, (unsigned)n, n, n);
        break;
    case 6:
        EMIT("t%d n%d ptr %p %p long double %Lf %Lg\n", t, n, (void *)(uintptr_t)(n * 4096 + 16),
             (void *)0, (long double)n / 3, (long double)n * 1e300L);
        break;
    case 7:
        EMIT("t%d n%d star %*d|%-*d|%*.*f|%.*e\n", t, n, 8, n, 6, n, 12, 3, n * 1.5, 2, n * 1e5);
        break;
    default:
        EMIT("t%d n%d no args at all, just a longer line to cross a 64-byte packet or two "
             "when lanes are narrow\n",
             t, n);
        break;
    }
}

struct printf_arg {
    int t;
    int lines;
};

static void *printf_thread(void *arg)
{
    struct printf_arg *a = arg;
    char expect[1024];
    for (int n = 0; n < a->lines; n++)
        emit_line(a->t, n, expect, sizeof expect, true);
    return NULL;
}

/* Every thread's lines must appear whole and in that thread's order. */
static void check_printf_output(const char *text, int threads, int lines)
{
    int *next = calloc((size_t)threads, sizeof *next);
    char expect[1024];
    const char *p = text;
    int total = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (nl == NULL) {
            CHECKF(0, "output ends without a newline: \"%s\"", p);
            break;
        }
        int t = -1, n = -1;
        if (sscanf(p, "t%d n%d", &t, &n) != 2 || t < 0 || t >= threads) {
            CHECKF(0, "unexpected line \"%.*s\"", (int)(nl - p), p);
            p = nl + 1;
            continue;
        }
        CHECKF(n == next[t], "thread %d: line %d came when %d was due", t, n, next[t]);
        /* The host printf's text of that line. */
        emit_line(t, n, expect, sizeof expect, false);
        CHECKF(strlen(expect) == (size_t)(nl - p + 1) && memcmp(p, expect, strlen(expect)) == 0,
               "thread %d line %d:\n got  %.*s want %s", t, n, (int)(nl - p + 1), p, expect);
        next[t] = n + 1;
        total++;
        p = nl + 1;
    }
    CHECKF(total == threads * lines, "%d lines printed, want %d", total, threads * lines);
    free(next);
}

void test_printf(bool wide, uint32_t lanes)
{
    struct rig rig;
    int threads = 8;
    int lines = 300 * scale;
    rig_up(&rig, wide, 16, lanes, true);
    pthread_t tid[8];
    struct printf_arg args[8];
    for (int t = 0; t < threads; t++) {
        args[t] = (struct printf_arg){t, lines};
        pthread_create(&tid[t], NULL, printf_thread, &args[t]);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    /* kernel_finished: all output must be written when it returns. */
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *text = slurp(rig.out, &len);
    tether_rpc_server_kernel_started(rig.srv);
    check_printf_output(text, threads, lines);
    free(text);

    /* One long line: a 20 KiB %s, many packets. */
    char *big = malloc(20001);
    for (int i = 0; i < 20000; i++)
        big[i] = (char)('a' + i % 26);
    big[20000] = '\0';
    long pos = ftell(rig.out);
    dprintf_("[%s]\n", big);
    tether_rpc_server_kernel_finished(rig.srv);
    text = slurp(rig.out, &len);
    CHECKF(len == (size_t)pos + 20003 && text[pos] == '[' &&
               memcmp(text + pos + 1, big, 20000) == 0 && text[pos + 20001] == ']',
           "long line: %zu bytes", len - (size_t)pos);
    free(text);
    free(big);
    tether_rpc_server_kernel_started(rig.srv);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.printf_lines == (uint64_t)(threads * lines + 1), "stats: %llu lines",
           (unsigned long long)st.printf_lines);
    CHECKF(st.malformed == 0 && st.unhandled == 0, "stats: malformed %llu unhandled %llu",
           (unsigned long long)st.malformed, (unsigned long long)st.unhandled);
    char desc[256];
    tether_rpc_server_describe(rig.srv, desc, sizeof desc);
    printf("%s\n", desc);

    /* A line printed while the kernel still runs reaches the file with the kernel still running:
     * the thread flushes at least once a millisecond while calls come and before it sleeps.  The
     * file's size is read with fstat (an fflush here would do the server's work); bounded by a
     * minute, seen within milliseconds. */
    struct stat sb;
    CHECKF(fstat(fileno(rig.out), &sb) == 0, "fstat");
    off_t size0 = sb.st_size;
    dprintf_("still running\n");
    int waited = 0;
    while (fstat(fileno(rig.out), &sb) == 0 && sb.st_size == size0 && waited < 60000) {
        usleep(1000);
        waited++;
    }
    CHECKF(sb.st_size == size0 + 14, "a line while the kernel runs: %lld bytes after %d ms",
           (long long)(sb.st_size - size0), waited);
    rig_down(&rig);
}

/* ---- puts/fwrite to both streams -------------------------------------------------------- */

void test_write(void)
{
    struct rig rig;
    rig_up(&rig, true, 8, 32, true);
    tether_device_write(TETHER_RPC_STDOUT, "hello", 5, true);
    tether_device_write(TETHER_RPC_STDERR, "to stderr\n", 10, false);
    tether_device_write(TETHER_RPC_STDOUT, "raw bytes\0with nul|", 19, false);
    tether_device_write(TETHER_RPC_STDOUT, "", 0, true);
    /* GPU fputs/fwrite: the host's FILE * values, mapped to the server's streams. */
    tether_device_write_file((uint64_t)(uintptr_t)stdout, "file out|", 9, false);
    tether_device_write_file((uint64_t)(uintptr_t)stderr, "file err\n", 9, false);
    tether_device_write_file(0x1234, "dropped", 7, false);
    dprintf_("%s\n", "after");
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *out = slurp(rig.out, &len);
    char *err = slurp(rig.err, &len);
    CHECKF(memcmp(out, "hello\nraw bytes\0with nul|\nfile out|after\n", 41) == 0, "stdout: \"%s\"",
           out);
    CHECKF(strncmp(err, "to stderr\nfile err\n", 19) == 0, "stderr: \"%s\"", err);
    CHECKF(strstr(err, "device wrote 7 bytes to FILE 0x1234: only stdout and stderr are served") !=
               NULL,
           "no diagnostic for an unknown FILE: \"%s\"", err);
    CHECKF(strstr(out, "dropped") == NULL && strstr(err, "dropped") == NULL,
           "bytes to 0x1234 written");
    free(out);
    free(err);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}
