#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# check_halo.sh RC NP STEPS EVERY STDOUT STDERR SERVED - judges one mpirun of
# examples/mpi_halo.c from its exit status RC and its combined stdout and stderr.
#
#   RC      mpirun's exit status            NP      ranks
#   STEPS   steps run                       EVERY   PRINT_EVERY given to mpi_halo
#   SERVED  tether:<plugin>  the run had LIBOMPTARGET_INFO=16 and tether's <plugin> plugin
#                            (x86_64, cuda) must have served every rank: NP RPC servers,
#                            each with STEPS/EVERY printf calls
#           any              whichever plugin served it (no check of stderr)
#   PREFIX  (optional) rank:device  the run had TETHER_RPC_PREFIX='[%r:%d] ': every device line
#           must start with "[R:D] ", R and D those the line names
#
# Wants: RC 0; "mpi_halo: PASS (NP ranks"; each rank's summary line once, with 0 wrong cells;
# each rank's device line ("mpi_halo: rank R step S device D: cell ...") exactly once for every
# S in EVERY, 2*EVERY, ... STEPS; no other, repeated or garbled "mpi_halo" output.
# Prints what it found; exit status 0 (pass) or 1 (fail).
set -uo pipefail
rc=${1:?} np=${2:?} steps=${3:?} every=${4:?} out=${5:?} err=${6:?} served=${7:?} prefix=${8:-}
failed=0
fail() { echo "check_halo: FAIL: $*"; failed=1; }
case $prefix in
'' | rank:device) ;;
*) fail "PREFIX must be rank:device or nothing, not '$prefix'" ;;
esac

[ "$rc" -eq 0 ] || fail "mpirun exit status $rc"
grep -q "^mpi_halo: PASS ($np ranks," "$out" || fail "no 'mpi_halo: PASS ($np ranks, ...' line"

# Every line that mentions mpi_halo must be whole: a device line, a rank's summary, or the result.
device_re='mpi_halo: rank [0-9]+ step [0-9]+ device -?[0-9]+: cell [0-9]+ = [0-9.e+-]+$'
if [ -n "$prefix" ]; then
  device_re="^\\[[0-9]+:-?[0-9]+\\] $device_re"
else
  device_re="^$device_re"
fi
summary_re='^mpi_halo: rank [0-9]+ \(pid [0-9]+\): device -?[0-9]+ of [0-9]+ \(node rank [0-9]+\), (host|device) halos, [0-9]+ wrong cells, .*\)$'
result_re='^mpi_halo: (PASS|FAIL) \([0-9]+ ranks, .*\)$'
bad=$(grep -a 'mpi_halo' "$out" | grep -Ev "$device_re|$summary_re|$result_re" | head -3)
[ -z "$bad" ] || fail "garbled or unexpected lines: $bad"

# Device lines: exactly once per rank and printing step, nothing else.
want=$(for ((r = 0; r < np; r++)); do
  for ((s = every; s <= steps; s += every)); do echo "$r $s"; done
done | sort)
got=$(grep -aE "$device_re" "$out" | sed -E 's/^\[[^]]*\] //' | awk '{ print $3, $5 }' | sort)
if [ "$want" != "$got" ]; then
  missing=$(comm -23 <(echo "$want") <(echo "$got") | head -3 | tr '\n' ';')
  extra=$(comm -13 <(echo "$want") <(echo "$got") | head -3 | tr '\n' ';')
  fail "device lines (rank step): missing [$missing], repeated or stray [$extra]"
fi
lines=$(grep -caE "$device_re" "$out")
if [ -n "$prefix" ]; then
  # "[R:D] mpi_halo: rank R step S device D: ...": the prefix names the line's rank and device.
  wrong=$(grep -aE "$device_re" "$out" |
    awk '{ p = substr($1, 2, length($1) - 2); d = $8; sub(/:$/, "", d); if (p != $4 ":" d) print }' |
    head -3)
  [ -z "$wrong" ] || fail "device lines whose prefix names another rank or device: $wrong"
fi

for ((r = 0; r < np; r++)); do
  n=$(grep -caE "^mpi_halo: rank $r \(pid [0-9]+\): .*, 0 wrong cells, " "$out")
  [ "$n" -eq 1 ] || fail "rank $r: $n summary lines with 0 wrong cells, want 1"
done

case $served in
tether:*)
  plugin=${served#tether:}
  calls=$((steps / every))
  servers=$(grep -caE "^tether \($plugin\): device [0-9]+: rpc: [0-9]+ ports" "$err")
  [ "$servers" -eq "$np" ] ||
    fail "$servers RPC servers of tether's $plugin plugin started (LIBOMPTARGET_INFO=16), want $np (one per rank)"
  served_ok=$(grep -aE "^tether \($plugin\): device [0-9]+: rpc: [0-9]+ calls .* $calls printf/write calls" "$err" | grep -c .)
  [ "$served_ok" -eq "$np" ] ||
    fail "$served_ok of $np ranks' RPC servers report $calls printf/write calls"
  ;;
any) ;;
*) fail "SERVED must be tether:<plugin> or any, not '$served'" ;;
esac

if [ $failed -eq 0 ]; then
  by=""
  [ -n "${plugin:-}" ] && by=", served by the $plugin plugin of tether"
  [ -n "$prefix" ] && by="$by, each with its rank's prefix"
  echo "check_halo: PASS ($np ranks, $lines device lines, each once$by)"
fi
exit $failed
