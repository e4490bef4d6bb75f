/*
 * tether/rpc_opcodes.h - the opcodes of tether's device-to-host calls and the
 * byte layout of each built-in call, shared by the device client library
 * (rpc/device, compiled for nvptx64/amdgcn/x86_64 offload) and the host
 * server library (rpc/server).
 *
 * Freestanding: fixed-width types only, no libc; every layout is checked with
 * _Static_assert so both sides agree on every byte.  All multi-byte fields are
 * little-endian (every supported device and host is).
 *
 * Opcode ranges:
 *   0x0000 .. 0x7fff  tether's own services (this header); unknown ones get an
 *                     error answer and a diagnostic on the host
 *   0x8000 .. 0xffff  user opcodes: register a handler with
 *                     tether_rpc_register() (tether/rpc.h) and call it from the
 *                     device with tether_rpc_call() (rpc/device)
 */
#ifndef TETHER_RPC_OPCODES_H
#define TETHER_RPC_OPCODES_H

#include <stdint.h>

enum tether_rpc_opcode {
    TETHER_RPC_OP_NOOP = 0,   /* answers nothing; used by tests and to probe */
    TETHER_RPC_OP_PRINTF = 1, /* struct tether_rpc_printf_hdr + payload; no answer */
    TETHER_RPC_OP_WRITE = 2,  /* struct tether_rpc_write_hdr + bytes; no answer */
    TETHER_RPC_OP_ALLOC = 3,  /* struct tether_rpc_alloc_req -> tether_rpc_alloc_ans */
    TETHER_RPC_OP_FREE = 4,   /* struct tether_rpc_free_req; no answer */
    TETHER_RPC_OP_EXIT = 5,   /* struct tether_rpc_exit_req; no answer, device stops */
    TETHER_RPC_OP_ABORT = 6,  /* no payload; no answer, device traps */
    TETHER_RPC_OP_BUILTIN_END = 7,
};

#define TETHER_RPC_OP_USER_FIRST 0x8000u
#define TETHER_RPC_OP_USER_LAST 0xffffu

/* Output streams of PRINTF and WRITE. */
enum tether_rpc_stream {
    TETHER_RPC_STDOUT = 1,
    TETHER_RPC_STDERR = 2,
};

/*
 * PRINTF: the header, then `fmt_len` format bytes, `args_len` bytes of the
 * packed argument buffer (rpc/device/printf_scan.h), then one record per %s
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

/* WRITE (puts, fputs, fwrite to stdout/stderr): the header, then `len` bytes. */
struct tether_rpc_write_hdr {
    uint32_t stream;  /* enum tether_rpc_stream */
    uint32_t newline; /* 1: append '\n' (puts) */
    uint64_t len;
};
_Static_assert(sizeof(struct tether_rpc_write_hdr) == 16, "write header layout");

/* ALLOC: ask for at least `size` bytes of device memory (a heap chunk). */
struct tether_rpc_alloc_req {
    uint64_t size;
};
struct tether_rpc_alloc_ans {
    uint64_t ptr;  /* device address, 0 on failure */
    uint64_t size; /* bytes actually granted (>= requested), 0 on failure */
};
_Static_assert(sizeof(struct tether_rpc_alloc_req) == 8, "alloc request layout");
_Static_assert(sizeof(struct tether_rpc_alloc_ans) == 16, "alloc answer layout");

/* FREE: give a chunk obtained from ALLOC back to the host. */
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

/* Status of a call as the device sees it (answers of synchronous calls). */
enum tether_rpc_call_status {
    TETHER_RPC_CALL_OK = 0,
    TETHER_RPC_CALL_UNHANDLED = 1, /* no handler for the opcode */
    TETHER_RPC_CALL_ERROR = 2,     /* the handler failed */
    TETHER_RPC_CALL_TOO_BIG = 3,   /* request or answer larger than allowed */
};

#endif /* TETHER_RPC_OPCODES_H */
