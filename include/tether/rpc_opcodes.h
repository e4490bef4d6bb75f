/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tether/rpc_opcodes.h - the opcodes of tether's device-to-host calls, the
 * byte layout of each built-in call, and the device-side call for user
 * opcodes.  Shared by the device client library (rpc/device, compiled for
 * nvptx64, amdgcn and x86_64 offload), the host server library (rpc/server)
 * and user code that adds its own opcodes.
 *
 * Freestanding: fixed-width types only, no libc; every layout is checked with
 * _Static_assert so both sides agree on every byte.  All multi-byte fields are
 * little-endian (every supported device and host is).
 *
 * OPCODES (the 32-bit opcode of an rpc/rpc.h port header)
 *   bits 0..15   the service:
 *     0x0000 .. 0x7fff  tether's own services (enum below); an unknown one is
 *                       answered with TETHER_RPC_CALL_UNHANDLED and a
 *                       diagnostic on the host
 *     0x8000 .. 0xffff  user opcodes: tether_rpc_register() on the host
 *                       (tether/rpc.h), tether_rpc_call() on the device
 *   bit 16       TETHER_RPC_WIDE: one caller spreads its messages over all
 *                lanes of the port (see MESSAGES); only clients that are not
 *                SIMT (host threads, the x86_64 offload image) set it
 *   bits 17..31  zero
 *
 * MESSAGES
 *   Each request and each answer is one message per lane: a uint64 length
 *   followed by that many bytes, cut into packets of the port's 64-byte lane
 *   buffers, one rpc send/recv per packet.  Lane mode: every lane of the
 *   call's lane mask carries its own message in its own buffer (a warp whose
 *   lanes print together sends 32 messages per handshake).  Wide mode: the
 *   single caller's message runs through the buffers of all lanes of the
 *   mask in ascending lane order, so one packet carries 64 x lanes bytes and
 *   a whole printf line usually fits in one send.  Either way a call with N
 *   packets costs N handshakes for its longest message, and every lane takes
 *   part in every packet (lanes with less data send padding).
 *
 *   Fire-and-forget calls (PRINTF, WRITE, FREE, EXIT, ABORT) end after the
 *   request: the device closes the port without waiting for the host.
 *   Synchronous calls (ALLOC, user opcodes) get an answer message whose first
 *   8 bytes are struct tether_rpc_answer.
 */
#ifndef TETHER_RPC_OPCODES_H
#define TETHER_RPC_OPCODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tether_rpc_opcode {
    TETHER_RPC_OP_NOOP = 0,   /* empty request, empty answer (probe, tests) */
    TETHER_RPC_OP_PRINTF = 1, /* struct tether_rpc_printf_hdr + payload; no answer */
    TETHER_RPC_OP_WRITE = 2,  /* struct tether_rpc_write_hdr + bytes; no answer */
    TETHER_RPC_OP_ALLOC = 3,  /* struct tether_rpc_alloc_req -> answer + tether_rpc_alloc_ans */
    TETHER_RPC_OP_FREE = 4,   /* struct tether_rpc_free_req; no answer */
    TETHER_RPC_OP_EXIT = 5,   /* struct tether_rpc_exit_req; no answer, the host exits */
    TETHER_RPC_OP_ABORT = 6,  /* no payload; no answer, the host aborts */
};

#define TETHER_RPC_OP_MASK 0xffffu
#define TETHER_RPC_OP_USER_FIRST 0x8000u
#define TETHER_RPC_OP_USER_LAST 0xffffu
#define TETHER_RPC_WIDE 0x10000u

/* Largest request or answer message the host accepts (longer ones are
 * drained and dropped with a diagnostic; the caller gets TOO_BIG). */
#define TETHER_RPC_MSG_MAX (64u << 20)

/* Output streams of PRINTF and WRITE. */
enum tether_rpc_stream {
    TETHER_RPC_STDOUT = 1,
    TETHER_RPC_STDERR = 2,
    /* WRITE only: a uint64 follows the header, the host FILE * the device code was given (a
     * target region receives the host's `stdout`/`stderr` values as firstprivate pointers);
     * the server writes to its own out/err when it is the process's stdout/stderr, and drops
     * the bytes with a diagnostic for any other stream. */
    TETHER_RPC_HOST_FILE = 3,
};

