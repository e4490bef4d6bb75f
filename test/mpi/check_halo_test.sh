#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# check_halo_test.sh WORKDIR - check_halo.sh on made-up runs of mpi_halo (2 ranks, 4 steps,
# a device line every 2): it passes a complete run and fails each way a run can go wrong.
set -uo pipefail
work=${1:?}
check=$(cd "$(dirname "$0")" && pwd)/check_halo.sh
mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

good_out() {
  for s in 2 4; do for r in 1 0; do
    echo "mpi_halo: rank $r step $s device $r: cell $((r * 64)) = 0.25$s"
  done; done
  for r in 0 1; do
    echo "mpi_halo: rank $r (pid 10$r): device $r of 4 (node rank $r), host halos, 0 wrong cells, MPI_Init done at 0.1 s, device ready at 0.2 s, 10.00 us/step, wall 1.000 s, cpu 0.500 s (steps: cpu 0.010 s of 0.020 s)"
  done
  echo "mpi_halo: PASS (2 ranks, host halos, 64 cells per rank, 4 steps, 0 wrong cells)"
}
good_err() {
  for d in 0 1; do
    echo "tether (x86_64): device $d: rpc: 64 ports x 32 lanes (136 KiB shared), thread on any core"
    echo "tether (x86_64): device $d: rpc: 2 calls (0 answered inline), 2 printf/write calls, 0 unhandled"
  done
}
# good_out with TETHER_RPC_PREFIX='[%r:%d] ' on the device lines
prefixed_out() { good_out | sed -E 's/^(mpi_halo: rank ([0-9]+) step [0-9]+ device ([0-9]+):)/[\2:\3] \1/'; }
# expect WANT NAME [RC [SERVED [PREFIX]]]: check_halo.sh on $work/out, $work/err
expect() {
  bash "$check" "${3:-0}" 2 4 2 "$work/out" "$work/err" "${4:-tether:x86_64}" ${5:+"$5"} \
    >"$work/verdict"
  local got=$?
  [ $got -eq "$1" ] || { fail "$2: exit $got, want $1"; sed 's/^/    /' "$work/verdict"; }
}

good_out >"$work/out"; good_err >"$work/err"
expect 0 "complete run"
expect 1 "mpirun failed" 1
expect 0 "complete run, any plugin" 0 any
: >"$work/err"
expect 1 "no tether RPC servers"
expect 0 "no tether RPC servers, any plugin" 0 any
good_err | grep -v 'device 1' >"$work/err"
expect 1 "one RPC server for two ranks"
good_err | sed 's/2 printf/1 printf/' >"$work/err"
expect 1 "a server that served fewer printf calls"
good_err >"$work/err"
good_out | grep -v 'rank 1 step 4 ' >"$work/out"
expect 1 "missing device line"
{ good_out; echo "mpi_halo: rank 0 step 2 device 0: cell 0 = 0.252"; } >"$work/out"
expect 1 "repeated device line"
{ good_out; echo "mpi_halo: rank 0 step 3 device 0: cell 0 = 0.253"; } >"$work/out"
expect 1 "device line of a step that does not print"
{ good_out; echo "mpi_halo: rank 2 step 2 device 0: cell 0 = 0.252"; } >"$work/out"
expect 1 "device line of a rank that does not exist"
good_out | sed 's/^mpi_halo: rank 1 step 2 device 1: cell 64 = 0.252$/mpi_halo: rank 1 step 2 devimpi_halo: rank 0 step 4 device 0: cell 0 = 0.254/' |
  grep -v '^mpi_halo: rank 0 step 4 ' >"$work/out"
expect 1 "garbled (interleaved) lines"
good_out | sed '/^mpi_halo: rank 1 (pid/s/ 0 wrong cells/ 3 wrong cells/' >"$work/out"
expect 1 "a rank with wrong cells"
good_out | grep -v 'PASS' >"$work/out"
expect 1 "no PASS line"
good_out | sed 's/PASS (2 ranks/PASS (3 ranks/' >"$work/out"
expect 1 "PASS of another rank count"
good_out >"$work/out"
expect 1 "device lines without the prefix" 0 tether:x86_64 rank:device
prefixed_out >"$work/out"
expect 0 "complete run, prefixed" 0 tether:x86_64 rank:device
expect 1 "prefixed device lines where none are wanted"
prefixed_out | sed 's/^\[1:1\] mpi_halo: rank 1 step 4 /[0:1] mpi_halo: rank 1 step 4 /' >"$work/out"
expect 1 "a device line with another rank's prefix" 0 tether:x86_64 rank:device
prefixed_out | sed 's/^\[1:1\] mpi_halo: rank 1 step 4 /[1:0] mpi_halo: rank 1 step 4 /' >"$work/out"
expect 1 "a device line with another device's prefix" 0 tether:x86_64 rank:device
prefixed_out | sed 's/^\[1:1\] mpi_halo: rank 1 step 4 /[-:1] mpi_halo: rank 1 step 4 /' >"$work/out"
expect 1 "a device line without a rank in its prefix" 0 tether:x86_64 rank:device
{ prefixed_out; prefixed_out | grep 'rank 0 step 2 '; } >"$work/out"
expect 1 "repeated prefixed device line" 0 tether:x86_64 rank:device
prefixed_out | grep -v 'rank 1 step 2 ' >"$work/out"
expect 1 "missing prefixed device line" 0 tether:x86_64 rank:device

[ $failed -eq 0 ] && echo "check_halo_test: PASS"
exit $failed
