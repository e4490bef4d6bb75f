/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * omp_rtl_flags.c - the device runtime's configuration globals.
 *
 * clang-16 defines __omp_rtl_debug_kind and friends in every device translation unit, but not
 * under -nogpulib, which Debian needs for amdgcn (no ROCm device libraries).  The device runtime
 * (libomptarget.devicertl.a) references them, so a program built that way defines them once
 * itself, with the values clang would have emitted by default (all 0).
 *
 * They must be constants, as clang's own are: LTO then folds them into the device runtime.  As
 * plain variables they are not folded, and LLVM 16's AMDGPU backend runs out of registers
 * compiling some kernels (test/conformance/c02_teams.c: "no registers from class available to
 * allocate").
 */
#pragma omp declare target
const int __omp_rtl_debug_kind = 0;
const int __omp_rtl_assume_teams_oversubscription = 0;
const int __omp_rtl_assume_threads_oversubscription = 0;
const int __omp_rtl_assume_no_thread_state = 0;
const int __omp_rtl_assume_no_nested_parallelism = 0;
#pragma omp end declare target