/*
 * PRINTF: the header, then `fmt_len` format bytes, `args_len` bytes of the
 * packed argument buffer (rpc/printf_scan.h), then one record per %s
 * conversion in order: a uint32 length (TETHER_RPC_PRINTF_NULL for a NULL
 * pointer) followed by that many bytes, no padding anywhere.
 */
struct tether_rpc_printf_hdr {
    uint32_t stream; /* enum tether_rpc_stream */
    uint32_t fmt_len;
    uint32_t args_len;
    uint32_t nstrs;
};
_Static_assert(sizeof(struct tether_rpc_printf_hdr) == 16, "printf header layout");
#define TETHER_RPC_PRINTF_NULL 0xffffffffu

/* WRITE (puts, fputs, fwrite to stdout/stderr): the header, then the bytes. */
struct tether_rpc_write_hdr {
    uint32_t stream;  /* enum tether_rpc_stream */
    uint32_t newline; /* 1: append '\n' (puts) */
};
_Static_assert(sizeof(struct tether_rpc_write_hdr) == 8, "write header layout");

/* ALLOC: ask for `size` bytes of device memory aligned to `align` (a power
 * of two, at most 2 MiB); the device library asks for chunks and large blocks
 * aligned to 64 KiB and aligns blocks within them itself (DEVICE HEAP below).
 * ptr 0: refused, the host says why once per cause. */
struct tether_rpc_alloc_req {
    uint64_t size;
    uint64_t align;
};
struct tether_rpc_alloc_ans {
    uint64_t ptr; /* device address, 0 on failure */
};
_Static_assert(sizeof(struct tether_rpc_alloc_req) == 16, "alloc request layout");
_Static_assert(sizeof(struct tether_rpc_alloc_ans) == 8, "alloc answer layout");

/* FREE: give memory obtained from ALLOC back to the host. */
struct tether_rpc_free_req {
    uint64_t ptr;
};
_Static_assert(sizeof(struct tether_rpc_free_req) == 8, "free request layout");

/* EXIT: the program's exit status. */
struct tether_rpc_exit_req {
    int32_t status;
    uint32_t reserved;
};
_Static_assert(sizeof(struct tether_rpc_exit_req) == 8, "exit request layout");

/* Status of a synchronous call as the device sees it. */
enum tether_rpc_call_status {
    TETHER_RPC_CALL_OK = 0,
    TETHER_RPC_CALL_UNHANDLED = 1, /* no handler for the opcode */
    TETHER_RPC_CALL_ERROR = 2,     /* the handler failed */
    TETHER_RPC_CALL_TOO_BIG = 3,   /* request larger than TETHER_RPC_MSG_MAX */
    TETHER_RPC_CALL_NO_SERVER = 4, /* device side: no server attached to this image */
};

/* First 8 bytes of every answer message; the handler's bytes follow. */
struct tether_rpc_answer {
    uint32_t status; /* enum tether_rpc_call_status */
    uint32_t reserved;
};
_Static_assert(sizeof(struct tether_rpc_answer) == 8, "answer layout");

/*
 * Inline answers.  When a call has one message per direction (one lane, or a wide call) and the
 * answer's payload is at most TETHER_RPC_INLINE_MAX bytes, the server also puts the whole answer
 * into the head of its send (rpc/rpc.h, I3: two words of 48 bits), so a GPU caller
 * gets it with the one read of host memory that tells it the answer has come, instead of two
 * more for the buffers.  The buffers carry the answer message as usual.
 *   word 0: bit 47 TETHER_RPC_INLINE, bits 0..7 status, bits 8..11 payload length,
 *           bits 12..43 payload bytes 0..3 (byte 0 lowest)
 *   word 1: bits 0..47 payload bytes 4..9
 * A head without bit 47 says nothing: the answer is in the buffers.
 */
#define TETHER_RPC_INLINE_MAX 10u
#define TETHER_RPC_INLINE (1ull << 47)

