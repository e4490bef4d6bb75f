/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tether/rpc.h - the host side of tether's device-to-host calls: one server
 * per device, its built-in services, user opcodes and the server thread.
 *
 * Role: a device image linked with libtether-device.a calls the host through
 * ports in memory both sides can reach (rpc/rpc.h).  This library owns that
 * memory, answers the calls (printf, puts/fputs/fwrite, malloc/free chunks,
 * exit/abort, user opcodes: tether/rpc_opcodes.h) and runs one thread per
 * device that polls while a kernel of that device makes calls, backs off to
 * short sleeps when they stop, and sleeps while no kernel runs.
 * It never talks to a driver: memory comes from the callbacks it is given.
 *
 * What a plugin does (common/ owns this sequence; docs/rpc-services.md):
 *   1. load an image; if it has the global TETHER_RPC_CLIENT_SYMBOL
 *      ("__tether_rpc_client", tether_rpc_client_size() bytes):
 *   2. tether_rpc_server_create(&config, &server, &err) for that image on that
 *      device (each image has its own port locks, so images do not share a
 *      server; in practice a program has one image per device),
 *   3. tether_rpc_server_client_bytes(server, device address of the global,
 *      buf, size) and copy buf to the global (host-to-device memcpy),
 *   4. tether_rpc_server_start(server, &thread_config, &err),
 *   5. tether_rpc_server_kernel_started(server) before each launch of that
 *      device, tether_rpc_server_kernel_finished(server) once the kernel
 *      completed (it serves on the calling thread what the kernel left and
 *      returns after every call the kernel made was served and its output
 *      written, so host output after a target region follows the region's
 *      output),
 *   6. tether_rpc_server_destroy(server) at device shutdown (stops the
 *      thread, releases device memory the device still holds, frees the
 *      shared memory).
 * Without a thread, tether_rpc_server_handle() serves calls from any one
 * thread (tests, or a plugin that polls itself).
 *
 * Invariants: a server's shared memory is allocated once, zeroed by the
 * server, and freed by the free callback given with it, exactly once.
 * Device bytes are never trusted: a malformed call yields a diagnostic on
 * stderr and an error answer, never a crash or a hang of the server; a call
 * the device never finishes blocks only its own port.
 *
 * Thread safety: create/destroy/start are called by one thread (the plugin's
 * device init/deinit).  kernel_started/kernel_finished, register and
 * handle may be called from any thread at any time; handle serialises
 * itself.  Handlers run on the server thread (or the thread calling handle),
 * one at a time per server, and must not call back into that server (nor
 * start a kernel of its device: tether_rpc_server_current tells a plugin).
 * fork(): see tether_rpc_server_forked.
 */
#ifndef TETHER_RPC_PUBLIC_H
#define TETHER_RPC_PUBLIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tether/rpc_opcodes.h"
#include "tether/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_rpc_server tether_rpc_server_t;

/* Memory both sides reach: write the host address and the address the device
 * uses for it (equal on CUDA/UVA and for host offload).  The server zeroes it. */
typedef tether_status_t (*tether_rpc_shared_alloc_t)(void *ctx, size_t size, void **host_p,
                                                     uint64_t *dev_p);
typedef void (*tether_rpc_shared_free_t)(void *ctx, void *host);

/* Device memory for the device's malloc heap.  Must not wait for running
 * kernels (it is called while one runs).  Alignment of what it returns: at
 * least 16 bytes; the server over-allocates for larger alignments. */
typedef tether_status_t (*tether_rpc_device_alloc_t)(void *ctx, size_t size, uint64_t *dev_p);
typedef void (*tether_rpc_device_free_t)(void *ctx, uint64_t dev);

/* What to do when the device calls exit(status) (abort: `abort` true).  The
 * server has flushed all output first.  Default (NULL): exit the process with
 * the device's status (abort: print a diagnostic and abort()). */
typedef void (*tether_rpc_exit_t)(void *ctx, int status, bool abort);

struct tether_rpc_server_config {
    uint32_t device_id;  /* for diagnostics */
    uint32_t port_count; /* ports: cover the device's resident warps (0: 64) */
    uint32_t lane_count; /* lanes per port: warp/wave size; 1..64 (0: 32) */
    bool host_client;    /* the client is a host thread (x86_64 offload): wide calls and a
                            futex doorbell that wakes the server at once */
    tether_rpc_shared_alloc_t shared_alloc; /* required */
    tether_rpc_shared_free_t shared_free;   /* required */
    void *shared_ctx;
    tether_rpc_device_alloc_t device_alloc; /* NULL: the device's malloc returns NULL */
    tether_rpc_device_free_t device_free;   /* required with device_alloc */
    void *device_ctx;
    size_t heap_reserve;       /* bytes of device heap to allocate now, before any kernel runs
                                  (when that fails: a warning, and the heap grows on demand) */
    size_t heap_limit;         /* most device heap bytes handed out at once (0: no limit) */
    tether_rpc_exit_t on_exit; /* NULL: see tether_rpc_exit_t */
    void *exit_ctx;
    FILE *out; /* NULL: stdout */
    FILE *err; /* NULL: stderr */
};

