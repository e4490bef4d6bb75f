/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_internal.h - the server library's private structures, shared
 * by rpc_server.c (ports, call state machines, handlers), rpc_services.c (the
 * built-in services) and rpc_thread.c (the per-device thread).
 *
 * Call life cycle (one struct srv_call per port with a call in flight):
 *   RECV  receive the request packets as the device sends them (try_recv,
 *         never waiting); each unit (a lane, or the single wide caller)
 *         fills its own growing buffer
 *   SEND  after the handler ran: send the answer packets (try_send)
 *   done  close the port; the call object goes back to the pool
 * A call whose device side stalls stays parked in its state; the other ports
 * are served meanwhile.  Only the thread holding srv->handle_lock touches
 * calls, so they need no locks of their own.
 */
#ifndef TETHER_RPC_INTERNAL_H
#define TETHER_RPC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../device_client.h"
#include "../rpc.h"
#include "rpc_env.h"
#include "rpc_printf.h"
#include "tether/rpc.h"

/* One message being received or sent: a lane's, or the wide caller's. */
/* Ports remembered as hot (see struct tether_rpc_server). */
#define SRV_HOT 8u

struct srv_msg {
    unsigned char *data; /* received bytes (at most TETHER_RPC_MSG_MAX kept) */
    uint64_t len;        /* length announced by the stream */
    uint64_t have;       /* bytes stored in data */
    uint64_t cap;        /* allocated bytes of data */
    uint64_t pos;        /* stream position of the next packet, length prefix included */
    bool too_big;        /* len > TETHER_RPC_MSG_MAX: drained, not kept */
    bool oom;            /* could not grow data: drained, not kept */
};

enum srv_phase { SRV_RECV, SRV_SEND };

struct srv_call {
    rpc_port_t port;
    uint32_t opcode;     /* service (low 16 bits) */
    bool wide;           /* one caller over all lanes */
    uint64_t mask;       /* lanes of the call */
    uint32_t units;      /* messages: 1 if wide, else lanes in mask */
    uint8_t lane_of[64]; /* unit -> lane */
    enum srv_phase phase;
    bool answered; /* the server sent at least one packet of an answer */
#if TETHER_RPC_PROFILE
    uint64_t open_t; /* when the server opened the call (srv_clock) */
    uint64_t seen_t; /* when the thread's poll saw it waiting (srv_clock; 0: not seen so) */
#endif
    struct srv_msg *rx; /* units entries (storage: msgs) */
    struct srv_msg *tx; /* units entries (storage: msgs) */
    struct srv_call *next_free;
    struct srv_msg msgs[]; /* 2 x the server's lane count */
};

struct srv_handler {
    uint32_t opcode;
    tether_rpc_handler_t fn;
    void *user;
};

/* A set of user handlers: one per server, and one for the whole process. */
struct srv_handlers {
    pthread_mutex_t lock;
    struct srv_handler *v;
    size_t n;
    size_t cap;
    _Atomic uint32_t gen; /* bumped (release) by every change: lets a server cache a lookup */
};

/* One server's last handler lookup (rpc_services.c, find_handler). */
struct srv_handler_cache {
    bool valid, found;
    uint32_t opcode, gen_own, gen_global;
    struct srv_handler h;
};

/* rpc_server.c: set (fn non-NULL) or remove a handler; find one (copied out). */
tether_status_t srv_handlers_set(struct srv_handlers *t, uint32_t opcode, tether_rpc_handler_t fn,
                                 void *user);
bool srv_handlers_find(struct srv_handlers *t, uint32_t opcode, struct srv_handler *h_p);
extern struct srv_handlers srv_global_handlers;

/* One device heap allocation handed to the device (for FREE and shutdown). */
struct srv_alloc {
    uint64_t ptr; /* what the device got (aligned) */
    uint64_t raw; /* what device_alloc returned */
    uint64_t size;
};

#if TETHER_RPC_PROFILE
/* The profiling build's call timing (rpc_profile.h): on when TETHER_RPC_TIMING was on at the
 * server's creation.  The counters hold srv_clock ticks (srv_count: written under handle_lock). */
