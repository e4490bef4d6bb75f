#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/run_life.sh - runs one case of offload_life (the RPC server's life cycle: fork,
# exit and target regions inside user handlers, exit while other threads offload, messages over
# 64 MiB) through libomptarget 16 and tether's x86_64 plugin, and checks its output.
#
#   run_life.sh <case> <program dir> <plugin dir> <work dir>
#
# gpu-fork runs offload_fork_gpu (nvptx64) through tether's CUDA plugin on the simulated GPU
# whose libcuda.so.1 is in $SIM_DIR (test/cuda/fake_cuda_sim.c).
#
# Each run is bounded by `timeout` as a hang guard (generous: a hang is the failure these cases
# catch, and the message says so); exit-busy and exit-nowait run RUNS times, since their
# failures were races.
set -euo pipefail
case_=$1
bin=$2
plugins=$3
work=$4
mkdir -p "$work"
export LD_LIBRARY_PATH=$plugins
export OMP_TARGET_OFFLOAD=MANDATORY
HANG_S=100
RUNS=${RUNS:-10}

fail() {
  echo "FAIL ($case_): $*" >&2
  exit 1
}

# run <args...>: runs the program ($prog) with stdout/stderr in $work; rc in $rc.
prog=offload_life
run() {
  set +e
  timeout -k 5 $HANG_S "$bin/$prog" "$@" > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    fail "hung (no end within ${HANG_S} s); stdout: $(head -c 300 "$work/out.txt"); stderr: $(head -c 300 "$work/err.txt")"
  fi
}

# expect_lines <file> <line>...: the file holds exactly these lines, in any order.
expect_lines() {
  local file=$1
  shift
  printf '%s\n' "$@" | sort > "$work/want.sorted"
  sort "$file" > "$work/got.sorted"
  cmp -s "$work/want.sorted" "$work/got.sorted" || {
    diff "$work/want.sorted" "$work/got.sorted" | head -20 >&2
    fail "output differs; stderr: $(head -c 500 "$work/err.txt")"
  }
}

no_stderr() {
  [ ! -s "$work/err.txt" ] || fail "unexpected stderr: $(head -c 500 "$work/err.txt")"
}

case $case_ in
fork)
  run fork
  [ $rc = 0 ] || fail "exit status $rc: $(head -c 500 "$work/err.txt")"
  expect_lines "$work/out.txt" "parent before fork region" "parent after fork region" \
    "child region" "grandchild region" "grandchild exited 0" "child after its child region" \
    "child exited 0" "parent at the end region"
  no_stderr
  echo "parent, child and grandchild offload with device printf and user calls after fork()"
  ;;
fork-region | fork-call)
  run "$case_"
  [ $rc = 0 ] || fail "exit status $rc: $(head -c 500 "$work/err.txt")"
  what=${case_#fork-}
  expect_lines "$work/out.txt" "parent before fork region" "worker $what before the fork" \
    "child region" "child exited 0" "worker $what after the fork" "parent after fork region"
  no_stderr
  echo "fork() while another thread is inside a $what: the child offloads, the parent goes on"
  ;;
fork-handler)
  run fork-handler
  [ $rc = 0 ] || fail "exit status $rc: $(head -c 500 "$work/err.txt")"
  expect_lines "$work/out.txt" "handler's child exited 0" "parent after fork region"
  no_stderr
  echo "a user handler forks and execs: no deadlock, the parent goes on"
  ;;
handler-exit)
  run handler-exit
  [ $rc = 3 ] || fail "exit status $rc, want 3: $(head -c 500 "$work/err.txt")"
  expect_lines "$work/out.txt" "device line before exit" "handler exits with 3"
  no_stderr
  echo "exit(3) inside a user handler: status 3, output flushed"
  ;;
handler-launch)
  run handler-launch
  [ $rc != 0 ] || fail "a target region started inside a handler was not refused"
  grep -q "a target region started from inside an RPC handler of this device is refused" \
    "$work/err.txt" || fail "no message naming the cause: $(head -c 800 "$work/err.txt")"
  echo "a target region started inside a user handler: refused with the cause (status $rc)"
  ;;
