#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# device-run-mpi.sh WORK OUT - the "mpi" step of scripts/device-run.sh (docs/mpi.md,
# docs/gpu-testing.md section "MPI"), on the GPU machine, from a bundle unpacked in WORK:
#
#   1. interop: bin/omp/interop (test/cuda/omp/interop.c) through tether's plugin, which must
#      pass, and through LLVM 16's (reported only);
#   2. served: mpi_halo with tether's plugin and LIBOMPTARGET_INFO=16, 2 and 4 ranks, both halo
#      modes, a short run: test/mpi/check_halo.sh wants right answers, every rank's device
#      lines once and one tether RPC server per rank that served them;
#   3. timed: 2 and 4 ranks x both halo modes x {tether's plugin with bin/mpi/mpi_halo, LLVM 16's
#      with bin/mpi/mpi_halo_plain} (no INFO output), and 2 ranks each narrowed to one GPU by
#      CUDA_VISIBLE_DEVICES (--default-device), tether only.  Each judged by check_halo.sh
#      (answers and lines); each rank prints its time per step, start-up, wall and CPU seconds;
#      nvidia-smi --query-compute-apps is sampled while the job runs for each process's GPU
#      memory and the GPUs it holds memory on (tether: one GPU per process, or FAIL).
#
# Ranks use GPU (node rank % GPUs).  Open MPI is the bundle's (mpi/env.sh), run as in test/mpi
# (root allowed, one node, oversubscription allowed, no binding), for the OpenMP programs only.
# Results: OUT/mpi.txt (one line per run, and "fig mpi_..." lines), each run's
# OUT/mpi-<run>.{stdout,stderr,smi}.  Environment: TETHER_DEVICE_LIMIT (seconds per run, default
# 120), TETHER_DEVICE_EXTRA_LIBS (folders first on the programs' library path),
# TETHER_MPI_CELLS/STEPS/EVERY (default 1048576 cells per rank, 1000 steps, a device line
# every 250), OMP_TARGET_OFFLOAD (default MANDATORY).
# Exit status: 0 all passed; 1 a failure; 77 none failed but fewer than 2 GPUs were visible
# (the runs are made on the one GPU; the two-GPU layout was not tested).
set -uo pipefail
work=${1:?usage: device-run-mpi.sh WORK OUT}
out=${2:?}
root=$(cd "$(dirname "$0")/.." && pwd)
limit=${TETHER_DEVICE_LIMIT:-120}
cells=${TETHER_MPI_CELLS:-1048576} steps=${TETHER_MPI_STEPS:-1000} every=${TETHER_MPI_EVERY:-250}
check=$root/test/mpi/check_halo.sh
failed=0
say() { printf '== mpi: %s\n' "$*"; }
fail() { printf '!! FAILED: mpi: %s\n' "$*"; failed=1; }
note() { echo "$*" | tee -a "$out/mpi.txt"; }
: >"$out/mpi.txt"

if [ ! -x "$work/bin/mpi/mpi_halo" ] || [ ! -f "$work/mpi/env.sh" ]; then
  fail "no bin/mpi/mpi_halo or mpi/env.sh in the bundle"
  exit 1
fi
have_tether=0
[ -f "$work/plugins-tether/libomptarget.rtl.cuda.nextgen.so" ] && have_tether=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  visible=$(awk -F, '{ print NF }' <<<"$CUDA_VISIBLE_DEVICES")
  [ "$visible" -lt "$gpus" ] && gpus=$visible
fi
say "$gpus GPU(s) visible"

# Run "$@" with a plugin folder (plugins-tether, plugins-llvm) and the bundle's Open MPI and
# Debian runtime, in a subshell: none of it reaches this shell, nvidia-smi or nvcc.
mpi_env() {
  local plugins=$1
  shift
  (
    . "$work/mpi/env.sh"
    export LD_LIBRARY_PATH="${TETHER_DEVICE_EXTRA_LIBS:+$TETHER_DEVICE_EXTRA_LIBS:}$work/$plugins:$work/lib:$LD_LIBRARY_PATH"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
    export OMP_TARGET_OFFLOAD=${OMP_TARGET_OFFLOAD:-MANDATORY}
    exec timeout -k 10 "$limit" "$@"
  )
}

