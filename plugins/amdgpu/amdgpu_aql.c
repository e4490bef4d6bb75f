/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_aql.c - kernarg layout and AQL packets (see amdgpu_aql.h).
 */
#include "amdgpu_aql.h"

#include <stdio.h>
#include <string.h>

size_t amdgpu_kernargs_size(const struct amdgpu_kernel *kernel)
{
    size_t n = ((size_t)kernel->kernarg_segment_size + 15) & ~(size_t)15;

    return n < 16 ? 16 : n;
}

size_t amdgpu_kernargs_align(const struct amdgpu_kernel *kernel)
{
    return kernel->kernarg_segment_align > 16 ? kernel->kernarg_segment_align : 16;
}

/* Store the low `size` bytes (at most 8) of value at dst, little-endian. */
static void amdgpu_store_le(uint8_t *dst, uint64_t value, uint32_t size)
{
    for (uint32_t i = 0; i < size && i < 8; i++)
        dst[i] = (uint8_t)(value >> (8 * i));
}

/* The value of a hidden argument; false for kinds left zero. */
static bool amdgpu_hidden_value(enum amdgpu_arg_kind kind, const struct amdgpu_dispatch *d,
                                const struct amdgpu_kernarg_env *env, uint64_t *value_p)
{
    switch (kind) {
    case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_X:
        *value_p = d->num_groups;
        return true;
    case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Y:
    case AMDGPU_ARG_HIDDEN_BLOCK_COUNT_Z:
    case AMDGPU_ARG_HIDDEN_GROUP_SIZE_Y:
    case AMDGPU_ARG_HIDDEN_GROUP_SIZE_Z:
    case AMDGPU_ARG_HIDDEN_GRID_DIMS:
        *value_p = 1;
        return true;
    case AMDGPU_ARG_HIDDEN_GROUP_SIZE_X:
        *value_p = d->group_size;
        return true;
    case AMDGPU_ARG_HIDDEN_DYNAMIC_LDS_SIZE:
        *value_p = d->dynamic_lds;
        return true;
    case AMDGPU_ARG_HIDDEN_HOSTCALL_BUFFER:
    case AMDGPU_ARG_HIDDEN_PRINTF_BUFFER:
        *value_p = env->hostcall_buffer;
        return true;
    case AMDGPU_ARG_HIDDEN_HEAP_V1:
        *value_p = env->heap;
        return true;
    case AMDGPU_ARG_HIDDEN_QUEUE_PTR:
    case AMDGPU_ARG_HIDDEN_DEFAULT_QUEUE:
        *value_p = env->queue_ptr;
        return true;
    case AMDGPU_ARG_HIDDEN_PRIVATE_BASE:
        *value_p = env->private_base;
        return true;
    case AMDGPU_ARG_HIDDEN_SHARED_BASE:
        *value_p = env->shared_base;
        return true;
    default:
        /* global offsets, remainders (full groups only), completion action, multigrid sync,
         * none, unknown: zero */
        return false;
    }
}

tether_status_t amdgpu_kernargs_pack(const struct amdgpu_kernel *kernel, void *const *args,
                                     uint32_t num_args, const struct amdgpu_dispatch *d,
                                     const struct amdgpu_kernarg_env *env, void *buf,
                                     size_t buf_size, struct tether_error *err)
{
    static const struct amdgpu_kernarg_env zero_env;
    uint8_t *out = buf;
    uint32_t explicit_index = 0;

    if (env == NULL)
        env = &zero_env;
    if (buf_size < amdgpu_kernargs_size(kernel)) {
        if (err != NULL)
            snprintf(err->msg, sizeof(err->msg),
                     "kernel %s: kernarg buffer of %zu bytes, %zu needed", kernel->name, buf_size,
                     amdgpu_kernargs_size(kernel));
        return TETHER_ERR_INVALID;
    }
    if (num_args != kernel->num_explicit_args) {
        if (err != NULL)
            snprintf(err->msg, sizeof(err->msg),
                     "kernel %s takes %u arguments, the launch passes %u", kernel->name,
                     kernel->num_explicit_args, num_args);
        return TETHER_ERR_INVALID;
    }
    memset(out, 0, buf_size);
    for (uint32_t i = 0; i < kernel->num_args; i++) {
        const struct amdgpu_kernel_arg *a = &kernel->args[i];
        uint64_t value;

        if (!amdgpu_arg_kind_is_hidden(a->kind)) {
            if (a->size > 8) {
                if (err != NULL)
                    snprintf(err->msg, sizeof(err->msg),
                             "kernel %s: argument %u is %u bytes; only pointer-sized arguments "
                             "can be passed",
                             kernel->name, explicit_index, a->size);
                return TETHER_ERR_INVALID;
            }
            amdgpu_store_le(out + a->offset, (uint64_t)(uintptr_t)args[explicit_index], a->size);
            explicit_index++;
        } else if (amdgpu_hidden_value(a->kind, d, env, &value)) {
            amdgpu_store_le(out + a->offset, value, a->size);
        }
    }
    return TETHER_OK;
}

