#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# multi_build_test.sh ROOT CLANG CUDA_PATH DEVICE_LIB_DIR WORKDIR PLUGIN_DIR FAKE_SIM_DIR
# CPU-side ctest of the two-GPU acceptance test (no GPU needed):
#   1. multi_gpu.c builds for nvptx64 sm_90 with clang-16 and -ltether-device (-Werror), and the
#      device image carries the RPC client (__tether_rpc_client);
#   2. on one simulated GPU (test/cuda's fake libcuda) it skips: exit 77, "SKIP: needs 2 GPUs",
#      and check_multi.sh reports SKIP (77), never PASS;
#   3. check_multi.sh passes a complete two-device run and fails a missing, a repeated, a garbled
#      and an unexpected line, a failed host check, and a single RPC server.
# Exits 77 (ctest SKIP_RETURN_CODE) when CUDA_PATH has no ptxas.
set -uo pipefail
root=${1:?} clang=${2:?} cuda=${3:?} devlib=${4:?} work=${5:?} plugins=${6:?} sim=${7:?}
here=$root/test/cuda/multi
check=$here/check_multi.sh
if [ ! -x "$cuda/bin/ptxas" ]; then
  echo "SKIP: no ptxas in $cuda/bin"
  exit 77
fi
mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# 1. Build.
"$clang" -O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda \
  -march=sm_90 "--cuda-path=$cuda" -Wno-unknown-cuda-version -Wall -Wextra -Werror \
  -I"$root/include" -include "$root/include/tether/device_libc.h" "$here/multi_gpu.c" -L"$devlib" -ltether-device -o "$work/multi_gpu" \
  2>"$work/build.txt"
rc=$?
grep -v 'CUDA version is newer' "$work/build.txt"
[ $rc -eq 0 ] || { echo "FAIL: clang-16 multi_gpu.c (exit $rc)"; exit 1; }
grep -qa __tether_rpc_client "$work/multi_gpu" || fail "no RPC client in the image"

# 2. One simulated GPU: the program and the checker both say SKIP.
LD_LIBRARY_PATH=$sim:$plugins LIBOMPTARGET_INFO=16 "$work/multi_gpu" \
  >"$work/sim.out" 2>"$work/sim.err"
rc=$?
cat "$work/sim.out"
[ $rc -eq 77 ] || fail "one simulated GPU: exit $rc, want 77"
grep -q '^multi-gpu: OpenMP device 0: tether cuda device 0 of 1' "$work/sim.out" ||
  fail "the simulated GPU was not found through tether_device_query"
bash "$check" "$rc" "$work/sim.out" "$work/sim.err" >/dev/null
[ $? -eq 77 ] || fail "check_multi.sh did not report SKIP for one GPU"
bash "$check" 0 "$work/sim.out" "$work/sim.err" >/dev/null && fail "check_multi.sh passed a skip"

# 3. The checker on made-up runs: devices 0 and 3, 3 streams x 2 lines each.
good() {
  echo "multi-gpu: expect dev 0 streams 3 lines 2"
  echo "multi-gpu: expect dev 3 streams 3 lines 2"
  for l in 0 1; do for s in 2 0 1; do for d in 3 0; do
    echo "multi-gpu-line dev $d stream $s line $l"
  done; done; done
  echo "multi-gpu: host checks passed (devices 0 and 3, 3 streams x 2 lines each)"
}
rpc() {
  echo "tether (cuda): device 0: initialised"
  echo "tether (cuda): device 0: rpc: 16384 ports x 1 lanes (3104 KiB shared), thread"
  [ "${1:-2}" = 1 ] || echo "tether (cuda): device 1: rpc: 16384 ports x 1 lanes (3104 KiB shared), thread"
}
expect() { # WANT NAME RC: check_multi.sh on $work/c.out, $work/c.err
  bash "$check" "$3" "$work/c.out" "$work/c.err" >"$work/c.txt"
  local got=$?
  [ $got -eq "$1" ] || { fail "checker, $2: exit $got, want $1"; sed 's/^/    /' "$work/c.txt"; }
}
good >"$work/c.out"; rpc >"$work/c.err"
expect 0 "complete run" 0
expect 1 "program failed" 1
rpc 1 >"$work/c.err"
expect 1 "one RPC server" 0
rpc >"$work/c.err"
good | grep -v 'dev 3 stream 1 line 1$' >"$work/c.out"
expect 1 "missing line" 0
{ good; echo "multi-gpu-line dev 0 stream 2 line 0"; } >"$work/c.out"
expect 1 "repeated line" 0
{ good; echo "multi-gpu-line dev 0 stream 3 line 0"; } >"$work/c.out"
expect 1 "unexpected stream" 0
{ good; echo "multi-gpu-line dev 0 stremulti-gpu-line dev 3 stream 0 line 0"; } >"$work/c.out"
expect 1 "garbled line" 0
good | grep -v 'host checks passed' >"$work/c.out"
expect 1 "no host-checks line" 0
good | grep -v 'expect dev 3' | grep -v 'dev 3 stream' >"$work/c.out"
expect 1 "one device" 0

[ $failed -eq 0 ] && echo "multi_build_test: PASS"
exit $failed
