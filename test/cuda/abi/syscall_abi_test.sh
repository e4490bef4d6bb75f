#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# syscall_abi_test.sh ROOT CLANG CUDA_PATH DEVICE_LIB_DIR WORKDIR PLUGIN_DIR FAKE_SIM_DIR
# CPU-side ctest (test/cuda's simulated GPU), syscall_probe.c for sm_90:
#   1. with own_malloc.c, a separately compiled global malloc/free: tether's CUDA plugin refuses
#      the image, naming -foffload-lto;
#   2. with libtether-device.a but without -foffload-lto (the library's definitions stay global,
#      the program's calls use the system-call convention): refused the same way;
#   3. with libtether-device.a and -foffload-lto: no such refusal.
# Exits 77 (ctest SKIP_RETURN_CODE) when CUDA_PATH has no ptxas.
set -uo pipefail
root=${1:?} clang=${2:?} cuda=${3:?} devlib=${4:?} work=${5:?} plugins=${6:?} sim=${7:?}
if [ ! -x "$cuda/bin/ptxas" ]; then
  echo "SKIP: no ptxas in $cuda/bin"
  exit 77
fi
mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
flags=(-O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
  -march=sm_90 "--cuda-path=$cuda" -Wno-unknown-cuda-version -Wall -Werror)
for mode in plain libplain lto; do
  extra=("$root/test/cuda/abi/own_malloc.c")
  [ $mode = libplain ] && extra=(-L"$devlib" -ltether-device)
  [ $mode = lto ] && extra=(-foffload-lto -L"$devlib" -ltether-device)
  TMPDIR=$work "$clang" "${flags[@]}" "$root/test/cuda/abi/syscall_probe.c" "${extra[@]}" \
    -o "$work/probe-$mode" 2>"$work/build-$mode.txt"
  rc=$?
  grep -v 'CUDA version is newer' "$work/build-$mode.txt"
  [ $rc -eq 0 ] || { fail "clang-16 syscall_probe.c ($mode, exit $rc)"; continue; }
  LD_LIBRARY_PATH=$sim:$plugins OMP_TARGET_OFFLOAD=MANDATORY "$work/probe-$mode" \
    >"$work/run-$mode.out" 2>"$work/run-$mode.err"
  echo "$mode: exit $?"
  sed 's/^/    /' "$work/run-$mode.err" | head -5
  if grep -q 'build and link the program with -foffload-lto' "$work/run-$mode.err"; then
    [ $mode != lto ] || fail "the -foffload-lto image was refused"
  else
    [ $mode = lto ] || fail "the $mode image (global malloc/free) was not refused"
  fi
done
[ $failed = 0 ] && echo "PASS: a global malloc/free (own or libtether-device.a without LTO) is refused; the -foffload-lto image passes the check"
exit $failed
