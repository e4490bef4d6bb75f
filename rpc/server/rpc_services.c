/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_services.c - the built-in services (tether/rpc_opcodes.h)
 * and user opcodes: run once per unit (lane, or the wide caller) of a call
 * whose request has fully arrived.  Every request byte is checked before use;
 * bad requests are diagnosed, counted and answered with an error status.
 */
#include <stdlib.h>
#include <string.h>

#include "rpc_env.h"
#include "rpc_internal.h"

/* ---- output ----------------------------------------------------------------------------- */

static FILE *stream_of(struct tether_rpc_server *srv, uint32_t stream)
{
    return stream == TETHER_RPC_STDERR ? srv->err : srv->out;
}

/*
 * TETHER_RPC_PREFIX: a pattern put before every line of device output (docs/usage.md), expanded
 * once per server, at its first output: %r the MPI rank that the launcher put in the environment
 * ('-' if none), %d the device number (config.device_id), %% a '%'.  Any other '%' is printed as
 * it is, and one warning per process names it.
 */

/* The first variable of the launchers' rank variables that holds a whole number, else "-". */
static const char *prefix_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *s = tether_env_str(vars[i]);
        size_t n = s != NULL ? strspn(s, "0123456789") : 0;
        if (n > 0 && n <= 10 && s[n] == '\0')
            return s;
    }
    return "-";
}

static void prefix_init(struct tether_rpc_server *srv)
{
    srv->prefix_ready = true;
    const char *pat = tether_env_str("TETHER_RPC_PREFIX");
    if (pat == NULL)
        return;
    char dev[16];
    snprintf(dev, sizeof dev, "%u", srv->config.device_id);
    const char *bad = NULL; /* the first unknown '%' */
    bool cut = false;
    size_t n = 0;
    for (const char *p = pat; *p != '\0'; p++) {
        const char *add = p;
        size_t k = 1;
        if (*p == '%' && (p[1] == 'r' || p[1] == 'd' || p[1] == '%')) {
            p++;
            add = *p == 'r' ? prefix_rank() : *p == 'd' ? dev : "%";
            k = strlen(add);
        } else if (*p == '%' && bad == NULL) {
            bad = p; /* printed as it is: this '%', then what follows it */
        }
        if (k > sizeof srv->prefix - n) {
            k = sizeof srv->prefix - n;
            cut = true;
        }
        memcpy(srv->prefix + n, add, k);
        n += k;
    }
    srv->prefix_len = n;
    if (bad != NULL && bad[1] != '\0')
        tether_env_warn("TETHER_RPC_PREFIX",
                        "TETHER_RPC_PREFIX=%s: unknown %%%c, printed as it is (known: %%r the MPI "
                        "rank, %%d the device, %%%% a %%)",
                        pat, bad[1]);
    else if (bad != NULL)
        tether_env_warn("TETHER_RPC_PREFIX",
                        "TETHER_RPC_PREFIX=%s: a %% at the end, printed as it is (known: %%r the "
                        "MPI rank, %%d the device, %%%% a %%)",
                        pat);
    if (cut)
        tether_env_warn("TETHER_RPC_PREFIX (length)",
                        "TETHER_RPC_PREFIX=%s expands to more than %zu bytes: only the first %zu "
                        "are used",
                        pat, sizeof srv->prefix, sizeof srv->prefix);
}

/* Counts the prefixed writes of every server in the process: a server's line that did not end
 * goes on without a prefix only while nobody wrote since (printf("%d ", i) in a loop). */
static _Atomic uint64_t out_seq;

/* One call's output to one stream.  Without a prefix it is one fwrite, as the device's call was
 * one call (a printf whose text fills pieces: one per piece, the stream locked from the first
 * piece to the end of the call).  With a prefix the stream stays locked for the whole call (no
 * other writer of the process can put bytes between a prefix and its line), and the prefixed text
 * is gathered in buf and written with fwrite_unlocked. */
struct out_call {
    struct tether_rpc_server *srv;
    FILE *f;
    bool locked;     /* flockfile(f) held */
    bool line_start; /* with a prefix: the next byte starts a line */
    size_t used;     /* bytes waiting in buf */
    char buf[4096];
};

