/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_server.c - one server per device: the shared region, the
 * client bytes for the device global, and the non-blocking call state
 * machines that serve every port without ever waiting on one (see
 * rpc_internal.h for the life cycle, tether/rpc.h for the contract).
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rpc_env.h"
#include "rpc_internal.h"

#define SRV_DEFAULT_PORTS 64u
#define SRV_DEFAULT_LANES 32u

_Static_assert(offsetof(struct tether_rpc_server, bell.sleepers) -
                           offsetof(struct tether_rpc_server, bell.seq) ==
                       offsetof(struct tether_rpc_doorbell, sleepers) &&
                   offsetof(struct tether_rpc_server, bell.waiters) -
                           offsetof(struct tether_rpc_server, bell.seq) ==
                       offsetof(struct tether_rpc_doorbell, waiters),
               "the server's doorbell is a struct tether_rpc_doorbell");

size_t tether_rpc_client_size(void)
{
    return sizeof(struct tether_rpc_device_client);
}

size_t tether_rpc_client_const_size(void)
{
    return sizeof(struct tether_rpc_device_const);
}

static tether_status_t set_err(struct tether_error *err, tether_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tether_status_t set_err(struct tether_error *err, tether_status_t st, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

void srv_diag(struct tether_rpc_server *srv, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(srv->err, "tether rpc (device %u): %s\n", srv->config.device_id, line);
}

static uint64_t srv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void srv_flush(struct tether_rpc_server *srv)
{
    if (!srv->wrote)
        return;
    fflush(srv->out);
    fflush(srv->err);
    srv->wrote = false;
    srv->flush_ns = srv_now_ns();
}

/* Output of a sweep: flushed at least every SRV_FLUSH_NS while calls keep coming, and when a
 * sweep that flushes when quiet (srv_handle) found nothing, so lines appear within about a
 * millisecond while a kernel runs without a write(2) per sweep.  The server thread's own sweeps
 * do not flush when quiet: between a GPU's bursts of calls most of its sweeps find nothing, and a
 * write(2) after each cost more than formatting the lines. */
#define SRV_FLUSH_NS 1000000u

static void srv_flush_lazy(struct tether_rpc_server *srv, uint32_t progress, bool quiet_flush)
{
    if (!srv->wrote)
        return;
    if ((progress == 0 && quiet_flush) || srv_now_ns() - srv->flush_ns >= SRV_FLUSH_NS)
        srv_flush(srv);
}

/* ---- create / destroy ------------------------------------------------------------------- */

tether_status_t tether_rpc_server_create(const struct tether_rpc_server_config *config,
                                         tether_rpc_server_t **server_p, struct tether_error *err)
{
    if (config == NULL || server_p == NULL)
        return set_err(err, TETHER_ERR_INVALID, "rpc server: NULL config or result pointer");
    if (config->shared_alloc == NULL || config->shared_free == NULL)
        return set_err(err, TETHER_ERR_INVALID, "rpc server: shared_alloc/shared_free missing");
    if (config->device_alloc != NULL && config->device_free == NULL)
        return set_err(err, TETHER_ERR_INVALID, "rpc server: device_alloc without device_free");
    uint32_t ports = config->port_count ? config->port_count : SRV_DEFAULT_PORTS;
    uint32_t lanes = config->lane_count ? config->lane_count : SRV_DEFAULT_LANES;
    if (ports > TETHER_RPC_DEVICE_PORTS_MAX || !rpc_config_valid(ports, lanes))
        return set_err(err, TETHER_ERR_INVALID,
                       "rpc server: %u ports x %u lanes not supported (at most %u x %u)", ports,
                       lanes, TETHER_RPC_DEVICE_PORTS_MAX, RPC_LANES_MAX);

    tether_status_t st = TETHER_ERR_NO_MEMORY;
    struct tether_rpc_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        return set_err(err, st, "rpc server: out of host memory");
    srv->config = *config;
    srv->config.port_count = ports;
    srv->config.lane_count = lanes;
    srv->out = config->out ? config->out : stdout;
    srv->err = config->err ? config->err : stderr;
    srv->trace = tether_env_bool("TETHER_RPC_TRACE", false);
#if TETHER_RPC_PROFILE
    srv_prof_init(srv);
#else
    if (tether_env_bool("TETHER_RPC_TIMING", false))
        tether_env_warn("TETHER_RPC_TIMING",
                        "TETHER_RPC_TIMING is set, but this build of tether does not time RPC "
                        "calls: configure it with -DTETHER_RPC_PROFILE=ON for that");
#endif
    atomic_init(&srv->bell.seq, 0);
    atomic_init(&srv->bell.sleepers, 0);
    atomic_init(&srv->bell.waiters, 0);
    atomic_init(&srv->kernels, 0);
    atomic_init(&srv->in_flight, 0);
    snprintf(srv->where, sizeof srv->where, "no server thread");

    srv->locks = calloc(1, rpc_lock_size(ports));
    srv->calls = calloc(ports, sizeof *srv->calls);
    srv->active = calloc(ports, sizeof *srv->active);
    if (srv->locks == NULL || srv->calls == NULL || srv->active == NULL) {
        set_err(err, st, "rpc server: out of host memory");
        goto fail_host;
    }

    srv->region_size = rpc_region_size(ports, lanes);
    /* device clients' doorbell: the cache line after the region */
    uint64_t shared_size = srv->region_size + (config->host_client ? 0 : RPC_ALIGN);
    st = config->shared_alloc(config->shared_ctx, shared_size, &srv->region_host, &srv->region_dev);
    if (st != TETHER_OK) {
        set_err(err, st, "rpc server: shared_alloc(%llu bytes) failed: %s",
                (unsigned long long)shared_size, tether_status_str(st));
        goto fail_host;
    }
    if ((uintptr_t)srv->region_host % RPC_ALIGN || srv->region_dev % RPC_ALIGN) {
        st = set_err(err, TETHER_ERR_INVALID,
                     "rpc server: shared memory not %u-byte aligned (host %p, device 0x%llx)",
                     RPC_ALIGN, srv->region_host, (unsigned long long)srv->region_dev);
        goto fail_region;
    }
    memset(srv->region_host, 0, shared_size);
    if (!config->host_client)
        srv->device_bell = (_Atomic uint32_t *)((char *)srv->region_host + srv->region_size);
    st = rpc_server_init(&srv->rpc, srv->region_host, ports, lanes, srv->locks);
    if (st != TETHER_OK) {
        set_err(err, st, "rpc server: rpc_server_init failed");
        goto fail_region;
    }

    pthread_mutex_init(&srv->handle_lock, NULL);
    pthread_mutex_init(&srv->handlers.lock, NULL);
    pthread_mutex_init(&srv->heap_lock, NULL);
    srv_heap_reserve(srv);
    srv_registry_add(srv);
    *server_p = srv;
    return TETHER_OK;

fail_region:
    config->shared_free(config->shared_ctx, srv->region_host);
fail_host:
    free(srv->active);
    free(srv->calls);
    free(srv->locks);
    free(srv);
    return st;
}

static void call_free(struct srv_call *call, uint32_t lanes)
{
    for (uint32_t i = 0; i < 2 * lanes; i++)
        free(call->msgs[i].data);
    free(call);
}

void srv_calls_reset(struct tether_rpc_server *srv)
{
    uint32_t ports = srv->config.port_count, lanes = srv->config.lane_count;
    if (srv->fork_whole) {
        for (uint32_t i = 0; i < srv->nactive; i++)
            call_free(srv->calls[srv->active[i]], lanes);
    } else {
        /* Another thread of the parent held handle_lock at the fork and may have been changing
         * these: what they hold is let go (a few call objects), never freed twice. */
        srv->pool = NULL;
        memset(&srv->text, 0, sizeof srv->text);
        memset(&srv->reply, 0, sizeof srv->reply);
    }
    memset(srv->calls, 0, ports * sizeof *srv->calls);
    srv->nactive = 0;
    atomic_store_explicit(&srv->in_flight, 0, memory_order_relaxed);
    for (uint32_t i = 0; i < SRV_HOT; i++)
        atomic_store_explicit(&srv->hot[i], 0, memory_order_relaxed);
    srv->hot_next = 0;
    atomic_store_explicit(&srv->hot_answered, false, memory_order_relaxed);
    srv->handler_cache.valid = false;
    srv->exit_pending = false;
    srv->wrote = false;
    srv_prof_reset(srv);
    /* The ports: every call on them was made by a thread the child does not have. */
    memset(srv->region_host, 0, srv->region_size);
    if (srv->device_bell != NULL) {
        atomic_fetch_add(&srv->bell_clears, 2);
        atomic_store(srv->device_bell, 0);
    }
    memset(srv->locks, 0, rpc_lock_size(ports));
    rpc_server_init(&srv->rpc, srv->region_host, ports, lanes, srv->locks);
}

void tether_rpc_server_destroy(tether_rpc_server_t *srv)
{
    if (srv == NULL)
        return;
    if (tether_rpc_server_current() == srv) {
        /* Its thread is running this handler (it would wait for itself). */
        srv_diag(srv, "tether_rpc_server_destroy called from one of the server's own handlers: "
                      "not destroyed");
        return;
    }
    srv_registry_remove(srv);
    srv_thread_stop(srv);
    if (atomic_load(&srv->forked))
        srv_calls_reset(srv); /* a fork child's copy: the parent's calls are not served */
    /* Serve what is still pending (output written before the device ended). */
    for (int i = 0; i < 16; i++) {
        uint32_t progress = 0;
        tether_rpc_server_handle(srv, &progress);
        if (progress == 0)
            break;
    }
    uint32_t lanes = srv->config.lane_count;
    for (uint32_t i = 0; i < srv->nactive; i++)
        call_free(srv->calls[srv->active[i]], lanes);
    while (srv->pool != NULL) {
        struct srv_call *next = srv->pool->next_free;
        call_free(srv->pool, lanes);
        srv->pool = next;
    }
    srv_heap_release_all(srv);
    srv->config.shared_free(srv->config.shared_ctx, srv->region_host);
    rpc_outbuf_free(&srv->text);
    rpc_outbuf_free(&srv->reply);
    free(srv->handlers.v);
    free(srv->allocs);
    free(srv->active);
    free(srv->calls);
    free(srv->locks);
    pthread_mutex_destroy(&srv->heap_lock);
    pthread_mutex_destroy(&srv->handlers.lock);
    pthread_mutex_destroy(&srv->handle_lock);
    free(srv);
}

tether_status_t tether_rpc_server_client_bytes(tether_rpc_server_t *srv, uint64_t global_dev,
                                               void *buf, size_t size)
{
    if (srv == NULL || buf == NULL || size != sizeof(struct tether_rpc_device_client) ||
        global_dev == 0 || global_dev % 8 != 0)
        return TETHER_ERR_INVALID;
    struct tether_rpc_device_client c;
    memset(&c, 0, sizeof c);
    c.magic = TETHER_RPC_CLIENT_MAGIC;
    c.version = TETHER_RPC_CLIENT_VERSION;
    c.flags = srv->config.host_client ? TETHER_RPC_CLIENT_WIDE | TETHER_RPC_CLIENT_WAKES : 0;
    c.device_id = srv->config.device_id;
    c.doorbell = srv->config.host_client ? (uint64_t)(uintptr_t)&srv->bell
                                         : srv->region_dev + srv->region_size;
    uint64_t locks_dev = global_dev + offsetof(struct tether_rpc_device_client, locks);
    tether_status_t st =
        rpc_client_init(&c.client, (void *)(uintptr_t)srv->region_dev, srv->config.port_count,
                        srv->config.lane_count, (void *)(uintptr_t)locks_dev);
    if (st != TETHER_OK)
        return st;
    memcpy(buf, &c, sizeof c);
    atomic_store(&srv->client_rings, true);
    return TETHER_OK;
}

/* ---- handlers --------------------------------------------------------------------------- */

struct srv_handlers srv_global_handlers = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

tether_status_t srv_handlers_set(struct srv_handlers *t, uint32_t opcode, tether_rpc_handler_t fn,
                                 void *user)
{
    if (opcode < TETHER_RPC_OP_USER_FIRST || opcode > TETHER_RPC_OP_USER_LAST)
        return TETHER_ERR_INVALID;
    tether_status_t st = TETHER_OK;
    pthread_mutex_lock(&t->lock);
    size_t i = 0;
    while (i < t->n && t->v[i].opcode != opcode)
        i++;
    if (fn == NULL) {
        if (i < t->n)
            t->v[i] = t->v[--t->n];
        goto out;
    }
    if (i == t->n) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 8;
            struct srv_handler *v = realloc(t->v, cap * sizeof *v);
            if (v == NULL) {
                st = TETHER_ERR_NO_MEMORY;
                goto out;
            }
            t->v = v;
            t->cap = cap;
        }
        t->n++;
    }
    t->v[i] = (struct srv_handler){opcode, fn, user};
out:
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
    pthread_mutex_unlock(&t->lock);
    return st;
}

