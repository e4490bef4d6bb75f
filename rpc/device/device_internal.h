/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_internal.h - what the parts of the device library share:
 * the call layer (device_client.c) used by stdio (device_stdio.c) and the
 * heap (device_malloc.c), and the tether_device_* entry points the libc
 * overrides (device_libc.c) forward to.
 *
 * The tether_device_* functions are the library proper: in a plain host
 * build (the host-thread tests) they are called directly, and nothing
 * replaces printf/malloc/free of the test program.
 */
#ifndef TETHER_DEVICE_INTERNAL_H
#define TETHER_DEVICE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_arch.h"
#include "../device_client.h"

DEV_BEGIN

/* A call's path is forced inline into the function of its shape (device_client.c:
 * dev_call_short, dev_call_long) on GPUs: only there does the compiler see that the lane mask is
 * one bit (NVIDIA: 1), which folds every warp vote and shuffle of rpc.h away and keeps the
 * packet in registers.  Left to the inliner, dev_call_port stayed a function of its own in a
 * `teams distribute parallel for` kernel (local memory, warp operations: 3.6 us per call against
 * 2.5 on an H200, tools/probes/rpc_pages.c). */
#if RPC_ARCH_SIMT
#define DEV_INLINE inline __attribute__((always_inline))
#else
#define DEV_INLINE inline
#endif

/* A kernel on NVIDIA gets as many registers as the most any function it may call needs, and
 * ptxas gives a function more registers the more code is inlined into it, and more for values
 * it keeps across a call.  So on GPUs the library's entries (printf, malloc, ...), the two shapes
 * of a call and the heap's trips to the host are functions of their own: on sm_90 a kernel that
 * may print gets 68 registers and one that may allocate about 120, where the whole path inlined
 * needs 150-240 (docs/usage.md, "What the library costs a kernel"). */
#if RPC_ARCH_SIMT
#define DEV_OUT_OF_LINE __attribute__((noinline))
#else
#define DEV_OUT_OF_LINE
#endif

/* A profiling build (-DTETHER_RPC_PROFILE; the CMake option TETHER_RPC_PROFILE=ON builds
 * libtether-device.a so) calls these hooks on a call's path; normal builds have none of them.
 * The library's definitions are weak and do nothing: a program that times calls defines its own
 * ahead of the library on the link line, as a program's objects are (clang-16's device link
 * takes the first definition of a name; tools/probes/rpc_phases).
 *   tether_rpc_profile_mark   phases of a call (device_client.c, DEV_PROF_): 8 the library's
 *                             entry read the client, 0 the request is built, 1 the port is open,
 *                             2 the request is sent, 5 the answer's head arrived, 3 the answer
 *                             is read, 4 the port is closed
 *   tether_rpc_profile_delay  NVIDIA: the SM cycles waited before the first poll for an answer
 *   tether_rpc_profile_poll   NVIDIA: a poll or an open that found nothing (rpc_arch.h) */
#if defined(TETHER_RPC_PROFILE)
void tether_rpc_profile_mark(int phase);
void tether_rpc_profile_delay(uint64_t cycles);
void tether_rpc_profile_poll(void);
#endif

/* One piece of a request. */
struct dev_iov {
    const void *base;
    uint64_t len;
};

/* Copies the client's read-only part (from constant memory on NVIDIA) into *cfg; false while no
 * server is attached. */
bool tether_device_config(struct tether_rpc_device_const *cfg);

/* Is a server attached? */
bool tether_device_attached(void);

/*
 * Makes one call: opens a port for the lanes calling together, sends the
 * request (the iov pieces back to back), and if `answer` is true receives the
 * answer, its bytes (at most cap) to dst.  Returns, as tether_rpc_call does,
 * the answer's length, or -status when the server answered with an error; 0
 * for a fire-and-forget call (answer false), once the last packet is handed
 * over; -TETHER_RPC_CALL_NO_SERVER when no server is attached.
 */
int64_t tether_device_call(uint32_t opcode, const struct dev_iov *iov, uint32_t niov, bool answer,
                           void *dst, uint64_t cap);

/*
 * A PRINTF call (fire-and-forget) whose pieces may include one made while it is sent: the %s
 * records, one per string whatever their number (a piece per string would need room for each).
 * That piece's `base` is the printf call's walk and its `len` the records' bytes with
 * DEV_IOV_PRINTF_STRS set; the call layer gets the bytes, in order, from
 * tether_device_printf_strs.  A separate entry so that tether_device_call, the path of every
 * other call, has no call inside.
 */
#define DEV_IOV_PRINTF_STRS ((uint64_t)1 << 63)
bool tether_device_call_printf(const struct dev_iov *iov, uint32_t niov);

/* Writes the next n bytes of the %s records of the printf call whose walk is `walk`
 * (device_stdio.c). */
void tether_device_printf_strs(void *walk, unsigned char *dst, uint64_t n);

/* Library entry points (device_stdio.c, device_malloc.c).  printf_packed takes the arguments
 * packed as clang-16 packs them for __llvm_omp_vprintf (on NVIDIA, tether/device_libc.h's
 * __llvm_omp_vprintf calls it). */
int tether_device_printf_packed(uint32_t stream, const char *fmt, const void *args,
                                uint64_t args_len);
int tether_device_write(uint32_t stream, const void *bytes, uint64_t n, bool newline);
/* WRITE to a host FILE * value (TETHER_RPC_HOST_FILE): GPU fputs/fwrite/fputc. */
int tether_device_write_file(uint64_t file, const void *bytes, uint64_t n, bool newline);
void tether_device_exit(int status) __attribute__((noreturn));
void tether_device_abort(void) __attribute__((noreturn));
void *tether_device_malloc(uint64_t size);
void *tether_device_aligned_alloc(uint64_t align, uint64_t size);
void tether_device_free(void *ptr);
void *tether_device_calloc(uint64_t n, uint64_t size);
void *tether_device_realloc(void *ptr, uint64_t size);
/* Bytes usable at ptr, the start of a live block of the heap; 0 for anything else. */
uint64_t tether_device_usable_size(const void *ptr);

#if !RPC_ARCH_SIMT
/* Host-like targets only (va_list): packs the arguments the way clang packs
 * them for a GPU and sends the call. */
int tether_device_vprintf(uint32_t stream, const char *fmt, va_list ap);
#endif

DEV_END

#endif /* TETHER_DEVICE_INTERNAL_H */
