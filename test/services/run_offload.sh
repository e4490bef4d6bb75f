#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/run_offload.sh - runs one x86_64-offload services program through
# libomptarget 16 and checks its output.
#
#   run_offload.sh <case> <program dir> <plugin dir> <work dir>
#
# <plugin dir> goes first on LD_LIBRARY_PATH, so libomptarget loads the tether
# host plugin from there; "llvm" instead runs with Debian's own plugin (no RPC
# server: the device library falls back to libc), as a control.
# Environment: SVC_LIBS, folders appended to LD_LIBRARY_PATH (the GPU machine's
# bundled Debian runtime); SVC_GPU=1 for programs built for a GPU (no fprintf
# in GPU code: the bad case expects only the fputs line on stderr).
set -euo pipefail
case_=$1
bin=$2
plugins=$3
work=$4
mkdir -p "$work"
if [ "$plugins" = llvm ]; then
  export LD_LIBRARY_PATH=/usr/lib/llvm-16/lib
else
  export LD_LIBRARY_PATH=$plugins
fi
if [ -n "${SVC_LIBS:-}" ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$SVC_LIBS
fi
export OMP_TARGET_OFFLOAD=MANDATORY
# Host teams x threads beyond the core count (2 cores in CI): libomp caps them otherwise.
export KMP_TEAMS_THREAD_LIMIT=256

fail() {
  echo "FAIL ($case_): $*" >&2
  exit 1
}

# Every "T<team>.<thread> n<k>" line in $1 must appear in $2 and vice versa,
# each thread's lines in order, the host line last.
check_printf() {
  local exp=$1 out=$2
  [ "$(tail -n 1 "$out")" = "host after the target region" ] ||
    fail "the host line is not last: $(tail -n 2 "$out" | head -c 300)"
  sort "$exp" > "$exp.sorted"
  sort "$out" > "$out.sorted"
  if ! cmp -s "$exp.sorted" "$out.sorted"; then
    diff "$exp.sorted" "$out.sorted" | head -20 >&2
    fail "device output differs from the host printf's"
  fi
  awk '/^T[0-9]+\.[0-9]+ n[0-9]+ / {
         key = $1; n = substr($2, 2) + 0
         if ((key in last) && n != last[key] + 1) { print "order: " $0; bad = 1 }
         last[key] = n
       }
       END { exit bad }' "$out" || fail "a thread's lines are out of order"
  echo "$(wc -l < "$out") lines match the host printf, in order"
}

case $case_ in
printf)
  "$bin/offload_printf" expect > "$work/expect.txt"
  "$bin/offload_printf" run > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(head -c 500 "$work/err.txt")"
  check_printf "$work/expect.txt" "$work/out.txt"
  ;;
printf-control)
  "$bin/offload_printf" expect > "$work/expect.txt"
  "$bin/offload_printf" run-any > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(head -c 500 "$work/err.txt")"
  check_printf "$work/expect.txt" "$work/out.txt"
  ;;