/* Head words of an inline answer; false when it does not fit (then the head stays empty). */
static inline bool tether_rpc_inline_pack(uint32_t status, const unsigned char *payload,
                                          uint64_t len, uint64_t head[2])
{
    if (status > 0xffu || len > TETHER_RPC_INLINE_MAX)
        return false;
    head[0] = TETHER_RPC_INLINE | (uint64_t)status | len << 8;
    head[1] = 0;
    for (uint64_t i = 0; i < len; i++) {
        if (i < 4)
            head[0] |= (uint64_t)payload[i] << (12 + 8 * i);
        else
            head[1] |= (uint64_t)payload[i] << (8 * (i - 4));
    }
    return true;
}

/* Does the head hold a whole (inline) answer? */
static inline bool tether_rpc_inline_is(const uint64_t head[2])
{
    return (head[0] & TETHER_RPC_INLINE) && ((head[0] >> 8) & 0xfu) <= TETHER_RPC_INLINE_MAX;
}

/* Unpacks an inline answer: its status and payload length, and min(length, cap) bytes to dst;
 * false when the head holds no inline answer. */
static inline bool tether_rpc_inline_unpack(const uint64_t head[2], uint32_t *status_p,
                                            uint64_t *len_p, unsigned char *dst, uint64_t cap)
{
    if (!tether_rpc_inline_is(head))
        return false;
    uint64_t len = (head[0] >> 8) & 0xfu;
    *status_p = (uint32_t)(head[0] & 0xffu);
    *len_p = len;
    for (uint64_t i = 0; i < len && i < cap; i++)
        dst[i] = (unsigned char)(i < 4 ? head[0] >> (12 + 8 * i) : head[1] >> (8 * (i - 4)));
    return true;
}

/*
 * DEVICE HEAP (libtether-device.a): in target regions malloc, calloc, realloc,
 * free, aligned_alloc and posix_memalign are the library's, served from
 * memory the host grants through ALLOC (docs/rpc-services.md section 6).
 *   - malloc and calloc return 16-byte aligned blocks; aligned_alloc takes
 *     any power of two up to 2^47 (NULL otherwise, errno EINVAL on x86_64
 *     offload); posix_memalign any power of two that is a multiple of
 *     sizeof(void *): EINVAL otherwise, ENOMEM when there is no block, the
 *     pointer written only on success.
 *   - No fixed limit on the number or size of live blocks: the heap grows
 *     while the host grants memory.  When the host refuses (heap_limit of
 *     tether/rpc.h reached, the device out of memory) the host says why once
 *     per cause and the calls return NULL (errno ENOMEM on x86_64 offload).
 *   - free and realloc check the pointer first: a double free, a pointer
 *     inside a block or into a freed one print one line naming the pointer
 *     ("tether: free(0x...): double free") on the host's stderr and change
 *     nothing; a pointer that is not the heap's goes to libc on x86_64
 *     offload and is reported on GPUs.
 *   - Thread-safe; lock-free except while a new chunk or slab is made.
 *
 * Device side (libtether-device.a), callable from OpenMP target regions:
 * calls user opcode `opcode` (TETHER_RPC_OP_USER_FIRST..LAST) with in_size
 * bytes at `in`; the host handler's answer is copied to `out`, at most
 * out_size bytes (the rest is dropped).  Blocks until the host answered.
 * Returns the answer's length (possibly > out_size) on success, or the
 * negated enum tether_rpc_call_status on failure.  Each calling thread (GPU
 * lane) makes its own call; lanes of a warp calling together share one port.
 */
#if defined(_OPENMP)
#pragma omp declare target
#endif
int64_t tether_rpc_call(uint32_t opcode, const void *in, uint64_t in_size, void *out,
                        uint64_t out_size);

/* Device side: 1 when a host server is attached to this image (printf, malloc
 * and tether_rpc_call go to the host), 0 otherwise. */
int tether_rpc_attached(void);
#if defined(_OPENMP)
#pragma omp end declare target
#endif

#endif /* TETHER_RPC_OPCODES_H */
