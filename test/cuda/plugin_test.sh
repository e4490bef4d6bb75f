#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
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
#   usm        PROBE is plugin_probe_usm (requires unified_shared_memory), FAKE_DIR the simulated
#              GPU: without pageable memory access (FAKE_CUDA_SIM_PAGEABLE unset) init_device warns
#              with the cause and the way out; a fault at synchronisation (FAKE_CUDA_SIM_FAULT=1)
#              says the requirement is the likely cause; with access (=1), and for the same program
#              without the requirement (plugin_probe next to it), no word about it.
#   placement  PROBE is plugin_probe_rpc (its image has an RPC client), FAKE_DIR the simulated GPU
#              reporting the PCI address of a device of this machine whose sysfs local_cpulist
#              lists cores (FAKE_CUDA_SIM_PCI); hwloc sees two NUMA nodes (HWLOC_SYNTHETIC): the
#              plugin's "rpc:" info line (LIBOMPTARGET_INFO=16) puts the server thread on exactly
#              those cores, "local to" that address.  With the PCI attributes failing
#              (FAKE_CUDA_SIM_PCI=none) the device still works and the line says "no PCI address".
#              Exits 77 (ctest's skip) when sysfs lists no such device.
#   rpc-const  PROBE is plugin_probe_rpc, FAKE_DIR the simulated GPU: when the region's kernel
#              launches, the image's constant client copy (__tether_rpc_client_const, written by
#              the CUDA backend) holds the first bytes of the client global as the server wrote
#              it (FAKE_CUDA_SIM_RPC_CONST).
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
  usm)
    plain=$(dirname "$probe")/plugin_probe
    run() { # PROGRAM, then VAR=VALUE settings
      local prog=$1
      shift
      env LD_LIBRARY_PATH="$fake:$plugins" "$@" "$prog" sim >"$out" 2>&1
    }
    run "$probe" || fail "the program requiring unified_shared_memory failed on the simulated GPU"
    grep -qF "tether (cuda): device 0: warning: the program requires unified_shared_memory, but this device cannot reach pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: the driver has no HMM or ATS here)" "$out" ||
      fail "no warning naming the missing pageable memory access"
    grep -qF "map with the \`close\` modifier, or allocate with omp_target_alloc or llvm_omp_target_alloc_shared" "$out" ||
      fail "the warning does not say what to do instead"
    [ "$(grep -c unified_shared_memory "$out")" = 1 ] || fail "the warning is not printed exactly once"
    cat "$out"
    if run "$probe" FAKE_CUDA_SIM_FAULT=1; then
      fail "a faulting kernel did not fail the program"
    fi
    grep -qF "CUDA_ERROR_ILLEGAL_ADDRESS" "$out" || fail "the fault is not reported"
    grep -qF "(the program requires unified_shared_memory, which this device cannot serve: see the warning at its initialisation)" "$out" ||
      fail "the fault's message does not name the likely cause"
    cat "$out"
    run "$probe" FAKE_CUDA_SIM_PAGEABLE=1 || fail "the program failed on a GPU with pageable access"
    if grep -q unified_shared_memory "$out"; then fail "warned although the GPU has pageable access"; fi
    run "$plain" FAKE_CUDA_SIM_FAULT=1
    if grep -q unified_shared_memory "$out"; then fail "blamed unified_shared_memory in a program that does not require it"; fi
    grep -qF "CUDA_ERROR_ILLEGAL_ADDRESS" "$out" || fail "the fault of the plain program is not reported"
    ;;
  placement)
    pci="" cpus=""
    for d in /sys/bus/pci/devices/*; do
      list=$(tr -d '[:space:]' <"$d/local_cpulist" 2>/dev/null)
      if [ -n "$list" ]; then pci=${d##*/} cpus=$list; break; fi
    done
    if [ -z "$pci" ]; then
      echo "SKIP: no device in /sys/bus/pci/devices has a local_cpulist naming cores"
      exit 77
    fi
    # Two NUMA nodes whose PUs cover every CPU number of the list.
    max=$(echo "$cpus" | tr ',-' '\n\n' | sort -n | tail -1)
    topo="numa:2 pu:$((max / 2 + 1))"
    run() { # FAKE_CUDA_SIM_PCI value
      env -u TETHER_RPC_CPUS LD_LIBRARY_PATH="$fake:$plugins" HWLOC_SYNTHETIC="$topo" \
        FAKE_CUDA_SIM_PCI="$1" LIBOMPTARGET_INFO=16 "$probe" sim >"$out" 2>&1 ||
        fail "the probe failed on the simulated GPU (FAKE_CUDA_SIM_PCI=$1)"
    }
    run "$pci"
    grep -qF "tether (cuda): device 0: rpc: " "$out" || fail "no rpc: info line (no RPC server?)"
    grep -qF "thread on cores $cpus (local to $pci)" "$out" ||
      fail "the rpc: line does not place the thread on $pci's cores $cpus (HWLOC_SYNTHETIC=\"$topo\")"
    cat "$out"
    run none
    grep -qF "thread on any core (2 NUMA nodes, no PCI address)" "$out" ||
      fail "with the PCI attributes failing, the rpc: line does not say \"no PCI address\""
    ;;
  rpc-const)
    LD_LIBRARY_PATH="$fake:$plugins" FAKE_CUDA_SIM_RPC_CONST=1 "$probe" sim >"$out" 2>&1 ||
      fail "the probe failed on the simulated GPU"
    grep -qF "fake_cuda_sim: launch: the constant client copy equals the first 88 bytes of __tether_rpc_client (magic 0x43505254)" "$out" ||
      fail "the constant client copy does not hold the client's first 88 bytes at the launch"
    if grep -q "differs from" "$out"; then fail "a constant client copy differs from its client"; fi
    cat "$out"
    ;;
  *) echo "usage: $0 no-driver|fake|params|usm|placement|rpc-const PROBE PLUGIN_DIR FAKE_DIR" >&2; exit 2 ;;
esac
cat "$out"
echo "plugin_test $mode: ok"
