/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc_phases_lib.c - the device library's profiling build (TETHER_RPC_PROFILE) for rpc_phases.c:
 * a translation unit of its own (the library's libc names conflict with <stdio.h>).  Its hooks
 * are weak; rpc_phases_prof.c defines the ones that count.
 */
#include <stdint.h>

#if defined(__NVPTX__)
#define TETHER_RPC_PROFILE 1
#include "../../rpc/device/device_lib.c"
#else
#include "../../rpc/device/device_host.c"
#endif
