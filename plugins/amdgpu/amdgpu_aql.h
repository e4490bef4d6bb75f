/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_aql.h - kernel arguments and AQL packets, built on the host without the HSA runtime.
 *
 * Role: the pure part of a kernel launch on an HSA agent.
 *  1. amdgpu_kernargs_pack() lays out the kernarg segment of one launch from the kernel's
 *     metadata: each explicit argument at its ".offset", the hidden arguments code object v5
 *     lists (block counts, group sizes, remainders, grid dims, heap, hostcall buffer, dynamic LDS
 *     size, queue pointer, ...) filled from the launch, every other byte zero.
 *  2. amdgpu_aql_dispatch_build() fills an hsa_kernel_dispatch_packet_t (64 bytes) and the 32-bit
 *     header+setup word that publishes it; amdgpu_aql_barrier_and_build() does the same for a
 *     barrier-AND packet (cross-queue dependencies).
 *  3. amdgpu_aql_packet_publish() copies a built packet into a queue slot: bytes 4..63 first, then
 *     the header word with one release store, so the packet processor never sees a valid header
 *     over a half-written body.
 * Reserving the slot, waiting for room and ringing the doorbell need the runtime and live in the
 * backend (amdgpu_backend.c).
 *
 * Geometry is one-dimensional, as OpenMP launches are: grid = num_groups * group_size work-items,
 * y and z are 1.  Thread safety: pure functions; publish() may race only with the packet
 * processor, which is the point of its ordering.  Errors: TETHER_ERR_INVALID (with a message) for
 * geometry or arguments the packet cannot carry.
 */
#ifndef TETHER_AMDGPU_AQL_H
#define TETHER_AMDGPU_AQL_H

#include <stddef.h>
#include <stdint.h>

#include <hsa/hsa.h>

#include "amdgpu_code_object.h"
#include "tether/status.h"

_Static_assert(sizeof(hsa_kernel_dispatch_packet_t) == 64, "AQL packets are 64 bytes");
_Static_assert(sizeof(hsa_barrier_and_packet_t) == 64, "AQL packets are 64 bytes");

/* One launch, resolved. */
struct amdgpu_dispatch {
    uint64_t kernel_object;         /* HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT */
    uint32_t num_groups;            /* work-groups (OpenMP teams), >= 1 */
    uint32_t group_size;            /* work-items per group (threads), 1..65535 */
    uint32_t dynamic_lds;           /* dynamic group memory per group, bytes */
    uint32_t group_segment_size;    /* static + dynamic group memory, bytes */
    uint32_t private_segment_size;  /* scratch per work-item, bytes */
    void *kernarg;                  /* the kernarg segment (kernarg pool memory) */
    hsa_signal_t completion_signal; /* decremented when the kernel finishes; handle 0: none */
};

/* Values for the hidden arguments that come from the runtime rather than the launch. */
struct amdgpu_kernarg_env {
    uint64_t hostcall_buffer; /* hidden_hostcall_buffer / hidden_printf_buffer (0: none) */
    uint64_t heap;            /* hidden_heap_v1 (0: no device heap) */
    uint64_t queue_ptr;       /* hidden_queue_ptr / hidden_default_queue (hsa_queue_t *) */
    uint64_t private_base;    /* hidden_private_base: high half of the private aperture */
    uint64_t shared_base;     /* hidden_shared_base: high half of the shared aperture */
};

/* Bytes to allocate for one launch's kernarg segment: the metadata's kernarg_segment_size rounded
 * up to 16, and at least 16 (a zero-sized allocation is not portable). */
size_t amdgpu_kernargs_size(const struct amdgpu_kernel *kernel);

/* Alignment the kernarg buffer needs: max(kernarg_segment_align, 16). */
size_t amdgpu_kernargs_align(const struct amdgpu_kernel *kernel);

/* Fill buf (buf_size >= amdgpu_kernargs_size(kernel) bytes) for a launch of kernel.
 *   args: num_args pointer-sized argument VALUES (for OpenMP: (char *)TgtArgs[i] +
 *   TgtOffsets[i]); num_args must equal kernel->num_explicit_args.  Each is written at its
 *   argument's offset, little-endian, in the argument's size (1..8 bytes).
 *   d: geometry of the launch (num_groups, group_size, dynamic_lds).
 *   env: runtime values for hidden arguments; NULL means all zero.
 * TETHER_ERR_INVALID when the counts differ, an explicit argument is wider than 8 bytes, or the
 * buffer is too small.  On failure buf may have been partly written (it is scratch). */
tether_status_t amdgpu_kernargs_pack(const struct amdgpu_kernel *kernel, void *const *args,
                                     uint32_t num_args, const struct amdgpu_dispatch *d,
                                     const struct amdgpu_kernarg_env *env, void *buf,
                                     size_t buf_size, struct tether_error *err);

/* Header bits every tether packet uses: system-scope acquire and release fences (host memory and
 * other agents see the kernel's writes at completion), and the barrier bit (the packet starts
 * only after the previous one completed: a queue is an in-order stream). */
uint16_t amdgpu_aql_header(hsa_packet_type_t type);

/* Build a dispatch packet (pkt_p->header is left HSA_PACKET_TYPE_INVALID: the packet is not valid
 * until published) and its header+setup word.  TETHER_ERR_INVALID for 0 groups, a group size of
 * 0 or above 65535, or a grid above 2^32-1 work-items. */
tether_status_t amdgpu_aql_dispatch_build(const struct amdgpu_dispatch *d,
                                          hsa_kernel_dispatch_packet_t *pkt_p,
                                          uint32_t *header_setup_p, struct tether_error *err);

/* Build a barrier-AND packet that waits for up to 5 signals (handle 0 entries are ignored by the
 * packet processor) and decrements completion (handle 0: none).  TETHER_ERR_INVALID for more than
 * 5 dependencies. */
tether_status_t amdgpu_aql_barrier_and_build(const hsa_signal_t *deps, size_t num_deps,
                                             hsa_signal_t completion,
                                             hsa_barrier_and_packet_t *pkt_p,
                                             uint32_t *header_setup_p, struct tether_error *err);

/* Copy a built 64-byte packet into a queue slot and publish it (see the header comment).  slot
 * must be 64-byte aligned queue memory; packet is a dispatch or barrier packet built above. */
void amdgpu_aql_packet_publish(void *slot, const void *packet, uint32_t header_setup);

#endif /* TETHER_AMDGPU_AQL_H */
