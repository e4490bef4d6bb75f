/*
 * test/services/test_rpc_host.c - server library and device client together,
 * with host threads playing the device: the device library's own code
 * (rpc/device, compiled for the host) talks to a server and its thread over
 * plain host memory.  Runs under ThreadSanitizer too.
 *
 *   test_rpc_host <case> [scale]
 * cases: printf-wide printf-lanes write malloc malloc-burst user user-lanes bad exit abort drain
 *        idle-lanes idle-wide slow-answers placement
 * (placement exits 77, ctest's skip, when no PCI device in sysfs lists its local cores)
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../rpc/device/device_internal.h"
#include "../../rpc/server/rpc_internal.h"
#include "tether/rpc.h"
#include "svc_shared_mem.h"
#include "svc_test.h"

extern struct tether_rpc_device_client __tether_rpc_client;

static int scale = 1;

/* ---- fake device memory ------------------------------------------------------------------ */

static atomic_long dev_live;

static tether_status_t device_alloc(void *ctx, size_t size, uint64_t *dev_p)
{
    (void)ctx;
    void *p = malloc(size);
    if (p == NULL)
        return TETHER_ERR_NO_MEMORY;
    atomic_fetch_add(&dev_live, 1);
    *dev_p = (uint64_t)(uintptr_t)p;
    return TETHER_OK;
}

static void device_free(void *ctx, uint64_t dev)
{
    (void)ctx;
    atomic_fetch_sub(&dev_live, 1);
    free((void *)(uintptr_t)dev);
}

/* ---- a server with the global attached -------------------------------------------------- */

struct rig {
    tether_rpc_server_t *srv;
    FILE *out;
    FILE *err;
};

static void rig_up(struct rig *rig, bool wide, uint32_t ports, uint32_t lanes, bool thread)
{
    rig->out = tmpfile();
    rig->err = tmpfile();
    struct tether_rpc_server_config cfg = {
        .device_id = 0,
        .port_count = ports,
        .lane_count = lanes,
        .host_client = wide,
        .shared_alloc = svc_shared_alloc,
        .shared_free = svc_shared_free,
        .device_alloc = device_alloc,
        .device_free = device_free,
        .out = rig->out,
        .err = rig->err,
    };
    struct tether_error err = {""};
    tether_status_t st = tether_rpc_server_create(&cfg, &rig->srv, &err);
    if (st != TETHER_OK) {
        fprintf(stderr, "server_create: %s (%s)\n", tether_status_str(st), err.msg);
        exit(2);
    }
    unsigned char buf[sizeof(struct tether_rpc_device_client)];
    st = tether_rpc_server_client_bytes(rig->srv, (uint64_t)(uintptr_t)&__tether_rpc_client, buf,
                                        sizeof buf);
    CHECK(st == TETHER_OK, "client_bytes: %s", tether_status_str(st));
    memcpy(&__tether_rpc_client, buf, sizeof buf);
    if (thread) {
        st = tether_rpc_server_start(rig->srv, NULL, &err);
        CHECK(st == TETHER_OK, "start: %s (%s)", tether_status_str(st), err.msg);
    }
    tether_rpc_server_kernel_started(rig->srv);
}

/* Reads a whole stream back. */
static char *slurp(FILE *f, size_t *len_p)
{
    fflush(f);
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    *len_p = got;
    return s;
}

static void rig_down(struct rig *rig)
{
    tether_rpc_server_kernel_finished(rig->srv);
    tether_rpc_server_destroy(rig->srv);
    memset(&__tether_rpc_client, 0, sizeof __tether_rpc_client);
    fclose(rig->out);
    fclose(rig->err);
    CHECK(atomic_load(&dev_live) == 0, "%ld device blocks still held after destroy",
          atomic_load(&dev_live));
}

/* ---- printf ----------------------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static int dprintf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = tether_device_vprintf(TETHER_RPC_STDOUT, fmt, ap);
    va_end(ap);
    return n;
}

/* Prints line n of thread t through the device library and writes the host
 * printf's version of it to expect; every common conversion is used. */
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int want = snprintf(expect, cap, __VA_ARGS__);                                             \
        if (print) {                                                                               \
            int got = dprintf_(__VA_ARGS__);                                                       \
            CHECK(got == want, "printf returned %d, want %d", got, want);                          \
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
            CHECK(0, "output ends without a newline: \"%s\"", p);
            break;
        }
        int t = -1, n = -1;
        if (sscanf(p, "t%d n%d", &t, &n) != 2 || t < 0 || t >= threads) {
            CHECK(0, "unexpected line \"%.*s\"", (int)(nl - p), p);
            p = nl + 1;
            continue;
        }
        CHECK(n == next[t], "thread %d: line %d came when %d was due", t, n, next[t]);
        /* The host printf's text of that line. */
        emit_line(t, n, expect, sizeof expect, false);
        CHECK(strlen(expect) == (size_t)(nl - p + 1) && memcmp(p, expect, strlen(expect)) == 0,
              "thread %d line %d:\n got  %.*s want %s", t, n, (int)(nl - p + 1), p, expect);
        next[t] = n + 1;
        total++;
        p = nl + 1;
    }
    CHECK(total == threads * lines, "%d lines printed, want %d", total, threads * lines);
    free(next);
}

static void test_printf(bool wide, uint32_t lanes)
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
    CHECK(len == (size_t)pos + 20003 && text[pos] == '[' &&
              memcmp(text + pos + 1, big, 20000) == 0 && text[pos + 20001] == ']',
          "long line: %zu bytes", len - (size_t)pos);
    free(text);
    free(big);
    tether_rpc_server_kernel_started(rig.srv);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.printf_lines == (uint64_t)(threads * lines + 1), "stats: %llu lines",
          (unsigned long long)st.printf_lines);
    CHECK(st.malformed == 0 && st.unhandled == 0, "stats: malformed %llu unhandled %llu",
          (unsigned long long)st.malformed, (unsigned long long)st.unhandled);
    char desc[256];
    tether_rpc_server_describe(rig.srv, desc, sizeof desc);
    printf("%s\n", desc);
    rig_down(&rig);
}

