/*
 * omp_rtl_flags.c - the device runtime's configuration globals.
 *
 * clang-16 defines __omp_rtl_debug_kind and friends in every device translation unit, but not
 * under -nogpulib, which Debian needs for amdgcn (no ROCm device libraries).  The device runtime
 * (libomptarget.devicertl.a) references them, so a program built that way defines them once
 * itself, with the values clang would have emitted by default (all 0).
 */
#pragma omp declare target
int __omp_rtl_debug_kind = 0;
int __omp_rtl_assume_teams_oversubscription = 0;
int __omp_rtl_assume_threads_oversubscription = 0;
int __omp_rtl_assume_no_thread_state = 0;
int __omp_rtl_assume_no_nested_parallelism = 0;
#pragma omp end declare target
