/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_soak.c - every RPC service at once, with the host-side memory calls around it, for a
 * fixed number of rounds.
 *
 * THREADS host threads run ROUNDS rounds each.  In a round a host thread takes host memory
 * (llvm_omp_target_alloc_host), device memory (omp_target_alloc), locks its own buffer and a
 * slice of one buffer all threads share (llvm_omp_target_lock_mem), maps arrays in and out, and
 * runs one target region of ITEMS work items on device (thread + round) % devices.  Each work
 * item prints one line with printf, one with puts, one with fwrite to stdout and one with fputs
 * to stderr (each tagged "soak <kind> t<thread> i<round> w<item>" and carrying text derived
 * from its tag), allocates and frees device heap blocks of every size class (malloc, calloc,
 * realloc; their contents checked), makes user-opcode calls whose answers it checks, and
 * computes its share of the arrays.  The host checks every array, copy and lock, then frees in
 * alternating orders (host memory through omp_target_free and llvm_omp_target_free_host).
 *
 * Leaks: the process's resident size after round WARMUP and after the last round, both taken
 * while every thread waits at a barrier; it may grow by at most RSS_SLACK.  By round WARMUP
 * every thread has run on every device several times and what is kept for reuse (the plugin's
 * device allocation cache, the device heaps, libomp's thread teams, malloc's arenas) has its
 * size: in runs on an idle and on a loaded machine the growth after it was 0-5 MiB.  RSS_SLACK
 * also covers the worst the device heaps could still add (every device thread holding its
 * largest blocks at the same moment, about 2 MiB each, 16 threads).  Each round moves at least
 * 1 MiB through each kind of memory (host, device, mapped, device heap) on each thread, 192 MiB
 * or more over the rounds after WARMUP: a leak of any kind exceeds RSS_SLACK four times over.
 * Under AddressSanitizer (its quarantine keeps freed memory, so the resident size grows by
 * design) LeakSanitizer checks instead.
 *
 *   offload_soak run          the soak; a summary line last on stdout, exit status 0 when the
 *                             host-side checks passed
 *   offload_soak check O E    each tagged line in O (stdout) and E (stderr) exactly once and
 *                             exactly as generated, nothing else but the summary line
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"
#include "tether/tether.h"

#define THREADS 4
#define ROUNDS 64
#define WARMUP 16
#define ITEMS 8
#define ELEMS (256 * 1024)         /* ints per mapped array: 1 MiB */
#define HOST_BYTES (2 << 20)       /* llvm_omp_target_alloc_host per round */
#define DEV_BYTES (2 << 20)        /* omp_target_alloc per round */
#define LOCK_BYTES (512 * 1024)    /* each thread's locked buffer */
#define SHARED_BYTES (1 << 20)     /* the buffer every thread locks slices of */
#define RSS_SLACK ((long)48 << 20) /* resident growth allowed from WARMUP to the end */
#define OP_CHECKSUM 0x8110u
#define CALLS_PER_ITEM 3
#define KINDS 4 /* p(rintf), u (puts), w (fwrite), e (fputs to stderr) */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#endif

static const char kind_chars[KINDS] = {'p', 'u', 'w', 'e'};

/* The printf line, for the device's printf and the checker's snprintf. */
#define PRINTF_FMT "soak p t%d i%d w%d %d %u %x %lld [%s] %.3f %c\n"
#define PRINTF_ARGS(t, i, w, s, word)                                                              \
    t, i, w, (int)((s)&0xffff) - 30000, (unsigned)((s) >> 16), (unsigned)((s) >> 32),              \
        (long long)(s), word, (double)((s) % 100000) / 7.0, 'a' + (int)((s) % 26)

#pragma omp declare target
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t key(int t, int i, int w, int k)
{
    return mix(((uint64_t)t << 48) ^ ((uint64_t)i << 32) ^ ((uint64_t)w << 16) ^ (uint64_t)k);
}

/* len characters of text from seed, then a NUL. */
static void gen_text(char *buf, int len, uint64_t seed)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,";

    for (int j = 0; j < len; j++) {
        if (j % 8 == 0) {
            seed = mix(seed);
        }
        buf[j] = abc[(seed >> (8 * (j % 8))) & 63];
    }
    buf[len] = '\0';
}

