#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# diag_test.sh MODE PROBE_DIR PLUGIN_DIR SIM_DIR - what tether's CUDA plugin tells a user, through
# Debian's libomptarget 16, on a machine without a GPU: PROBE_DIR holds plugin_probe (sm_90),
# plugin_probe_sm80, plugin_probe_printf (printf in the region, no libtether-device) and
# plugin_probe_rpc (with it); SIM_DIR is the simulated sm_90 GPU (fake_cuda_sim.c).
#   mandatory  OMP_TARGET_OFFLOAD=MANDATORY and no device for the program's image (no driver; an
#              sm_80 image on the sm_90 GPU): one warning saying why, before libomptarget's fatal
#              error; without MANDATORY the same only with LIBOMPTARGET_INFO=16, else silence.
#   fault      a kernel fault (FAKE_CUDA_SIM_FAULT=1): the error names the device and the target
#              region (function and line) of the kernel.
#   noclient   an image calling vprintf without tether's RPC client: one info line
#              (LIBOMPTARGET_INFO=16) naming the symbol and the fix; nothing for an image with the
#              client or one calling nothing.
#   knobs      bad values of the CUDA plugin's knobs (a limit the driver refuses among them): the
#              program runs, one warning per knob.
set -uo pipefail
mode=$1 probes=$2 plugins=$3 sim=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL ($mode): $*"; sed 's/^/    /' "$out"; exit 1; }
unset OMP_TARGET_OFFLOAD LIBOMPTARGET_INFO TETHER_DEBUG LIBOMPTARGET_DEBUG

# run DIRS PROGRAM ARG [VAR=VALUE...]: exit status in $rc, stdout+stderr in $out.
run() {
  local dirs=$1 prog=$2 arg=$3
  shift 3
  env LD_LIBRARY_PATH="$dirs" "$@" "$probes/$prog" "$arg" >"$out" 2>&1
  rc=$?
}
count() { grep -cF -- "$1" "$out"; }