/* ---- puts/fwrite to both streams -------------------------------------------------------- */

static void test_write(void)
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
    CHECK(memcmp(out, "hello\nraw bytes\0with nul|\nfile out|after\n", 41) == 0, "stdout: \"%s\"",
          out);
    CHECK(strncmp(err, "to stderr\nfile err\n", 19) == 0, "stderr: \"%s\"", err);
    CHECK(strstr(err, "device wrote 7 bytes to FILE 0x1234: only stdout and stderr are served") !=
              NULL,
          "no diagnostic for an unknown FILE: \"%s\"", err);
    CHECK(strstr(out, "dropped") == NULL && strstr(err, "dropped") == NULL,
          "bytes to 0x1234 written");
    free(out);
    free(err);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}

/* ---- malloc/free ------------------------------------------------------------------------ */

struct heap_arg {
    int t;
    int rounds;
    size_t live_target; /* bytes each thread keeps live */
    atomic_int *failures;
    size_t max_size; /* 0: the mix below; else sizes 1..max_size (a GPU-like burst) */
};

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *heap_thread(void *arg)
{
    struct heap_arg *a = arg;
    enum { SLOTS = 256 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(a->t + 1);
    size_t live = 0;
    for (int r = 0; r < a->rounds; r++) {
        int i = (int)(rng(&seed) % SLOTS);
        if (ptr[i] != NULL) {
            unsigned char tag = (unsigned char)(a->t * 31 + i);
            for (size_t k = 0; k < size[i]; k += 97)
                if (ptr[i][k] != (unsigned char)(tag + k)) {
                    atomic_fetch_add(a->failures, 1);
                    break;
                }
            tether_device_free(ptr[i]);
            live -= size[i];
            ptr[i] = NULL;
            continue;
        }
        uint64_t kind = rng(&seed) % 100;
        size_t n = kind < 70   ? 1 + rng(&seed) % 256
                   : kind < 95 ? 256 + rng(&seed) % 8192
                   : kind < 99 ? 8192 + rng(&seed) % (512 << 10)
                               : (1 << 20) + rng(&seed) % (3 << 20);
        if (live + n > a->live_target && n > 256)
            n = 1 + rng(&seed) % 256;
        if (a->max_size != 0)
            n = 1 + rng(&seed) % a->max_size;
        unsigned char *p = (kind % 7 == 0) ? tether_device_calloc(1, n) : tether_device_malloc(n);
        if (p == NULL) {
            atomic_fetch_add(a->failures, 1);
            continue;
        }
        if (((uintptr_t)p & 15) != 0)
            atomic_fetch_add(a->failures, 1);
        if (kind % 7 == 0)
            for (size_t k = 0; k < n; k += 61)
                if (p[k] != 0)
                    atomic_fetch_add(a->failures, 1);
        unsigned char tag = (unsigned char)(a->t * 31 + i);
        for (size_t k = 0; k < n; k += 97)
            p[k] = (unsigned char)(tag + k);
        ptr[i] = p;
        size[i] = n;
        live += n;
    }
    for (int i = 0; i < SLOTS; i++)
        tether_device_free(ptr[i]);
    return NULL;
}

/* Many threads at once on small blocks, as a GPU grid does: 64 threads (more than this machine
 * has cores) allocating 1..4096 bytes, each block's every byte checked before it is freed. */
static void *burst_thread(void *arg)
{
    struct heap_arg *a = arg;
    enum { SLOTS = 16 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(a->t + 1);
    for (int r = 0; r < a->rounds; r++) {
        int i = (int)(rng(&seed) % SLOTS);
        unsigned char tag = (unsigned char)(a->t * 7 + i);
        if (ptr[i] != NULL) {
            for (size_t k = 0; k < size[i]; k++)
                if (ptr[i][k] != (unsigned char)(tag + k)) {
                    atomic_fetch_add(a->failures, 1);
                    break;
                }
            tether_device_free(ptr[i]);
            ptr[i] = NULL;
            continue;
        }
        size_t n = 1 + rng(&seed) % a->max_size;
        unsigned char *p = tether_device_malloc(n);
        if (p == NULL) {
            atomic_fetch_add(a->failures, 1);
            continue;
        }
        for (size_t k = 0; k < n; k++)
            p[k] = (unsigned char)(tag + k);
        ptr[i] = p;
        size[i] = n;
    }
    for (int i = 0; i < SLOTS; i++)
        tether_device_free(ptr[i]);
    return NULL;
}

static void test_malloc_burst(void)
{
    struct rig rig;
    rig_up(&rig, false, 64, 32, true);
    atomic_int failures = 0;
    enum { THREADS = 64 };
    pthread_t tid[THREADS];
    struct heap_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct heap_arg){t, 3000 * scale, 0, &failures, 4096};
        pthread_create(&tid[t], NULL, burst_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECK(atomic_load(&failures) == 0, "%d heap failures (bad data or NULL) with %d threads",
          atomic_load(&failures), THREADS);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    /* 64 threads x 16 blocks of at most 4 KiB: a few MiB live; slabs made one per class at a
     * time keep the heap near that (a slab per thread and class would be 64 MiB). */
    CHECK(st.heap_bytes <= (40u << 20), "heap grew to %llu bytes for ~4 MiB live",
          (unsigned long long)st.heap_bytes);
    rig_down(&rig);
}

static void test_malloc(void)
{
    struct rig rig;
    rig_up(&rig, true, 16, 32, true);
    atomic_int failures = 0;
    enum { THREADS = 8 };
    pthread_t tid[THREADS];
    struct heap_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct heap_arg){t, 20000 * scale, 6u << 20, &failures, 0};
        pthread_create(&tid[t], NULL, heap_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECK(atomic_load(&failures) == 0, "%d heap failures (bad data, alignment or NULL)",
          atomic_load(&failures));

    /* Tens of MiB live at once, from one thread, then all freed and reused. */
    enum { N = 48 };
    void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = tether_device_malloc(1 << 20);
        CHECK(blocks[i] != NULL, "1 MiB block %d", i);
        if (blocks[i])
            memset(blocks[i], i, 1 << 20);
    }
    for (int i = 0; i < N; i++) {
        unsigned char *b = blocks[i];
        CHECK(b == NULL || (b[0] == i && b[(1 << 20) - 1] == i), "block %d data", i);
    }
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.heap_bytes >= (uint64_t)N << 20, "heap holds %llu bytes with %d MiB live",
          (unsigned long long)st.heap_bytes, N);
    uint64_t before = st.heap_bytes;
    for (int i = 0; i < N; i++)
        tether_device_free(blocks[i]);
    for (int i = 0; i < N; i++) {
        blocks[i] = tether_device_malloc(1 << 20);
        CHECK(blocks[i] != NULL, "1 MiB block %d again", i);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.heap_bytes <= before + (64u << 20), "freed memory reused: %llu -> %llu bytes",
          (unsigned long long)before, (unsigned long long)st.heap_bytes);
    for (int i = 0; i < N; i++)
        tether_device_free(blocks[i]);

    /* Small blocks are reused: the same size again and again does not grow the heap. */
    tether_rpc_server_stats(rig.srv, &st);
    before = st.heap_bytes;
    for (int i = 0; i < 200000; i++) {
        void *p = tether_device_malloc(48);
        CHECK(p != NULL, "small block %d", i);
        tether_device_free(p);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.heap_bytes <= before, "small reuse grew the heap: %llu -> %llu",
          (unsigned long long)before, (unsigned long long)st.heap_bytes);

    /* realloc keeps the data; large blocks (> 1 MiB) are kept and reused on the device. */
    char *r = tether_device_malloc(10);
    memcpy(r, "0123456789", 10);
    r = tether_device_realloc(r, 100000);
    CHECK(r != NULL && memcmp(r, "0123456789", 10) == 0, "realloc kept the data");
    r = tether_device_realloc(r, 5u << 20);
    CHECK(r != NULL && memcmp(r, "0123456789", 10) == 0, "realloc to 5 MiB kept the data");
    tether_device_free(r);
    tether_rpc_server_stats(rig.srv, &st);
    uint64_t chunks = st.heap_chunks;
    /* 100 sizes of one size class (4..5 MiB): one new block from the host, reused 99 times. */
    for (int i = 0; i < 100; i++) {
        void *p = tether_device_malloc((5u << 20) - 100000 + (unsigned)i * 1000);
        CHECK(p != NULL, "about 5 MiB again (%d)", i);
        tether_device_free(p);
    }
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.heap_chunks <= chunks + 1, "freed large blocks reused without the host (%llu -> %llu)",
          (unsigned long long)chunks, (unsigned long long)st.heap_chunks);

    /* A FREE call while a kernel runs: the host's device_free waits until none runs. */
    struct tether_rpc_alloc_req areq = {1 << 20, 65536};
    struct tether_rpc_alloc_ans aans = {0};
    struct dev_iov iov = {&areq, sizeof areq};
    uint64_t len = 0;
    uint32_t status = 99;
    CHECK(
        tether_device_call(TETHER_RPC_OP_ALLOC, &iov, 1, true, &aans, sizeof aans, &len, &status) &&
            status == TETHER_RPC_CALL_OK && len == sizeof aans && aans.ptr % 65536 == 0,
        "raw ALLOC: status %u len %llu ptr 0x%llx", status, (unsigned long long)len,
        (unsigned long long)aans.ptr);
    tether_rpc_server_stats(rig.srv, &st);
    uint64_t with_raw = st.heap_chunks;
    long live_before = atomic_load(&dev_live);
    struct tether_rpc_free_req freq = {aans.ptr};
    iov = (struct dev_iov){&freq, sizeof freq};
    tether_device_call(TETHER_RPC_OP_FREE, &iov, 1, false, NULL, 0, NULL, NULL);
    while (st.heap_chunks == with_raw) { /* fire and forget: wait for the server to take it */
        usleep(100);
        tether_rpc_server_stats(rig.srv, &st);
    }
    CHECK(st.heap_chunks == with_raw - 1, "FREE taken by the host (%llu -> %llu)",
          (unsigned long long)with_raw, (unsigned long long)st.heap_chunks);
    CHECK(atomic_load(&dev_live) == live_before,
          "device_free deferred while a kernel runs (%ld -> %ld blocks)", live_before,
          atomic_load(&dev_live));
    tether_rpc_server_kernel_finished(rig.srv);
    CHECK(atomic_load(&dev_live) == live_before - 1,
          "device_free done once no kernel runs (%ld -> %ld blocks)", live_before,
          atomic_load(&dev_live));
    tether_rpc_server_kernel_started(rig.srv);
    void *al = tether_device_aligned_alloc(4096, 1000);
    CHECK(al != NULL && ((uintptr_t)al & 4095) == 0, "aligned_alloc(4096) = %p", al);
    tether_device_free(al);
    CHECK(atomic_load(&dev_live) > 0, "the device holds heap chunks before shutdown");
    rig_down(&rig); /* checks that destroy released every chunk */
}