static char *put_uint(char *p, unsigned v)
{
    char tmp[12];
    int n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

/* "soak <kind> t<t> i<i> w<w> <text>" with the text's length from the tag; returns the length. */
static int tagged_line(char *buf, char kind, int t, int i, int w, int max_text)
{
    uint64_t s = key(t, i, w, kind);
    char *p = buf;
    int len = 1 + (int)(s % (uint64_t)max_text);

    memcpy(p, "soak ", 5);
    p += 5;
    *p++ = kind;
    *p++ = ' ';
    *p++ = 't';
    p = put_uint(p, (unsigned)t);
    *p++ = ' ';
    *p++ = 'i';
    p = put_uint(p, (unsigned)i);
    *p++ = ' ';
    *p++ = 'w';
    p = put_uint(p, (unsigned)w);
    *p++ = ' ';
    gen_text(p, len, s);
    return (int)(p - buf) + len;
}

/* The printf line's word (up to 120 characters). */
static void printf_word(char *buf, int t, int i, int w)
{
    uint64_t s = key(t, i, w, 'P');

    gen_text(buf, 1 + (int)(s % 120), s);
}

/* Checks the marks heap_churn wrote into a block, then frees it. */
static int block_drop(unsigned char *p, size_t n, int slot)
{
    int errors = 0;

    for (size_t j = 0; j + 1 < n; j += 4096) {
        errors += p[j] != (unsigned char)(slot + j / 4096);
    }
    errors += p[n - 1] != 0xa5;
    free(p);
    return errors;
}

/* Device heap: blocks of every class, some live at once, their contents checked. */
static int heap_churn(int t, int i, int w)
{
    enum { SLOTS = 3 };
    unsigned char *p[SLOTS] = {NULL, NULL, NULL};
    size_t n[SLOTS] = {0, 0, 0};
    int errors = 0;

    for (int k = 0; k < 12; k++) {
        uint64_t s = key(t, i, w, 100 + k);
        int slot = k % SLOTS;
        size_t size;

        if (p[slot] != NULL) {
            errors += block_drop(p[slot], n[slot], slot);
            p[slot] = NULL;
        }
        switch (k % 4) {
        case 0:
            size = 1 + s % 256; /* small */
            break;
        case 1:
            size = 257 + s % 8000; /* small, larger classes */
            break;
        case 2:
            size = 8193 + s % (256 * 1024); /* medium */
            break;
        default:
            size = (w % 4 == 0) ? (1u << 20) + s % (512 * 1024) : 1 + s % 64; /* large */
            break;
        }
        if (k % 5 == 1) {
            p[slot] = calloc(size, 1);
            if (p[slot] != NULL) {
                for (size_t j = 0; j < size; j += 509) {
                    errors += p[slot][j] != 0;
                }
            }
        } else if (k % 5 == 3) {
            /* realloc: grows a small block into this size, keeping its bytes */
            unsigned char *q = malloc(16);

            if (q != NULL) {
                memset(q, 0x3c, 16);
                p[slot] = realloc(q, size > 16 ? size : 16);
                if (p[slot] == NULL) {
                    free(q);
                } else {
                    for (int j = 0; j < 16 && (size_t)j < size; j++) {
                        errors += p[slot][j] != 0x3c;
                    }
                }
            }
        } else {
            p[slot] = malloc(size);
        }
        if (p[slot] == NULL) {
            errors++;
            continue;
        }
        n[slot] = size;
        /* A byte on every page (all of it resident), and the last byte. */
        for (size_t j = 0; j + 1 < size; j += 4096) {
            p[slot][j] = (unsigned char)(slot + j / 4096);
        }
        p[slot][size - 1] = 0xa5;
        if (size > (1u << 20)) {
            /* A large block is freed at once, so a thread holds at most one (and the heap's
             * high-water mark is reached early: see WARMUP). */
            errors += block_drop(p[slot], size, slot);
            p[slot] = NULL;
        }
    }
    for (int slot = 0; slot < SLOTS; slot++) {
        if (p[slot] != NULL) {
            errors += block_drop(p[slot], n[slot], slot);
        }
    }
    return errors;
}

/* User-opcode calls: a request of 4..700 bytes, the answer its checksum with the tag. */
static int user_calls(int t, int i, int w)
{
    int errors = 0;

    for (int k = 0; k < CALLS_PER_ITEM; k++) {
        uint64_t s = key(t, i, w, 200 + k);
        unsigned char req[704];
        uint64_t ans[2] = {0, 0}, want = 0;
        int len = 4 + (int)(s % 700);

        for (int j = 0; j < len; j++) {
            req[j] = (unsigned char)(mix(s + (uint64_t)j) & 0xff);
            want = want * 31 + req[j];
        }
        if (tether_rpc_call(OP_CHECKSUM, req, (uint64_t)len, ans, sizeof(ans)) !=
                (int64_t)sizeof(ans) ||
            ans[0] != want || ans[1] != (uint64_t)len) {
            errors++;
        }
    }
    return errors;
}

/* Everything one work item does on the device. */
static int work_item(int t, int i, int w)
{
    char line[2048], word[128];
    uint64_t s = key(t, i, w, 'p');
    int n, errors = 0;

    printf_word(word, t, i, w);
    printf(PRINTF_FMT, PRINTF_ARGS(t, i, w, s, word));
    tagged_line(line, 'u', t, i, w, 300);
    errors += puts(line) < 0;
    n = tagged_line(line, 'w', t, i, w, 1500);
    line[n++] = '\n';
    errors += fwrite(line, 1, (size_t)n, stdout) != (size_t)n;
    n = tagged_line(line, 'e', t, i, w, 200);
    line[n++] = '\n';
    line[n] = '\0';
    errors += fputs(line, stderr) < 0;
    errors += heap_churn(t, i, w);
    errors += user_calls(t, i, w);
    return errors;
}
#pragma omp end declare target

/* ---- host side ---------------------------------------------------------------------------- */

static atomic_long user_calls_served;
static char *shared_buf;
static int devices;
static pthread_barrier_t barrier;
static long rss_warm, rss_end;

static tether_status_t checksum_handler(void *user, const struct tether_rpc_request *req,
                                        struct tether_rpc_reply *reply)
{
    const unsigned char *d = req->data;
    uint64_t ans[2] = {0, req->size};

    (void)user;
    for (size_t j = 0; j < req->size; j++) {
        ans[0] = ans[0] * 31 + d[j];
    }
    atomic_fetch_add(&user_calls_served, 1);
    return tether_rpc_reply_append(reply, ans, sizeof(ans));
}

static long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
        resident = -1;
    }
    if (f != NULL) {
        fclose(f);
    }
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

