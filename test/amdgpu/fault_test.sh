#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# fault_test.sh PROGRAM SOURCE PLUGIN_DIR FAKE_DIR - a kernel that faults on the fake GPU
# (FAKE_HSA_FAIL=kernel_fault:1, a queue error as a bad address gives): the program must fail, and
# tether's error must name the device and the target region (function and line of SOURCE's
# `#pragma omp target` in run_fault) besides the runtime's status.
prog=$1 src=$2 plugins=$3 fake=$4
line=$(awk '/^static int run_fault/ { inside = 1 } inside && /^#pragma omp target/ { print NR; exit }' "$src")
out=$(LD_LIBRARY_PATH="$plugins:$fake" FAKE_HSA_FAIL=kernel_fault:1 "$prog" fault 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -eq 0 ]; then
  echo "fault_test.sh: the faulting kernel did not fail the program"
  exit 1
fi
want="HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: fake kernel fault (0x29); in work queued with the target region in run_fault at line $line"
if ! printf '%s\n' "$out" | grep -E "^tether \(amdgpu\): device 0: [a-z_]+ failed: " | grep -qF "$want"; then
  echo "fault_test.sh: no error naming device 0 and \"$want\""
  exit 1
fi
echo "fault_test.sh: ok"