/* ---- user opcodes ----------------------------------------------------------------------- */

static tether_status_t reverse_handler(void *user, const struct tether_rpc_request *req,
                                       struct tether_rpc_reply *reply)
{
    atomic_int *count = user;
    atomic_fetch_add(count, 1);
    if (req->size == 4 && memcmp(req->data, "fail", 4) == 0)
        return TETHER_ERR_INVALID;
    unsigned char buf[4096];
    if (req->size > sizeof buf)
        return TETHER_ERR_INVALID;
    for (size_t i = 0; i < req->size; i++)
        buf[i] = ((const unsigned char *)req->data)[req->size - 1 - i];
    return tether_rpc_reply_append(reply, buf, req->size);
}

/* Upper-cases the request: a second handler to swap in. */
static tether_status_t upper_handler(void *user, const struct tether_rpc_request *req,
                                     struct tether_rpc_reply *reply)
{
    (void)user;
    unsigned char buf[64];
    if (req->size > sizeof buf)
        return TETHER_ERR_INVALID;
    for (size_t i = 0; i < req->size; i++) {
        unsigned char c = ((const unsigned char *)req->data)[i];
        buf[i] = c >= 'a' && c <= 'z' ? (unsigned char)(c - 'a' + 'A') : c;
    }
    return tether_rpc_reply_append(reply, buf, req->size);
}