/* Every server's writes to its FILEs, out_open to out_close, under one process-wide lock.  fork()
 * takes it and flushes the servers' FILEs first (rpc_thread.c, fork_prepare): a line a server
 * wrote into a buffer after the forking thread's own fflush would otherwise be copied into the
 * child and come out twice. */
pthread_mutex_t srv_out_lock = PTHREAD_MUTEX_INITIALIZER;

static void out_open(struct out_call *c, struct tether_rpc_server *srv, FILE *f)
{
    pthread_mutex_lock(&srv_out_lock);
    if (!srv->prefix_ready)
        prefix_init(srv);
    c->srv = srv;
    c->f = f;
    c->locked = false;
    c->line_start = true;
    c->used = 0;
    if (srv->prefix_len > 0) {
        flockfile(f);
        c->locked = true;
        c->line_start = srv->line_file != f ||
                        srv->line_seq != atomic_load_explicit(&out_seq, memory_order_relaxed);
    }
}

/* Keeps the stream locked until out_close (a call written with more than one fwrite). */
static void out_hold(struct out_call *c)
{
    if (!c->locked) {
        flockfile(c->f);
        c->locked = true;
    }
}

static void out_raw(struct out_call *c, const void *bytes, size_t n)
{
    if (n == 0)
        return;
    if (c->locked) {
        if (fwrite_unlocked(bytes, 1, n, c->f) != n)
            clearerr_unlocked(c->f);
    } else if (fwrite(bytes, 1, n, c->f) != n) {
        clearerr(c->f);
    }
}

/* Writes one line, or the part of one in this piece of text, after the prefix when `prefixed`:
 * gathered in buf, so that a stream without a buffer (stderr) gets the prefix and its line in one
 * write(2) whatever other processes write to it; a longer one from a copy of its own. */
static void out_line(struct out_call *c, const char *line, size_t k, bool prefixed)
{
    const char *prefix = c->srv->prefix;
    size_t plen = prefixed ? c->srv->prefix_len : 0;
    if (plen + k > sizeof c->buf - c->used) {
        out_raw(c, c->buf, c->used);
        c->used = 0;
    }
    if (plen + k <= sizeof c->buf) {
        memcpy(c->buf + c->used, prefix, plen);
        memcpy(c->buf + c->used + plen, line, k);
        c->used += plen + k;
        return;
    }
    if (plen == 0) {
        out_raw(c, line, k);
        return;
    }
    char *copy = malloc(plen + k);
    if (copy != NULL) {
        memcpy(copy, prefix, plen);
        memcpy(copy + plen, line, k);
        out_raw(c, copy, plen + k);
        free(copy);
        return;
    }
    out_raw(c, prefix, plen); /* no memory for the copy: two writes, still under the lock */
    out_raw(c, line, k);
}

/* Writes n bytes of the call's text: with a prefix, the prefix before each line's first byte. */
static void out_text(struct out_call *c, const char *bytes, size_t n)
{
    if (c->srv->prefix_len == 0) {
        out_raw(c, bytes, n);
        return;
    }
    while (n > 0) {
        const char *nl = memchr(bytes, '\n', n);
        size_t k = nl != NULL ? (size_t)(nl - bytes) + 1 : n;
        out_line(c, bytes, k, c->line_start);
        c->line_start = nl != NULL;
        bytes += k;
        n -= k;
    }
}

static void out_close(struct out_call *c)
{
    struct tether_rpc_server *srv = c->srv;
    if (srv->prefix_len > 0) {
        out_raw(c, c->buf, c->used);
        srv->line_file = c->line_start ? NULL : c->f;
        srv->line_seq = atomic_fetch_add_explicit(&out_seq, 1, memory_order_relaxed) + 1;
    }
    if (c->locked)
        funlockfile(c->f);
    pthread_mutex_unlock(&srv_out_lock);
    srv->wrote = true;
    srv_count(&srv->st_lines, 1);
}

