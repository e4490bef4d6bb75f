#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# binding_test.sh PROGRAM PLUGIN_DIR FAKE_DIR - the RPC server thread keeps to the cores a
# launcher bound the process to (ctest mpi.rpc_binding).  PROGRAM is one_device (its image has
# an RPC client), run on the simulated GPUs of FAKE_DIR reporting the PCI address of a device of
# this machine whose sysfs local_cpulist lists cores, with two NUMA nodes from HWLOC_SYNTHETIC
# (so tether places the thread on the device's cores) and HWLOC_THISSYSTEM=1 (so hwloc reads the
# process's real binding).  The plugin's "rpc:" line (LIBOMPTARGET_INFO=16) must say:
#   unbound                      the device's cores, as before;
#   taskset -c C                 core C only, "within the process's binding";
#   mpirun --bind-to core -np 2  each rank's own core (skipped without mpirun).
# Exits 77 where sysfs lists no PCI device with two cores this process may use.
set -uo pipefail
prog=${1:?} plugins=${2:?} fake=${3:?}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/    /' "$out"; exit 1; }

# Cores of a list "0-3,8" one per line.
expand() { tr ',' '\n' <<<"$1" | awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }'; }
allowed=$(expand "$(taskset -pc $$ | sed 's/.*: //')")
pci="" cpus=""
for d in /sys/bus/pci/devices/*; do
  list=$(tr -d '[:space:]' <"$d/local_cpulist" 2>/dev/null)
  [ -n "$list" ] || continue
  both=$(comm -12 <(expand "$list" | sort) <(sort <<<"$allowed") | sort -n)
  if [ "$(wc -l <<<"$both")" -ge 2 ] && [ "$(expand "$list" | sort -n)" = "$both" ]; then
    pci=${d##*/} cpus=$list
    break
  fi
done
if [ -z "$pci" ]; then
  echo "SKIP: no PCI device whose local_cpulist has two or more cores, all of them allowed here"
  exit 77
fi
max=$(expand "$cpus" | sort -n | tail -1)
last=$max
export LD_LIBRARY_PATH=$fake:$plugins FAKE_CUDA_SIM_DEVICES=2 FAKE_CUDA_SIM_PCI=$pci
export HWLOC_SYNTHETIC="numa:2 pu:$((max / 2 + 1))" HWLOC_THISSYSTEM=1 LIBOMPTARGET_INFO=16
unset TETHER_RPC_CPUS

"$prog" 0 >"$out" 2>&1 || fail "unbound run failed"
grep -q "rpc: .* ports .*, thread on cores $cpus (local to $pci)\$" "$out" ||
  fail "unbound: want the thread on cores $cpus (local to $pci)"
echo "unbound: thread on cores $cpus (local to $pci)"

taskset -c "$last" "$prog" 0 >"$out" 2>&1 || fail "run bound to core $last failed"
grep -q "rpc: .* ports .*, thread on cores $last (local to $pci, within the process's binding)\$" "$out" ||
  fail "bound to core $last: want the thread on core $last only"
echo "taskset -c $last: thread on cores $last, within the binding"

if ! command -v mpirun >/dev/null 2>&1; then
  echo "(no mpirun: the --bind-to core case is not run)"
  exit 0
fi
# mpirun maps and binds on the real topology: the synthetic one is for the ranks only.
synthetic=$HWLOC_SYNTHETIC
env -u HWLOC_SYNTHETIC -u HWLOC_THISSYSTEM OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader \
  timeout -k 10 120 mpirun -np 2 --bind-to core --map-by core --report-bindings \
  -x LD_LIBRARY_PATH -x FAKE_CUDA_SIM_DEVICES -x FAKE_CUDA_SIM_PCI -x HWLOC_SYNTHETIC="$synthetic" \
  -x HWLOC_THISSYSTEM=1 -x LIBOMPTARGET_INFO "$prog" 0 >"$out" 2>&1 ||
  fail "mpirun --bind-to core failed"
lines=$(grep -c "rpc: .* ports .*, thread on cores [0-9]* (local to $pci, within the process's binding)\$" "$out")
distinct=$(sed -n "s/.*rpc: .* ports .*, thread on cores \([0-9]*\) (local to.*/\1/p" "$out" | sort -u | wc -l)
[ "$lines" -eq 2 ] && [ "$distinct" -eq 2 ] ||
  fail "mpirun --bind-to core: want each rank's thread on its own core ($lines lines, $distinct cores)"
echo "mpirun --bind-to core: each rank's thread on its rank's core"
echo "binding_test: PASS"