struct user_arg {
    int t;
    int calls;
    atomic_int *failures;
};

static void *user_thread(void *arg)
{
    struct user_arg *a = arg;
    char in[3000], out[3000];
    for (int c = 0; c < a->calls; c++) {
        int n = snprintf(in, sizeof in, "thread %d call %d ", a->t, c);
        for (int k = 0; k < (c % 40) * 60; k++)
            in[n++] = (char)('a' + (k + c) % 26);
        int64_t r = tether_rpc_call(0x8001, in, (uint64_t)n, out, sizeof out);
        bool ok = r == n;
        for (int i = 0; ok && i < n; i++)
            ok = out[i] == in[n - 1 - i];
        if (!ok)
            atomic_fetch_add(a->failures, 1);
    }
    return NULL;
}

/* wide: the host client's calls (one thread over all lanes of a port); else one-lane calls as
 * a GPU thread makes them, which the server thread answers on its hot path when it sees them
 * on a port of the last calls (srv_serve_hot). */
static void test_user(bool wide)
{
    struct rig rig;
    rig_up(&rig, wide, 16, 32, true);
    atomic_int count = 0, failures = 0;
    CHECK(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    CHECK(tether_rpc_register(rig.srv, 0x7fff, reverse_handler, &count) == TETHER_ERR_INVALID,
          "opcode below the user range refused");
    enum { THREADS = 6 };
    pthread_t tid[THREADS];
    struct user_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct user_arg){t, 200 * scale, &failures};
        pthread_create(&tid[t], NULL, user_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECK(atomic_load(&failures) == 0, "%d wrong answers", atomic_load(&failures));
    CHECK(atomic_load(&count) == THREADS * 200 * scale, "handler ran %d times",
          atomic_load(&count));

    /* Answers of 0..TETHER_RPC_INLINE_MAX bytes come in the head, longer ones in the buffers. */
    struct tether_rpc_stats st0, st1;
    tether_rpc_server_stats(rig.srv, &st0);
    const char *alpha = "abcdefghijklmnop";
    for (uint64_t n = 0; n <= TETHER_RPC_INLINE_MAX + 2; n++) {
        char rev[16];
        memset(rev, '?', sizeof rev);
        int64_t got = tether_rpc_call(0x8001, alpha, n, rev, sizeof rev);
        bool ok = got == (int64_t)n && rev[n] == '?';
        for (uint64_t i = 0; ok && i < n; i++)
            ok = rev[i] == alpha[n - 1 - i];
        CHECK(ok, "answer of %llu bytes: length %lld", (unsigned long long)n, (long long)got);
    }
    tether_rpc_server_stats(rig.srv, &st1);
    CHECK(st1.inline_answers - st0.inline_answers == TETHER_RPC_INLINE_MAX + 1,
          "%llu inline answers, expected %u",
          (unsigned long long)(st1.inline_answers - st0.inline_answers), TETHER_RPC_INLINE_MAX + 1);
    /* One thread's calls one after the other on its home port: one-lane calls are answered on
     * the server thread's hot path (most of them; at least one must be, however long a loaded
     * machine keeps the server thread off its CPU: no time limit here but ctest's hang guard).
     * Wide ones ring the doorbell, which ends the thread's watch of the hot ports, so they may
     * be served by either way. */
    for (int c = 0;; c++) {
        char one[4] = {(char)c, 1, 2, 3}, rev[4];
        CHECK(tether_rpc_call(0x8001, one, 4, rev, 4) == 4 && rev[0] == 3 && rev[3] == (char)c,
              "call %d: wrong answer", c);
        if (c < 200)
            continue;
        tether_rpc_server_stats(rig.srv, &st1);
        if (wide || st1.hot_answers > st0.hot_answers)
            break;
        if (c == 1000000)
            fprintf(stderr, "no call answered on the hot path after %d calls; calling on\n", c);
    }
    CHECK(wide ? st1.hot_answers <= st1.inline_answers : st1.hot_answers > st0.hot_answers,
          "%s calls: %llu answered on the hot path, %llu inline", wide ? "wide" : "one-lane",
          (unsigned long long)st1.hot_answers, (unsigned long long)st1.inline_answers);
    uint64_t head[2];
    uint32_t status;
    uint64_t ilen;
    unsigned char bytes[TETHER_RPC_INLINE_MAX];
    CHECK(tether_rpc_inline_pack(
              200, (const unsigned char *)"\xff\x01\x80\x7f\x00\xfe\x02\x03\x04\x05", 10, head) &&
              tether_rpc_inline_unpack(head, &status, &ilen, bytes, 3) && status == 200 &&
              ilen == 10 && memcmp(bytes, "\xff\x01\x80", 3) == 0,
          "inline pack/unpack round trip, answer cut to the caller's size");
    CHECK(!tether_rpc_inline_pack(256, bytes, 0, head) &&
              !tether_rpc_inline_pack(0, bytes, TETHER_RPC_INLINE_MAX + 1, head),
          "what does not fit is not packed");
    head[0] = head[1] = 0;
    CHECK(!tether_rpc_inline_unpack(head, &status, &ilen, bytes, 10),
          "an empty head holds no answer");

    char out[8];
    int64_t r = tether_rpc_call(0x8001, "abcdefghij", 10, out, sizeof out);
    CHECK(r == 10 && memcmp(out, "jihgfedc", 8) == 0, "answer cut to out_size, length %lld",
          (long long)r);
    r = tether_rpc_call(0x8001, "fail", 4, out, sizeof out);
    CHECK(r == -(int64_t)TETHER_RPC_CALL_ERROR, "failing handler: %lld", (long long)r);
    /* A handler replaced, added or shadowed between calls is the one that runs (the server
     * keeps its last lookup while no table changed). */
    CHECK(tether_rpc_register(rig.srv, 0x8001, upper_handler, NULL) == TETHER_OK, "replace");
    r = tether_rpc_call(0x8001, "abc", 3, out, sizeof out);
    CHECK(r == 3 && memcmp(out, "ABC", 3) == 0, "replaced handler: %lld", (long long)r);
    CHECK(tether_rpc_register_global(0x8003, reverse_handler, &count) == TETHER_OK, "global");
    r = tether_rpc_call(0x8003, "abc", 3, out, sizeof out);
    CHECK(r == 3 && memcmp(out, "cba", 3) == 0, "process-wide handler: %lld", (long long)r);
    CHECK(tether_rpc_register(rig.srv, 0x8003, upper_handler, NULL) == TETHER_OK, "shadow");
    r = tether_rpc_call(0x8003, "abc", 3, out, sizeof out);
    CHECK(r == 3 && memcmp(out, "ABC", 3) == 0, "the server's own handler first: %lld",
          (long long)r);
    CHECK(tether_rpc_register(rig.srv, 0x8003, NULL, NULL) == TETHER_OK &&
              tether_rpc_register_global(0x8003, NULL, NULL) == TETHER_OK &&
              tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK,
          "restore");
    r = tether_rpc_call(0x8001, "abc", 3, out, sizeof out);
    CHECK(r == 3 && memcmp(out, "cba", 3) == 0, "handler back: %lld", (long long)r);
    r = tether_rpc_call(0x8002, "x", 1, out, sizeof out);
    CHECK(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "unhandled opcode: %lld", (long long)r);
    r = tether_rpc_call(0x8002, "x", 1, out, sizeof out);
    CHECK(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "unhandled again: %lld", (long long)r);
    r = tether_rpc_call(5, "x", 1, out, sizeof out);
    CHECK(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "built-in opcode refused: %lld", (long long)r);
    CHECK(tether_rpc_register(rig.srv, 0x8001, NULL, NULL) == TETHER_OK, "unregister");
    r = tether_rpc_call(0x8001, "x", 1, out, sizeof out);
    CHECK(r == -(int64_t)TETHER_RPC_CALL_UNHANDLED, "after unregister: %lld", (long long)r);
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *err = slurp(rig.err, &len);
    CHECK(strstr(err, "no handler for RPC opcode 0x8002") != NULL &&
              strstr(strstr(err, "0x8002") + 1, "0x8002") == NULL,
          "one diagnostic for 0x8002: \"%s\"", err);
    free(err);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.unhandled == 3, "stats: %llu unhandled", (unsigned long long)st.unhandled);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}