static void report_dropped(struct tether_rpc_server *srv, const char *what, const struct srv_msg *m)
{
    srv_count(&srv->st_malformed, 1);
    srv_diag(srv, "%s of %llu bytes %s", what, (unsigned long long)m->len,
             m->too_big ? "is larger than the limit and was dropped"
                        : "was dropped: out of host memory");
}

/* The formatter's sink: a call whose text fills pieces is written piece by piece, the stream
 * locked from the first piece to the end of the call. */
static void printf_piece(void *ctx, const char *bytes, size_t n)
{
    struct out_call *c = ctx;
    out_hold(c);
    out_text(c, bytes, n);
}

static void serve_printf(struct tether_rpc_server *srv, const struct srv_msg *m)
{
    struct tether_rpc_printf_hdr hdr;
    if (m->too_big || m->oom) {
        report_dropped(srv, "printf message", m);
        return;
    }
    if (m->have < sizeof hdr) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "printf message of %llu bytes is shorter than its header",
                 (unsigned long long)m->have);
        return;
    }
    memcpy(&hdr, m->data, sizeof hdr);
    struct out_call c;
    out_open(&c, srv, stream_of(srv, hdr.stream));
    struct rpc_printf_sink sink = {printf_piece, &c};
    srv->text.len = 0;
    tether_status_t st = rpc_printf_format_msg(&srv->text, m->data, m->have, &sink, NULL, NULL);
    out_text(&c, srv->text.data, srv->text.len);
    out_close(&c);
    if (st == TETHER_ERR_NO_MEMORY)
        srv_diag(srv, "printf output cut short: out of host memory");
}

static void serve_write(struct tether_rpc_server *srv, const struct srv_msg *m)
{
    struct tether_rpc_write_hdr hdr;
    if (m->too_big || m->oom) {
        report_dropped(srv, "write message", m);
        return;
    }
    if (m->have < sizeof hdr) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "write message of %llu bytes is shorter than its header",
                 (unsigned long long)m->have);
        return;
    }
    memcpy(&hdr, m->data, sizeof hdr);
    const unsigned char *bytes = m->data + sizeof hdr;
    size_t n = m->have - sizeof hdr;
    FILE *f = stream_of(srv, hdr.stream);
    if (hdr.stream == TETHER_RPC_HOST_FILE) {
        /* The device's FILE * is a value of this process's stdout/stderr, or garbage. */
        uint64_t file;
        if (n < sizeof file) {
            srv_count(&srv->st_malformed, 1);
            srv_diag(srv, "write to a host FILE without the FILE pointer");
            return;
        }
        memcpy(&file, bytes, sizeof file);
        bytes += sizeof file;
        n -= sizeof file;
        if (file == (uint64_t)(uintptr_t)stdout) {
            f = srv->out;
        } else if (file == (uint64_t)(uintptr_t)stderr) {
            f = srv->err;
        } else {
            srv_diag(srv, "device wrote %zu bytes to FILE %#llx: only stdout and stderr are served",
                     n, (unsigned long long)file);
            return;
        }
    }
    struct out_call c;
    out_open(&c, srv, f);
    if (!hdr.newline) {
        out_text(&c, (const char *)bytes, n);
    } else {
        /* puts: text and newline in one write. */
        srv->text.len = 0;
        if (rpc_outbuf_append(&srv->text, bytes, n) == TETHER_OK &&
            rpc_outbuf_append(&srv->text, "\n", 1) == TETHER_OK) {
            out_text(&c, srv->text.data, srv->text.len);
        } else {
            out_hold(&c);
            out_text(&c, (const char *)bytes, n);
            out_text(&c, "\n", 1);
        }
    }
    out_close(&c);
}

/* ---- device heap ------------------------------------------------------------------------ */

void srv_heap_reserve(struct tether_rpc_server *srv)
{
    size_t size = srv->config.heap_reserve;
    if (size == 0 || srv->config.device_alloc == NULL)
        return;
    uint64_t dev = 0;
    tether_status_t st = srv->config.device_alloc(srv->config.device_ctx, size, &dev);
    if (st != TETHER_OK || dev == 0) {
        srv_diag(srv,
                 "warning: no heap reserve: allocating %zu bytes failed (%s); the device heap "
                 "grows as the device asks (TETHER_RPC_HEAP_RESERVE sets the reserve)",
                 size, tether_status_str(st != TETHER_OK ? st : TETHER_ERR_NO_MEMORY));
        return;
    }
    srv->reserve_raw = dev;
    srv->reserve_size = size;
}

