#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# jit_sim_test.sh PROGRAM PLUGIN_DIR SIM_DIR SCRATCH_DIR
# test_jit_sim (a -fopenmp-target-jit program) through Debian's libomptarget and tether's CUDA
# plugin on the simulated GPU (SIM_DIR holds fake_cuda_sim's libcuda.so.1):
#   1. the image is JIT-compiled for sm_90, linked and launched there (the program checks the
#      counters); the info line says so, and the kernels' exec modes come from the linked image;
#   2. LIBOMPTARGET_JIT_OPT_LEVEL=1 is the level used;
#   3. a replacement object of PTX for another GPU: the load fails with the driver linker's words.
prog=$1 plugins=$2 sim=$3 scratch=$4
fail=0
run() {
  LD_LIBRARY_PATH="$sim:$plugins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" 2>&1
}
expect() { # expect NAME OUTPUT NEEDLE
  case $2 in
    *"$3"*) ;;
    *) echo "jit_sim_test.sh: $1: output lacks \"$3\""; fail=1 ;;
  esac
}

out=$(LIBOMPTARGET_INFO=16 run "$prog")
rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] || { echo "jit_sim_test.sh: default: exit $rc"; fail=1; }
expect default "$out" "test_jit_sim: PASS"
expect default "$out" "JIT-compiled for sm_90 in "
expect default "$out" " ms at -O3 (LLVM "
expect default "$out" "in Generic-SPMD mode"

out=$(LIBOMPTARGET_INFO=16 LIBOMPTARGET_JIT_OPT_LEVEL=1 run "$prog")
rc=$?
[ $rc -eq 0 ] || { printf '%s\n' "$out"; echo "jit_sim_test.sh: -O1: exit $rc"; fail=1; }
expect O1 "$out" "JIT-compiled for sm_90 in "
expect O1 "$out" " ms at -O1 (LLVM "

obj=$scratch/jit-sim-$$.ptx
printf '.version 7.8\n.target sm_80\n.address_size 64\n' > "$obj"
out=$(LIBOMPTARGET_JIT_REPLACEMENT_OBJECT=$obj run "$prog")
rc=$?
rm -f "$obj"
printf '%s\n' "$out"
[ $rc -ne 0 ] || { echo "jit_sim_test.sh: replacement: a failed load must fail the program"; fail=1; }
expect replacement "$out" "load_binary"
expect replacement "$out" "linking the JIT-compiled PTX: cuLinkAddData_v2: "
expect replacement "$out" "(ptxas fatal   : the PTX is not for this GPU (sm_90))"

[ $fail -eq 0 ] && echo "jit_sim_test.sh: ok"
exit $fail
