/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_lib.c - the device library as one translation unit per
 * target.  clang-16's linker wrapper pulls images out of an archive only for
 * the symbols the program itself needs and does not follow the references
 * between them, so the library is one object per target: the parts below
 * refer to each other freely.
 */
#include "device_client.c"
#include "device_stdio.c"
#include "device_malloc.c"
#include "device_libc.c"