void srv_heap_flush_deferred(struct tether_rpc_server *srv)
{
    pthread_mutex_lock(&srv->heap_lock);
    uint64_t *list = srv->deferred;
    size_t n = srv->ndeferred;
    srv->deferred = NULL;
    srv->ndeferred = 0;
    srv->deferred_cap = 0;
    pthread_mutex_unlock(&srv->heap_lock);
    for (size_t i = 0; i < n; i++)
        srv->config.device_free(srv->config.device_ctx, list[i]);
    free(list);
}

void srv_heap_release_all(struct tether_rpc_server *srv)
{
    srv_heap_flush_deferred(srv);
    for (size_t i = 0; i < srv->nallocs; i++)
        if (srv->allocs[i].raw != 0)
            srv->config.device_free(srv->config.device_ctx, srv->allocs[i].raw);
    srv->nallocs = 0;
    srv->heap_bytes = 0;
    if (srv->reserve_raw != 0)
        srv->config.device_free(srv->config.device_ctx, srv->reserve_raw);
    srv->reserve_raw = 0;
}

static bool heap_record(struct tether_rpc_server *srv, struct srv_alloc a)
{
    if (srv->nallocs == srv->allocs_cap) {
        size_t cap = srv->allocs_cap ? 2 * srv->allocs_cap : 64;
        struct srv_alloc *p = realloc(srv->allocs, cap * sizeof *p);
        if (p == NULL)
            return false;
        srv->allocs = p;
        srv->allocs_cap = cap;
    }
    srv->allocs[srv->nallocs++] = a;
    srv->heap_bytes += a.size;
    return true;
}

/* Why the host gave the device no memory: each is said once per server (heap_said). */
enum heap_refusal {
    REFUSED_NONE = 0,
    REFUSED_NO_ALLOCATOR = 1,
    REFUSED_SIZE = 2,
    REFUSED_LIMIT = 4,
    REFUSED_DEVICE = 8,
    REFUSED_HOST_MEMORY = 16,
};

static void heap_say_refusal(struct tether_rpc_server *srv, enum heap_refusal why, uint64_t size,
                             uint64_t live, tether_status_t st)
{
    pthread_mutex_lock(&srv->heap_lock);
    bool said = (srv->heap_said & why) != 0;
    srv->heap_said |= why;
    pthread_mutex_unlock(&srv->heap_lock);
    if (said)
        return;
    const char *tail = "the device's malloc returns NULL (said once)";
    switch (why) {
    case REFUSED_NO_ALLOCATOR:
        srv_diag(srv, "device heap: the server has no device_alloc callback: %s", tail);
        break;
    case REFUSED_SIZE:
        srv_diag(srv, "device heap: asked for %llu bytes, more than 2^48: %s",
                 (unsigned long long)size, tail);
        break;
    case REFUSED_LIMIT:
        srv_diag(srv,
                 "device heap: heap_limit of %zu bytes reached (%llu bytes held, %llu more "
                 "asked): %s",
                 srv->config.heap_limit, (unsigned long long)live, (unsigned long long)size, tail);
        break;
    case REFUSED_DEVICE:
        srv_diag(srv, "device heap: device_alloc(%llu bytes) failed: %s (%llu bytes held): %s",
                 (unsigned long long)size, tether_status_str(st), (unsigned long long)live, tail);
        break;
    case REFUSED_HOST_MEMORY:
        srv_diag(srv, "device heap: out of host memory for the table of %llu bytes held: %s",
                 (unsigned long long)live, tail);
        break;
    case REFUSED_NONE:
        break;
    }
}