# 1. interop.
if [ -x "$work/bin/omp/interop" ]; then
  for plugins in plugins-tether plugins-llvm; do
    [ $plugins = plugins-tether ] && [ $have_tether = 0 ] && continue
    say "interop through $plugins"
    mpi_env $plugins "$work/bin/omp/interop" >"$out/mpi-interop-$plugins.txt" 2>&1
    rc=$?
    cat "$out/mpi-interop-$plugins.txt"
    grep '^interop: \(PASS\|FAIL\) [a-z]' "$out/mpi-interop-$plugins.txt" |
      sed "s/^interop: /interop ($plugins): /" >>"$out/mpi.txt"
    if [ $plugins = plugins-tether ] && [ $rc -ne 0 ]; then
      fail "interop through tether's plugin (exit $rc)"
    fi
  done
else
  fail "no bin/omp/interop in the bundle"
fi

# One mpirun: NAME NP PLUGINS PROGRAM SERVED [ENV=VALUE...] -- ARGS...
# Samples nvidia-smi while it runs; judges it with check_halo.sh; prints one summary line.
halo_run() {
  local name=$1 np=$2 plugins=$3 prog=$4 served=$5
  shift 5
  local envs=() forward=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    envs+=("$1")
    forward+=(-x "${1%%=*}")
    shift
  done
  shift
  local base=$out/mpi-$name t0 t1 pid rc
  say "$name: mpirun -np $np $(basename "$prog") $* ($plugins)"
  : >"$base.smi"
  t0=$(date +%s.%N)
  mpi_env "$plugins" env "${envs[@]}" mpirun -np "$np" "${forward[@]}" "$prog" "$@" \
    >"$base.stdout" 2>"$base.stderr" &
  pid=$!
  while kill -0 $pid 2>/dev/null; do
    nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader,nounits \
      >>"$base.smi" 2>/dev/null
    sleep 0.25
  done
  wait $pid
  rc=$?
  t1=$(date +%s.%N)
  grep -a '^mpi_halo: \(PASS\|FAIL\)' "$base.stdout"
  bash "$check" "$rc" "$np" "$run_steps" "$run_every" "$base.stdout" \
    "$base.stderr" "$served" >"$base.check"
  local verdict=$?
  cat "$base.check"
  # Per rank: "us/step", "device ready at", "cpu ... (steps: cpu X s of Y s)"; per process from
  # nvidia-smi: the most memory seen, and on how many GPUs.
  local ranks mem
  ranks=$(grep -a '^mpi_halo: rank [0-9]* (pid' "$base.stdout" | awk '
    { for (i = 1; i <= NF; i++) {
        if ($(i + 1) == "us/step,") step = $i
        if ($i == "ready" && $(i + 1) == "at") ready = $(i + 2)
        if ($i == "cpu" && $(i + 2) == "s" && $(i + 3) == "(steps:") cpu = $(i + 1)
        if ($i == "(steps:") { scpu = $(i + 2); swall = $(i + 5) }
      }
      n++; sum_cpu += cpu; sum_scpu += scpu; sum_swall += swall
      if (step > max_step) max_step = step
      if (min_step == "" || step < min_step) min_step = step
      if (ready > max_ready) max_ready = ready }
    END { if (n) printf "%.2f %.2f %.3f %.3f %.3f %.3f", min_step, max_step, max_ready,
                        sum_cpu / n, sum_scpu / n, sum_swall / n }')
  mem=$(awk -F', *' 'NF >= 3 && $3 ~ /^[0-9]+$/ {
      key = $1 " " $2; if ($3 > m[key]) m[key] = $3 }
    END { for (k in m) { split(k, a, " "); n[a[1]]++; if (m[k] > top[a[1]]) top[a[1]] = m[k] }
          procs = 0; for (p in n) { procs++; if (n[p] > gmax) gmax = n[p]
            if (lo == "" || top[p] < lo) lo = top[p]; if (top[p] > hi) hi = top[p] }
          if (procs) printf "%d %d %d %d", procs, gmax, lo, hi }' "$base.smi")
  local verdict_word=PASS
  [ $verdict -eq 0 ] || verdict_word=FAIL
  local line="$name: $verdict_word, mpirun $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
  if [ -n "$ranks" ]; then
    read -r smin smax ready cpu scpu swall <<<"$ranks"
    line+=", step $smin-$smax us, device ready by $ready s, CPU per rank $cpu s (steps: $scpu s of $swall s)"
    if [[ $name != *-served-* ]]; then # served runs print a line per launch: not figures
      echo "fig mpi_step_${name} $smax us" >>"$out/mpi.txt"
      echo "fig mpi_ready_${name} $ready s" >>"$out/mpi.txt"
      echo "fig mpi_cpu_steps_${name} $scpu s" >>"$out/mpi.txt"
    fi
  fi
  if [ -n "$mem" ]; then
    read -r procs gmax mlo mhi <<<"$mem"
    line+=", GPU memory per process $mlo-$mhi MiB ($procs processes, at most $gmax GPU(s) each)"
    [[ $name == *-served-* ]] || echo "fig mpi_gpu_mib_${name} $mhi MiB" >>"$out/mpi.txt"
    if [ "$plugins" = plugins-tether ] && [ "$gmax" -gt 1 ]; then
      line+=" -- a tether rank holds memory on $gmax GPUs"
      verdict=1
    fi
  else
    line+=", GPU memory per process: nvidia-smi listed no compute processes"
  fi
  note "$line"
  if [ $verdict -ne 0 ]; then
    fail "$name"
    grep -v 'Launching\|launch' "$base.stderr" | tail -20 | sed 's/^/    err: /'
  fi
}

if [ $have_tether = 0 ]; then
  fail "no tether plugin in the bundle"
  exit 1
fi
np_list="2 4"
# 2. served: short runs with LIBOMPTARGET_INFO=16 (it prints a line per launch: not timed).
run_steps=40 run_every=10
for np in $np_list; do
  for mode in host device; do
    halo_run "np${np}-served-${mode}" "$np" plugins-tether "$work/bin/mpi/mpi_halo" tether:cuda \
      LIBOMPTARGET_INFO=16 -- "$mode" 65536 40 10
  done
done
# 3. timed.
run_steps=$steps run_every=$every
for np in $np_list; do
  for mode in host device; do
    halo_run "np${np}-tether-${mode}" "$np" plugins-tether "$work/bin/mpi/mpi_halo" any \
      -- "$mode" "$cells" "$steps" "$every"
    halo_run "np${np}-llvm16-${mode}" "$np" plugins-llvm "$work/bin/mpi/mpi_halo_plain" any \
      -- "$mode" "$cells" "$steps" "$every"
  done
done
# Each rank sees one GPU (its node rank's) and uses its default device.
if [ "$gpus" -ge 1 ]; then
  cat >"$work/mpi-visible.sh" <<'WRAP'
#!/usr/bin/env bash
# One GPU per rank: GPU (node rank % GPUS), through CUDA_VISIBLE_DEVICES.
export CUDA_VISIBLE_DEVICES=$(( ${OMPI_COMM_WORLD_LOCAL_RANK:-0} % ${MPI_GPUS:-1} ))
exec "$@"
WRAP
  chmod +x "$work/mpi-visible.sh"
  halo_run "np2-tether-visible-host" 2 plugins-tether "$work/mpi-visible.sh" any \
    MPI_GPUS="$gpus" -- "$work/bin/mpi/mpi_halo" host "$cells" "$steps" "$every" --default-device
fi

if [ $failed -ne 0 ]; then
  say "FAILED (see above); results in $out/mpi.txt"
  exit 1
fi
if [ "$gpus" -lt 2 ]; then
  say "all runs passed on $gpus GPU; SKIPPED: the two-GPU layout (fewer than 2 GPUs)"
  exit 77
fi
say "all runs passed"
exit 0