exit-busy)
  want=("main exits")
  for w in 0 1 2 3; do
    want+=("w$w inside")
    for k in $(seq 0 1999); do want+=("w$w line $k"); done
  done
  for i in $(seq "$RUNS"); do
    run exit-busy
    [ $rc = 0 ] || fail "run $i: exit status $rc: $(head -c 500 "$work/err.txt")"
    expect_lines "$work/out.txt" "${want[@]}"
    # The plugin says so when exit waits over 10 s for the regions (a busy machine): not an error.
    sed -i '/^tether (x86_64): exit waits for [0-9]* call(s) of other threads/d' "$work/err.txt"
    no_stderr
  done
  echo "exit(0) while 4 threads print from target regions: $RUNS runs, status 0, every line"
  ;;
exit-nowait)
  want=("main exits")
  for w in 0 1; do
    want+=("n$w inside")
    for k in $(seq 0 1999); do want+=("n$w line $k"); done
  done
  for i in $(seq "$RUNS"); do
    run exit-nowait
    [ $rc = 0 ] || fail "run $i: exit status $rc: $(head -c 500 "$work/err.txt")"
    expect_lines "$work/out.txt" "${want[@]}"
    sed -i '/^tether (x86_64): exit waits for [0-9]* call(s) of other threads/d' "$work/err.txt"
    no_stderr
  done
  echo "exit(0) while 2 nowait regions print: $RUNS runs, status 0, every line, no hang"
  ;;
big)
  run big
  [ $rc = 0 ] || fail "exit status $rc: $(head -c 800 "$work/err.txt")"
  mib=$((1 << 20))
  [ "$(head -n 1 "$work/out.txt")" = "after the big ones" ] ||
    fail "stdout starts with $(head -c 100 "$work/out.txt")"
  size=$(stat -c %s "$work/out.txt")
  [ "$size" = $((19 + mib + 1)) ] || fail "stdout is $size bytes, want $((19 + mib + 1))"
  [ "$(tail -n 1 "$work/out.txt" | tr -d x)" = "" ] || fail "the 1 MiB fwrite is not all x"
  n=$(grep -c "^tether: a device \(printf\|write\) message over 64 MiB" "$work/err.txt" || true)
  [ "$n" = 4 ] || fail "want 4 lines saying why, got $n: $(head -c 800 "$work/err.txt")"
  grep -q "^printf -1 puts -1 fputs -1 fwrite 0 small printf 19 fwrite $mib puts 0$" \
    "$work/err.txt" || fail "return values: $(tail -n 1 "$work/err.txt")"
  echo "over 64 MiB: printf -1, puts/fputs EOF, fwrite 0, nothing written; 1 MiB: written"
  ;;
gpu-fork)
  export LD_LIBRARY_PATH=${SIM_DIR:?}:$plugins
  prog=offload_fork_gpu
  run
  [ $rc = 0 ] || fail "parent's exit status $rc: $(head -c 800 "$work/err.txt")"
  grep -q "^child ended with signal 6$" "$work/out.txt" ||
    fail "the child did not end with libomptarget's abort: $(cat "$work/out.txt")"
  ! grep -q "child offloaded" "$work/out.txt" || fail "the child offloaded on a GPU after fork"
  grep -Eq "^tether \(cuda\): device 0: [a-z_]+(\(.*\))? failed: operation not supported by this backend: this process \([0-9]+\) is a child that process [0-9]+ created with fork\(\); a cuda device cannot be used in a fork\(\) child" \
    "$work/err.txt" || fail "no message naming fork(): $(head -c 800 "$work/err.txt")"
  grep "fork()" "$work/err.txt" | head -1
  echo "a GPU target region in a fork child fails with the reason; the parent goes on"
  ;;
*)
  fail "unknown case"
  ;;
esac
