/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/services/test_heap.c - the device heap (rpc/device/device_malloc.c) through a real server,
 * with host threads playing the device: bad frees of every size class are reported once with
 * their address and leave the heap intact, more than 1024 large blocks live at once, refusals
 * said once with their cause, every power-of-two alignment up to 2 MiB, and many threads mixing
 * all of it.  Runs under ThreadSanitizer too.
 *
 *   test_heap <case>
 * cases: double-free invalid-free many-large refusal-limit refusal-device align mixed
 *
 * Size classes of the heap: small (<= 8 KiB, slabs), medium (<= 1 MiB with the header, spans of
 * 64 KiB units) and large (> 1 MiB, one host allocation each).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../rpc/device/device_internal.h"
#include "tether/rpc.h"
#include "../rpc/server/svc_rig.h"
#include "tcheck.h"

/* Fake device memory (svc_rig.h), with a budget where a test sets one. */
static struct svc_dev_mem dev_mem;

/* ---- a server attached to the device library's global ------------------------------------ */

struct rig {
    tether_rpc_server_t *srv;
    FILE *err;
    long err_seen; /* bytes of err already looked at */
};

static void rig_up(struct rig *rig, size_t heap_limit)
{
    rig->err = tmpfile();
    rig->err_seen = 0;
    struct tether_rpc_server_config cfg = {
        .port_count = 64,
        .lane_count = 32,
        .device_alloc = svc_device_alloc,
        .device_free = svc_device_free,
        .device_ctx = &dev_mem,
        .heap_limit = heap_limit,
        .err = rig->err,
    };
    rig->srv = svc_server_up(cfg, true);
}

/* What the server wrote to err since the last look, once every call made so far was served
 * (kernel_finished drains); the caller frees it. */
static char *rig_err(struct rig *rig)
{
    tether_rpc_server_kernel_finished(rig->srv);
    tether_rpc_server_kernel_started(rig->srv);
    fflush(rig->err);
    long end = ftell(rig->err);
    char *s = malloc((size_t)(end - rig->err_seen) + 1);
    fseek(rig->err, rig->err_seen, SEEK_SET);
    size_t got = fread(s, 1, (size_t)(end - rig->err_seen), rig->err);
    s[got] = '\0';
    fseek(rig->err, end, SEEK_SET);
    rig->err_seen = end;
    return s;
}

static void rig_down(struct rig *rig)
{
    char *rest = rig_err(rig);
    CHECKF(rest[0] == '\0', "unexpected diagnostics: %.600s", rest);
    free(rest);
    svc_server_down(rig->srv);
    fclose(rig->err);
    CHECKF(atomic_load(&dev_mem.live) == 0, "%ld device blocks still held after destroy",
           atomic_load(&dev_mem.live));
}

/* Lines of text that contain every one of the (up to two) needles. */
static int count_lines(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *l = text; *l != '\0';) {
        const char *e = strchr(l, '\n');
        size_t len = e != NULL ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (strstr(line, a) != NULL && (b == NULL || strstr(line, b) != NULL))
            n++;
        l += len + (e != NULL);
    }
    return n;
}

/* Checks that err got exactly `want` lines naming free(ptr) with `why`, and nothing else. */
static void expect_report(struct rig *rig, const void *ptr, const char *why, int want,
                          const char *what)
{
    char *text = rig_err(rig);
    char needle[64];
    snprintf(needle, sizeof needle, "tether: free(%p): ", ptr);
    int n = count_lines(text, needle, why);
    CHECKF(n == want, "%s: %d lines '%s...%s' (want %d); err: %.500s", what, n, needle, why, want,
           text);
    int lines = count_lines(text, "", NULL);
    CHECKF(lines == want, "%s: %d diagnostic lines, want %d: %.500s", what, lines, want, text);
    free(text);
}

/* Blocks up to 8 KiB are written whole; bigger ones at both ends and every 64 KiB or so (little
 * RSS for blocks of megabytes). */
#define FILL_WHOLE 8192
#define FILL_STRIDE 65521

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    if (n <= FILL_WHOLE) {
        for (size_t k = 0; k < n; k++)
            p[k] = (unsigned char)(seed + k);
        return;
    }
    for (size_t k = 0; k < 4096; k++) {
        p[k] = (unsigned char)(seed + k);
        p[n - 1 - k] = (unsigned char)(seed + n - 1 - k);
    }
    for (size_t k = 4096; k < n - 4096; k += FILL_STRIDE)
        p[k] = (unsigned char)(seed + k);
}