case $mode in
  mandatory)
    if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
      echo "SKIP: a CUDA driver is installed"
      exit 77
    fi
    why="the program's image for the cuda plugin (arch sm_90) has no device: no CUDA driver (libcuda.so.1, libcuda.so): "
    run "$plugins" plugin_probe host OMP_TARGET_OFFLOAD=MANDATORY
    [ $rc != 0 ] || fail "a program with no device for its image ran although offloading is mandatory"
    [ "$(count "tether (cuda): warning: offloading is mandatory, and $why")" = 1 ] ||
      fail "no single warning saying why no device runs the image"
    grep -n "" "$out" | grep -F "warning: offloading is mandatory" | cut -d: -f1 >"$out.w"
    grep -n "Libomptarget fatal error" "$out" | cut -d: -f1 >"$out.f"
    [ -s "$out.f" ] && [ "$(cat "$out.w")" -lt "$(head -1 "$out.f")" ] ||
      fail "the warning does not come before libomptarget's fatal error"
    rm -f "$out.w" "$out.f"
    cat "$out"
    run "$plugins" plugin_probe host
    [ $rc = 0 ] || fail "without MANDATORY the region did not fall back to the host"
    if grep -q tether "$out"; then fail "without MANDATORY and LIBOMPTARGET_INFO tether spoke"; fi
    run "$plugins" plugin_probe host LIBOMPTARGET_INFO=16
    [ $rc = 0 ] || fail "LIBOMPTARGET_INFO=16: the region did not fall back to the host"
    [ "$(count "tether (cuda): $why")" = 1 ] || fail "LIBOMPTARGET_INFO=16: no info line about the image"
    if grep -q "warning" "$out"; then fail "LIBOMPTARGET_INFO=16 without MANDATORY: a warning"; fi

    # An sm_80 image on the simulated sm_90 GPU.
    refused="the program's image for sm_80 does not run on device 0 (sm_90); build it with --offload-arch=sm_90"
    run "$sim:$plugins" plugin_probe_sm80 host OMP_TARGET_OFFLOAD=MANDATORY
    [ $rc != 0 ] || fail "the sm_80 image ran although no device takes it"
    [ "$(count "tether (cuda): warning: offloading is mandatory, and $refused")" = 1 ] ||
      fail "no single warning saying why the sm_80 image is refused"
    cat "$out"
    run "$sim:$plugins" plugin_probe_sm80 host
    [ $rc = 0 ] || fail "sm_80 image without MANDATORY: the region did not fall back to the host"
    if grep -q tether "$out"; then fail "sm_80 image without MANDATORY or LIBOMPTARGET_INFO: tether spoke"; fi
    run "$sim:$plugins" plugin_probe_sm80 host LIBOMPTARGET_INFO=16
    [ "$(count "tether (cuda): $refused")" = 1 ] || fail "LIBOMPTARGET_INFO=16: no info line about the sm_80 image"
    ;;
  fault)
    line=$(grep -n "^#pragma omp target" "$(dirname "$0")/plugin_probe.c" | head -1 | cut -d: -f1)
    run "$sim:$plugins" plugin_probe sim FAKE_CUDA_SIM_FAULT=1
    [ $rc != 0 ] || fail "a faulting kernel did not fail the program"
    # (the call that finds it: synchronize, or the copy of a mapped result that waits for the
    # kernel first: "data_retrieve(host ... <- device ..., 4 bytes)")
    grep -E "^tether \(cuda\): device 0: [a-z_]+(\([^)]*\))? failed: .*CUDA_ERROR_ILLEGAL_ADDRESS.*; in work queued with the target region in main at line $line$" "$out" >/dev/null ||
      fail "the fault does not name device 0 and the target region in main at line $line"
    ;;
  noclient)
    said="tether (cuda): device 0: the image calls vprintf but has no tether RPC client (__tether_rpc_client): the driver's own device printf and heap serve them, not tether's; to use tether's, compile with \`pkg-config --cflags tether\` and link -ltether-device after the program's sources (\`pkg-config --libs tether\`)"
    run "$sim:$plugins" plugin_probe_printf sim LIBOMPTARGET_INFO=16
    [ $rc = 0 ] || fail "the program failed"
    [ "$(count "$said")" = 1 ] || fail "no single line saying the image has no client"
    cat "$out"
    run "$sim:$plugins" plugin_probe_printf sim
    if grep -q "has no tether RPC client" "$out"; then fail "said without LIBOMPTARGET_INFO"; fi
    for p in plugin_probe_rpc plugin_probe; do
      [ -x "$probes/$p" ] || continue
      run "$sim:$plugins" $p sim LIBOMPTARGET_INFO=16
      [ $rc = 0 ] || fail "$p failed"
      if grep -q "has no tether RPC client" "$out"; then fail "$p: said although the image has the client or calls nothing"; fi
    done
    ;;
  knobs)
    # Bad values of the CUDA plugin's knobs: the program runs on the simulated GPU, each knob gets
    # one warning naming it, its value and the value used (a limit the driver refuses included).
    run "$sim:$plugins" plugin_probe sim LIBOMPTARGET_STACK_SIZE=0x40000000000 \
      LIBOMPTARGET_HEAP_SIZE=-1 LIBOMPTARGET_NUM_INITIAL_STREAMS=5000 \
      LIBOMPTARGET_NUM_INITIAL_EVENTS=lots TETHER_CUDA_SCHED=fast TETHER_CUDA_PRINTF_FIFO=1M
    [ $rc = 0 ] || fail "bad knob values stopped the program"
    for want in \
      "tether: warning: LIBOMPTARGET_STACK_SIZE=0x40000000000 is refused by the driver (cuCtxSetLimit: " \
      "tether: warning: LIBOMPTARGET_HEAP_SIZE=-1 is out of range (at least 0); using 8388608" \
      "tether: warning: LIBOMPTARGET_NUM_INITIAL_STREAMS=5000 is out of range (0 to 1024); using 32" \
      "tether: warning: LIBOMPTARGET_NUM_INITIAL_EVENTS=lots is not a whole number; using 32" \
      "tether: warning: TETHER_CUDA_SCHED=fast is not one of auto, spin, yield, blocking; using auto" \
      "tether: warning: TETHER_CUDA_PRINTF_FIFO=1M is not a whole number; using 1048576"; do
      [ "$(count "$want")" = 1 ] || fail "not once: $want"
    done
    grep -F "LIBOMPTARGET_STACK_SIZE=" "$out" | grep -qF "; using 1024" ||
      fail "the refused stack size does not say the driver's value stays"
    [ "$(grep -c "^tether: warning:" "$out")" = 6 ] || fail "not one warning per bad knob"
    cat "$out"
    ;;
  *) echo "usage: $0 mandatory|fault|noclient|knobs PROBE_DIR PLUGIN_DIR SIM_DIR" >&2; exit 2 ;;
esac
echo "diag_test $mode: ok"
