#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/gpu/run_gpu.sh BUNDLE - runs ON the GPU machine: unpacks the bundle from
# make_gpu_bundle.sh and runs the services cases on the GPU through libomptarget 16 and the
# test CUDA plugin, then the server-thread benchmark.  Results go to $OUT (default ./svc-out).
set -uo pipefail
bundle=$(realpath "${1:?usage: run_gpu.sh BUNDLE}")
out=${OUT:-$PWD/svc-out}
work=${SVC_WORK:-/tmp/svc-gpu}
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
xz -dc "$bundle" | tar -x -C "$work"
# SVC_OVERLAY: a folder laid over the unpacked bundle (rebuilt programs or plugin).
if [ -n "${SVC_OVERLAY:-}" ]; then cp -r "$SVC_OVERLAY"/. "$work"/; fi
exec > >(tee -a "$out/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cpus: $(nproc), load: $(cat /proc/loadavg)"
# SVC_RUNTIME: where libomptarget 16 and its libraries are when the bundle has no full lib/.
export SVC_LIBS=$work/lib${SVC_RUNTIME:+:$SVC_RUNTIME} SVC_GPU=1
failed=0
for c in ${SVC_CASES:-printf heap heap-checks user exit abort bad}; do
  echo "== $c"
  if timeout 60 "$work/run_offload.sh" "$c" "$work/bin" "$work/plugin" "$work/w-$c"; then
    echo "ok $c"
  else
    echo "FAILED $c"
    failed=1
    for f in "$work/w-$c"/*.txt; do echo "-- $f"; head -c 2000 "$f"; echo; done
  fi
done
if [ -z "${SVC_SKIP_BENCH:-}" ]; then
  echo "== bench_rpc_thread"
  LD_LIBRARY_PATH=$SVC_LIBS "$work/bin/bench_rpc_thread" | tee "$out/bench_rpc_thread.txt"
fi
exit $failed
