#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# device-compare.sh NATIVE LLVM16 [TETHER] - line up the figures of the GPU benchmarks.
#
# Each input holds "fig <name> <value> <unit>" lines (test/cuda/bench_common.h) from one
# configuration measured in the same run: CUDA native (the limit), the OpenMP programs through
# LLVM 16's own CUDA plugin (the baseline to beat), and through tether's plugin.  Prints one line
# per figure and configuration:
#     <name>.<config>: <value> <unit> (<ratio>x vs native[, <ratio>x vs llvm16])
# ratio = value / baseline value: above 1 is slower for times, faster for rates (GB/s, /s).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 NATIVE LLVM16 [TETHER]" >&2; exit 2; }
for f in "$@"; do
  [ -f "$f" ] || { echo "device-compare: $f is missing" >&2; exit 1; }
done
# Portable awk (mawk on Ubuntu, gawk on Debian): configurations are told apart by FILENAME.
awk -v f1="$1" -v f2="$2" -v f3="${3:-}" '
  BEGIN { n = 0 }
  FNR == 1 { cfg = (FILENAME == f1) ? "native" : (FILENAME == f2) ? "llvm16" : "tether" }
  $1 == "fig" && NF >= 4 {
    key = $2
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    val[key, cfg] = $3; unit[key] = $4; has[key, cfg] = 1
  }
  function ratio(a, b) { return (b + 0 == 0) ? "n/a" : sprintf("%.2f", a / b) }
  END {
    split("native llvm16 tether", cfgs, " ")
    for (i = 0; i < n; i++) {
      k = order[i]
      for (c = 1; c <= 3; c++) {
        cf = cfgs[c]
        if (!((k, cf) in has)) continue
        line = sprintf("%s.%s: %s %s", k, cf, val[k, cf], unit[k])
        if (cf == "native")
          line = line " (1.00x vs native"
        else if ((k, "native") in has)
          line = line sprintf(" (%sx vs native", ratio(val[k, cf], val[k, "native"]))
        else
          line = line " (no native figure"
        if (cf == "tether" && ((k, "llvm16") in has))
          line = line sprintf(", %sx vs llvm16", ratio(val[k, cf], val[k, "llvm16"]))
        print line ")"
      }
    }
  }
' "$@"