/* Returns the device address of a new heap block, 0 on failure (said once per cause). */
static uint64_t heap_alloc(struct tether_rpc_server *srv, uint64_t size, uint64_t align)
{
    if (srv->config.device_alloc == NULL) {
        heap_say_refusal(srv, REFUSED_NO_ALLOCATOR, size, 0, TETHER_OK);
        return 0;
    }
    if (size == 0 || size > (1ull << 48)) {
        heap_say_refusal(srv, REFUSED_SIZE, size, 0, TETHER_OK);
        return 0;
    }
    if (align < 16)
        align = 16;
    enum heap_refusal why = REFUSED_NONE;
    tether_status_t st = TETHER_OK;
    pthread_mutex_lock(&srv->heap_lock);
    uint64_t ptr = 0;
    uint64_t live = srv->heap_bytes;
    if (srv->config.heap_limit != 0 && srv->heap_bytes + size > srv->config.heap_limit) {
        why = REFUSED_LIMIT;
        goto out;
    }
    /* From the reserve while it lasts (never given back before shutdown). */
    if (srv->reserve_raw != 0) {
        uint64_t p = (srv->reserve_raw + srv->reserve_used + align - 1) & ~(align - 1);
        if (p + size <= srv->reserve_raw + srv->reserve_size) {
            if (heap_record(srv, (struct srv_alloc){p, 0, size})) {
                srv->reserve_used = p + size - srv->reserve_raw;
                ptr = p;
            } else {
                why = REFUSED_HOST_MEMORY;
            }
            goto out;
        }
    }
    uint64_t raw = 0;
    uint64_t extra = align > 16 ? align - 16 : 0;
    st = srv->config.device_alloc(srv->config.device_ctx, size + extra, &raw);
    if (st != TETHER_OK || raw == 0) {
        why = REFUSED_DEVICE;
        if (st == TETHER_OK)
            st = TETHER_ERR_NO_MEMORY;
        goto out;
    }
    uint64_t p = (raw + align - 1) & ~(align - 1);
    if (!heap_record(srv, (struct srv_alloc){p, raw, size})) {
        srv->config.device_free(srv->config.device_ctx, raw);
        why = REFUSED_HOST_MEMORY;
        goto out;
    }
    ptr = p;
out:
    pthread_mutex_unlock(&srv->heap_lock);
    if (why != REFUSED_NONE)
        heap_say_refusal(srv, why, size, live, st);
    return ptr;
}

static bool heap_free(struct tether_rpc_server *srv, uint64_t ptr)
{
    bool found = false;
    pthread_mutex_lock(&srv->heap_lock);
    for (size_t i = srv->nallocs; i-- > 0;) {
        if (srv->allocs[i].ptr != ptr)
            continue;
        struct srv_alloc a = srv->allocs[i];
        srv->allocs[i] = srv->allocs[--srv->nallocs];
        srv->heap_bytes -= a.size;
        found = true;
        if (a.raw == 0)
            break; /* from the reserve: freed with it */
        if (srv->ndeferred == srv->deferred_cap) {
            size_t cap = srv->deferred_cap ? 2 * srv->deferred_cap : 16;
            uint64_t *p = realloc(srv->deferred, cap * sizeof *p);
            if (p == NULL) {
                /* Cannot defer: free now and hope the driver does not wait. */
                srv->config.device_free(srv->config.device_ctx, a.raw);
                break;
            }
            srv->deferred = p;
            srv->deferred_cap = cap;
        }
        srv->deferred[srv->ndeferred++] = a.raw;
        break;
    }
    pthread_mutex_unlock(&srv->heap_lock);
    return found;
}

static void serve_alloc(struct tether_rpc_server *srv, const struct srv_msg *m, struct srv_msg *tx)
{
    struct tether_rpc_alloc_req req;
    struct tether_rpc_alloc_ans ans = {0};
    if (m->too_big || m->oom || m->have != sizeof req) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "malloc request of %llu bytes (want %zu)", (unsigned long long)m->len,
                 sizeof req);
        srv_answer_set(tx, TETHER_RPC_CALL_ERROR, NULL, 0);
        return;
    }
    memcpy(&req, m->data, sizeof req);
    if (req.align == 0 || (req.align & (req.align - 1)) != 0 || req.align > (2u << 20)) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "malloc request with alignment %llu", (unsigned long long)req.align);
        srv_answer_set(tx, TETHER_RPC_CALL_ERROR, NULL, 0);
        return;
    }
    ans.ptr = heap_alloc(srv, req.size, req.align);
    srv_answer_set(tx, TETHER_RPC_CALL_OK, &ans, sizeof ans);
}

