#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/knobs_test.sh <program dir> <plugin dir> - tether's environment knobs through
# Debian's libomptarget 16 and tether's plugins (all three load; the x86_64 one runs the
# program, offload_printf, whose image has tether's RPC client).
#   - Bad values of many knobs at once (not a number, trailing characters, negative, out of
#     range, not a boolean): the program runs and prints what it must, and each knob gets
#     exactly one warning naming it, its value and the value used, although three plugins read
#     some of them.
#   - The values that used to stop the program at its first region (TETHER_RPC_PORTS=-1 or
#     0x7fffffff, TETHER_RPC_HEAP_RESERVE=-1), each alone.
#   - Good values print nothing.
#   - LIBOMPTARGET_INFO=32 prints transfers without 0x10's lines, and 16 the reverse; the host
#     launch line names no exec mode.
#   - LIBOMPTARGET_DEBUG is LLVM's name of TETHER_DEBUG; TETHER_DEBUG wins when both are set.
set -uo pipefail
bin=$1
plugins=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$plugins OMP_TARGET_OFFLOAD=MANDATORY KMP_TEAMS_THREAD_LIMIT=256
unset TETHER_DEBUG LIBOMPTARGET_DEBUG LIBOMPTARGET_INFO

fail() {
  echo "FAIL: $*"
  sed 's/^/    /' "$work/err"
  exit 1
}

"$bin/offload_printf" expect | sort >"$work/expect"

# run VAR=VALUE...: the program with these settings; its output must be right.
run() {
  env "$@" "$bin/offload_printf" run >"$work/out" 2>"$work/err" || fail "exit status $? with $*"
  sort "$work/out" | cmp -s - "$work/expect" || fail "wrong output with $*"
}

# once KNOB VALUE USED: exactly one line warns about KNOB, naming VALUE and USED.
once() {
  local n
  n=$(grep -c "^tether: warning: $1=" "$work/err")
  [ "$n" = 1 ] || fail "$n warnings about $1 (want 1)"
  grep -qF "tether: warning: $1=$2 " "$work/err" || fail "the warning does not name $1=$2"
  grep "^tether: warning: $1=" "$work/err" | grep -qF "; using $3" ||
    fail "the warning about $1 does not say it uses $3"
}

# ---- many bad values at once -----------------------------------------------------------------
bad=(
  LIBOMPTARGET_INFO=0x10zz                   # libomptarget reads 0; so does tether, with a word
  TETHER_DEBUG=maybe
  LIBOMPTARGET_SHARED_MEMORY_SIZE=-5
  LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=4MiB
  TETHER_ALLOC_CACHE_BYTES=-1
  TETHER_RPC_PORTS=-1
  TETHER_RPC_HEAP_RESERVE=-1
  TETHER_RPC_TRACE=sometimes
  TETHER_RPC_TIMING=2x
  TETHER_RPC_CPUS=everywhere
  TETHER_WAIT=sleepy                         # read by the plugins and by each RPC server thread
  TETHER_X86_64_DEVICES=0
)
run "${bad[@]}"
once LIBOMPTARGET_INFO 0x10zz 0
once TETHER_DEBUG maybe off
once LIBOMPTARGET_SHARED_MEMORY_SIZE -5 0
once LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD 4MiB 4194304
once TETHER_ALLOC_CACHE_BYTES -1 268435456
once TETHER_RPC_PORTS -1 ""
once TETHER_RPC_HEAP_RESERVE -1 0
once TETHER_RPC_TRACE sometimes off
once TETHER_RPC_TIMING 2x off
once TETHER_RPC_CPUS everywhere "the placement tether chooses"
once TETHER_WAIT sleepy adaptive
once TETHER_X86_64_DEVICES 0 4
n=$(grep -c "^tether: warning:" "$work/err")
[ "$n" = "${#bad[@]}" ] || fail "$n warnings for ${#bad[@]} bad knobs"
if grep -q "debug:\|rpc timing\|port .*: call" "$work/err"; then
  fail "a bad value turned a diagnostic on"
fi
echo "ok: ${#bad[@]} bad knobs, one warning each, program correct"

# ---- the values that used to stop the program ------------------------------------------------
for setting in TETHER_RPC_PORTS=-1 TETHER_RPC_PORTS=0x7fffffff TETHER_RPC_PORTS=0 \
               TETHER_RPC_HEAP_RESERVE=-1; do
  run "$setting"
  once "${setting%%=*}" "${setting#*=}" ""
done
echo "ok: TETHER_RPC_PORTS=-1/0x7fffffff/0 and TETHER_RPC_HEAP_RESERVE=-1 run, with a warning"

# ---- good values are silent ------------------------------------------------------------------
run TETHER_RPC_PORTS=0x40 TETHER_RPC_HEAP_RESERVE=0 LIBOMPTARGET_INFO=0 TETHER_RPC_TRACE=off \
    TETHER_ALLOC_CACHE_BYTES=1048576 TETHER_X86_64_DEVICES=2 LIBOMPTARGET_SHARED_MEMORY_SIZE=
if grep -q "tether" "$work/err"; then fail "good values printed something"; fi
echo "ok: good values print nothing"

# ---- LIBOMPTARGET_INFO bits each on its own ---------------------------------------------------
run LIBOMPTARGET_INFO=32
grep -q "^tether (x86_64): device 0: device to host " "$work/err" || fail "LIBOMPTARGET_INFO=32 printed no transfer"
if grep -q "launching kernel\|initialised" "$work/err"; then fail "LIBOMPTARGET_INFO=32 printed plugin lines"; fi
run LIBOMPTARGET_INFO=16
grep -q "^tether (x86_64): device 0: launching kernel __omp_offloading_.* on the host, " "$work/err" ||
  fail "LIBOMPTARGET_INFO=16 printed no launch line"
if grep -q "bytes, host\|mode" "$work/err"; then fail "LIBOMPTARGET_INFO=16 printed transfers or an exec mode"; fi
echo "ok: LIBOMPTARGET_INFO=32 and =16 each print their own lines"

# ---- LIBOMPTARGET_DEBUG ----------------------------------------------------------------------
run LIBOMPTARGET_DEBUG=1
grep -q "^tether (x86_64): debug: " "$work/err" || fail "LIBOMPTARGET_DEBUG=1 printed no debug line"
run TETHER_DEBUG=0 LIBOMPTARGET_DEBUG=1
if grep -q "debug: " "$work/err"; then fail "TETHER_DEBUG=0 did not win over LIBOMPTARGET_DEBUG=1"; fi
grep -qF "tether: warning: TETHER_DEBUG=0 and LIBOMPTARGET_DEBUG=1 are both set; TETHER_DEBUG wins" \
  "$work/err" || fail "no word that TETHER_DEBUG wins"
[ "$(grep -c "both set" "$work/err")" = 1 ] || fail "the precedence warning is not printed once"
run TETHER_DEBUG=1 LIBOMPTARGET_DEBUG=1
grep -q "^tether (x86_64): debug: " "$work/err" || fail "TETHER_DEBUG=1 printed no debug line"
if grep -q "both set" "$work/err"; then fail "warned although both say the same"; fi
echo "ok: LIBOMPTARGET_DEBUG is TETHER_DEBUG's LLVM name; TETHER_DEBUG wins"