heap | user)
  # user: with LIBOMPTARGET_INFO's plugin bit, so the plugin logs its RPC counts at shutdown,
  # with TETHER_RPC_TIMING, so that a profiling build (SVC_PROFILE=1: -DTETHER_RPC_PROFILE=ON)
  # also logs the server's time per call and any other build says once that it does not time
  # calls, and with the server thread placed on core 0 by TETHER_RPC_CPUS.
  info=0 timing= cpus=
  [ "$case_" = user ] && info=16 timing=1 cpus=0
  LIBOMPTARGET_INFO=$info TETHER_RPC_TIMING=$timing TETHER_RPC_CPUS=$cpus \
    "$bin/offload_$case_" > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(cat "$work/out.txt") $(head -c 500 "$work/err.txt")"
  cat "$work/out.txt"
  if [ "$case_" = heap ] && grep -q "^tether: " "$work/err.txt"; then
    fail "the device heap complained: $(grep "^tether: " "$work/err.txt" | sort | uniq -c | head -5)"
  fi
  if [ "$case_" = user ]; then
    n=$(grep -c "no handler for RPC opcode 0x8101" "$work/err.txt" || true)
    [ "$n" = 1 ] || fail "want one diagnostic for opcode 0x8101, got $n: $(cat "$work/err.txt")"
    stats=$(grep -E "^tether \([a-z0-9_]+\): device [0-9]+: rpc: [0-9]+ calls \([1-9][0-9]* answered inline, [0-9]+ of them at once on a hot port\)" "$work/err.txt" | head -1)
    [ -n "$stats" ] || fail "no RPC counts with inline answers in the plugin's shutdown log: $(grep "rpc:" "$work/err.txt" | head -3)"
    echo "$stats"
    timing=$(grep -E "^tether \([a-z0-9_]+\): device [0-9]+: rpc timing: [1-9][0-9]* ns per call from open to close; [0-9]+ calls followed" "$work/err.txt" | head -1 || true)
    no_timing=$(grep -c "TETHER_RPC_TIMING is set, but this build of tether does not time RPC calls: configure it with -DTETHER_RPC_PROFILE=ON" "$work/err.txt" || true)
    if [ "${SVC_PROFILE:-0}" = 1 ]; then
      [ -n "$timing" ] || fail "no RPC timing line with TETHER_RPC_TIMING set: $(grep "rpc" "$work/err.txt" | head -3)"
      [ "$no_timing" = 0 ] || fail "a profiling build says it does not time calls"
      echo "$timing"
    else
      [ -z "$timing" ] || fail "an RPC timing line from a build without profiling: $timing"
      [ "$no_timing" = 1 ] ||
        fail "want one warning that TETHER_RPC_TIMING needs -DTETHER_RPC_PROFILE=ON, got $no_timing: $(grep "TETHER_RPC_TIMING" "$work/err.txt" | head -3)"
      echo "TETHER_RPC_TIMING without profiling: one warning naming -DTETHER_RPC_PROFILE=ON"
    fi
    grep -q "rpc: .*thread on cores 0 (TETHER_RPC_CPUS)" "$work/err.txt" ||
      fail "TETHER_RPC_CPUS=0 did not place the server thread: $(grep "rpc:" "$work/err.txt" | head -3)"
  fi
  ;;
idle)
  # A region quiet for a second, then calls (offload_idle.c checks the answers and that the
  # server thread used under 5% of a core meanwhile); LIBOMPTARGET_INFO=16's line at exit gives
  # the thread's CPU time and the calls it served.
  LIBOMPTARGET_INFO=16 "$bin/offload_idle" > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(cat "$work/out.txt") $(head -c 500 "$work/err.txt")"
  cat "$work/out.txt"
  line=$(grep -E "^tether \(x86_64\): device 0: rpc: server thread tether-rpc0: [0-9]+\.[0-9] ms of CPU in [0-9]+\.[0-9]{2} s \([0-9]+\.[0-9]% of a core\), 101 calls served$" "$work/err.txt" || true)
  [ -n "$line" ] || fail "no line with the server thread's CPU time and 101 calls at exit: $(grep "rpc" "$work/err.txt" | head -5)"
  echo "$line"
  ;;
heap-checks)
  # Every report the program expects (its "expect: " lines), each once, and nothing else.
  "$bin/offload_heap_checks" > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(grep -v '^expect: ' "$work/out.txt") $(head -c 500 "$work/err.txt")"
  grep "^heap checks: " "$work/out.txt"
  sed -n 's/^expect: //p' "$work/out.txt" | sort > "$work/expect.txt"
  sort "$work/err.txt" > "$work/said.txt"
  cmp -s "$work/expect.txt" "$work/said.txt" || {
    diff "$work/expect.txt" "$work/said.txt" | head -20 >&2
    fail "the heap's reports on stderr differ from the expected ones"
  }
  echo "$(wc -l < "$work/said.txt") reports on stderr, each once with its address"
  ;;
exit)
  set +e
  "$bin/offload_exit" exit > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  [ $rc = 3 ] || fail "exit status $rc, want 3: $(cat "$work/err.txt")"
  printf 'host before the target region\ndevice line before exit\n' | cmp -s - "$work/out.txt" ||
    fail "output: $(cat "$work/out.txt")"
  echo "exit(3) in a target region: status 3, output complete"
  ;;
abort)
  set +e
  "$bin/offload_exit" abort > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  [ $rc = 134 ] || fail "exit status $rc, want 134 (SIGABRT): $(cat "$work/err.txt")"
  grep -q "device line before abort" "$work/out.txt" || fail "output: $(cat "$work/out.txt")"
  grep -q "the device called abort()" "$work/err.txt" || fail "stderr: $(cat "$work/err.txt")"
  echo "abort() in a target region: SIGABRT, output complete"
  ;;