struct worker {
    int t;
    long errors;
    char why[160]; /* the first error */
};

static void fail(struct worker *wk, const char *what, int round)
{
    if (wk->errors++ == 0) {
        snprintf(wk->why, sizeof(wk->why), "thread %d round %d: %s", wk->t, round, what);
    }
}

/* One round of thread t on device dev. */
static void round_once(struct worker *wk, int i, int *in, int *out, char *mine)
{
    int t = wk->t, dev = (t + i) % devices, item_errors = 0;
    char *h, *l_mine, *l_sub, *l_shared;
    int *dv, *back;
    char *slice = shared_buf + (size_t)t * (SHARED_BYTES / THREADS);

    h = llvm_omp_target_alloc_host(HOST_BYTES, dev);
    dv = omp_target_alloc(DEV_BYTES, dev);
    l_mine = llvm_omp_target_lock_mem(mine, LOCK_BYTES, dev);
    l_sub = llvm_omp_target_lock_mem(mine + 4096, 8192, dev); /* inside: counted */
    l_shared = llvm_omp_target_lock_mem(slice + 64, 4096, dev);
    if (h == NULL || dv == NULL || l_mine == NULL || l_sub == NULL || l_shared == NULL) {
        fail(wk, "an allocation or a lock failed", i);
    }
    if (h == NULL || dv == NULL) {
        goto unlock;
    }
    memset(h, 0, HOST_BYTES);
    for (int k = 0; k < ELEMS; k++) {
        in[k] = (int)(key(t, i, k, 0) & 0xffffff);
        out[k] = -1;
    }
    memset(mine, (unsigned char)i, LOCK_BYTES);

#pragma omp target teams distribute parallel for device(dev) num_teams(2) thread_limit(2)         \
    map(to : in[0 : ELEMS]) map(from : out[0 : ELEMS]) map(tofrom : mine[0 : LOCK_BYTES])         \
    is_device_ptr(h, dv) reduction(+ : item_errors)
    for (int w = 0; w < ITEMS; w++) {
        int per = ELEMS / ITEMS;

        item_errors += work_item(t, i, w);
        for (int k = w * per; k < (w + 1) * per; k++) {
            out[k] = in[k] * 3 + w;
            dv[k] = in[k] ^ 0x5a5a5a;
        }
        for (int k = w * (HOST_BYTES / ITEMS); k < (w + 1) * (HOST_BYTES / ITEMS); k += 64) {
            h[k] = (char)(w + 1);
        }
        for (int k = w * (LOCK_BYTES / ITEMS); k < (w + 1) * (LOCK_BYTES / ITEMS); k++) {
            mine[k] = (char)(mine[k] + 1);
        }
    }
    if (item_errors != 0) {
        fail(wk, "a work item's heap or user-call check failed", i);
    }
    for (int k = 0; k < ELEMS; k++) {
        if (out[k] != in[k] * 3 + k / (ELEMS / ITEMS)) {
            fail(wk, "a mapped array came back wrong", i);
            break;
        }
    }
    for (int k = 0; k < HOST_BYTES; k += 64) {
        if (h[k] != (char)(k / (HOST_BYTES / ITEMS) + 1)) {
            fail(wk, "host memory written on the device reads wrong", i);
            break;
        }
    }
    for (int k = 0; k < LOCK_BYTES; k += 97) {
        if (mine[k] != (char)(i + 1)) {
            fail(wk, "locked memory mapped tofrom came back wrong", i);
            break;
        }
    }
    /* Device memory back through a copy into host memory from alloc_host. */
    back = (int *)h;
    if (omp_target_memcpy(back, dv, ELEMS * sizeof(int), 0, 0, omp_get_initial_device(), dev) !=
        0) {
        fail(wk, "omp_target_memcpy failed", i);
    } else {
        for (int k = 0; k < ELEMS; k++) {
            if (back[k] != (in[k] ^ 0x5a5a5a)) {
                fail(wk, "device memory copied back reads wrong", i);
                break;
            }
        }
    }
    /* A separate enter/update/exit of the input array. */
#pragma omp target enter data map(to : in [0:ELEMS]) device(dev)
#pragma omp target device(dev) map(alloc : in [0:ELEMS])
    for (int k = 0; k < ELEMS; k += 16) {
        in[k] += 1;
    }
#pragma omp target update from(in [0:ELEMS]) device(dev)
#pragma omp target exit data map(delete : in [0:ELEMS]) device(dev)
    if (in[0] != (int)(key(t, i, 0, 0) & 0xffffff) + 1 ||
        in[1] != (int)(key(t, i, 1, 0) & 0xffffff)) {
        fail(wk, "target enter/update/exit data lost an update", i);
    }

unlock:
    /* Unlocks and frees in orders that change with the round. */
    if (l_shared != NULL) {
        llvm_omp_target_unlock_mem(slice + 64 + (i % 64), dev);
    }
    if (i % 2 == 0) {
        if (l_sub != NULL) {
            llvm_omp_target_unlock_mem(mine + 4096 + 100, dev);
        }
        if (l_mine != NULL) {
            llvm_omp_target_unlock_mem(mine, dev);
        }
    } else {
        if (l_mine != NULL) {
            llvm_omp_target_unlock_mem(mine + 5, dev);
        }
        if (l_sub != NULL) {
            llvm_omp_target_unlock_mem(mine + 4096, dev);
        }
    }
    if (dv != NULL) {
        omp_target_free(dv, dev);
    }
    if (h != NULL) {
        if (i % 2 == 0) {
            omp_target_free(h, dev);
        } else {
            llvm_omp_target_free_host(h, dev);
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    int *in = malloc(ELEMS * sizeof(int)), *out = malloc(ELEMS * sizeof(int));
    char *mine = aligned_alloc(4096, LOCK_BYTES);

    if (in == NULL || out == NULL || mine == NULL) {
        fail(wk, "host malloc failed", -1);
    }
    for (int i = 0; i < ROUNDS; i++) {
        if (wk->errors == 0) {
            round_once(wk, i, in, out, mine);
        }
        /* Between rounds every thread waits; one of them reads the resident size. */
        if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
            if (i == WARMUP - 1) {
                rss_warm = rss_bytes();
            } else if (i == ROUNDS - 1) {
                rss_end = rss_bytes();
            }
        }
    }
    free(in);
    free(out);
    free(mine);
    return NULL;
}

static int run(void)
{
    struct worker wk[THREADS];
    pthread_t th[THREADS];
    long errors = 0, want_calls = (long)THREADS * ROUNDS * ITEMS * CALLS_PER_ITEM;
    int attached = 0, rc = 0;
    struct tether_device_info info;
    char *l_shared;

    devices = omp_get_num_devices();
    if (devices < 1) {
        fprintf(stderr, "offload_soak: no offload device\n");
        return 1;
    }
#pragma omp target map(from : attached)
    attached = tether_rpc_attached();
    if (!attached || tether_rpc_register_user(OP_CHECKSUM, checksum_handler, NULL) != TETHER_OK) {
        fprintf(stderr, "offload_soak: no RPC server attached to the image\n");
        return 1;
    }
    /* One lock on the whole shared buffer for the run: the threads' locks of its slices are
     * counted on it, from several threads and devices at once. */
    shared_buf = aligned_alloc(4096, SHARED_BYTES);
    l_shared = shared_buf ? llvm_omp_target_lock_mem(shared_buf, SHARED_BYTES, 0) : NULL;
    if (l_shared == NULL) {
        fprintf(stderr, "offload_soak: locking the shared buffer failed\n");
        return 1;
    }
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int t = 0; t < THREADS; t++) {
        wk[t].t = t;
        wk[t].errors = 0;
        wk[t].why[0] = '\0';
        if (pthread_create(&th[t], NULL, worker_main, &wk[t]) != 0) {
            fprintf(stderr, "offload_soak: pthread_create failed\n");
            exit(1); /* the others would wait at the barrier for ever */
        }
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        if (wk[t].errors != 0) {
            fprintf(stderr, "offload_soak: %ld error(s), the first: %s\n", wk[t].errors, wk[t].why);
            errors += wk[t].errors;
        }
    }
    pthread_barrier_destroy(&barrier);
    llvm_omp_target_unlock_mem(shared_buf, 0);
    free(shared_buf);
    if (tether_device_query(0, &info) != TETHER_OK || info.pinned_ranges != 0) {
        fprintf(stderr, "offload_soak: pinned ranges left after every unlock and free\n");
        rc = 1;
    }
    if (atomic_load(&user_calls_served) != want_calls) {
        fprintf(stderr, "offload_soak: %ld user calls served, want %ld\n",
                atomic_load(&user_calls_served), want_calls);
        rc = 1;
    }
    /* AddressSanitizer's quarantine keeps freed memory, so the resident size grows by design
     * under it: compiled in (SOAK_ASAN) or preloaded for a sanitized plugin (the ASan test run). */
#if defined(SOAK_ASAN)
    bool asan = true;
#else
    bool asan = dlsym(RTLD_DEFAULT, "__asan_init") != NULL;
#endif
    if (asan) {
        printf("soak: %d threads x %d rounds x %d items on %d device(s), %ld errors, %ld user "
               "calls; resident size not compared under AddressSanitizer (its quarantine keeps "
               "freed memory)\n",
               THREADS, ROUNDS, ITEMS, devices, errors, atomic_load(&user_calls_served));
    } else {
        printf("soak: %d threads x %d rounds x %d items on %d device(s), %ld errors, %ld user "
               "calls; resident %ld KiB after round %d, %ld KiB after round %d (growth allowed "
               "%ld KiB)\n",
               THREADS, ROUNDS, ITEMS, devices, errors, atomic_load(&user_calls_served),
               rss_warm >> 10, WARMUP, rss_end >> 10, ROUNDS, RSS_SLACK >> 10);
        if (rss_warm <= 0 || rss_end <= 0 || rss_end - rss_warm > RSS_SLACK) {
            fprintf(stderr, "offload_soak: resident size grew by %ld KiB after the warm-up\n",
                    (rss_end - rss_warm) >> 10);
            rc = 1;
        }
    }
    return errors != 0 || rc != 0;
}