/* ---- bad input from the device ---------------------------------------------------------- */

struct raw_msg {
    const unsigned char *bytes;
    uint64_t len;   /* bytes actually sent */
    uint64_t claim; /* length written into the stream */
    uint64_t pos;
};

static void raw_fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct raw_msg *m = arg;
    unsigned char *dst = (unsigned char *)buffer->data;
    (void)lane;
    memset(dst, 0, 64);
    uint64_t off = 0;
    if (m->pos == 0) {
        memcpy(dst, &m->claim, 8);
        off = 8;
    }
    uint64_t data = m->pos == 0 ? 0 : m->pos - 8;
    uint64_t n = m->len > data ? m->len - data : 0;
    if (n > 64 - off)
        n = 64 - off;
    memcpy(dst + off, m->bytes + data, n);
    m->pos += 64;
}

struct raw_answer {
    uint32_t status;
    bool got;
};

static void raw_use(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct raw_answer *a = arg;
    (void)lane;
    if (!a->got) {
        memcpy(&a->status, (unsigned char *)buffer->data + 8, 4);
        a->got = true;
    }
}

/* Opens exactly port `at` (waiting until it is free). */
static rpc_port_t open_at(struct rpc_client *c, uint32_t opcode, uint32_t at)
{
    rpc_port_t port;
    for (;;) {
        if (rpc_client_try_open(c, opcode, 1, at, &port)) {
            if (rpc_port_index(&port) == at)
                return port;
            rpc_client_close(c, &port);
        }
        sched_yield();
    }
}

/* Sends one lane-0 message with the given bytes and claimed length on port
 * `at`; reads a one-packet answer if asked. */
static uint32_t raw_call(uint32_t opcode, const void *bytes, uint64_t len, uint64_t claim,
                         bool answer, uint32_t at)
{
    struct rpc_client *c = &__tether_rpc_client.client;
    rpc_port_t port = open_at(c, opcode, at);
    struct raw_msg m = {bytes, len, claim, 0};
    uint64_t packets = (len + 8 + 63) / 64;
    for (uint64_t p = 0; p < packets; p++)
        rpc_client_send(c, &port, raw_fill, &m);
    struct raw_answer a = {0, false};
    if (answer)
        rpc_client_recv(c, &port, raw_use, &a);
    rpc_client_close(c, &port);
    return a.status;
}