/* Size of the device global TETHER_RPC_CLIENT_SYMBOL that this library fills. */
size_t tether_rpc_client_size(void);

/* Size of the optional constant-memory copy "__tether_rpc_client_const" of NVIDIA images: the
 * first bytes of the client (tether_rpc_server_client_bytes' buffer), everything but the port
 * state words.  Write it from the same buffer before the first kernel. */
size_t tether_rpc_client_const_size(void);

/*
 * Creates the server of one device: allocates and zeroes the shared memory
 * (ports x lanes x 64 bytes plus mailboxes) and the heap reserve.
 * Errors: TETHER_ERR_INVALID (bad config), TETHER_ERR_NO_MEMORY, or the
 * status of a failing callback.  On failure nothing is left allocated and
 * err (may be NULL) says why.
 */
tether_status_t tether_rpc_server_create(const struct tether_rpc_server_config *config,
                                         tether_rpc_server_t **server_p, struct tether_error *err);

/*
 * Writes the bytes of the device global into buf (size must equal
 * tether_rpc_client_size()): a client whose pointers are device addresses,
 * `global_dev` being the global's own device address.  The caller copies buf
 * to the device before the first kernel of the image runs.  Call it for one
 * image only.  Errors: TETHER_ERR_INVALID.
 */
tether_status_t tether_rpc_server_client_bytes(tether_rpc_server_t *server, uint64_t global_dev,
                                               void *buf, size_t size);

/* ---- serving calls ---------------------------------------------------------------------- */

/*
 * Serves what is pending without ever waiting for the device: progresses
 * calls in flight and opens every port with a new call.  Writes the number of
 * calls that made progress to *progress_p (may be NULL).  Output is flushed
 * when a call finds nothing to do (progress 0) and at least every millisecond
 * while calls keep coming.  Returns TETHER_OK,
 * or TETHER_ERR_NO_MEMORY when a call could not get host memory (it is
 * retried on the next call).
 */
tether_status_t tether_rpc_server_handle(tether_rpc_server_t *server, uint32_t *progress_p);

/* One lane's call to a user opcode. */
struct tether_rpc_request {
    uint32_t opcode;    /* TETHER_RPC_OP_USER_FIRST..LAST */
    uint32_t device_id; /* config.device_id */
    uint32_t lane;      /* the caller's lane in its warp (0 for host clients) */
    const void *data;   /* the request bytes, valid during the handler */
    size_t size;
};

/* The answer under construction.  A struct with its own append function (not
 * a library call), so handlers compiled into a program work with the server
 * inside any plugin of the process. */
struct tether_rpc_reply {
    tether_status_t (*append)(struct tether_rpc_reply *reply, const void *data, size_t size);
    void *priv; /* the server's */
};

/* Appends bytes to the answer.  TETHER_ERR_NO_MEMORY, or TETHER_ERR_INVALID
 * past TETHER_RPC_MSG_MAX bytes. */
static inline tether_status_t tether_rpc_reply_append(struct tether_rpc_reply *reply,
                                                      const void *data, size_t size)
{
    return reply->append(reply, data, size);
}

/* A user handler: TETHER_OK sends the appended answer; any error sends
 * TETHER_RPC_CALL_ERROR (the appended bytes are dropped). */
typedef tether_status_t (*tether_rpc_handler_t)(void *user, const struct tether_rpc_request *req,
                                                struct tether_rpc_reply *reply);

/*
 * Registers (fn non-NULL) or removes (fn NULL) the handler of a user opcode.
 * Errors: TETHER_ERR_INVALID for an opcode outside the user range,
 * TETHER_ERR_NO_MEMORY.  A call to an opcode without a handler gets
 * TETHER_RPC_CALL_UNHANDLED on the device and one diagnostic on stderr.
 */
tether_status_t tether_rpc_register(tether_rpc_server_t *server, uint32_t opcode,
                                    tether_rpc_handler_t fn, void *user);

/*
 * The same for every server of this library in the process (servers created
 * later included).  A server's own handler for an opcode wins over this one.
 */
tether_status_t tether_rpc_register_global(uint32_t opcode, tether_rpc_handler_t fn, void *user);

/*
 * For OpenMP programs (defined in libtether-device.a's host part): registers
 * a process-wide handler in every tether plugin loaded in the process (each
 * carries its own server library and exports tether_rtl_rpc_register).  Call
 * it before the first target region that uses the opcode.  Errors:
 * TETHER_ERR_NOT_FOUND when no tether plugin with RPC is loaded, or the
 * first plugin's error.
 */
tether_status_t tether_rpc_register_user(uint32_t opcode, tether_rpc_handler_t fn, void *user);

/* ---- the server thread ------------------------------------------------------------------ */

