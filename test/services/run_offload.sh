#!/usr/bin/env bash
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
