#!/usr/bin/env bash
# plugin_test.sh MODE PROBE PLUGIN_DIR FAKE_DIR - tether's CUDA plugin loaded by Debian's
# libomptarget 16, checked from the outside (what a user sees).
#   no-driver  no libcuda on the path: 0 devices, the region runs on the host, and with
#              LIBOMPTARGET_INFO=16 a clear info line says why.  Where a real driver with a GPU
#              is installed, checks instead that the plugin finds it and runs the region there.
#   fake       a fake libcuda.so.1 whose entry points fail: the plugin reports 0 devices with a
#              warning that carries the driver's own error text.
#   params     FAKE_DIR is the simulated GPU (fake_cuda_sim.c) with every kernel taking 7
#              parameters: the launch of the probe's region (2 arguments) fails with an error that
#              names the mismatch and its usual cause, instead of reaching cuLaunchKernel.
set -uo pipefail
mode=$1 probe=$2 plugins=$3 fake=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/    /' "$out"; exit 1; }

case $mode in
  no-driver)
    if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
      LD_LIBRARY_PATH=$plugins "$probe" gpu >"$out" 2>&1 || fail "a CUDA driver is installed but the region did not run on a GPU"
      cat "$out"
      exit 0
    fi
    LD_LIBRARY_PATH=$plugins LIBOMPTARGET_INFO=16 "$probe" host >"$out" 2>&1 ||
      fail "expected 0 devices and the region on the host"
    grep -q '^tether (cuda): no CUDA driver (libcuda.so.1, libcuda.so): .*; the CUDA plugin has 0 devices$' "$out" ||
      fail "no info line about the missing driver"
    # Without LIBOMPTARGET_INFO a missing driver is silent.
    LD_LIBRARY_PATH=$plugins "$probe" host >"$out" 2>&1 || fail "expected 0 devices (quiet run)"
    if grep -q 'tether' "$out"; then fail "a missing driver must not print anything by default"; fi
    ;;
  fake)
    LD_LIBRARY_PATH=$fake:$plugins "$probe" host >"$out" 2>&1 ||
      fail "expected 0 devices and the region on the host"
    grep -q 'CUDA_ERROR_NOT_SUPPORTED: not supported (fake driver)' "$out" ||
      fail "the warning does not carry the driver's error text"
    ;;
  params)
    if LD_LIBRARY_PATH=$fake:$plugins FAKE_CUDA_SIM_PARAMS=7 "$probe" gpu >"$out" 2>&1; then
      fail "the launch of a kernel taking 7 parameters with 2 arguments succeeded"
    fi
    grep -Eq 'kernel __omp_offloading_[0-9a-f_]+main_l[0-9]+ takes 7 argument\(s\), libomptarget passed 2: the host and device compiles of its target region disagree' "$out" ||
      fail "no error naming the argument count mismatch"
    ;;
  *) echo "usage: $0 no-driver|fake|params PROBE PLUGIN_DIR FAKE_DIR" >&2; exit 2 ;;
esac
cat "$out"
echo "plugin_test $mode: ok"