static void test_bad(void)
{
    struct rig rig;
    enum { PORTS = 16 };
    rig_up(&rig, false, PORTS, 1, true);
    uint32_t home = dev_caller_id() % PORTS; /* this thread's calls use it: keep it free */
    /* printf shorter than its header; with lengths that do not add up. */
    raw_call(TETHER_RPC_OP_PRINTF, "abc", 3, 3, false, (home + 1) % PORTS);
    struct {
        struct tether_rpc_printf_hdr h;
        char fmt[8];
    } pf = {{TETHER_RPC_STDOUT, 1000, 1000, 1000}, "%d %s\n"};
    raw_call(TETHER_RPC_OP_PRINTF, &pf, sizeof pf, sizeof pf, false, (home + 1) % PORTS);
    /* write shorter than its header */
    raw_call(TETHER_RPC_OP_WRITE, "ab", 2, 2, false, (home + 1) % PORTS);
    /* alloc with a wrong size and with a bad alignment */
    CHECK(raw_call(TETHER_RPC_OP_ALLOC, "abcd", 4, 4, true, (home + 1) % PORTS) ==
              TETHER_RPC_CALL_ERROR,
          "short alloc request");
    struct tether_rpc_alloc_req areq = {64, 3};
    CHECK(raw_call(TETHER_RPC_OP_ALLOC, &areq, sizeof areq, sizeof areq, true,
                   (home + 1) % PORTS) == TETHER_RPC_CALL_ERROR,
          "alloc with alignment 3");
    /* free of a pointer the host never handed out */
    struct tether_rpc_free_req freq = {0x12345678};
    raw_call(TETHER_RPC_OP_FREE, &freq, sizeof freq, sizeof freq, false, (home + 1) % PORTS);
    /* an opcode with reserved bits, and an unknown built-in opcode */
    CHECK(raw_call(0x777 | (1u << 20), "", 0, 0, true, (home + 1) % PORTS) ==
              TETHER_RPC_CALL_UNHANDLED,
          "unknown opcode");
    /* a request claiming more than TETHER_RPC_MSG_MAX: dropped with an answer */
    static unsigned char junk[200];
    raw_call(0x8003, junk, sizeof junk, (uint64_t)1 << 62, false, (home + 2) % PORTS);
    /* a port left mid-call by the device: the others still work */
    struct rpc_client *c = &__tether_rpc_client.client;
    rpc_port_t stuck = open_at(c, TETHER_RPC_OP_PRINTF, (home + 3) % PORTS);
    struct raw_msg m = {junk, 100, 1000, 0};
    rpc_client_send(c, &stuck, raw_fill, &m); /* 1 of 16 packets, then nothing */
    dprintf_("still %s\n", "served");
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *out = slurp(rig.out, &len);
    char *err = slurp(rig.err, &len);
    CHECK(strstr(out, "still served\n") != NULL, "stdout: \"%s\"", out);
    CHECK(strstr(out, "<missing") != NULL || strstr(out, "<bad") != NULL ||
              strstr(out, "%d") == NULL,
          "garbled printf shows markers: \"%s\"", out);
    CHECK(strstr(err, "shorter than its header") != NULL, "diagnostics: \"%s\"", err);
    CHECK(strstr(err, "never handed out") != NULL, "free diagnostic: \"%s\"", err);
    CHECK(strstr(err, "reserved bits") != NULL, "reserved bits diagnostic: \"%s\"", err);
    free(out);
    free(err);
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECK(st.malformed >= 6, "stats: %llu malformed", (unsigned long long)st.malformed);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig); /* destroy must not hang on the stuck port */
    (void)stuck;
}

/* ---- exit and abort (in a child process) ------------------------------------------------ */

static void *exit_thread(void *arg)
{
    int status = *(int *)arg;
    dprintf_("line before %s\n", status < 0 ? "abort" : "exit");
    if (status < 0)
        tether_device_abort();
    tether_device_exit(status);
}

static void test_exit(bool is_abort)
{
    fflush(NULL);
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        FILE *out = fdopen(fds[1], "w");
        struct tether_rpc_server_config cfg = {
            .port_count = 8,
            .lane_count = 32,
            .host_client = true,
            .shared_alloc = svc_shared_alloc,
            .shared_free = svc_shared_free,
            .out = out,
            .err = out,
        };
        tether_rpc_server_t *srv;
        if (tether_rpc_server_create(&cfg, &srv, NULL) != TETHER_OK)
            _exit(99);
        unsigned char buf[sizeof(struct tether_rpc_device_client)];
        tether_rpc_server_client_bytes(srv, (uint64_t)(uintptr_t)&__tether_rpc_client, buf,
                                       sizeof buf);
        memcpy(&__tether_rpc_client, buf, sizeof buf);
        tether_rpc_server_start(srv, NULL, NULL);
        tether_rpc_server_kernel_started(srv);
        int status = is_abort ? -1 : 42;
        pthread_t t;
        pthread_create(&t, NULL, exit_thread, &status);
        pthread_join(t, NULL); /* never returns: the server ends the process */
        _exit(98);
    }
    close(fds[1]);
    char text[4096];
    size_t n = 0;
    ssize_t k;
    while ((k = read(fds[0], text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)k;
    text[n] = '\0';
    close(fds[0]);
    int wstatus;
    waitpid(pid, &wstatus, 0);
    if (is_abort) {
        CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT, "abort: wait status 0x%x",
              wstatus);
        CHECK(strstr(text, "line before abort\n") != NULL &&
                  strstr(text, "the device called abort()") != NULL,
              "abort output: \"%s\"", text);
    } else {
        CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 42, "exit: wait status 0x%x", wstatus);
        CHECK(strcmp(text, "line before exit\n") == 0, "exit output: \"%s\"", text);
    }
}

/* ---- no thread: kernel_finished serves, handle() polls ---------------------------------- */

static void *drain_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        dprintf_("drain %d\n", i);
    return NULL;
}

/* ---- the thread while a kernel runs but makes no call ------------------------------------ */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/*
 * A kernel runs (rig_up started one) and makes no call for half a second.  Bounds that only a
 * busy server thread can break, never a slow machine (which wakes it less): a GPU-like server
 * (lanes) sleeps in slices of at most 100 us once calls stop, so it wakes at most once per 100 us
 * (plus the first, shorter slices); a server of host clients (wide), which ring for every call,
 * sleeps until rung, so it wakes only at its 50 ms safety poll and its CPU time is a small share
 * of the stretch.  TETHER_WAIT=spin (ctest sets it for idle-spin): no sleep at all while the
 * kernel runs; block: sleeps too.  Then calls are answered.
 */
