#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# run_omp.sh PROGRAM MODE PLUGIN_DIR [EXPECT]
# Run an OpenMP offload program with tether's plugins first on the library path (libomptarget 16
# dlopens plugins by name, LD_LIBRARY_PATH first).  Passes when it exits 0 and, if EXPECT is
# given, its output contains EXPECT.  Extra environment (FAKE_HSA_*, TETHER_HSA_LIBRARY,
# LD_LIBRARY_PATH additions) comes from the caller.
prog=$1 mode=$2 plugins=$3 expect=$4
out=$(LD_LIBRARY_PATH="$plugins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prog" "$mode" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then
  echo "run_omp.sh: $prog $mode exited $rc"
  exit 1
fi
if [ -n "$expect" ]; then
  case $out in
    *"$expect"*) ;;
    *) echo "run_omp.sh: output lacks \"$expect\""; exit 1 ;;
  esac
fi
exit 0