static void serve_free(struct tether_rpc_server *srv, const struct srv_msg *m)
{
    struct tether_rpc_free_req req;
    if (m->too_big || m->oom || m->have != sizeof req) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "free request of %llu bytes (want %zu)", (unsigned long long)m->len,
                 sizeof req);
        return;
    }
    memcpy(&req, m->data, sizeof req);
    if (req.ptr != 0 && !heap_free(srv, req.ptr)) {
        srv_count(&srv->st_malformed, 1);
        srv_diag(srv, "free of 0x%llx, which the host never handed out",
                 (unsigned long long)req.ptr);
    }
}

/* ---- exit ------------------------------------------------------------------------------- */

static void serve_exit(struct tether_rpc_server *srv, const struct srv_msg *m, bool is_abort)
{
    struct tether_rpc_exit_req req = {0, 0};
    if (!is_abort) {
        if (m->too_big || m->oom || m->have != sizeof req) {
            srv_count(&srv->st_malformed, 1);
            srv_diag(srv, "exit request of %llu bytes (want %zu); exiting with status 1",
                     (unsigned long long)m->len, sizeof req);
            req.status = 1;
        } else {
            memcpy(&req, m->data, sizeof req);
        }
    }
    /* The first exit wins; the process ends after this sweep. */
    if (!srv->exit_pending) {
        srv->exit_pending = true;
        srv->exit_abort = is_abort;
        srv->exit_status = req.status;
    }
}

/* ---- user opcodes ----------------------------------------------------------------------- */

static tether_status_t reply_append(struct tether_rpc_reply *reply, const void *data, size_t size)
{
    struct rpc_outbuf *buf = reply->priv;
    if (size > 0 && data == NULL)
        return TETHER_ERR_INVALID;
    if (size > TETHER_RPC_MSG_MAX - sizeof(struct tether_rpc_answer) - buf->len)
        return TETHER_ERR_INVALID;
    return rpc_outbuf_append(buf, data, size);
}

/* Under handle_lock.  The generations are read before the lookup, so a change made during it
 * shows at the next call. */
static bool find_handler(struct tether_rpc_server *srv, uint32_t opcode, struct srv_handler *h_p)
{
    uint32_t own = atomic_load_explicit(&srv->handlers.gen, memory_order_acquire);
    uint32_t global = atomic_load_explicit(&srv_global_handlers.gen, memory_order_acquire);
    struct srv_handler_cache *c = &srv->handler_cache;
    if (c->valid && c->opcode == opcode && c->gen_own == own && c->gen_global == global) {
        *h_p = c->h;
        return c->found;
    }
    bool found = srv_handlers_find(&srv->handlers, opcode, h_p) ||
                 srv_handlers_find(&srv_global_handlers, opcode, h_p);
    c->valid = true;
    c->found = found;
    c->opcode = opcode;
    c->gen_own = own;
    c->gen_global = global;
    if (found)
        c->h = *h_p;
    return found;
}

static void report_unhandled(struct tether_rpc_server *srv, uint32_t opcode, uint64_t mask)
{
    srv_count(&srv->st_unhandled, 1);
    uint64_t *word = &srv->unhandled_reported[opcode / 64];
    uint64_t bit = 1ull << (opcode % 64);
    if (*word & bit)
        return;
    *word |= bit;
    srv_diag(srv,
             "no handler for RPC opcode 0x%04x (lanes 0x%llx): the device gets an error "
             "answer (reported once per opcode)",
             opcode, (unsigned long long)mask);
}

/* The server whose user handler this thread runs (tether_rpc_server_current). */
static _Thread_local struct tether_rpc_server *srv_running_handler;