struct srv_profile {
    bool on;
    double ns_per_tick; /* srv_clock's unit, measured at create */
    uint32_t port;      /* port of the last call closed, + 1 (0: none) */
    uint64_t close_t;   /* when it closed */
    uint64_t seen_t;    /* when the thread's poll of the hot ports saw a call (0: not) */
    _Atomic uint64_t timed_calls, serve_ns, gaps, gap_ns, seen, seen_ns, seen_answered,
        seen_answer_ns, service_ns, handle_ns, sweeps;
};
#endif

struct tether_rpc_server {
    struct tether_rpc_server_config config;
    FILE *out;
    FILE *err;

    /* shared region and the server's side of the protocol */
    void *region_host;
    uint64_t region_dev;
    uint64_t region_size;
    struct rpc_server rpc;
    rpc_word_t *locks;

    /* doorbell (layout of struct tether_rpc_doorbell): seq bumped by host
     * clients, notify and kernel start/finish; sleepers > 0 while the thread waits;
     * waiters > 0 while host clients sleep for their answers */
    struct {
        _Atomic uint32_t seq;
        _Atomic uint32_t sleepers;
        _Atomic uint32_t waiters;
    } bell;
    /* Device clients' doorbell: a word in shared memory, one cache line after the region, that
     * a device call sets to 1 after its first packet (a GPU cannot wake a thread); the sleeping
     * thread clears it, sweeps once, and then looks only at this word at each wake-up.  NULL for
     * host clients, which ring `bell`. */
    _Atomic uint32_t *device_bell;

    /* calls in flight, indexed by port; the free pool */
    pthread_mutex_t handle_lock;
    struct srv_call **calls;
    uint32_t *active; /* port indices with a call, `nactive` of them */
    uint32_t nactive;
    _Atomic uint32_t in_flight; /* nactive as the last holder of handle_lock left it (read by the
                                   thread without the lock: may it sleep until rung?) */
    struct srv_call *pool;
    /* The ports that started the last SRV_HOT calls (index + 1; 0: none), written under
     * handle_lock, read by the server thread between sweeps (srv_hot_waiting). */
    _Atomic uint32_t hot[SRV_HOT];
    uint32_t hot_next;
    /* Whether the last call completed was answered (its caller is waiting for it, and likely to
     * call again at once): only then does the thread poll the hot ports between sweeps. */
    _Atomic bool hot_answered;

    /* user handlers of this server (the process-wide ones are looked at after these) */
    struct srv_handlers handlers;
    /* The last lookup (under handle_lock), valid while neither table's gen moved: a user call
     * then takes no mutex.  The reply buffer is kept from call to call (no malloc per call). */
    struct srv_handler_cache handler_cache;
    struct rpc_outbuf reply;
    uint64_t unhandled_reported[TETHER_RPC_OP_MASK / 64 + 1]; /* diagnose each opcode once */

    /* device heap */
    pthread_mutex_t heap_lock;
    struct srv_alloc *allocs;
    size_t nallocs;
    size_t allocs_cap;
    uint64_t heap_bytes;
    uint64_t reserve_raw;  /* heap_reserve block (device address), 0 if none */
    uint64_t reserve_size; /* bytes */
    uint64_t reserve_used; /* bytes handed out from the front of the reserve */
    uint64_t *deferred;    /* device_free calls waiting until no kernel runs */
    size_t ndeferred;
    size_t deferred_cap;
    uint32_t heap_said; /* causes of refused heap allocations already diagnosed */

    /* output: formatted text waiting for one fwrite per call */
    struct rpc_outbuf text;
    bool wrote;        /* something written since the last flush */
    uint64_t flush_ns; /* CLOCK_MONOTONIC of the last flush */
    /* TETHER_RPC_PREFIX (rpc_services.c), expanded at the server's first output (prefix_ready);
     * prefix_len 0: none.  line_file: the stream on which this server's last output ended inside
     * a line, with line_seq the process's output count after it (the line goes on without a
     * prefix only if nothing was written since); NULL: none. */
    bool prefix_ready;
    size_t prefix_len;
    char prefix[256];
    FILE *line_file;
    uint64_t line_seq;

    bool trace; /* TETHER_RPC_TRACE set: one diagnostic line per call (debugging) */
#if TETHER_RPC_PROFILE
    struct srv_profile prof; /* call timing (rpc_profile.h) */
#endif

    /* exit requested by the device (handled after the sweep) */
    bool exit_pending;
    bool exit_abort;
    int exit_status;