/* ---- the output check ------------------------------------------------------------------- */

static unsigned char seen[KINDS][THREADS][ROUNDS][ITEMS];

/* The line (without its newline) work item w of round i of thread t writes as `kind`. */
static void expected_line(int kind, int t, int i, int w, char *buf, size_t cap)
{
    char word[128];
    uint64_t s = key(t, i, w, 'p');

    switch (kind_chars[kind]) {
    case 'p':
        printf_word(word, t, i, w);
        snprintf(buf, cap, PRINTF_FMT, PRINTF_ARGS(t, i, w, s, word));
        buf[strcspn(buf, "\n")] = '\0';
        break;
    case 'u':
        tagged_line(buf, 'u', t, i, w, 300);
        break;
    case 'w':
        tagged_line(buf, 'w', t, i, w, 1500);
        break;
    default:
        tagged_line(buf, 'e', t, i, w, 200);
        break;
    }
}

struct tally {
    long lines, corrupt, stray, summaries;
    char first_bad[240];
};

static void note_bad(struct tally *ty, const char *what, const char *line)
{
    if (ty->first_bad[0] == '\0') {
        snprintf(ty->first_bad, sizeof(ty->first_bad), "%s: %.180s", what, line);
    }
}

/* Reads one stream; err: the stderr file (only 'e' lines belong there). */
static int check_stream(const char *path, bool err, struct tally *ty)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, want[2048];
    size_t cap = 0;
    ssize_t n;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        char kc;
        int t, i, w, kind;

        ty->lines++;
        if (n > 0 && line[n - 1] == '\n') {
            line[n - 1] = '\0';
        }
        if (!err && strncmp(line, "soak: ", 6) == 0) {
            ty->summaries++;
            continue;
        }
        if (sscanf(line, "soak %c t%d i%d w%d ", &kc, &t, &i, &w) != 4 || t < 0 || t >= THREADS ||
            i < 0 || i >= ROUNDS || w < 0 || w >= ITEMS) {
            ty->stray++;
            note_bad(ty, "a line that is not the soak's", line);
            continue;
        }
        for (kind = 0; kind < KINDS && kind_chars[kind] != kc; kind++) {
        }
        if (kind == KINDS || (kc == 'e') != err) {
            ty->stray++;
            note_bad(ty, "a line of another kind or stream", line);
            continue;
        }
        expected_line(kind, t, i, w, want, sizeof(want));
        if (strcmp(line, want) != 0) {
            ty->corrupt++;
            note_bad(ty, "corrupted", line);
            continue;
        }
        if (seen[kind][t][i][w] < 255) {
            seen[kind][t][i][w]++;
        }
    }
    free(line);
    fclose(f);
    return 0;
}