static void test_idle(bool wide)
{
    const char *mode = getenv("TETHER_WAIT") != NULL ? getenv("TETHER_WAIT") : "adaptive";
    bool spin = strcmp(mode, "spin") == 0;
    struct rig rig;
    rig_up(&rig, wide, 16, 32, true);
    atomic_int count = 0;
    CHECK(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    char rev[4];
    CHECK(tether_rpc_call(0x8001, "abcd", 4, rev, 4) == 4, "a call before the quiet stretch");
    sleep_ms(20); /* past the hot rounds and the first slices */

    struct tether_rpc_stats s0, s1;
    tether_rpc_server_stats(rig.srv, &s0);
    uint64_t t0 = mono_ns();
    sleep_ms(500);
    tether_rpc_server_stats(rig.srv, &s1);
    uint64_t elapsed = mono_ns() - t0;
    uint64_t wakeups = s1.wakeups - s0.wakeups, cpu = s1.thread_cpu_ns - s0.thread_cpu_ns;
    printf("%s, TETHER_WAIT=%s: %llu wake-ups and %.2f ms of the server thread's CPU in %.1f ms "
           "without calls (%.2f%% of a core)\n",
           wide ? "host clients" : "GPU-like clients", mode, (unsigned long long)wakeups,
           (double)cpu / 1e6, (double)elapsed / 1e6, 100.0 * (double)cpu / (double)elapsed);
    CHECK(s0.thread_ns != 0 && s1.thread_ns > s0.thread_ns && s1.thread_cpu_ns >= s0.thread_cpu_ns,
          "thread times: %llu ns of CPU in %llu ns", (unsigned long long)s1.thread_cpu_ns,
          (unsigned long long)s1.thread_ns);
    if (spin) {
        CHECK(wakeups == 0, "TETHER_WAIT=spin: the thread slept %llu times while a kernel ran",
              (unsigned long long)wakeups);
    } else if (wide) {
        CHECK(wakeups <= elapsed / 50000000u + 4,
              "host clients: %llu wake-ups in %llu ns without a call or a ring",
              (unsigned long long)wakeups, (unsigned long long)elapsed);
        CHECK(cpu < elapsed / 20, "host clients: the thread used %.2f%% of a core without calls",
              100.0 * (double)cpu / (double)elapsed);
    } else {
        CHECK(wakeups >= 1, "the thread never slept in %llu ns without calls",
              (unsigned long long)elapsed);
        CHECK(wakeups <= elapsed / SRV_IDLE_SLICE_MAX_NS + 4,
              "%llu wake-ups in %llu ns: slices shorter than %u ns", (unsigned long long)wakeups,
              (unsigned long long)elapsed, SRV_IDLE_SLICE_MAX_NS);
    }
    /* Calls after the quiet stretch are answered (and the thread is hot again for them). */
    for (int c = 0; c < 100; c++) {
        char in[4] = {'w', 'x', 'y', (char)c};
        CHECK(tether_rpc_call(0x8001, in, 4, rev, 4) == 4 && rev[0] == (char)c && rev[3] == 'w',
              "call %d after the quiet stretch", c);
    }
    CHECK(atomic_load(&count) == 101, "handler ran %d times", atomic_load(&count));
    rig_down(&rig);
}

/* Host clients whose answers take long (a handler that sleeps): the caller polls briefly, then
 * sleeps until the server wakes it (device_client.h, TETHER_RPC_CLIENT_WAKES), so the calling
 * thread's CPU time is a small share of its wait (a busy machine only lowers it). */
static tether_status_t slow_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    sleep_ms(20);
    return tether_rpc_reply_append(reply, req->data, req->size);
}

struct slow_arg {
    int calls;
    uint64_t cpu_ns, wall_ns;
    atomic_int *wrong;
};

static void *slow_thread(void *arg)
{
    struct slow_arg *a = arg;
    uint64_t c0 = thread_cpu_ns(), t0 = mono_ns();
    for (int c = 0; c < a->calls; c++) {
        char in[24], out[24];
        int n = snprintf(in, sizeof in, "slow call %d", c);
        if (tether_rpc_call(0x8002, in, (uint64_t)n, out, sizeof out) != n || memcmp(in, out, n))
            atomic_fetch_add(a->wrong, 1);
    }
    a->cpu_ns = thread_cpu_ns() - c0;
    a->wall_ns = mono_ns() - t0;
    return NULL;
}

static void test_slow_answers(void)
{
    struct rig rig;
    rig_up(&rig, true, 16, 32, true);
    CHECK(tether_rpc_register(rig.srv, 0x8002, slow_handler, NULL) == TETHER_OK, "register");
    enum { THREADS = 3, CALLS = 10 };
    atomic_int wrong = 0;
    pthread_t tid[THREADS];
    struct slow_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct slow_arg){CALLS, 0, 0, &wrong};
        pthread_create(&tid[t], NULL, slow_thread, &args[t]);
    }
    uint64_t cpu = 0, wall = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        cpu += args[t].cpu_ns;
        wall += args[t].wall_ns;
    }
    printf("slow answers: %d callers waited %.1f ms in all, using %.2f ms of CPU (%.2f%%)\n",
           THREADS, (double)wall / 1e6, (double)cpu / 1e6, 100.0 * (double)cpu / (double)wall);
    CHECK(atomic_load(&wrong) == 0, "%d wrong answers", atomic_load(&wrong));
    CHECK(cpu < wall / 10, "callers used %.2f%% of their waits' time on a CPU",
          100.0 * (double)cpu / (double)wall);
    const struct tether_rpc_doorbell *bell =
        (const struct tether_rpc_doorbell *)(uintptr_t)__tether_rpc_client.doorbell;
    CHECK(bell != NULL && __atomic_load_n(&bell->waiters, __ATOMIC_RELAXED) == 0,
          "callers still counted as waiting");
    rig_down(&rig);
}