    /* statistics */
    _Atomic uint64_t st_calls;
    _Atomic uint64_t st_inline;
    _Atomic uint64_t st_hot;
    _Atomic uint64_t st_lines;
    _Atomic uint64_t st_unhandled;
    _Atomic uint64_t st_malformed;
    _Atomic uint64_t st_wakeups;
    _Atomic uint64_t st_idle_sweeps;  /* sweeps of every port by the sleeping thread */
    _Atomic uint64_t st_empty_sweeps; /* sweeps for new calls that found none (any thread) */

    /* thread (rpc_thread.c) */
    struct srv_thread *thread;
    _Atomic uint32_t kernels; /* kernels running */
    /* Between kernels (rpc_thread.c): `parked` while the thread sleeps until rung, so that a
     * launch must ring it; else it watches in slices and a launch rings it only to make it hot,
     * when calls were served since the launch before (st_calls then: `calls_at_launch`).
     * `kernels_ended_ns`: when the count of running kernels last fell to 0. */
    _Atomic bool parked;
    _Atomic uint64_t calls_at_launch;
    _Atomic uint64_t kernels_ended_ns;
    /* Clears of device_bell: `bell_clears` is odd while the thread clears it (one bump before
     * the exchange, one after); `clears_at_start` is its value when the count of running kernels
     * last rose from 0.  A kernel that ends alone, with the word unset and no clear since its
     * launch, made no call: kernel_finished has nothing to serve and skips the sweep.  Only
     * where `client_rings`: the client is the device library's (made by
     * tether_rpc_server_client_bytes), which sets the word with every call; a client built on
     * rpc.h alone (another process, a custom loader) need not. */
    _Atomic uint64_t bell_clears;
    _Atomic uint64_t clears_at_start;
    _Atomic bool client_rings;
    char where[192]; /* placement, for describe */

    /* fork (rpc_thread.c): every live server is on one list, which the fork handlers walk.  In
     * a child, `forked` is set until tether_rpc_server_reset: the thread and the parent's other
     * threads' calls did not come along; `fork_whole` says handle_lock was free at the fork, so
     * the call state is whole and can be freed (else it is dropped). */
    struct tether_rpc_server *reg_prev, *reg_next;
    _Atomic bool forked;
    bool fork_whole;
};

/* rpc_services.c: runs a built-in service for every unit of a received call;
 * fills call->tx for synchronous ones.  Returns true when the call wants an
 * answer. */
bool srv_service_run(struct tether_rpc_server *srv, struct srv_call *call);

/* rpc_services.c: the device heap at shutdown; the frees the device asked for
 * while a kernel ran (a driver's free may wait for the running kernel, which
 * may wait for this server: they are done once no kernel runs). */
void srv_heap_release_all(struct tether_rpc_server *srv);
void srv_heap_flush_deferred(struct tether_rpc_server *srv);
/* Allocates config.heap_reserve bytes of device heap; a failure is a warning (the heap then
 * grows as the device asks), never a failed server. */
void srv_heap_reserve(struct tether_rpc_server *srv);

/* rpc_server.c: sets an answer message (status header + bytes) for a unit. */
bool srv_answer_set(struct srv_msg *tx, uint32_t status, const void *data, size_t size);