bad)
  "$bin/offload_bad" > "$work/out.txt" 2> "$work/err.txt" || fail "exit status $?"
  wide=$(printf '%4095s' '')
  {
    echo 'bad1 [<bad %y>] [5]'
    echo "bad2 [${wide}7]"
    echo 'bad3 [(null)] []'
    echo 'bad4 [1] [%]'
    echo 'bad5 [1.000000] [2] [3]'
    echo 'bad6 [<bad %1$d: numbered and unnumbered arguments mixed>] [<bad %d: numbered and unnumbered arguments mixed>]'
    echo 'puts line'
    echo 'fwrite line'
  } > "$work/expect.txt"
  cmp -s "$work/expect.txt" "$work/out.txt" || {
    diff "$work/expect.txt" "$work/out.txt" | cut -c 1-200 >&2
    fail "stdout differs"
  }
  if [ -z "${SVC_GPU:-}" ]; then
    printf 'fputs to stderr\nfprintf to stderr 42\n' | cmp -s - "$work/err.txt" ||
      fail "stderr: $(cat "$work/err.txt")"
  else # no fprintf on a GPU
    printf 'fputs to stderr\n' | cmp -s - "$work/err.txt" || fail "stderr: $(cat "$work/err.txt")"
  fi
  if [ -n "${SVC_GPU:-}" ]; then
    echo "bad conversions print markers; puts/fputs/fwrite reach both streams"
  else
    echo "bad conversions print markers; puts/fputs/fwrite/fprintf reach both streams"
  fi
  ;;
prefix)
  # TETHER_RPC_PREFIX on the lines of offload_prefix (its opening comment lists them), from
  # device 0 and device 1: unset, with each rank variable of the launchers, and with unknown
  # conversions, each said once and printed as written.
  export TETHER_X86_64_DEVICES=2
  launch_vars=(OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK SLURM_PROCID TETHER_RPC_PREFIX)
  lines() { # lines NAME P0 P1 VAR=VALUE...: run with the VARs, want prefix P0 on device 0's lines
    local name=$1 p0=$2 p1=$3 p l
    shift 3
    env "${launch_vars[@]/#/-u}" "$@" "$bin/offload_prefix" lines > "$work/$name.out" \
      2> "$work/$name.err" || fail "$name: exit status $?: $(head -c 500 "$work/$name.err")"
    for p in "$p0" "$p1"; do
      for l in one two "partial continued" "puts line" fw "" "after empty" "100%"; do
        printf '%s%s\n' "$p" "$l"
      done
      printf '%scut%s by it\n' "$p" "$p" # output to stderr came between "cut" and " by it"
    done > "$work/$name.out.want"
    printf '%sno newline at the end' "$p1" >> "$work/$name.out.want"
    for p in "$p0" "$p1"; do
      for l in "err one" "err two" "fprintf 7" "other stream"; do printf '%s%s\n' "$p" "$l"; done
    done > "$work/$name.err.want"
    cmp -s "$work/$name.out.want" "$work/$name.out" || {
      diff "$work/$name.out.want" "$work/$name.out" | head -20 >&2
      fail "$name: stdout differs"
    }
    grep -v '^tether: warning: ' "$work/$name.err" | cmp -s "$work/$name.err.want" - || {
      grep -v '^tether: warning: ' "$work/$name.err" | diff "$work/$name.err.want" - | head -20 >&2
      fail "$name: stderr differs"
    }
  }
  lines unset "" ""
  ! grep -q '^tether' "$work/unset.err" ||
    fail "unset: tether said something: $(grep '^tether' "$work/unset.err")"
  lines ompi "[3:0] " "[3:1] " "TETHER_RPC_PREFIX=[%r:%d] " OMPI_COMM_WORLD_RANK=3 PMI_RANK=9 \
    PMIX_RANK=9 SLURM_PROCID=9
  lines pmi "5/0%|" "5/1%|" "TETHER_RPC_PREFIX=%r/%d%%|" PMI_RANK=5 PMIX_RANK=9 SLURM_PROCID=9
  lines pmix "6 " "6 " "TETHER_RPC_PREFIX=%r " PMIX_RANK=6 SLURM_PROCID=9
  lines slurm "r7 " "r7 " "TETHER_RPC_PREFIX=r%r " OMPI_COMM_WORLD_RANK=x SLURM_PROCID=7
  lines none "-:0 " "-:1 " "TETHER_RPC_PREFIX=%r:%d "
  lines unknown "%q<0>%" "%q<1>%" "TETHER_RPC_PREFIX=%q<%d>%"
  grep '^tether: ' "$work/unknown.err" > "$work/unknown.said"
  printf '%s\n' "tether: warning: TETHER_RPC_PREFIX=%q<%d>%: unknown %q, printed as it is (known: %r the MPI rank, %d the device, %% a %)" |
    cmp -s - "$work/unknown.said" || fail "unknown: want one warning naming %q, got: $(cat "$work/unknown.said")"
  lines end "0%" "1%" "TETHER_RPC_PREFIX=%d%"
  grep -c '^tether: warning: TETHER_RPC_PREFIX=%d%: a % at the end, printed as it is' \
    "$work/end.err" | grep -qx 1 || fail "end: want one warning about the % at the end: $(grep '^tether' "$work/end.err")"
  x255=$(printf 'x%.0s' {1..255})
  lines long "${x255}0" "${x255}1" "TETHER_RPC_PREFIX=${x255}%dyy"
  grep -c '^tether: warning: TETHER_RPC_PREFIX=x*%dyy expands to more than 256 bytes: only the first 256 are used$' \
    "$work/long.err" | grep -qx 1 || fail "long: want one warning about the length: $(grep '^tether' "$work/long.err")"
  echo "each device line prefixed once with its rank (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK," \
       "SLURM_PROCID, none) and device; unknown conversions printed and said once; a prefix" \
       "over 256 bytes cut and said once"
  ;;