static int check(const char *out, const char *err)
{
    struct tally ty = {0};
    long missing = 0, duplicated = 0, want = (long)KINDS * THREADS * ROUNDS * ITEMS;
    char first[96] = "";

    if (check_stream(out, false, &ty) != 0 || check_stream(err, true, &ty) != 0) {
        return 1;
    }
    for (int k = 0; k < KINDS; k++) {
        for (int t = 0; t < THREADS; t++) {
            for (int i = 0; i < ROUNDS; i++) {
                for (int w = 0; w < ITEMS; w++) {
                    int c = seen[k][t][i][w];

                    if (c != 1 && first[0] == '\0') {
                        snprintf(first, sizeof(first), "soak %c t%d i%d w%d seen %d time(s)",
                                 kind_chars[k], t, i, w, c);
                    }
                    missing += c == 0;
                    duplicated += c > 1;
                }
            }
        }
    }
    printf("check: %ld lines read; of %ld tagged lines %ld missing, %ld duplicated; %ld corrupted, "
           "%ld stray, %ld summary line(s)\n",
           ty.lines, want, missing, duplicated, ty.corrupt, ty.stray, ty.summaries);
    if (first[0] != '\0') {
        printf("check: first miscounted: %s\n", first);
    }
    if (ty.first_bad[0] != '\0') {
        printf("check: first bad line: %s\n", ty.first_bad);
    }
    return missing != 0 || duplicated != 0 || ty.corrupt != 0 || ty.stray != 0 || ty.summaries != 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "run") == 0) {
        return run();
    }
    if (argc == 4 && strcmp(argv[1], "check") == 0) {
        return check(argv[2], argv[3]);
    }
    fprintf(stderr, "usage: offload_soak run | offload_soak check <stdout file> <stderr file>\n");
    return 2;
}
