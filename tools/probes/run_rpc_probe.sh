#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# run_rpc_probe.sh BUNDLE [ROUNDS [PLUGIN_DIR...]] - on the GPU machine: the one-packet round trip
# against the raw pinned ping-pong, ROUNDS times in alternation (each round one pingpong.cu run,
# then test/cuda/omp/rpc.c through each PLUGIN_DIR, default the bundle's plugins-tether), each
# round's ratios, then one run with TETHER_RPC_TIMING (the server's side of a call), then every
# rpc_phases binary named in RPC_PHASES (space-separated paths, run with `0`).
# Unpacks the bundle with scripts/device-run.sh's hello step first.  Figures only; no verdicts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:?usage: run_rpc_probe.sh BUNDLE [ROUNDS [PLUGIN_DIR...]]}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
work=${TETHER_DEVICE_WORK:-/tmp/tether-device}
bash "$root/scripts/device-run.sh" "$bundle" hello >/tmp/rpc-probe-hello.log 2>&1 ||
  { tail -20 /tmp/rpc-probe-hello.log; exit 1; }
plugins=("$@")
[ ${#plugins[@]} -gt 0 ] || plugins=("$work/plugins-tether")
nvcc -O2 -arch=sm_90 -o /tmp/rpc-probe-pingpong "$root/test/cuda/native/pingpong.cu" -lcuda || exit 1
fig() { sed -n "s/^fig $1 \([0-9.]*\).*/\1/p" | head -1; }
run_rpc() { LD_LIBRARY_PATH="$1:$work/lib" timeout 60 "$work/bin/omp-rpc/rpc"; }
ratios=$(mktemp)
for r in $(seq "$rounds"); do
  out=$(timeout 60 /tmp/rpc-probe-pingpong)
  host=$(fig pingpong <<<"$out")
  gpu=$(fig pingpong_gpu <<<"$out")
  line="round $r: raw ping-pong $host us (host starts), $gpu us (GPU starts)"
  for p in "${plugins[@]}"; do
    t=$(run_rpc "$p" | fig pingpong)
    line+="; $(basename "$p") $t us = $(awk -v a="$t" -v b="$host" 'BEGIN{printf "%.2fx", a/b}')"
    echo "$(basename "$p") $t $host" >>"$ratios"
  done
  echo "rpc-probe: $line"
done
# Per plugin: the median round trip, the median ratio, and how many rounds were at most 1.5x.
for p in "${plugins[@]}"; do
  n=$(basename "$p")
  t=$(awk -v n="$n" '$1 == n { print $2 }' "$ratios" | sort -n)
  r=$(awk -v n="$n" '$1 == n { printf "%.4f\n", $2 / $3 }' "$ratios" | sort -n)
  k=$(wc -l <<<"$t")
  m=$(((k + 1) / 2))
  ok=$(awk '$1 <= 1.5' <<<"$r" | wc -l)
  echo "rpc-probe: $n: median $(sed -n "${m}p" <<<"$t") us, median ratio $(sed -n "${m}p" <<<"$r")x," \
    "$ok of $k rounds at most 1.5x"
done
rm -f "$ratios"
for p in "${plugins[@]}"; do
  echo "rpc-probe: TETHER_RPC_TIMING through $(basename "$p"):"
  LD_LIBRARY_PATH="$p:$work/lib" TETHER_RPC_TIMING=1 LIBOMPTARGET_INFO=16 timeout 60 \
    "$work/bin/omp-rpc/rpc" 2>&1 | grep -E "^fig|rpc timing" | sed 's/^/rpc-probe:   /'
done
for b in ${RPC_PHASES:-}; do
  echo "rpc-probe: $b"
  LD_LIBRARY_PATH="${plugins[0]}:$work/lib" timeout 120 "$b" 0 | sed 's/^/rpc-probe:   /'
done
