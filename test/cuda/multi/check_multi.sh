#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# check_multi.sh RC STDOUT STDERR - judges one run of multi_gpu (run with LIBOMPTARGET_INFO=16):
#   exit 77  the program skipped (exit 77 and "SKIP: needs 2 GPUs"): fewer than two GPUs
#   exit 0   the program's host checks passed, and
#            - stdout has every "multi-gpu-line dev D stream S line L" that the program's
#              "multi-gpu: expect dev D streams S lines L" lines announce, each exactly once, for
#              two distinct devices, and no other or garbled such line;
#            - stderr has "tether (cuda): device N: rpc: ..." info lines for at least two
#              distinct plugin devices N (one RPC server per device)
#   exit 1   anything else; every reason is printed.
set -uo pipefail
rc=${1:?usage: check_multi.sh RC STDOUT STDERR}
out=${2:?usage: check_multi.sh RC STDOUT STDERR}
err=${3:?usage: check_multi.sh RC STDOUT STDERR}

if [ "$rc" -eq 77 ] && grep -q '^SKIP: needs 2 GPUs' "$out"; then
  grep '^SKIP' "$out"
  exit 77
fi
bad=0
if [ "$rc" -ne 0 ]; then
  echo "check_multi: the program exited $rc"
  bad=1
fi
grep -q '^multi-gpu: host checks passed' "$out" || {
  echo "check_multi: no \"host checks passed\" line"
  bad=1
}

# Every announced line exactly once, nothing else.
awk '
  /^multi-gpu: expect dev [0-9]+ streams [0-9]+ lines [0-9]+$/ {
    if ($4 in streams) { printf "check_multi: device %s announced twice\n", $4; bad = 1 }
    streams[$4] = $6; lines[$4] = $8; ndev++; next
  }
  /multi-gpu-line/ {
    if ($0 !~ /^multi-gpu-line dev [0-9]+ stream [0-9]+ line [0-9]+$/) {
      if (garbled++ < 5) printf "check_multi: garbled line: %s\n", $0
      bad = 1; next
    }
    seen[$3 " " $5 " " $7]++; got[$3]++
  }
  END {
    if (ndev != 2) { printf "check_multi: %d devices announced, want 2\n", ndev; bad = 1 }
    for (d in streams) {
      missing = 0; dup = 0
      for (s = 0; s < streams[d]; s++)
        for (l = 0; l < lines[d]; l++) {
          k = d " " s " " l
          if (!(k in seen)) { if (missing++ < 5) printf "check_multi: missing: dev %s stream %d line %d\n", d, s, l }
          else if (seen[k] > 1) { if (dup++ < 5) printf "check_multi: %d times: dev %s stream %d line %d\n", seen[k], d, s, l }
          delete seen[k]
        }
      printf "check_multi: device %s: %d lines printed, %d expected, %d missing, %d repeated\n", \
        d, got[d] + 0, streams[d] * lines[d], missing, dup
      if (missing || dup) bad = 1
    }
    for (k in seen) {
      if (stray++ < 5) printf "check_multi: unexpected line: dev/stream/line %s\n", k
      bad = 1
    }
    exit bad
  }' "$out" || bad=1

# One RPC server per device: "rpc:" info lines from two distinct plugin devices.
servers=$(sed -n 's/^tether (cuda): device \([0-9][0-9]*\): rpc: .*/\1/p' "$err" | sort -u)
nserv=$(printf '%s' "$servers" | grep -c . || true)
echo "check_multi: RPC servers on plugin devices: $(tr "\n" " " <<<"$servers")($nserv distinct)"
if [ "$nserv" -lt 2 ]; then
  echo "check_multi: want rpc: info lines from 2 distinct devices (was LIBOMPTARGET_INFO=16 set?)"
  bad=1
fi
exit $bad