uint16_t amdgpu_aql_header(hsa_packet_type_t type)
{
    return (uint16_t)((type << HSA_PACKET_HEADER_TYPE) | (1u << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

tether_status_t amdgpu_aql_dispatch_build(const struct amdgpu_dispatch *d,
                                          hsa_kernel_dispatch_packet_t *pkt_p,
                                          uint32_t *header_setup_p, struct tether_error *err)
{
    hsa_kernel_dispatch_packet_t pkt;
    uint64_t grid = (uint64_t)d->num_groups * d->group_size;
    uint16_t setup = 1u << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;

    if (d->num_groups == 0 || d->group_size == 0 || d->group_size > UINT16_MAX ||
        grid > UINT32_MAX) {
        if (err != NULL)
            snprintf(err->msg, sizeof(err->msg),
                     "AQL dispatch: %u groups of %u work-items cannot be launched", d->num_groups,
                     d->group_size);
        return TETHER_ERR_INVALID;
    }
    memset(&pkt, 0, sizeof(pkt));
    pkt.header = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
    pkt.setup = setup;
    pkt.workgroup_size_x = (uint16_t)d->group_size;
    pkt.workgroup_size_y = 1;
    pkt.workgroup_size_z = 1;
    pkt.grid_size_x = (uint32_t)grid;
    pkt.grid_size_y = 1;
    pkt.grid_size_z = 1;
    pkt.private_segment_size = d->private_segment_size;
    pkt.group_segment_size = d->group_segment_size;
    pkt.kernel_object = d->kernel_object;
    pkt.kernarg_address = d->kernarg;
    pkt.completion_signal = d->completion_signal;
    *pkt_p = pkt;
    *header_setup_p =
        (uint32_t)amdgpu_aql_header(HSA_PACKET_TYPE_KERNEL_DISPATCH) | ((uint32_t)setup << 16);
    return TETHER_OK;
}

tether_status_t amdgpu_aql_barrier_and_build(const hsa_signal_t *deps, size_t num_deps,
                                             hsa_signal_t completion,
                                             hsa_barrier_and_packet_t *pkt_p,
                                             uint32_t *header_setup_p, struct tether_error *err)
{
    hsa_barrier_and_packet_t pkt;

    if (num_deps > sizeof(pkt.dep_signal) / sizeof(pkt.dep_signal[0])) {
        if (err != NULL)
            snprintf(err->msg, sizeof(err->msg), "AQL barrier: %zu dependencies, at most 5",
                     num_deps);
        return TETHER_ERR_INVALID;
    }
    memset(&pkt, 0, sizeof(pkt));
    pkt.header = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
    for (size_t i = 0; i < num_deps; i++)
        pkt.dep_signal[i] = deps[i];
    pkt.completion_signal = completion;
    *pkt_p = pkt;
    *header_setup_p = amdgpu_aql_header(HSA_PACKET_TYPE_BARRIER_AND);
    return TETHER_OK;
}

void amdgpu_aql_packet_publish(void *slot, const void *packet, uint32_t header_setup)
{
    /* Body first (everything after the 32-bit header+setup word), then the header with a release
     * store: the packet processor reads the header with acquire semantics. */
    memcpy((uint8_t *)slot + 4, (const uint8_t *)packet + 4, 60);
    __atomic_store_n((uint32_t *)slot, header_setup, __ATOMIC_RELEASE);
}
