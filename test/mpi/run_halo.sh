#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# run_halo.sh NP MODE PROGRAM PLUGIN_DIR WORKDIR [prefix] - ctest of examples/mpi_halo.c (x86_64
# offload): `mpirun -np NP` of PROGRAM MODE (host or device halos) with tether's plugins from
# PLUGIN_DIR and LIBOMPTARGET_INFO=16, judged by check_halo.sh (answers, every rank's device
# lines once, tether's RPC server in every rank).  `prefix`: with TETHER_RPC_PREFIX='[%r:%d] ',
# and every device line must carry its own rank and device.
# Exits 77 (ctest skip) only when mpirun is missing; PROGRAM "none": mpi.h or libmpi was not
# found when the build was configured, a failure.
set -uo pipefail
np=${1:?} mode=${2:?} prog=${3:?} plugins=${4:?} work=${5:?} prefix=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
steps=40 every=10 cells=4096

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun is missing (Debian: apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
if [ "$prog" = none ] || [ ! -x "$prog" ]; then
  echo "FAIL: mpi_halo was not built: CMake found no MPI for C (Debian: libopenmpi-dev) when" \
       "the build was configured; reconfigure after installing it"
  exit 1
fi
mkdir -p "$work"

# Open MPI in a container as root on a small machine (test/mpi/README.md):
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # root is refused otherwise
export OMPI_MCA_plm=isolated                   # one node: no ssh/rsh agent needed (or present)
export OMPI_MCA_rmaps_base_oversubscribe=1     # more ranks than cores
export OMPI_MCA_hwloc_base_binding_policy=none # no binding: ranks of other runs share the cores
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader # shared memory only: no UCX, verbs or TCP probing
export OMPI_MCA_btl_vader_single_copy_mechanism=none # CMA needs ptrace rights containers lack

export LD_LIBRARY_PATH=$plugins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBOMPTARGET_INFO=16 OMP_TARGET_OFFLOAD=MANDATORY
check_prefix=
if [ "$prefix" = prefix ]; then
  export TETHER_RPC_PREFIX='[%r:%d] '
  check_prefix=rank:device
else
  unset TETHER_RPC_PREFIX
fi
timeout -k 10 240 mpirun -np "$np" -x LD_LIBRARY_PATH -x LIBOMPTARGET_INFO -x OMP_TARGET_OFFLOAD \
  ${TETHER_RPC_PREFIX:+-x TETHER_RPC_PREFIX} \
  "$prog" "$mode" "$cells" "$steps" "$every" >"$work/out.txt" 2>"$work/err.txt"
rc=$?
grep -a '^mpi_halo: \(PASS\|FAIL\)\|^mpi_halo: rank [0-9]* (pid' "$work/out.txt"
bash "$here/check_halo.sh" "$rc" "$np" "$steps" "$every" "$work/out.txt" "$work/err.txt" \
  tether:x86_64 $check_prefix
verdict=$?
if [ $verdict -ne 0 ]; then
  echo "--- stdout (last 20 lines)"
  tail -20 "$work/out.txt"
  echo "--- stderr (without launch lines, last 30)"
  grep -v 'Launching\|launch' "$work/err.txt" | tail -30
fi
exit $verdict
