/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device_client.h - the device global `__tether_rpc_client` that
 * connects a device image to its host server, and the message layer both
 * sides build on rpc/rpc.h (framing in tether/rpc_opcodes.h, MESSAGES).
 *
 * Role: the host server (rpc/server) fills a struct tether_rpc_device_client
 * with device addresses (tether_rpc_server_client_bytes) and the plugin copies
 * it into the image's global `__tether_rpc_client` before the first kernel
 * runs.  Until then `magic` is 0 and every device call fails fast (printf
 * returns -1, malloc NULL) instead of hanging.  The same header compiles for
 * the host (server, tests) and inside `#pragma omp declare target` for the
 * device library, so the layout is one definition; _Static_assert pins it.
 *
 * Invariants: the port state words used by the device side are `locks` inside
 * the global itself (zeroed by the copy), so nothing else must be allocated for
 * the client; `ports` is at most TETHER_RPC_DEVICE_PORTS_MAX.  Hence one
 * server per image: two images (two globals, two sets of state words) must not
 * share one region.
 *
 * Thread safety: after the copy the struct is read-only for the device,
 * except `locks`, which rpc.h updates atomically.
 */
#ifndef TETHER_DEVICE_CLIENT_H
#define TETHER_DEVICE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "rpc.h"
#include "tether/rpc_opcodes.h"

#define TETHER_RPC_CLIENT_MAGIC 0x43505254u /* "TRPC" */
#define TETHER_RPC_CLIENT_VERSION 7u        /* changes with the layout below */
#define TETHER_RPC_CLIENT_SYMBOL "__tether_rpc_client"
/* NVIDIA images: a copy of the client's first TETHER_RPC_CLIENT_CONST_SIZE bytes (everything but
 * the port state words) in constant memory, written by the CUDA plugin after the global. */
#define TETHER_RPC_CLIENT_CONST_SYMBOL "__tether_rpc_client_const"
#define TETHER_RPC_CLIENT_CONST_SIZE 88u
#define TETHER_RPC_DEVICE_PORTS_MAX 16384u

/* Flags of struct tether_rpc_device_client. */
#define TETHER_RPC_CLIENT_WIDE 0x1u /* the client is a host thread: use wide calls */
#define TETHER_RPC_CLIENT_WAKES                                                                    \
    0x4u /* host clients: the server wakes one that sleeps for its                                 \
            answer (struct tether_rpc_doorbell, `waiters`) */

struct tether_rpc_device_client {
    uint32_t magic;   /* TETHER_RPC_CLIENT_MAGIC once the host filled it in */
    uint32_t version; /* TETHER_RPC_CLIENT_VERSION */
    uint32_t flags;   /* TETHER_RPC_CLIENT_* */
    uint32_t device_id;
    /* With TETHER_RPC_CLIENT_WIDE (host offload): host address of the server's struct
     * tether_rpc_doorbell (the client bumps seq and wakes a sleeping server).  Else the address
     * of a 32-bit word in shared memory that the client sets to 1 after each call's first packet
     * (the thread, once asleep, sweeps the ports only when it finds it set).  0: none. */
    uint64_t doorbell;
    struct rpc_client client; /* device addresses; locks point at `locks` */
    rpc_state_t
        locks[TETHER_RPC_DEVICE_PORTS_MAX]; /* rpc_lock_size(ports): a state word per port */
};

_Static_assert(offsetof(struct tether_rpc_device_client, client) == 24, "client layout");

/* The read-only part of struct tether_rpc_device_client, field for field: what a call reads.
 * A GPU thread reads it from constant memory (its own cache, which no memory fence empties: a
 * call's acquire loads of host memory empty L1, and each read of device memory after one is
 * a trip to L2, about 0.25 us on an H200). */
struct tether_rpc_device_const {
    uint32_t magic;
    uint32_t version;
    uint32_t flags;
    uint32_t device_id;
    uint64_t doorbell;
    struct rpc_client client;
};

_Static_assert(sizeof(struct tether_rpc_device_const) == TETHER_RPC_CLIENT_CONST_SIZE &&
                   offsetof(struct tether_rpc_device_client, locks) ==
                       TETHER_RPC_CLIENT_CONST_SIZE &&
                   offsetof(struct tether_rpc_device_const, client) ==
                       offsetof(struct tether_rpc_device_client, client) &&
                   offsetof(struct tether_rpc_device_const, doorbell) ==
                       offsetof(struct tether_rpc_device_client, doorbell),
               "constant copy layout");

/* The doorbell of host clients: a client bumps `seq` after its first packet
 * and, if `sleepers` is non-zero, wakes the server with FUTEX_WAKE_PRIVATE on
 * `seq` (same process).  With TETHER_RPC_CLIENT_WAKES, a client that waited a
 * while for its answer counts itself in `waiters` and sleeps with
 * FUTEX_WAIT_PRIVATE on the low 32 bits of its port's head[0] while they are
 * still clear (zero); the server, after storing an answer's head, wakes that
 * word when `waiters` is non-zero. */
struct tether_rpc_doorbell {
    uint32_t seq;
    uint32_t sleepers;
    uint32_t waiters;
};
_Static_assert(sizeof(struct tether_rpc_device_client) == 88 + 8 * TETHER_RPC_DEVICE_PORTS_MAX,
               "client layout");

/* Packets of a message of `len` bytes when each packet carries `per_packet`
 * bytes of the stream [u64 length][bytes]. */
static inline uint64_t tether_msg_packets(uint64_t len, uint64_t per_packet)
{
    return (len + 8 + per_packet - 1) / per_packet;
}

#endif /* TETHER_DEVICE_CLIENT_H */