/* rpc_server.c: prints one diagnostic line "tether rpc (device N): ..." to the error stream. */
void srv_diag(struct tether_rpc_server *srv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* rpc_server.c: flushes written output now (takes the handle lock): the server thread before it
 * sleeps, so that a quiet device's last lines do not wait for the next call. */
void srv_flush_now(struct tether_rpc_server *srv);
/* Held by a server while it writes to its FILEs (rpc_services.c) and by fork() (rpc_thread.c). */
extern pthread_mutex_t srv_out_lock;

/* rpc_thread.c: stops and joins the thread (in a fork child: forgets it); puts a new server
 * on the list the fork handlers walk, takes one off it. */
void srv_thread_stop(struct tether_rpc_server *srv);
/* rpc_thread.c: the CPU time the server thread used (pthread_getcpuclockid) and the time since it
 * started, in ns; both 0 without a thread. */
void srv_thread_times(struct tether_rpc_server *srv, uint64_t *cpu_ns_p, uint64_t *run_ns_p);
void srv_registry_add(struct tether_rpc_server *srv);
void srv_registry_remove(struct tether_rpc_server *srv);

/* rpc_server.c: in a fork child, drops the call state (freed when `fork_whole`, else let go:
 * another thread of the parent was changing it) and zeroes the ports. */
void srv_calls_reset(struct tether_rpc_server *srv);

/* Does a call wait on one of the ports that served the last calls?  A few relaxed loads, no
 * lock: what the server thread polls between sweeps, so that a caller's next call on the same
 * port (a device thread's calls all use its home port) is seen at once.  Returns that port + 1,
 * 0 when none waits, SRV_HOT_SWEEP when the last call completed was fire-and-forget (printf
 * traffic: the next call is rarely on a hot port, so the thread sweeps again at once). */
uint32_t srv_hot_waiting(struct tether_rpc_server *srv);
#define SRV_HOT_SWEEP UINT32_MAX /* srv_hot_waiting: fire-and-forget traffic, sweep again */

/* The server thread's path for a call srv_hot_waiting found on hot port `index`: opens that port
 * and runs the call through the state machine at once, without a sweep, unless another thread is
 * inside tether_rpc_server_handle.  True when it opened a call. */
bool srv_serve_hot(struct tether_rpc_server *srv, uint32_t index);

/* The profiling build's timing hooks (rpc_profile.c; rpc_profile.h says what they time), each
 * doing nothing unless TETHER_RPC_TIMING was on at the server's creation.  In other builds they
 * are empty and compile away.  srv_prof_now: srv_clock when timing, else 0; srv_prof_service and
 * srv_prof_handle take such a reading from before the services / the handle. */
#if TETHER_RPC_PROFILE
/* The clock: the time stamp counter on x86-64, else CLOCK_MONOTONIC in ns. */
uint64_t srv_clock(void);
void srv_prof_init(struct tether_rpc_server *srv);
void srv_prof_reset(struct tether_rpc_server *srv);
uint64_t srv_prof_now(struct tether_rpc_server *srv);
void srv_prof_seen(struct tether_rpc_server *srv); /* the thread saw a call on a hot port */
void srv_prof_opened(struct tether_rpc_server *srv, struct srv_call *call);
void srv_prof_service(struct tether_rpc_server *srv, uint64_t t0);
void srv_prof_answered(struct tether_rpc_server *srv, struct srv_call *call); /* first send */
void srv_prof_closed(struct tether_rpc_server *srv, struct srv_call *call);
void srv_prof_sweep_empty(struct tether_rpc_server *srv);
void srv_prof_handle(struct tether_rpc_server *srv, uint64_t t0);
#else
static inline void srv_prof_init(struct tether_rpc_server *srv)
{
    (void)srv;
}
static inline void srv_prof_reset(struct tether_rpc_server *srv)
{
    (void)srv;
}
static inline uint64_t srv_prof_now(struct tether_rpc_server *srv)
{
    (void)srv;
    return 0;
}
static inline void srv_prof_seen(struct tether_rpc_server *srv)
{
    (void)srv;
}
static inline void srv_prof_opened(struct tether_rpc_server *srv, struct srv_call *call)
{
    (void)srv;
    (void)call;
}
static inline void srv_prof_service(struct tether_rpc_server *srv, uint64_t t0)
{
    (void)srv;
    (void)t0;
}
static inline void srv_prof_answered(struct tether_rpc_server *srv, struct srv_call *call)
{
    (void)srv;
    (void)call;
}
static inline void srv_prof_closed(struct tether_rpc_server *srv, struct srv_call *call)
{
    (void)srv;
    (void)call;
}
static inline void srv_prof_sweep_empty(struct tether_rpc_server *srv)
{
    (void)srv;
}
static inline void srv_prof_handle(struct tether_rpc_server *srv, uint64_t t0)
{
    (void)srv;
    (void)t0;
}
#endif

/* Adds n to one of the st_ counters other than st_wakeups.  Their writers all hold handle_lock,
 * so a relaxed load and store do, without a locked instruction on a call's path (one before
 * the answer's head store would wait for every store before it); tether_rpc_server_stats reads
 * them from any thread. */
static inline void srv_count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/*
 * The server thread's back-off while a kernel runs (rpc_thread.c has the policy in words), by
 * counts: a round is one sweep for calls and what the thread does after it.  After each round
 * that found no call, srv_idle_next says what comes next:
 *   SRV_IDLE_HOT    sweep again, with the watch of the hot ports between sweeps (calls come)
 *   SRV_IDLE_RELAX  watch the hot ports and the doorbell with a cpu-relax pause between polls
 *                   for a while (THREAD_HOT_NS), then sweep
 *   SRV_IDLE_SLEEP  sleep on the doorbell for *slice_ns_p, then sweep
 * adaptive (TETHER_WAIT's default): SRV_IDLE_HOT_ROUNDS hot rounds, SRV_IDLE_RELAX_ROUNDS
 * relaxed ones, then sleeps whose slice doubles from SRV_IDLE_SLICE_MIN_NS up to the longest,
 * srv_idle_slice_max (so a call after a long quiet spell is seen within the longest slice);
 * spin: always hot; block: a sleep of the longest slice after every round without a call.
 * A call served, or the doorbell rung (a kernel started, notify, a host client's call) after
 * calls since the ring before, resets it with srv_idle_reset: hot again; a ring after none
 * (kernels that make no call) sets it with srv_idle_quiet to the longest sleep.
 * The longest slice is SRV_IDLE_SLICE_MAX_NS once a call was served (srv_idle_reset), and
 * SRV_IDLE_SLICE_FIRST_NS before: a program whose kernels have made no call, most programs
 * linked with the device library, pays one wake-up per 0.8 ms of kernel time instead of one per
 * 0.1 ms (each 5-10 us of CPU on a virtualised host), and its first call waits up to 0.8 ms.
 */
enum srv_idle_phase { SRV_IDLE_HOT, SRV_IDLE_RELAX, SRV_IDLE_SLEEP };
#define SRV_IDLE_HOT_ROUNDS 16u
#define SRV_IDLE_RELAX_ROUNDS 16u
#define SRV_IDLE_SLICE_MIN_NS 25000u
#define SRV_IDLE_SLICE_MAX_NS 100000u
#define SRV_IDLE_SLICE_FIRST_NS 800000u
/* A device client's call sets the doorbell word (tether_rpc_server.device_bell) after its first
 * packet, but the word may become visible before the packet's flag does (separate stores, no
 * fence between them); a set word sends the thread back to its hot rounds, which see the flag.
 * A sleeping thread sweeps every port at least this often all the same, so a call is never left
 * waiting on a word it did not set. */
#define SRV_IDLE_SWEEP_EVERY_NS 10000000u
/* After the last kernel ended, a server thread of device clients goes on sleeping in the longest
 * slices for this long before it parks, so that launches after quiet kernels, one after another,
 * wake nothing and make no system call. */
#define SRV_PARK_AFTER_NS 2000000u

struct srv_idle {
    enum tether_wait_mode mode;
    uint32_t empty; /* rounds without a call since the last reset (stops counting at a sleep of
                       the longest slice) */
    bool served;    /* a call was served (a reset) since srv_idle_init */
};

void srv_idle_init(struct srv_idle *idle, enum tether_wait_mode mode);
void srv_idle_reset(struct srv_idle *idle);
void srv_idle_quiet(struct srv_idle *idle);
uint64_t srv_idle_slice_max(const struct srv_idle *idle);
enum srv_idle_phase srv_idle_next(struct srv_idle *idle, uint64_t *slice_ns_p);

/* tether_rpc_server_handle with the sweep for new calls bounded to `sweep_words` bitmap words
 * (32 ports each; 0: every port), continuing where the last sweep stopped: the server thread's
 * handle while a device thread makes call after call on a hot port, so that the thread is back
 * at its poll of the hot ports soon after an answer (a sweep of all 16384 ports of a CUDA image
 * takes microseconds) and still visits every port within a few rounds.  `quiet_flush`: flush the
 * output when the sweep found nothing (tether_rpc_server_handle, a sleeping thread's sweep);
 * without it output is flushed once a millisecond while it keeps coming and by srv_flush_now. */
tether_status_t srv_handle(struct tether_rpc_server *srv, uint32_t sweep_words, bool quiet_flush,
                           uint32_t *progress_p);

#endif /* TETHER_RPC_INTERNAL_H */
