#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/gpu/run_diag.sh BUNDLE - runs ON the GPU machine: the shapes of gpu_diag (see its
# header) one after another through the CUDA plugin, each under a timeout, then the SASS of the
# diagnostic images when cuobjdump is there.  Output: $OUT/diag.txt (default ./svc-out).
set -uo pipefail
bundle=$(realpath "${1:?usage: run_diag.sh BUNDLE}")
out=${OUT:-$PWD/svc-out}
work=${SVC_WORK:-/tmp/svc-diag}
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
xz -dc "$bundle" | tar -x -C "$work"
exec > >(tee -a "$out/diag.txt") 2>&1
# SVC_RUNTIME: where libomptarget 16 and its libraries are when the bundle has no full lib/.
export LD_LIBRARY_PATH=$work/plugin:$work/lib${SVC_RUNTIME:+:$SVC_RUNTIME} OMP_TARGET_OFFLOAD=MANDATORY
run() {
  echo "== gpu_diag $* ${TETHER_RPC_HEAP_RESERVE:+(reserve $TETHER_RPC_HEAP_RESERVE)}"
  timeout 20 "$work/bin/gpu_diag" "$@" 2>&1 | tail -n 12
  echo "-- status ${PIPESTATUS[0]}"
}
run floats
run repeat 1 40
run repeat 6 30
run lanes 1 32 2
run lanes 1 64 2
run lanes 4 128 2
run heap 1 1 500
run heap 2 1 500
run heap 4 1 500
run heap 1 32 200
run heap 4 64 200
# All threads of a full H100/H200 grid: up to ~16 KiB live each, beyond the default 256 MiB reserve.
TETHER_RPC_HEAP_RESERVE=$((1 << 30)) run heap 132 128 50
for extra in ${DIAG_EXTRA:-}; do
  IFS=, read -r -a a <<<"$extra"
  run "${a[@]}"
done
if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for shape in "repeat 6 30" "heap 1 1 500"; do
    echo "== compute-sanitizer gpu_diag $shape"
    # shellcheck disable=SC2086
    timeout 120 "$cs" --tool memcheck "$work/bin/gpu_diag" $shape 2>&1 | grep -v '^repeat ' | head -n 60
  done
fi
if [ -d "$work/img" ]; then
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  for f in "$work"/img/*.img; do
    "$cuobjdump" -sass "$f" >"$out/$(basename "$f").sass" 2>&1 || echo "cuobjdump failed on $f"
  done
  ls -la "$out"
fi
