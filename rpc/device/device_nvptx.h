/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_nvptx.h - the NVIDIA parts of the call path, included by device_client.c for
 * nvptx64 only (other targets: the defaults there).  Each NVIDIA thread calls on its own, on a
 * port of one lane; what is NVIDIA's here is where the thread reads the client from and when it
 * first polls for an answer.
 *
 *   dev_client_fixed   the client's fixed part from constant memory: __tether_rpc_client_const,
 *                      a copy of the global's first TETHER_RPC_CLIENT_CONST_SIZE bytes that the
 *                      CUDA plugin writes next to the global.  A call's acquires of host memory
 *                      empty L1, so each read of device memory after one is a trip to L2 (about
 *                      0.25 us on an H200); the constant cache is not emptied by them.
 *   dev_poll_*         the first poll for an answer comes after a delay learnt per port
 *                      (device_wait.h: why and how), kept in dev_wait_state, which only this
 *                      library touches; a port's state is read before the port's lock (whose
 *                      acquire empties L1) and written back after its close.
 *   dev_keep_in_registers  a one-packet request's words are built before the lock; left to the
 *                      compiler, their loads of the caller's bytes sink past the lock, and every
 *                      one is then a read of L2.
 */
#ifndef TETHER_DEVICE_NVPTX_H
#define TETHER_DEVICE_NVPTX_H

#include "device_internal.h"
#include "device_wait.h"

/* The client's fixed part again, in constant memory (written by the CUDA plugin). */
__attribute__((address_space(4))) struct tether_rpc_device_const __tether_rpc_client_const;

static inline void dev_client_fixed(struct tether_rpc_device_const *cfg)
{
    *cfg = *(const __attribute__((
        address_space(4))) struct tether_rpc_device_const *)&__tether_rpc_client_const;
}

static DEV_INLINE void dev_keep_in_registers(uint64_t w[RPC_BUFFER_SIZE / 8])
{
#pragma unroll
    for (uint32_t k = 0; k < RPC_BUFFER_SIZE / 8; k++)
        __asm__ volatile("" : "+l"(w[k]));
}

/* Each port's wait state (device_wait.h); zero at image load. */
static uint16_t dev_wait_state[TETHER_RPC_DEVICE_PORTS_MAX];

/* One call's first poll: the port's wait state, and what the poll found. */
struct dev_poll {
    uint32_t state;
    bool explore;
    bool hit;      /* the first poll found the answer */
    uint64_t took; /* SM cycles the first poll took */
};

/* Busy-waits until about `cycles` SM clock cycles have passed since `t0`, a reading of %clock64
 * (per SM, fine-grained, where %globaltimer may tick in microseconds on some GPUs). */
static inline void dev_spin_since(uint64_t t0, uint64_t cycles)
{
    while (__nvvm_read_ptx_sreg_clock64() - t0 < cycles)
        ;
}

/* Before the port's lock: its wait state (a plain load, kept from sinking past the lock). */
static DEV_INLINE struct dev_poll dev_poll_begin(uint32_t home)
{
    struct dev_poll poll = {0, false, false, 0};
    poll.state = *(volatile uint16_t *)&dev_wait_state[home];
    __asm__ volatile("" : "+r"(poll.state));
    return poll;
}

/* After the request: waits for the answer's head, the first poll after the learnt delay. */
static DEV_INLINE void dev_poll_answer(struct rpc_client *client, rpc_port_t *port,
                                       struct dev_poll *poll)
{
    uint64_t sent = __nvvm_read_ptx_sreg_clock64();
    poll->explore = dev_wait_explores(rpc_port_seq(port));
    uint64_t wait = dev_wait_cycles(poll->state, poll->explore);
    dev_spin_since(sent, wait);
#if defined(TETHER_RPC_PROFILE)
    tether_rpc_profile_delay(wait);
#endif
    uint64_t t0 = __nvvm_read_ptx_sreg_clock64();
    poll->hit = rpc_client_try_recv(client, port, NULL, (void *)0);
    poll->took = __nvvm_read_ptx_sreg_clock64() - t0;
    if (!poll->hit)
        rpc_client_recv(client, port, NULL, (void *)0);
}

/* After the port's close: the port's next wait state. */
static DEV_INLINE void dev_poll_end(const struct dev_poll *poll, uint32_t home)
{
    *(volatile uint16_t *)&dev_wait_state[home] =
        (uint16_t)dev_wait_next(poll->state, poll->explore, poll->hit, poll->took);
}

#endif /* TETHER_DEVICE_NVPTX_H */