static void test_drain(void)
{
    struct rig rig;
    rig_up(&rig, true, 8, 32, false);
    pthread_t t;
    pthread_create(&t, NULL, drain_thread, NULL);
    /* Nobody serves but us: poll until the client thread is done. */
    void *ret;
    for (;;) {
        tether_rpc_server_handle(rig.srv, NULL);
        if (pthread_tryjoin_np(t, &ret) == 0)
            break;
    }
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *out = slurp(rig.out, &len);
    int lines = 0;
    for (char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    CHECK(lines == 50 && strncmp(out, "drain 0\ndrain 1\n", 16) == 0, "%d lines: \"%.40s\"", lines,
          out);
    free(out);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}

/* ---- placement: the thread near the device's PCI address --------------------------------- */

/* A PCI device of this machine whose sysfs local_cpulist lists cores: its address into bus and
 * the list, as sysfs writes it, into cpus; false when there is none. */
static bool pci_device_with_cores(char *bus, size_t bus_len, char *cpus, size_t cpus_len)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    bool found = false;
    if (d == NULL)
        return false;
    while (!found && (e = readdir(d)) != NULL) {
        char path[512];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= bus_len)
            continue;
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t n = fread(cpus, 1, cpus_len - 1, f);
        fclose(f);
        cpus[n] = '\0';
        cpus[strcspn(cpus, " \n")] = '\0';
        if (cpus[0] != '\0') {
            snprintf(bus, bus_len, "%s", e->d_name);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* The highest CPU number in a list such as "0-15,32-47". */
static long cpu_list_max(const char *list)
{
    long max = 0;
    for (const char *p = list; *p != '\0';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (v > max)
            max = v;
        p = end;
    }
    return max;
}

/* Does a thread of this process have a name (its comm) that starts with `prefix`? */
static bool thread_named(const char *prefix)
{
    DIR *d = opendir("/proc/self/task");
    bool found = false;
    struct dirent *e;
    while (d != NULL && !found && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        found = fgets(comm, sizeof comm, f) != NULL && strncmp(comm, prefix, strlen(prefix)) == 0;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

/* Starts a server's thread with pci_bus_id = bus on the topology HWLOC_SYNTHETIC = topo and
 * returns its describe line in desc. */
static void placement_describe(const char *topo, const char *bus, char *desc, size_t len)
{
    struct rig rig;
    struct tether_error err = {""};
    setenv("HWLOC_SYNTHETIC", topo, 1);
    rig_up(&rig, true, 8, 32, false);
    struct tether_rpc_thread_config tcfg = {.pci_bus_id = bus};
    tether_status_t st = tether_rpc_server_start(rig.srv, &tcfg, &err);
    CHECK(st == TETHER_OK, "start: %s (%s)", tether_status_str(st), err.msg);
    tether_rpc_server_describe(rig.srv, desc, len);
    CHECK(thread_named("tether-rpc"), "no thread of this process is named tether-rpc<device>");
    printf("HWLOC_SYNTHETIC=\"%s\", pci_bus_id %s%s%s: %s\n", topo, bus ? "\"" : "",
           bus ? bus : "NULL", bus ? "\"" : "", desc);
    rig_down(&rig);
    unsetenv("HWLOC_SYNTHETIC");
}

/* Returns 77 (skip) when this machine has no PCI device with local cores in sysfs, after the
 * checks that need none. */
static int test_placement(void)
{
    char desc[256], bus[64], cpus[1024], topo[64];
    const char *absent = "ffff:ff:1f.7";
    unsetenv("TETHER_RPC_CPUS"); /* it would decide instead */

    /* Without a usable address the thread may run anywhere, and the line says why. */
    placement_describe("numa:2 core:1 pu:1", NULL, desc, sizeof desc);
    CHECK(strstr(desc, ", thread on any core (2 NUMA nodes, no PCI address)") != NULL, "%s", desc);
    placement_describe("numa:2 core:1 pu:1", "../../zz", desc, sizeof desc);
    CHECK(strstr(desc, ", thread on any core (2 NUMA nodes, bad PCI address)") != NULL, "%s", desc);
    if (access("/sys/bus/pci/devices/ffff:ff:1f.7", F_OK) != 0) {
        placement_describe("numa:2 core:1 pu:1", absent, desc, sizeof desc);
        CHECK(strstr(desc, ", thread on any core (cores local to ffff:ff:1f.7: none listed)") !=
                  NULL,
              "%s", desc);
    }

    if (!pci_device_with_cores(bus, sizeof bus, cpus, sizeof cpus)) {
        printf("SKIP: no device in /sys/bus/pci/devices has a local_cpulist naming cores\n");
        return atomic_load(&svc_failures) == 0 ? 77 : 1;
    }
    /* Two NUMA nodes whose PUs cover every CPU of the list: the thread goes on exactly the
     * cores sysfs lists for the device. */
    long half = cpu_list_max(cpus) / 2 + 1;
    snprintf(topo, sizeof topo, "numa:2 pu:%ld", half);
    char want[1200];
    snprintf(want, sizeof want, ", thread on cores %s (local to %s)", cpus, bus);
    placement_describe(topo, bus, desc, sizeof desc);
    CHECK(strstr(desc, want) != NULL, "\"%s\" does not end in \"%s\"", desc, want);
    /* One NUMA node: any core is as good as another, whatever the address. */
    placement_describe("numa:1 pu:2", bus, desc, sizeof desc);
    CHECK(strstr(desc, ", thread on any core (one NUMA node)") != NULL, "%s", desc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s case [scale]\n", argv[0]);
        return 2;
    }
    if (argc > 2)
        scale = atoi(argv[2]);
    const char *c = argv[1];
    if (strcmp(c, "printf-wide") == 0)
        test_printf(true, 32);
    else if (strcmp(c, "printf-lanes") == 0)
        test_printf(false, 32);
    else if (strcmp(c, "write") == 0)
        test_write();
    else if (strcmp(c, "malloc") == 0)
        test_malloc();
    else if (strcmp(c, "malloc-burst") == 0)
        test_malloc_burst();
    else if (strcmp(c, "user") == 0)
        test_user(true);
    else if (strcmp(c, "user-lanes") == 0)
        test_user(false);
    else if (strcmp(c, "bad") == 0)
        test_bad();
    else if (strcmp(c, "exit") == 0)
        test_exit(false);
    else if (strcmp(c, "abort") == 0)
        test_exit(true);
    else if (strcmp(c, "drain") == 0)
        test_drain();
    else if (strcmp(c, "idle-lanes") == 0)
        test_idle(false);
    else if (strcmp(c, "idle-wide") == 0)
        test_idle(true);
    else if (strcmp(c, "slow-answers") == 0)
        test_slow_answers();
    else if (strcmp(c, "placement") == 0) {
        if (test_placement() == 77)
            return 77;
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return svc_test_exit(c);
}
