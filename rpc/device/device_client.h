/*
 * rpc/device/device_client.h - the device global `__tether_rpc_client` that
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

#include "../rpc.h"
#include "tether/rpc_opcodes.h"

#define TETHER_RPC_CLIENT_MAGIC 0x43505254u /* "TRPC" */
#define TETHER_RPC_CLIENT_VERSION 5u        /* 5: 64-bit port state words (keyed closes) */
#define TETHER_RPC_CLIENT_SYMBOL "__tether_rpc_client"
/* NVIDIA images: a copy of the client's first TETHER_RPC_CLIENT_CONST_SIZE bytes (everything but
 * the port state words) in constant memory, written by the host next to the global. */
#define TETHER_RPC_CLIENT_CONST_SYMBOL "__tether_rpc_client_const"
#define TETHER_RPC_CLIENT_CONST_SIZE 128u
#define TETHER_RPC_DEVICE_PORTS_MAX 16384u

/* Flags of struct tether_rpc_device_client. */
#define TETHER_RPC_CLIENT_WIDE 0x1u /* the client is a host thread: use wide calls */
#define TETHER_RPC_CLIENT_NEAR 0x2u /* `near` and the near base (flags bits 16..31) are set */
#define TETHER_RPC_CLIENT_WAKES                                                                    \
    0x4u /* host clients: the server wakes one that sleeps for its                                 \
            answer (struct tether_rpc_doorbell, `waiters`) */

/*
 * Near windows (NVIDIA).  A port's lock is a device-scope atomic on its state word in L2, the
 * costliest step of a call's open, and on an H200 it takes about 290 cycles when the word's 4 KiB
 * page sits in the L2 partition near the calling SM and about 500 when it sits in the far one
 * (test/cuda/probe/l2_lat.cu: two SM groups, pages split between them).  So the plugin times,
 * from every SM, a word in each of TETHER_RPC_NEAR_WINDOWS pages of state words (windows of
 * TETHER_RPC_NEAR_SPAN ports, the first starting at the near base: the first port whose word
 * begins a page), and writes each SM's fastest window into `near`, two bits per SM.  A thread of
 * a grid of at most TETHER_RPC_NEAR_SPAN threads then takes port base + window * SPAN + its id:
 * its lock is near, and no two threads of one grid share a port (ids differ, and each is below
 * SPAN), which the keyed closes rely on (rpc.h, L3).  Zero (no flag): window 0 for every SM.
 */
#define TETHER_RPC_NEAR_WINDOWS 4u
#define TETHER_RPC_NEAR_SPAN 512u /* state words per 4 KiB page */
#define TETHER_RPC_NEAR_SMS 160u  /* SMs the two-bit table covers; later ones take window 0 */

struct tether_rpc_device_client {
    uint32_t magic;   /* TETHER_RPC_CLIENT_MAGIC once the host filled it in */
    uint32_t version; /* TETHER_RPC_CLIENT_VERSION */
    uint32_t flags;   /* TETHER_RPC_CLIENT_* */
    uint32_t device_id;
    /* Host address of the server's struct tether_rpc_doorbell (host offload
     * only: the client bumps seq and wakes a sleeping server), else 0. */
    uint64_t doorbell;
    uint64_t near[5]; /* TETHER_RPC_CLIENT_NEAR: SM s's window in bits 2(s%32).. of near[s/32] */
    struct rpc_client client; /* device addresses; locks point at `locks` */
    rpc_state_t
        locks[TETHER_RPC_DEVICE_PORTS_MAX]; /* rpc_lock_size(ports): a state word per port */
};

_Static_assert(offsetof(struct tether_rpc_device_client, client) == 64, "client layout");

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
    uint64_t near[5];
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

/* SM `sm`'s window in `word`, the table word near[sm / 32]. */
static inline uint32_t tether_rpc_near_pick(uint64_t word, uint32_t sm)
{
    return (uint32_t)(word >> (sm % 32 * 2)) & 3u;
}

/* SM `sm`'s near window (0 where the table does not cover it). */
static inline uint32_t tether_rpc_near_window(const uint64_t near[5], uint32_t sm)
{
    return sm < TETHER_RPC_NEAR_SMS ? tether_rpc_near_pick(near[sm / 32], sm) : 0u;
}

static inline void tether_rpc_near_set(uint64_t near[5], uint32_t sm, uint32_t window)
{
    if (sm < TETHER_RPC_NEAR_SMS) {
        near[sm / 32] &= ~((uint64_t)3 << (sm % 32 * 2));
        near[sm / 32] |= (uint64_t)(window & 3u) << (sm % 32 * 2);
    }
}

/* Fills `near` from a probe's cycles[sm * TETHER_RPC_NEAR_WINDOWS + w] (0: not timed) for SMs
 * 0..sms-1: each timed SM gets its fastest window (the lowest on a tie), the others window 0.
 * counts[w] = timed SMs given window w.  Returns the SMs timed. */
static inline uint32_t tether_rpc_near_choose(uint64_t near[5], const uint32_t *cycles,
                                              uint32_t sms, uint32_t counts[4])
{
    uint32_t timed = 0;
    for (uint32_t w = 0; w < TETHER_RPC_NEAR_WINDOWS; w++)
        counts[w] = 0;
    for (uint32_t sm = 0; sm < sms && sm < TETHER_RPC_NEAR_SMS; sm++) {
        const uint32_t *c = cycles + (uint64_t)sm * TETHER_RPC_NEAR_WINDOWS;
        uint32_t w = 0;
        if (c[0] != 0) {
            for (uint32_t k = 1; k < TETHER_RPC_NEAR_WINDOWS; k++)
                if (c[k] != 0 && c[k] < c[w])
                    w = k;
            counts[w]++;
            timed++;
        }
        tether_rpc_near_set(near, sm, w);
    }
    return timed;
}

/* The home port of caller `id` (below TETHER_RPC_NEAR_SPAN) on an SM of near window `window`,
 * for a client whose flags have TETHER_RPC_CLIENT_NEAR. */
static inline uint32_t tether_rpc_near_home(uint32_t flags, uint32_t window, uint32_t id)
{
    return (flags >> 16) + window * TETHER_RPC_NEAR_SPAN + id;
}

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
_Static_assert(sizeof(struct tether_rpc_device_client) == 128 + 8 * TETHER_RPC_DEVICE_PORTS_MAX,
               "client layout");

/* Packets of a message of `len` bytes when each packet carries `per_packet`
 * bytes of the stream [u64 length][bytes]. */
static inline uint64_t tether_msg_packets(uint64_t len, uint64_t per_packet)
{
    return (len + 8 + per_packet - 1) / per_packet;
}

#endif /* TETHER_DEVICE_CLIENT_H */