printf-big)
  # printf output over 4 MiB (a string of 80000 lines; one line of 1100 conversions of width
  # 4096) written whole, with and without a prefix, and printf's return values.
  "$bin/offload_prefix" expect-big > "$work/want.out" 2> "$work/want.err"
  for prefix in "" "<%r> "; do
    TETHER_RPC_PREFIX=$prefix SLURM_PROCID=4 "$bin/offload_prefix" big > "$work/out.txt" \
      2> "$work/err.txt" || fail "exit status $?: $(head -c 500 "$work/err.txt")"
    want=$work/want.out
    if [ -n "$prefix" ]; then
      sed 's/^/<4> /' "$work/want.out" > "$work/want-prefixed.out"
      want=$work/want-prefixed.out
    fi
    cmp "$want" "$work/out.txt" >&2 ||
      fail "prefix '$prefix': stdout differs: $(stat -c %s "$work/out.txt") bytes, want $(stat -c %s "$want")"
    cmp -s "$work/want.err" "$work/err.txt" ||
      fail "prefix '$prefix': stderr $(head -c 300 "$work/err.txt"), want $(cat "$work/want.err")"
    echo "prefix '$prefix': $(stat -c %s "$work/out.txt") bytes as the host's printf wrote them"
  done
  ;;
soak | soak-asan)
  # Two devices: every host thread moves between them from round to round.  The ASan build
  # compares no resident sizes (the quarantine keeps freed memory); LeakSanitizer checks at exit.
  # intercept_tls_get_addr=0: LLVM 16's LeakSanitizer misreads the dynamic TLS of dlopen'ed
  # modules (the plugin's and the image's thread-locals) and crashes in its check; without the
  # interception those blocks are found through each thread's DTV like any heap block.
  prog=$bin/offload_soak
  [ "$case_" = soak-asan ] && prog=$bin/offload_soak_asan
  ASAN_OPTIONS=intercept_tls_get_addr=0 TETHER_X86_64_DEVICES=2 \
    "$prog" run > "$work/out.txt" 2> "$work/err.txt" ||
    fail "exit status $?: $(tail -n 1 "$work/out.txt" | head -c 300) $(grep -v '^soak e ' "$work/err.txt" | head -c 3000)"
  tail -n 1 "$work/out.txt"
  "$prog" check "$work/out.txt" "$work/err.txt" ||
    fail "output lost, duplicated, corrupted or unexpected (above)"
  ;;
*)
  fail "unknown case"
  ;;
esac
