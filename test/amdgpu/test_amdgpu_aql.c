/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_aql.c - AQL packet building and publishing, checked byte by byte against the
 * layout of the HSA specification (hsa.h structs), and the publish ordering under concurrency: a
 * consumer thread that spins on the header like a packet processor must never see a valid header
 * over a stale body.
 */
#include <pthread.h>
#include <stdalign.h>
#include <string.h>

#include "amdgpu_aql.h"
#include "amdgpu_test.h"

static void test_dispatch(void)
{
    struct amdgpu_dispatch d = {
        .kernel_object = 0x7f0012345600ull,
        .num_groups = 440,
        .group_size = 256,
        .group_segment_size = 1584 + 1024,
        .private_segment_size = 16,
        .kernarg = (void *)(uintptr_t)0x7f00abc000ull,
        .completion_signal = {.handle = 0x5151},
    };
    hsa_kernel_dispatch_packet_t pkt;
    struct tether_error err;
    uint32_t hs;
    uint16_t header;

    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_OK);
    REQUIRE(pkt.header == HSA_PACKET_TYPE_INVALID); /* not valid until published */
    REQUIRE(pkt.setup == 1);
    REQUIRE(pkt.workgroup_size_x == 256 && pkt.workgroup_size_y == 1 && pkt.workgroup_size_z == 1);
    REQUIRE(pkt.grid_size_x == 440u * 256u && pkt.grid_size_y == 1 && pkt.grid_size_z == 1);
    REQUIRE(pkt.group_segment_size == 2608 && pkt.private_segment_size == 16);
    REQUIRE(pkt.kernel_object == d.kernel_object && pkt.kernarg_address == d.kernarg);
    REQUIRE(pkt.completion_signal.handle == 0x5151);
    REQUIRE(pkt.reserved0 == 0 && pkt.reserved2 == 0);
    header = (uint16_t)hs;
    REQUIRE((hs >> 16) == 1); /* setup: 1 dimension */
    REQUIRE((header & 0xff) == HSA_PACKET_TYPE_KERNEL_DISPATCH);
    REQUIRE(header & (1u << HSA_PACKET_HEADER_BARRIER));
    REQUIRE(((header >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3) == HSA_FENCE_SCOPE_SYSTEM);
    REQUIRE(((header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3) == HSA_FENCE_SCOPE_SYSTEM);
    /* the exact word: type 2 | barrier 0x100 | acquire system 0x400 | release system 0x1000 */
    REQUIRE(hs == 0x00011502u);

    /* geometry the packet cannot carry */
    d.group_size = 0;
    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_ERR_INVALID);
    d.group_size = 65536;
    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_ERR_INVALID);
    d.group_size = 1024;
    d.num_groups = 0;
    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_ERR_INVALID);
    d.num_groups = 4u << 20; /* 2^22 groups of 2^10: 2^32 work-items, one too many */
    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_ERR_INVALID);
    REQUIRE(strstr(err.msg, "4194304 groups of 1024") != NULL);
    d.num_groups = (4u << 20) - 1;
    REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, &err), TETHER_OK);
}

static void test_barrier(void)
{
    hsa_signal_t deps[6] = {{1}, {2}, {3}, {4}, {5}, {6}};
    hsa_barrier_and_packet_t pkt;
    uint32_t hs;

    REQUIRE_RC(amdgpu_aql_barrier_and_build(deps, 2, (hsa_signal_t){77}, &pkt, &hs, NULL),
               TETHER_OK);
    REQUIRE(pkt.dep_signal[0].handle == 1 && pkt.dep_signal[1].handle == 2);
    REQUIRE(pkt.dep_signal[2].handle == 0 && pkt.dep_signal[4].handle == 0);
    REQUIRE(pkt.completion_signal.handle == 77);
    REQUIRE((hs & 0xff) == HSA_PACKET_TYPE_BARRIER_AND && (hs >> 16) == 0);
    REQUIRE_RC(amdgpu_aql_barrier_and_build(deps, 5, (hsa_signal_t){0}, &pkt, &hs, NULL),
               TETHER_OK);
    REQUIRE_RC(amdgpu_aql_barrier_and_build(deps, 6, (hsa_signal_t){0}, &pkt, &hs, NULL),
               TETHER_ERR_INVALID);
}

/* ---- publish ordering --------------------------------------------------------------------- */

#define ROUNDS 20000

static alignas(64) uint8_t slot[64];

/* The consumer acts like a packet processor: wait for a valid header (acquire), check the body
 * belongs to the same round, invalidate the header (release) for the producer's next round. */
static void *consumer(void *arg)
{
    uint32_t *header = (uint32_t *)slot;

    (void)arg;
    for (uint32_t round = 1; round <= ROUNDS; round++) {
        hsa_kernel_dispatch_packet_t seen;
        uint32_t hs;

        while (((hs = __atomic_load_n(header, __ATOMIC_ACQUIRE)) & 0xff) == HSA_PACKET_TYPE_INVALID)
            ;
        memcpy(&seen, slot, sizeof(seen));
        if (seen.grid_size_x != round || seen.kernel_object != round * 3ull ||
            seen.completion_signal.handle != round) {
            fprintf(stderr, "round %u: header published before its body\n", round);
            exit(1);
        }
        __atomic_store_n(header, (uint32_t)HSA_PACKET_TYPE_INVALID, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void test_publish(void)
{
    pthread_t t;
    uint32_t *header = (uint32_t *)slot;

    memset(slot, 0, sizeof(slot));
    *header = HSA_PACKET_TYPE_INVALID;
    REQUIRE(pthread_create(&t, NULL, consumer, NULL) == 0);
    for (uint32_t round = 1; round <= ROUNDS; round++) {
        struct amdgpu_dispatch d = {.kernel_object = round * 3ull,
                                    .num_groups = round,
                                    .group_size = 1,
                                    .completion_signal = {round}};
        hsa_kernel_dispatch_packet_t pkt;
        uint32_t hs;

        REQUIRE_RC(amdgpu_aql_dispatch_build(&d, &pkt, &hs, NULL), TETHER_OK);
        while ((__atomic_load_n(header, __ATOMIC_ACQUIRE) & 0xff) != HSA_PACKET_TYPE_INVALID)
            ;
        amdgpu_aql_packet_publish(slot, &pkt, hs);
    }
    REQUIRE(pthread_join(t, NULL) == 0);
}

int main(void)
{
    test_dispatch();
    test_barrier();
    test_publish();
    return tcheck_exit("amdgpu aql");
}
