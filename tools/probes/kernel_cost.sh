#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# tools/probes/kernel_cost.sh [WORK] - on the GPU machine, after `scripts/device-run.sh BUNDLE
# hello` unpacked the bundle into WORK (default /tmp/tether-device): what the device library and
# -foffload-lto cost a kernel (docs/usage.md, "What the library costs a kernel").  Runs
# Nsight Compute (CUDA's ncu) on mpi_halo's device-halo kernel over 1M cells, built three ways
# (bin/mpi/mpi_halo_plain: without the library; mpi_halo: with it; mpi_halo_lto: with it and
# -foffload-lto), one rank without mpirun, under tether's plugin, and prints per
# build the kernel's time, registers, occupancy and local-memory traffic.  Needs ncu and the
# permission to read the GPU's counters (root on the test machines).
set -euo pipefail
work=${1:-/tmp/tether-device}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
[ -x "$ncu" ] || { echo "kernel_cost: no ncu at $ncu (set NCU)" >&2; exit 1; }
# shellcheck disable=SC1091
. "$work/mpi/env.sh"
export LD_LIBRARY_PATH=$work/plugins-tether:$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_TARGET_OFFLOAD=MANDATORY
metrics=gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
metrics=$metrics,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum
printf '%-16s %10s %10s %10s %14s %14s\n' build "time us" registers "occupancy%" "local ld MB" "local st MB"
for b in mpi_halo_plain mpi_halo mpi_halo_lto; do
  # The device-halo kernel (the only kernel of a `device` run), its sixth launch.
  "$ncu" --kernel-name regex:'main_l[0-9]+$' --launch-skip 5 --launch-count 1 \
    --metrics "$metrics" --csv --page raw "$work/bin/mpi/$b" device 1048576 20 100000 2>&1 |
    grep -E '^"' | awk -F'","' -v b="$b" '
      NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i } next }
      NR == 2 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); unit[i] = $i } next }
      function v(name, scale,   i, x) { i = col[name]; x = $i; gsub(/[",]/, "", x); return x * scale }
      function ns(name,   i, u) { i = col[name]; u = unit[i]; return u ~ /usecond/ ? 1000 : u ~ /msecond/ ? 1e6 : 1 }
      function mb(name,   i, u) { i = col[name]; u = unit[i]; return u ~ /Kbyte/ ? 1e-3 : u ~ /Mbyte/ ? 1 : u ~ /Gbyte/ ? 1e3 : 1e-6 }
      NR == 3 { printf "%-16s %10.1f %10d %10.1f %14.1f %14.1f\n", b,
                v("gpu__time_duration.sum", ns("gpu__time_duration.sum")) / 1000,
                v("launch__registers_per_thread", 1),
                v("sm__warps_active.avg.pct_of_peak_sustained_active", 1),
                v("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", mb("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum")),
                v("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", mb("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")) }'
done