bool srv_handlers_find(struct srv_handlers *t, uint32_t opcode, struct srv_handler *h_p)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].opcode == opcode) {
            *h_p = t->v[i];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

tether_status_t tether_rpc_register(tether_rpc_server_t *srv, uint32_t opcode,
                                    tether_rpc_handler_t fn, void *user)
{
    if (srv == NULL)
        return TETHER_ERR_INVALID;
    return srv_handlers_set(&srv->handlers, opcode, fn, user);
}

tether_status_t tether_rpc_register_global(uint32_t opcode, tether_rpc_handler_t fn, void *user)
{
    return srv_handlers_set(&srv_global_handlers, opcode, fn, user);
}

/* ---- messages --------------------------------------------------------------------------- */

static void msg_reset(struct srv_msg *m)
{
    m->len = 0;
    m->have = 0;
    m->pos = 0;
    m->too_big = false;
    m->oom = false;
}

static bool msg_complete(const struct srv_msg *m)
{
    return m->pos > 0 && m->pos - 8 >= m->len; /* no overflow for absurd lengths */
}

/* Keeps bytes [from, from + n) of a message's payload (arriving in order). */
static void msg_store(struct srv_msg *m, const unsigned char *bytes, uint64_t n)
{
    if (m->too_big || m->oom || n == 0)
        return;
    if (m->have + n > m->cap) {
        uint64_t cap = m->cap ? m->cap : 256;
        while (cap < m->have + n)
            cap *= 2;
        if (cap > m->len)
            cap = m->len;
        unsigned char *p = realloc(m->data, cap);
        if (p == NULL) {
            m->oom = true;
            return;
        }
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->have, bytes, n);
    m->have += n;
}

/* Consumes one 64-byte lane buffer of a message stream. */
static void msg_consume(struct srv_msg *m, const unsigned char *buf)
{
    if (msg_complete(m))
        return; /* padding of a lane that finished earlier */
    uint64_t off = 0;
    if (m->pos == 0) {
        memcpy(&m->len, buf, 8);
        m->too_big = m->len > TETHER_RPC_MSG_MAX;
        off = 8;
        m->pos = 8;
    }
    uint64_t data_pos = m->pos - 8; /* payload bytes before this buffer's data */
    uint64_t n = RPC_BUFFER_SIZE - off;
    if (n > m->len - data_pos)
        n = m->len - data_pos;
    msg_store(m, buf + off, n);
    m->pos += RPC_BUFFER_SIZE - off;
}

/* Produces one 64-byte lane buffer of an answer stream. */
static void msg_produce(struct srv_msg *m, unsigned char *buf)
{
    if (msg_complete(m))
        return;
    uint64_t off = 0;
    if (m->pos == 0) {
        memcpy(buf, &m->len, 8);
        off = 8;
        m->pos = 8;
    }
    uint64_t data_pos = m->pos - 8;
    uint64_t n = RPC_BUFFER_SIZE - off;
    if (n > m->len - data_pos)
        n = m->len - data_pos;
    if (n > 0)
        memcpy(buf + off, m->data + data_pos, n);
    m->pos += RPC_BUFFER_SIZE - off;
}

bool srv_answer_set(struct srv_msg *tx, uint32_t status, const void *data, size_t size)
{
    struct tether_rpc_answer ans = {status, 0};
    msg_reset(tx);
    uint64_t need = sizeof ans + size;
    if (need > tx->cap) {
        unsigned char *p = realloc(tx->data, need);
        if (p == NULL) {
            need = sizeof ans;
            ans.status = TETHER_RPC_CALL_ERROR;
            size = 0;
            if (tx->cap < need) {
                /* Cannot even say so: answer with an empty message (the device sees a short
                 * answer and reports an error). */
                tx->len = 0;
                return false;
            }
        } else {
            tx->data = p;
            tx->cap = need;
        }
    }
    memcpy(tx->data, &ans, sizeof ans);
    if (size > 0)
        memcpy(tx->data + sizeof ans, data, size);
    tx->len = need;
    tx->have = need;
    return true;
}

struct lane_arg {
    struct srv_call *call;
};

static uint32_t call_unit(const struct srv_call *call, uint32_t lane)
{
    if (call->wide)
        return 0;
    uint64_t below = lane == 0 ? 0 : call->mask & ((~(uint64_t)0) >> (64 - lane));
    return (uint32_t)__builtin_popcountll(below);
}

static void rx_use(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct srv_call *call = arg;
    msg_consume(&call->rx[call_unit(call, lane)], (const unsigned char *)buffer->data);
}

static void tx_fill(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct srv_call *call = arg;
    msg_produce(&call->tx[call_unit(call, lane)], (unsigned char *)buffer->data);
}

static bool units_complete(const struct srv_msg *msgs, uint32_t units)
{
    for (uint32_t u = 0; u < units; u++)
        if (!msg_complete(&msgs[u]))
            return false;
    return true;
}

/* Before the first packet of an answer: a one-message answer short enough also goes into the
 * send's head (tether/rpc_opcodes.h, inline answers). */
static void set_inline_head(struct tether_rpc_server *srv, struct srv_call *call)
{
    const struct srv_msg *m = &call->tx[0];
    struct tether_rpc_answer ans;
    uint64_t head[2];
    if (call->units != 1 || m->len < sizeof ans || m->have != m->len)
        return;
    memcpy(&ans, m->data, sizeof ans);
    if (tether_rpc_inline_pack(ans.status, m->data + sizeof ans, m->len - sizeof ans, head)) {
        rpc_port_set_head(&call->port, head[0], head[1]);
        srv_count(&srv->st_inline, 1);
    }
}

/* ---- calls ------------------------------------------------------------------------------ */

static struct srv_call *call_get(struct tether_rpc_server *srv)
{
    uint32_t lanes = srv->config.lane_count;
    struct srv_call *call = srv->pool;
    if (call != NULL) {
        srv->pool = call->next_free;
        return call;
    }
    call = calloc(1, sizeof *call + 2 * lanes * sizeof(struct srv_msg));
    if (call == NULL)
        return NULL;
    call->rx = call->msgs;
    call->tx = call->msgs + lanes;
    return call;
}

static void call_put(struct tether_rpc_server *srv, struct srv_call *call)
{
    /* Keep small buffers for the next call, give big ones back. */
    for (uint32_t i = 0; i < 2 * srv->config.lane_count; i++) {
        if (call->msgs[i].cap > (64u << 10)) {
            free(call->msgs[i].data);
            call->msgs[i].data = NULL;
            call->msgs[i].cap = 0;
        }
    }
    call->next_free = srv->pool;
    srv->pool = call;
}

static void hot_note(struct tether_rpc_server *srv, uint32_t index)
{
    for (uint32_t i = 0; i < SRV_HOT; i++)
        if (atomic_load_explicit(&srv->hot[i], memory_order_relaxed) == index + 1)
            return;
    atomic_store_explicit(&srv->hot[srv->hot_next], index + 1, memory_order_relaxed);
    srv->hot_next = (srv->hot_next + 1) % SRV_HOT;
}

uint32_t srv_hot_waiting(struct tether_rpc_server *srv)
{
    if (!atomic_load_explicit(&srv->hot_answered, memory_order_relaxed))
        return SRV_HOT_SWEEP; /* fire-and-forget traffic: sweep again at once */
    for (uint32_t i = 0; i < SRV_HOT; i++) {
        uint32_t h = atomic_load_explicit(&srv->hot[i], memory_order_relaxed);
        if (h != 0 && rpc_server_waiting(&srv->rpc, h - 1)) {
            /* The call's header (a short request's words; the device wrote it, so it is not
             * in this core's cache): fetched while the thread gets to the port.  Fetching its
             * first line at every poll instead, or with a read prefetch, made no difference to
             * the round trip on an H200 machine (10 rounds each, medians within 0.03 us). */
            const char *header = (const char *)&srv->rpc.process.headers[h - 1];
            __builtin_prefetch(header, 1, 3);
            __builtin_prefetch(header + 64, 1, 3);
            return h;
        }
    }
    return 0;
}

static void call_start(struct tether_rpc_server *srv, struct srv_call *call, rpc_port_t port)
{
    uint32_t op = rpc_port_opcode(&port);
    hot_note(srv, rpc_port_index(&port));
    call->port = port;
    call->opcode = op & TETHER_RPC_OP_MASK;
    call->wide = (op & TETHER_RPC_WIDE) != 0;
    call->mask = rpc_port_lane_mask(&port);
    call->units = call->wide ? 1 : (uint32_t)__builtin_popcountll(call->mask);
    uint32_t u = 0;
    for (uint64_t m = call->mask; m; m &= m - 1)
        call->lane_of[u++] = (uint8_t)__builtin_ctzll(m);
    if (call->wide)
        call->lane_of[0] = call->mask ? (uint8_t)__builtin_ctzll(call->mask) : 0;
    call->phase = SRV_RECV;
    call->answered = false;
    srv_prof_opened(srv, call);
    for (u = 0; u < call->units; u++) {
        msg_reset(&call->rx[u]);
        msg_reset(&call->tx[u]);
    }
    if (srv->trace)
        srv_diag(srv, "port %u: call 0x%x, lanes 0x%llx", rpc_port_index(&port), op,
                 (unsigned long long)call->mask);
    if (op & ~(TETHER_RPC_OP_MASK | TETHER_RPC_WIDE)) {
        srv_diag(srv, "port %u: opcode 0x%x has reserved bits set", rpc_port_index(&port), op);
        srv_count(&srv->st_malformed, 1);
    }
}

/* Host clients: after a send stored the head of port `index`, wakes a client that sleeps for it
 * (device_client.h, TETHER_RPC_CLIENT_WAKES: it counted itself in `waiters` with a
 * read-modify-write before it looked at the head, and sleeps only while the head's low half is
 * clear).  The look at `waiters` is a read-modify-write too: the two are ordered on that word,
 * so either this one sees the client counted, or the client's comes later and sees the head. */
static void answer_wake(struct tether_rpc_server *srv, uint32_t index)
{
    if (atomic_fetch_add_explicit(&srv->bell.waiters, 0, memory_order_acq_rel) == 0)
        return;
    uint32_t *low = (uint32_t *)(void *)&srv->rpc.process.headers[index].head[0] +
                    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    syscall(SYS_futex, low, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Advances a call as far as the device lets it.  Returns true when done
 * (the port was closed); *moved_p tells whether anything happened. */
static bool call_progress(struct tether_rpc_server *srv, struct srv_call *call, bool *moved_p)
{
    for (;;) {
        if (call->phase == SRV_RECV) {
            if (units_complete(call->rx, call->units)) {
                uint64_t t0 = srv_prof_now(srv);
                bool answers = srv_service_run(srv, call);
                srv_prof_service(srv, t0);
                if (!answers)
                    break;
                for (uint32_t u = 0; u < call->units; u++)
                    call->tx[u].pos = 0;
                call->phase = SRV_SEND;
                continue;
            }
            if (!rpc_server_try_recv(&srv->rpc, &call->port, rx_use, call))
                return false;
            *moved_p = true;
        } else {
            if (units_complete(call->tx, call->units))
                break;
            if (call->tx[0].pos == 0)
                set_inline_head(srv, call);
            if (!rpc_server_try_send(&srv->rpc, &call->port, tx_fill, call))
                return false;
            if (srv->config.host_client)
                answer_wake(srv, rpc_port_index(&call->port));
            if (!call->answered)
                srv_prof_answered(srv, call);
            call->answered = true;
            *moved_p = true;
        }
    }
    rpc_server_close(&srv->rpc, &call->port);
    srv_prof_closed(srv, call);
    atomic_store_explicit(&srv->hot_answered, call->answered, memory_order_relaxed);
    srv_count(&srv->st_calls, 1);
    if (srv->trace)
        srv_diag(srv, "port %u: call 0x%x done, request %llu bytes", rpc_port_index(&call->port),
                 call->opcode, (unsigned long long)call->rx[0].len);
    return true;
}

static void finish_exit(struct tether_rpc_server *srv)
{
    srv->wrote = true;
    srv_flush(srv);
    if (srv->config.on_exit != NULL) {
        srv->exit_pending = false;
        srv->config.on_exit(srv->config.exit_ctx, srv->exit_status, srv->exit_abort);
        return;
    }
    fflush(NULL);
    if (srv->exit_abort) {
        srv_diag(srv, "the device called abort()");
        fflush(srv->err);
        abort();
    }
    _Exit(srv->exit_status);
}

/* A call just opened on `port`: runs it as far as the device lets it.  Returns true when it is
 * done (the call object back in the pool), false when it waits for the device (parked on its
 * port, carried on by the next handle). */
static bool call_run(struct tether_rpc_server *srv, struct srv_call *call, rpc_port_t port)
{
    call_start(srv, call, port);
    bool moved = false;
    if (call_progress(srv, call, &moved)) {
        call_put(srv, call);
        return true;
    }
    srv->calls[rpc_port_index(&port)] = call;
    srv->active[srv->nactive++] = rpc_port_index(&port);
    return false;
}

bool srv_serve_hot(struct tether_rpc_server *srv, uint32_t index)
{
    if (pthread_mutex_trylock(&srv->handle_lock) != 0)
        return false; /* someone is in tether_rpc_server_handle: it will serve the call */
    bool opened = false;
    struct srv_call *call = NULL;
    rpc_port_t port;
    if (srv->calls[index] == NULL && (call = call_get(srv)) != NULL &&
        rpc_server_try_open_port(&srv->rpc, index, &port)) {
        opened = true;
        uint64_t inline_before = atomic_load_explicit(&srv->st_inline, memory_order_relaxed);
        if (call_run(srv, call, port) &&
            atomic_load_explicit(&srv->st_inline, memory_order_relaxed) != inline_before)
            srv_count(&srv->st_hot, 1); /* answered in the head as soon as it was seen */
    } else if (call != NULL) {
        call_put(srv, call);
    }
    if (srv->exit_pending)
        finish_exit(srv);
    atomic_store_explicit(&srv->in_flight, srv->nactive, memory_order_relaxed);
    pthread_mutex_unlock(&srv->handle_lock);
    return opened;
}

tether_status_t tether_rpc_server_handle(tether_rpc_server_t *srv, uint32_t *progress_p)
{
    return srv_handle(srv, 0, true, progress_p);
}

void srv_flush_now(struct tether_rpc_server *srv)
{
    pthread_mutex_lock(&srv->handle_lock);
    srv_flush(srv);
    pthread_mutex_unlock(&srv->handle_lock);
}

tether_status_t srv_handle(struct tether_rpc_server *srv, uint32_t sweep_words, bool quiet_flush,
                           uint32_t *progress_p)
{
    uint32_t progress = 0;
    tether_status_t st = TETHER_OK;
    pthread_mutex_lock(&srv->handle_lock);
    uint64_t handle_t0 = srv_prof_now(srv);

    /* Calls in flight first (they hold ports the device waits on). */
    for (uint32_t i = 0; i < srv->nactive;) {
        uint32_t index = srv->active[i];
        struct srv_call *call = srv->calls[index];
        bool moved = false;
        if (call_progress(srv, call, &moved)) {
            srv->calls[index] = NULL;
            call_put(srv, call);
            srv->active[i] = srv->active[--srv->nactive];
            progress++;
            continue;
        }
        progress += moved;
        i++;
    }

    /* Then the ports that served the last calls, and every port with a new call. */
    for (uint32_t opened = 0, h = 0; opened < srv->config.port_count; opened++) {
        struct srv_call *call = call_get(srv);
        if (call == NULL) {
            st = TETHER_ERR_NO_MEMORY;
            break;
        }
        rpc_port_t port;
        bool got = false;
        while (!got && h < SRV_HOT) {
            uint32_t hot = atomic_load_explicit(&srv->hot[h++], memory_order_relaxed);
            got = hot != 0 && rpc_server_try_open_port(&srv->rpc, hot - 1, &port);
        }
        if (!got && !rpc_server_try_open_n(&srv->rpc, sweep_words, &port)) {
            srv_count(&srv->st_empty_sweeps, 1);
            srv_prof_sweep_empty(srv);
            call_put(srv, call);
            break;
        }
        progress++;
        call_run(srv, call, port);
    }

    srv_flush_lazy(srv, progress, quiet_flush);
    if (srv->exit_pending)
        finish_exit(srv);
    srv_prof_handle(srv, handle_t0);
    atomic_store_explicit(&srv->in_flight, srv->nactive, memory_order_relaxed);
    pthread_mutex_unlock(&srv->handle_lock);
    if (progress_p != NULL)
        *progress_p = progress;
    return st;
}

void tether_rpc_server_stats(tether_rpc_server_t *srv, struct tether_rpc_stats *stats_p)
{
    struct tether_rpc_stats s;
    memset(&s, 0, sizeof s);
    s.calls = atomic_load(&srv->st_calls);
    s.inline_answers = atomic_load(&srv->st_inline);
    s.hot_answers = atomic_load(&srv->st_hot);
    s.printf_lines = atomic_load(&srv->st_lines);
    s.unhandled = atomic_load(&srv->st_unhandled);
    s.malformed = atomic_load(&srv->st_malformed);
    s.wakeups = atomic_load(&srv->st_wakeups);
    srv_thread_times(srv, &s.thread_cpu_ns, &s.thread_ns);
    pthread_mutex_lock(&srv->heap_lock);
    s.heap_chunks = srv->nallocs;
    s.heap_bytes = srv->heap_bytes;
    pthread_mutex_unlock(&srv->heap_lock);
    *stats_p = s;
}