struct tether_rpc_thread_config {
    /* PCI address of the device ("0000:3b:00.0"): the thread runs on the cores local to it
     * (from sysfs).  NULL: any core. */
    const char *pci_bus_id;
    /* Called on the thread before it serves anything (e.g. make a CUDA context current).
     * A failure stops the thread before it starts; start returns the status. */
    tether_status_t (*attach)(void *ctx, struct tether_error *err);
    void *attach_ctx;
};

/*
 * Starts the device's server thread.  While no kernel of the device runs it
 * sleeps; while one runs it stays hot as long as calls come, then backs off to
 * sleeps of at most 100 us (a server of host clients, which ring for every
 * call, sleeps until rung).  TETHER_WAIT=spin keeps it hot while a kernel runs,
 * TETHER_WAIT=block makes it sleep whenever a sweep found no call
 * (docs/rpc-services.md section 8).  Errors: TETHER_ERR_BUSY (already
 * started), TETHER_ERR_INTERNAL (pthread), or attach's status.
 */
tether_status_t tether_rpc_server_start(tether_rpc_server_t *server,
                                        const struct tether_rpc_thread_config *config,
                                        struct tether_error *err);

/* A kernel of this device is about to run / has completed.  Counted: calls
 * must pair.  kernel_finished serves, on the calling thread, the calls still
 * on the ports and returns once every call issued before it was served and
 * all output written; for a kernel that ran alone and made no call, where
 * the client is the one tether_rpc_server_client_bytes made (tether's
 * device library, which sets a doorbell word with every call), it returns
 * without looking at the ports. */
void tether_rpc_server_kernel_started(tether_rpc_server_t *server);
void tether_rpc_server_kernel_finished(tether_rpc_server_t *server);

/* Wakes the thread at once (a doorbell): for clients that can signal. */
void tether_rpc_server_notify(tether_rpc_server_t *server);

/* The server whose user handler the calling thread is running (on the server's thread, or inside
 * tether_rpc_server_handle), NULL when none.  A kernel of that server's device started from
 * there would wait for this very thread to serve it: a plugin refuses such launches. */
tether_rpc_server_t *tether_rpc_server_current(void);

/* ---- fork ------------------------------------------------------------------------------- */

/*
 * fork() copies only the calling thread.  In the child every server of this library is marked
 * forked (one atomic load tells): its thread and the calls in flight of the parent's other
 * threads did not come along.  Until it is reset, destroy neither joins the thread nor serves
 * the parent's calls.  (A fork inside a user handler leaves that handler's server as it is: the
 * child's one thread is its server thread.)
 */
bool tether_rpc_server_forked(tether_rpc_server_t *server);

/*
 * Makes a forked server usable in the child: forgets the thread and every call in flight,
 * zeroes the ports, counts no kernel running.  Then write the client bytes to the device again
 * (tether_rpc_server_client_bytes: the device's port locks are in them) and start the thread
 * again (tether_rpc_server_start).  Only where the child has the server's memory, i.e. the
 * device is this process's CPU: a GPU driver's context and pinned memory stay with the parent,
 * so a GPU server cannot be used in a child at all.  Call it with no other call on the server
 * running; a server that is not forked is left as it is.
 */
void tether_rpc_server_reset(tether_rpc_server_t *server);

/* One line for info output, e.g. "rpc: 4096 ports x 32 lanes (8320 KiB shared), thread on cores
 * 0-15 (local to 0000:3b:00.0), heap reserve 262144 KiB" or "... (one NUMA node: any core)";
 * the heap reserve is named when the server holds one. */
void tether_rpc_server_describe(const tether_rpc_server_t *server, char *buf, size_t size);

/* Counters for tests and info output. */
struct tether_rpc_stats {
    uint64_t calls;          /* calls completed */
    uint64_t printf_lines;   /* printf and write calls written */
    uint64_t unhandled;      /* calls to opcodes without a handler */
    uint64_t malformed;      /* calls with bad bytes (diagnosed) */
    uint64_t heap_chunks;    /* device heap allocations handed out, live */
    uint64_t heap_bytes;     /* device heap bytes handed out, live */
    uint64_t wakeups;        /* times the server thread woke from a sleep */
    uint64_t inline_answers; /* answers that also went in the head (tether/rpc_opcodes.h) */
    uint64_t hot_answers;    /* of those, calls that the server thread answered as soon as it
                                saw them on a port of the last calls (without a sweep) */
    uint64_t thread_cpu_ns;  /* CPU time the server thread used so far (0: no thread) */
    uint64_t thread_ns;      /* time since the server thread started (0: no thread) */
};
void tether_rpc_server_stats(tether_rpc_server_t *server, struct tether_rpc_stats *stats_p);

/*
 * Stops the thread (if any) after serving what is pending, releases device
 * memory still held by the device (device_free), frees the shared memory
 * (shared_free) and the server.  NULL is a no-op.  Called from one of the
 * server's own handlers it prints a diagnostic and does nothing (the thread
 * would wait for itself).
 */
void tether_rpc_server_destroy(tether_rpc_server_t *server);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_RPC_PUBLIC_H */