tether_rpc_server_t *tether_rpc_server_current(void)
{
    return srv_running_handler;
}

/* Runs a user handler on one request: the call's status, the answer's bytes in srv->reply. */
static uint32_t user_run(struct tether_rpc_server *srv, const struct srv_handler *h,
                         const struct tether_rpc_request *req)
{
    struct rpc_outbuf *buf = &srv->reply;
    struct tether_rpc_reply reply = {reply_append, buf};
    buf->len = 0;
    struct tether_rpc_server *outer = srv_running_handler; /* a handler serving another server */
    srv_running_handler = srv;
    tether_status_t st = h->fn(h->user, req, &reply);
    srv_running_handler = outer;
    return st == TETHER_OK ? TETHER_RPC_CALL_OK : TETHER_RPC_CALL_ERROR;
}

static void srv_reply_trim(struct tether_rpc_server *srv)
{
    if (srv->reply.cap > 65536) /* a large reply: give its memory back */
        rpc_outbuf_free(&srv->reply);
}

static void serve_user(struct tether_rpc_server *srv, struct srv_call *call)
{
    struct srv_handler h;
    if (!find_handler(srv, call->opcode, &h)) {
        report_unhandled(srv, call->opcode, call->mask);
        for (uint32_t u = 0; u < call->units; u++)
            srv_answer_set(&call->tx[u], TETHER_RPC_CALL_UNHANDLED, NULL, 0);
        return;
    }
    for (uint32_t u = 0; u < call->units; u++) {
        const struct srv_msg *m = &call->rx[u];
        if (m->too_big || m->oom) {
            report_dropped(srv, "user call request", m);
            srv_answer_set(&call->tx[u], TETHER_RPC_CALL_TOO_BIG, NULL, 0);
            continue;
        }
        struct tether_rpc_request req = {
            .opcode = call->opcode,
            .device_id = srv->config.device_id,
            .lane = call->wide ? 0 : call->lane_of[u],
            .data = m->data,
            .size = m->have,
        };
        uint32_t status = user_run(srv, &h, &req);
        srv_answer_set(&call->tx[u], status, srv->reply.data,
                       status == TETHER_RPC_CALL_OK ? srv->reply.len : 0);
    }
    srv_reply_trim(srv);
}

/* ---- dispatch --------------------------------------------------------------------------- */

bool srv_service_run(struct tether_rpc_server *srv, struct srv_call *call)
{
    uint32_t op = call->opcode;
    if (op >= TETHER_RPC_OP_USER_FIRST) {
        serve_user(srv, call);
        return true;
    }
    switch (op) {
    case TETHER_RPC_OP_NOOP:
        for (uint32_t u = 0; u < call->units; u++)
            srv_answer_set(&call->tx[u], TETHER_RPC_CALL_OK, NULL, 0);
        return true;
    case TETHER_RPC_OP_PRINTF:
        for (uint32_t u = 0; u < call->units; u++)
            serve_printf(srv, &call->rx[u]);
        return false;
    case TETHER_RPC_OP_WRITE:
        for (uint32_t u = 0; u < call->units; u++)
            serve_write(srv, &call->rx[u]);
        return false;
    case TETHER_RPC_OP_ALLOC:
        for (uint32_t u = 0; u < call->units; u++)
            serve_alloc(srv, &call->rx[u], &call->tx[u]);
        return true;
    case TETHER_RPC_OP_FREE:
        for (uint32_t u = 0; u < call->units; u++)
            serve_free(srv, &call->rx[u]);
        return false;
    case TETHER_RPC_OP_EXIT:
    case TETHER_RPC_OP_ABORT:
        serve_exit(srv, &call->rx[0], op == TETHER_RPC_OP_ABORT);
        return false;
    default:
        break;
    }
    /* An opcode of tether's range this server does not know (a newer device library?):
     * answer with an error; a device that expected no answer just never reads it. */
    report_unhandled(srv, op, call->mask);
    for (uint32_t u = 0; u < call->units; u++)
        srv_answer_set(&call->tx[u], TETHER_RPC_CALL_UNHANDLED, NULL, 0);
    return true;
}