static bool intact(const unsigned char *p, size_t n, unsigned seed)
{
    if (n <= FILL_WHOLE) {
        for (size_t k = 0; k < n; k++)
            if (p[k] != (unsigned char)(seed + k))
                return false;
        return true;
    }
    for (size_t k = 0; k < 4096; k++)
        if (p[k] != (unsigned char)(seed + k) || p[n - 1 - k] != (unsigned char)(seed + n - 1 - k))
            return false;
    for (size_t k = 4096; k < n - 4096; k += FILL_STRIDE)
        if (p[k] != (unsigned char)(seed + k))
            return false;
    return true;
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

/* One size of each class, and aligned blocks that land in spans and large blocks. */
struct size_case {
    const char *name;
    size_t size;
    size_t align; /* 0: malloc */
};
static const struct size_case sizes[] = {
    {"small 48 B", 48, 0},
    {"small 8 KiB", 8192, 0},
    {"medium 20000 B", 20000, 0},
    {"medium 300000 B", 300000, 0},
    {"large 3 MiB", 3u << 20, 0},
    {"large 1 MiB + 1", (1u << 20) + 1, 0},
    {"aligned 4 KiB x 100 B", 100, 4096},
    {"aligned 256 KiB x 1000 B", 1000, 256u << 10},
    {"aligned 2 MiB x 3 MiB", 3u << 20, 2u << 20},
};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static unsigned char *alloc_case(const struct size_case *c)
{
    return c->align ? tether_device_aligned_alloc(c->align, c->size)
                    : tether_device_malloc(c->size);
}

/* Two more blocks of the class must not overlap the live one nor each other: the heap was not
 * corrupted by what came before. */
static void check_not_handed_twice(const struct size_case *c, const unsigned char *live,
                                   const char *what)
{
    unsigned char *a = alloc_case(c);
    unsigned char *b = alloc_case(c);
    CHECKF(a != NULL && b != NULL, "%s, %s: allocations after it failed", c->name, what);
    if (a != NULL && b != NULL) {
        CHECKF(!overlaps(a, c->size, b, c->size), "%s, %s: %p handed out twice", c->name, what,
               (void *)a);
        CHECKF(live == NULL ||
                   (!overlaps(a, c->size, live, c->size) && !overlaps(b, c->size, live, c->size)),
               "%s, %s: a live block (%p) handed out again (%p, %p)", c->name, what,
               (const void *)live, (void *)a, (void *)b);
    }
    tether_device_free(a);
    tether_device_free(b);
}

/* ---- double free -------------------------------------------------------------------------- */

struct racer {
    void *ptr;
    atomic_int *ready;
    int n;
};

static void *free_racer(void *arg)
{
    struct racer *r = arg;
    atomic_fetch_add(r->ready, 1);
    while (atomic_load(r->ready) < r->n)
        ;
    tether_device_free(r->ptr);
    return NULL;
}

static void test_double_free(void)
{
    struct rig rig;
    rig_up(&rig, 0);
    for (int i = 0; i < NSIZES; i++) {
        const struct size_case *c = &sizes[i];
        unsigned char *p = alloc_case(c);
        CHECKF(p != NULL, "%s: allocation", c->name);
        if (p == NULL)
            continue;
        fill(p, c->size, 7);
        tether_device_free(p);
        tether_device_free(p);
        expect_report(&rig, p, "double free", 1, c->name);
        CHECKF(tether_device_usable_size(p) == 0, "%s: a freed block has usable bytes", c->name);
        check_not_handed_twice(c, NULL, "after a double free");
        expect_report(&rig, p, "double free", 0, c->name);

        /* Eight threads free one block at once: one free, seven reports. */
        enum { RACERS = 8 };
        p = alloc_case(c);
        CHECKF(p != NULL, "%s: allocation", c->name);
        if (p == NULL)
            continue;
        atomic_int ready = 0;
        pthread_t tid[RACERS];
        struct racer r[RACERS];
        for (int t = 0; t < RACERS; t++) {
            r[t] = (struct racer){p, &ready, RACERS};
            pthread_create(&tid[t], NULL, free_racer, &r[t]);
        }
        for (int t = 0; t < RACERS; t++)
            pthread_join(tid[t], NULL);
        expect_report(&rig, p, "double free", RACERS - 1, c->name);
        check_not_handed_twice(c, NULL, "after racing frees");
    }
    rig_down(&rig);
}

/* ---- invalid frees ------------------------------------------------------------------------ */

static void bad_free(struct rig *rig, const struct size_case *c, unsigned char *live, void *bad,
                     const char *why, const char *what)
{
    char label[160];
    snprintf(label, sizeof label, "%s: %s", c->name, what);
    tether_device_free(bad);
    expect_report(rig, bad, why, 1, label);
    if (live != NULL)
        CHECKF(intact(live, c->size, 11), "%s: the live block's data changed", label);
    check_not_handed_twice(c, live, label);
}

static void test_invalid_free(void)
{
    struct rig rig;
    rig_up(&rig, 0);
    for (int i = 0; i < NSIZES; i++) {
        const struct size_case *c = &sizes[i];
        unsigned char *p = alloc_case(c);
        CHECKF(p != NULL, "%s: allocation", c->name);
        if (p == NULL)
            continue;
        fill(p, c->size, 11);
        CHECKF(tether_device_usable_size(p) >= c->size && tether_device_usable_size(p + 16) == 0,
               "%s: usable bytes %llu at p, %llu at p + 16", c->name,
               (unsigned long long)tether_device_usable_size(p),
               (unsigned long long)tether_device_usable_size(p + 16));
        bad_free(&rig, c, p, p + 1, "not the start of a block", "p + 1");
        bad_free(&rig, c, p, p + 16, "not the start of a block", "p + 16");
        bad_free(&rig, c, p, p - 16, "", "p - 16");
        if (c->size > 65536)
            bad_free(&rig, c, p, p + 65536, "not the start of a block", "p + 64 KiB");
        if (c->size > (2u << 20))
            bad_free(&rig, c, p, p + (2u << 20), "not the start of a block", "p + 2 MiB");
        bad_free(&rig, c, p, p + c->size - 1, "not the start of a block", "the last byte");
        /* The block is still whole and frees normally. */
        CHECKF(intact(p, c->size, 11), "%s: data after the bad frees", c->name);
        tether_device_free(p);
        expect_report(&rig, p, "", 0, c->name);
        /* Pointers into the freed block. */
        bad_free(&rig, c, NULL, p + 16, "", "p + 16 after free(p)");
        if (c->size > 65536)
            bad_free(&rig, c, NULL, p + 65536, "", "p + 64 KiB after free(p)");
    }
    rig_down(&rig);
}

/* ---- more than 1024 large blocks at once -------------------------------------------------- */

static void test_many_large(void)
{
    struct rig rig;
    rig_up(&rig, 0);
    /* 1100 blocks of 1 MiB + 1 (1.25 MiB each with the class rounding): 1.4 GiB of address
     * space, of which the test touches a few bytes per block. */
    enum { N = 1100 };
    size_t n = (1u << 20) + 1;
    unsigned char **b = calloc(N, sizeof *b);
    int got = 0;
    for (int round = 0; round < 2; round++) {
        got = 0;
        for (int i = 0; i < N; i++) {
            b[i] = tether_device_malloc(n);
            if (b[i] == NULL)
                continue;
            got++;
            b[i][0] = (unsigned char)(i + round);
            b[i][n - 1] = (unsigned char)(i * 3 + round);
        }
        CHECKF(got == N, "round %d: %d of %d live blocks of 1 MiB + 1", round, got, N);
        int bad = 0;
        for (int i = 0; i < N; i++)
            if (b[i] != NULL && (b[i][0] != (unsigned char)(i + round) ||
                                 b[i][n - 1] != (unsigned char)(i * 3 + round)))
                bad++;
        CHECKF(bad == 0, "round %d: %d blocks overwritten by others", round, bad);
        /* Interleave small and medium frees with the large ones: every lookup still works. */
        for (int i = 0; i < N; i++) {
            void *s = tether_device_malloc((size_t)(i % 3 == 0 ? 40 : 40000));
            CHECKF(s != NULL, "small/medium block among %d large ones", N);
            tether_device_free(s);
            tether_device_free(b[i]);
        }
    }
    struct tether_rpc_stats st;
    tether_rpc_server_stats(rig.srv, &st);
    CHECKF(st.heap_chunks < N + N / 4,
           "the second round reused the first's blocks: %llu host "
           "allocations for %d blocks",
           (unsigned long long)st.heap_chunks, N);
    char *text = rig_err(&rig);
    CHECKF(text[0] == '\0', "diagnostics: %.400s", text);
    free(text);
    free(b);
    rig_down(&rig);
}

/* ---- refusals are said once, with their cause --------------------------------------------- */

/* The server's heap_limit: 24 MiB of large blocks (one host allocation each). */
static void test_refusal_limit(void)
{
    struct rig rig;
    rig_up(&rig, 24u << 20);
    void *b[64];
    int got = 0, nulls = 0;
    for (int i = 0; i < 64; i++) {
        b[i] = tether_device_malloc(3u << 20);
        got += b[i] != NULL;
        nulls += b[i] == NULL;
    }
    CHECKF(got > 0 && nulls > 10, "heap_limit: %d blocks of 3 MiB granted, %d refused", got, nulls);
    char *text = rig_err(&rig);
    printf("said: %s", text);
    CHECKF(count_lines(text, "heap_limit", NULL) == 1,
           "heap_limit refusals: want one line naming heap_limit, got: %.600s", text);
    CHECKF(count_lines(text, "", NULL) == 1, "one diagnostic line in all: %.600s", text);
    free(text);
    for (int i = 0; i < 64; i++)
        tether_device_free(b[i]);
    rig_down(&rig);
}

/* device_alloc fails: the device is out of memory.  (A process attaches one server: the device
 * library's heap lives as long as the image, as on a GPU.) */
static void test_refusal_device(void)
{
    struct rig rig;
    void *b[64];
    int got, nulls;
    char *text;
    rig_up(&rig, 0);
    dev_mem.budget = atomic_load(&dev_mem.bytes) + (40u << 20);
    got = nulls = 0;
    for (int i = 0; i < 64; i++) {
        b[i] = tether_device_malloc(3u << 20);
        got += b[i] != NULL;
        nulls += b[i] == NULL;
    }
    for (int i = 0; i < 20000; i++) { /* small blocks until the chunks run out too */
        void *p = tether_device_malloc(4096);
        if (p == NULL)
            nulls++;
    }
    CHECKF(got > 0 && nulls > 10, "out of device memory: %d blocks granted, %d refused", got,
           nulls);
    text = rig_err(&rig);
    printf("said: %s", text);
    CHECKF(count_lines(text, "device_alloc", "out of memory") == 1,
           "device_alloc failures: want one line naming device_alloc and its status, got: %.600s",
           text);
    CHECKF(count_lines(text, "", NULL) == 1, "one diagnostic line in all: %.600s", text);
    free(text);
    dev_mem.budget = 0;
    for (int i = 0; i < 64; i++)
        tether_device_free(b[i]);

    /* More than the heap can ever make: said once by the device. */
    for (int i = 0; i < 5; i++)
        CHECKF(tether_device_malloc(1ull << 50) == NULL, "malloc(2^50)");
    text = rig_err(&rig);
    printf("said: %s", text);
    CHECKF(count_lines(text, "tether: malloc(", "larger than") == 1,
           "malloc(2^50): want one line saying it is too large, got: %.600s", text);
    CHECKF(count_lines(text, "", NULL) == 1, "one diagnostic line in all: %.600s", text);
    free(text);
    rig_down(&rig);
}

/* ---- alignments --------------------------------------------------------------------------- */

static void test_align(void)
{
    struct rig rig;
    rig_up(&rig, 0);
    enum { KMAX = 24, NSZ = 4 };
    struct {
        unsigned char *p;
        size_t n;
    } live[KMAX + 1][NSZ];
    for (int k = 0; k <= KMAX; k++) {
        size_t align = (size_t)1 << k;
        size_t ns[NSZ] = {1, 100, align, (3u << 20) + 5};
        for (int j = 0; j < NSZ; j++) {
            size_t n = ns[j];
            unsigned char *p = tether_device_aligned_alloc(align, n);
            live[k][j].p = p;
            live[k][j].n = n;
            CHECKF(p != NULL, "aligned_alloc(2^%d, %zu)", k, n);
            if (p == NULL)
                continue;
            CHECKF(((uintptr_t)p & (align - 1)) == 0, "aligned_alloc(2^%d, %zu) = %p", k, n,
                   (void *)p);
            uint64_t usable = tether_device_usable_size(p);
            /* At most the rounding of a span (a power of two of 64 KiB units) or a large class
             * (a quarter) of the size and alignment. */
            CHECKF(usable >= n && usable <= 2 * (n + align + 64) + 65536,
                   "aligned_alloc(2^%d, %zu): %llu bytes usable", k, n, (unsigned long long)usable);
            fill(p, n, (unsigned)(k * 5 + j));
        }
    }
    for (int k = 0; k <= KMAX; k++)
        for (int j = 0; j < NSZ; j++)
            if (live[k][j].p != NULL)
                CHECKF(intact(live[k][j].p, live[k][j].n, (unsigned)(k * 5 + j)),
                       "aligned block 2^%d x %zu overwritten", k, live[k][j].n);
    for (int k = 0; k <= KMAX; k++)
        for (int j = 0; j < NSZ; j++)
            tether_device_free(live[k][j].p);
    /* Not a power of two (or zero): no block, and nothing else happens. */
    size_t bad[] = {0, 3, 24, 48, (2u << 20) + 4096, (size_t)1 << 63 | 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(tether_device_aligned_alloc(bad[i], 64) == NULL, "aligned_alloc(%zu, 64)", bad[i]);
    rig_down(&rig);
}

/* ---- many threads, every kind of block ---------------------------------------------------- */

struct mix_arg {
    int t;
    int rounds;
    atomic_int *failures;
};

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *mix_thread(void *arg)
{
    struct mix_arg *a = arg;
    enum { SLOTS = 48 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(a->t + 1);
    int large = 0;
    for (int r = 0; r < a->rounds; r++) {
        int i = (int)(rng(&seed) % SLOTS);
        unsigned seedv = (unsigned)(a->t * 131 + i);
        if (ptr[i] != NULL) {
            if (!intact(ptr[i], size[i], seedv))
                atomic_fetch_add(a->failures, 1);
            large -= size[i] > (1u << 20);
            tether_device_free(ptr[i]);
            ptr[i] = NULL;
            continue;
        }
        uint64_t kind = rng(&seed) % 100;
        size_t n = kind < 60   ? 1 + rng(&seed) % 8192
                   : kind < 90 ? 8193 + rng(&seed) % (1000u << 10)
                               : (1u << 20) + 1 + rng(&seed) % (3u << 20);
        if (n > (1u << 20) && large >= 3) /* at most 3 large blocks per thread */
            n = 1 + n % 8192;
        size_t align = kind % 4 == 0 ? (size_t)1 << (rng(&seed) % 22) : 0;
        unsigned char *p = align ? tether_device_aligned_alloc(align, n) : tether_device_malloc(n);
        if (p == NULL || (align != 0 && ((uintptr_t)p & (align - 1)) != 0) ||
            tether_device_usable_size(p) < n) {
            atomic_fetch_add(a->failures, 1);
            tether_device_free(p);
            continue;
        }
        fill(p, n, seedv);
        large += n > (1u << 20);
        ptr[i] = p;
        size[i] = n;
    }
    for (int i = 0; i < SLOTS; i++) {
        if (ptr[i] != NULL && !intact(ptr[i], size[i], (unsigned)(a->t * 131 + i)))
            atomic_fetch_add(a->failures, 1);
        tether_device_free(ptr[i]);
    }
    return NULL;
}

static void test_mixed(void)
{
    struct rig rig;
    rig_up(&rig, 0);
    enum { THREADS = 16 };
    atomic_int failures = 0;
    pthread_t tid[THREADS];
    struct mix_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (struct mix_arg){t, 3000, &failures};
        pthread_create(&tid[t], NULL, mix_thread, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    CHECKF(atomic_load(&failures) == 0,
           "%d failures (NULL, misaligned or overwritten) with %d threads", atomic_load(&failures),
           THREADS);
    rig_down(&rig);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "double-free") == 0)
        test_double_free();
    else if (strcmp(c, "invalid-free") == 0)
        test_invalid_free();
    else if (strcmp(c, "many-large") == 0)
        test_many_large();
    else if (strcmp(c, "refusal-limit") == 0)
        test_refusal_limit();
    else if (strcmp(c, "refusal-device") == 0)
        test_refusal_device();
    else if (strcmp(c, "align") == 0)
        test_align();
    else if (strcmp(c, "mixed") == 0)
        test_mixed();
    else {
        fprintf(stderr,
                "usage: test_heap "
                "double-free|invalid-free|many-large|refusal-limit|refusal-device|align|mixed\n");
        return 2;
    }
    return tcheck_exit(c);
}
