#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# device-run.sh BUNDLE [STEP...] - runs ON the GPU machine, in the repository root.
#
# Unpacks the bundle made by scripts/device-bundle.sh, builds the CUDA native baselines
# (test/cuda/native/*.cu) with nvcc, and runs the steps asked for (default: all of them):
#   hello        an sm_90 target region through LLVM 16's own plugin (and tether's, if bundled)
#   jit          a -fopenmp-target-jit program (bitcode image compiled at load) through both
#                plugins; tether's must say it JIT-compiled the image  -> $OUT/jit.txt
#   native       CUDA native baselines                          -> $OUT/native.txt
#   llvm16       OpenMP programs through LLVM 16's CUDA plugin  -> $OUT/llvm16.txt
#   tether       OpenMP programs through tether's CUDA plugin   -> $OUT/tether.txt
#   wait         how host threads wait for the GPU (test/cuda/omp/waitcpu.c): LLVM 16's plugin,
#                tether's with TETHER_WAIT=spin and =adaptive (and adaptive linked with
#                -ltether-device, bin/omp-rpc/waitcpu), and CUDA's empty launch, in
#                alternation, TETHER_WAIT_ROUNDS times (default 3) -> $OUT/wait.txt (every
#                figure), the medians against the goals -> $OUT/wait-summary.txt (and summary.txt)
#   taskdeps     not run by default: test/cuda/stress/taskwait_deps.c, N times through LLVM 16's
#                plugin and N times through tether's (N: the step word taskdeps=N, else
#                TETHER_TASKDEPS_RUNS, default 200); counts the runs that hit libomp 16's
#                kmp_taskdeps.h(26) assertion (its taskwait-depend race, docs/conformance.md)
#                under each (and runs that hit another libomp assertion, named) ->
#                $OUT/taskdeps.txt; FAIL when a run through tether's plugin fails in any other way
#   conformance  the conformance suite through tether's plugin  -> $OUT/conformance.txt
#   llvm-suite   LLVM 16's own offload test suite (openmp/libomptarget/test, sm_90) through
#                LLVM 16's plugin and tether's, pass/fail side by side -> $OUT/llvm-suite.txt;
#                FAIL when a test passes under LLVM's plugin only or a run did not use the
#                plugin it names
#   multi        the two-GPU acceptance test through tether's plugin -> $OUT/multi.txt;
#                SKIP (not PASS) with fewer than two GPUs, FAIL when it skips although
#                nvidia-smi lists two or more
#   mpi          CUDA interop checks, and examples/mpi_halo.c under the bundled Open MPI: 2 and 4
#                ranks on 2 GPUs through tether's plugin and LLVM 16's (scripts/device-run-mpi.sh)
#                -> $OUT/mpi.txt; SKIP (not PASS) of the two-GPU layout with fewer than two GPUs
# then prints the figures side by side (scripts/device-compare.sh) -> $OUT/summary.txt.
# Everything printed also goes to $OUT/log.txt; the GPU and driver are in $OUT/device.txt.
# Each program runs under a time limit (TETHER_DEVICE_LIMIT seconds, default 120); a failure is
# reported and the run goes on.  TETHER_DEVICE_EXTRA_LIBS: folders put first on the OpenMP
# programs' library path (a dry run on a machine without a GPU uses test/cuda's simulated
# libcuda.so.1 this way).
# The exit status is non-zero when any step failed, and 77 when none failed but a step named on
# the command line was skipped (multi on a machine with one GPU): a skip is never a pass.
set -uo pipefail

bundle=${1:?usage: device-run.sh BUNDLE [STEP...]}
shift
# taskdeps=N names the step taskdeps and its number of runs.
taskdeps_runs=${TETHER_TASKDEPS_RUNS:-200}
args=()
for a in "$@"; do
  case $a in
    taskdeps=*) taskdeps_runs=${a#taskdeps=}; args+=(taskdeps) ;;
    *) args+=("$a") ;;
  esac
done
asked=${args[*]}
steps=${asked:-hello jit native llvm16 tether wait conformance llvm-suite multi mpi}
[[ $taskdeps_runs =~ ^[1-9][0-9]*$ ]] || {
  echo "device-run.sh: the taskdeps run count must be a positive number, not '$taskdeps_runs'" >&2
  exit 2
}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/device-out}
work=${TETHER_DEVICE_WORK:-/tmp/tether-device}
limit=${TETHER_DEVICE_LIMIT:-120}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
failed=0
skipped=()

say() { printf '== %s\n' "$*"; }
fail() { printf '!! FAILED: %s\n' "$*"; failed=1; }
want() { [[ " $steps " == *" $1 "* ]]; }

# 1. Unpack.
rm -rf "$work" && mkdir -p "$work"
if command -v xz >/dev/null; then
  xz -dc "$bundle" | tar -x -C "$work" || { fail "unpack $bundle"; exit 1; }
else
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$bundle" "$work" || { fail "unpack $bundle"; exit 1; }
fi
have_tether=0
[ -f "$work/plugins-tether/libomptarget.rtl.cuda.nextgen.so" ] && have_tether=1

# 2. The machine.
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current --format=csv
  nvcc --version | tail -2
  uname -r
  nproc
} >"$out/device.txt" 2>&1
cat "$out/device.txt"

# Run an OpenMP program with one plugin folder first on LD_LIBRARY_PATH (only for that program:
# the bundled Debian libraries must not leak into the shell, nvcc or nvidia-smi).
omp_run() {
  local plugins=$1
  shift
  env LD_LIBRARY_PATH="${TETHER_DEVICE_EXTRA_LIBS:+$TETHER_DEVICE_EXTRA_LIBS:}$work/$plugins:$work/lib" \
    timeout "$limit" "$@"
}

# Run each program of a list, keep its "fig" lines in a file, report failures.
bench() {
  local file=$1 runner=$2
  shift 2
  : >"$file"
  for prog in "$@"; do
    say "$(basename "$file" .txt): $(basename "$prog")"
    local tmp
    tmp=$(mktemp)
    $runner "$prog" >"$tmp" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || fail "$(basename "$file" .txt) $(basename "$prog") (exit $rc)"
    cat "$tmp"
    grep '^fig ' "$tmp" >>"$file" || true
    rm -f "$tmp"
  done
}
native_runner() { timeout "$limit" "$1"; }
llvm_runner() { omp_run plugins-llvm "$1"; }
# tether's plugin runs printf and malloc linked with -ltether-device (bin/omp-rpc), so their
# figures are tether's RPC printf and device heap against CUDA's (native, LLVM 16).
tether_runner() {
  local rpc
  rpc=$work/bin/omp-rpc/$(basename "$1")
  if [ -x "$rpc" ]; then omp_run plugins-tether "$rpc"; else omp_run plugins-tether "$1"; fi
}

omp_progs=()
for p in launch maps regions copy lock printf malloc; do
  [ -x "$work/bin/omp/$p" ] && omp_progs+=("$work/bin/omp/$p")
done

# 3. hello: the bundle's runtime runs an sm_90 target region on this GPU.
if want hello; then
  say "hello through LLVM 16's plugin"
  LIBOMPTARGET_INFO=16 omp_run plugins-llvm "$work/bin/omp/hello" 2>&1 | tail -5
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "hello (LLVM 16 plugin)"
  if [ $have_tether = 1 ]; then
    say "hello through tether's plugin"
    LIBOMPTARGET_INFO=16 omp_run plugins-tether "$work/bin/omp/hello" >"$work/hello-tether.txt" 2>&1
    rc=$?
    tail -12 "$work/hello-tether.txt"
    [ $rc -eq 0 ] || fail "hello (tether plugin)"
    grep -q '^tether (cuda): device 0: initialised' "$work/hello-tether.txt" ||
      fail "hello: tether's plugin did not serve it"
  fi
fi

# 3b. jit: bin/omp/jit's image is LLVM bitcode; each plugin compiles it for this GPU at load.
if want jit; then
  if [ -x "$work/bin/omp/jit" ]; then
    : >"$out/jit.txt"
    for plugins in plugins-llvm plugins-tether; do
      [ $plugins = plugins-tether ] && [ $have_tether = 0 ] && continue
      say "jit through $plugins"
      LIBOMPTARGET_INFO=16 omp_run $plugins "$work/bin/omp/jit" >"$work/jit.txt" 2>&1
      rc=$?
      grep -E '^(jit|fig) |JIT-compiled|loaded image|aunching kernel' "$work/jit.txt" |
        awk '!seen[$0]++' | sed "s/^/$plugins: /" | tee -a "$out/jit.txt"
      [ $rc -eq 0 ] || { tail -12 "$work/jit.txt"; fail "jit ($plugins, exit $rc)"; }
      if [ $plugins = plugins-tether ] && ! grep -q 'JIT-compiled for sm_' "$work/jit.txt"; then
        fail "jit: tether's plugin did not JIT-compile the image"
      fi
    done
  else
    say "jit: no bin/omp/jit in the bundle, skipped"
    skipped+=(jit)
  fi
fi

# 4. CUDA native baselines, built here.
if want native; then
  say "building CUDA native baselines"
  mkdir -p "$work/bin/native"
  pids=()
  for src in "$root"/test/cuda/native/*.cu; do
    nvcc -O2 -arch=sm_90 -o "$work/bin/native/$(basename "$src" .cu)" "$src" -lcuda &
    pids+=($!)
  done
  # Wait for these pids only: a bare `wait` would also wait for the tee of the log.
  for pid in "${pids[@]}"; do wait "$pid"; done
  native_progs=()
  for p in launch copy register pingpong printf malloc; do
    if [ -x "$work/bin/native/$p" ]; then native_progs+=("$work/bin/native/$p"); else fail "nvcc $p.cu"; fi
  done
  bench "$out/native.txt" native_runner "${native_progs[@]}"
fi

# 5. OpenMP through LLVM 16's plugin (the baseline) and through tether's.
want llvm16 && bench "$out/llvm16.txt" llvm_runner "${omp_progs[@]}"
if want tether; then
  if [ $have_tether = 1 ]; then
    # rpc (bin/omp-rpc only): the one-packet RPC round trip, figure "pingpong" like native's.
    rpc_progs=()
    [ -x "$work/bin/omp-rpc/rpc" ] && rpc_progs+=("$work/bin/omp-rpc/rpc")
    bench "$out/tether.txt" tether_runner "${omp_progs[@]}" "${rpc_progs[@]}"
    # The round trip, printf and malloc move by 10-50% from one run to the next (the raw
    # ping-pong between 1.6 and 2.0 us on one machine, tether's printf rate between 1.2 and 3.3 M
    # lines/s): 5 rounds, each CUDA's program then tether's, and the median of each as
    # "<figure>_median" beside the single runs.
    alternate() { # FIGURE UNIT NATIVE TETHER [NAME: the tether figure's name, default FIGURE]
      local fig=$1 unit=$2 native=$3 prog=$4 name=${5:-$1} r n t
      [ -x "$native" ] && [ -x "$prog" ] || return 0
      say "$name: 5 alternating rounds of CUDA's program and tether's ($(basename "$prog"))"
      : >"$work/rounds-$name.txt"
      for r in 1 2 3 4 5; do
        n=$(timeout "$limit" "$native" | sed -n "s/^fig $fig \([0-9.e+]*\).*/\1/p")
        t=$(omp_run plugins-tether "$prog" 2>/dev/null | sed -n "s/^fig $fig \([0-9.e+]*\).*/\1/p")
        [ -n "$n" ] && [ -n "$t" ] || fail "$name round $r"
        echo "round $r: native $n $unit, tether $t $unit" | tee -a "$work/rounds-$name.txt"
      done
      median() { sed -n "s/.*$1 \([0-9.e+]*\) .*/\1/p" "$work/rounds-$name.txt" | sed 's/,$//' | sort -g | sed -n 3p; }
      [ -f "$out/native.txt" ] && [ "$name" = "$fig" ] &&
        echo "fig ${fig}_median $(median native) $unit" >>"$out/native.txt"
      echo "fig ${name}_median $(median tether) $unit" >>"$out/tether.txt"
    }
    if [ ${#rpc_progs[@]} -gt 0 ]; then
      alternate pingpong us "$work/bin/native/pingpong" "${rpc_progs[0]}"
      # The same program built with -foffload-lto (bin/omp-rpc/rpc_lto): the call path inlined
      # into the kernel.
      alternate pingpong us "$work/bin/native/pingpong" "$work/bin/omp-rpc/rpc_lto" pingpong_lto
    fi
    alternate printf_rate Mlines/s "$work/bin/native/printf" "$work/bin/omp-rpc/printf"
    alternate malloc_free Mpairs/s "$work/bin/native/malloc" "$work/bin/omp-rpc/malloc"
    # How host threads wait matters for latency: LLVM 16 forces blocking sync, tether's default
    # polls first (step wait).  The same launch benchmark with tether's waits always blocking:
    if [ -x "$work/bin/omp/launch" ]; then
      say "tether: launch with TETHER_WAIT=block"
      TETHER_WAIT=block omp_run plugins-tether "$work/bin/omp/launch" 2>&1 |
        sed 's/^fig launch_empty /fig launch_empty_blocking /' | tee -a "$work/blocking.txt"
      grep '^fig ' "$work/blocking.txt" >>"$out/tether.txt" || fail "tether launch (blocking)"
    fi
  else
    say "tether: no tether plugin in the bundle, skipped"
  fi
fi

# 5b. wait: what waiting for the GPU costs the host (test/cuda/omp/waitcpu.c).  Each round runs
# CUDA's empty launch (the native baseline of the empty region), then waitcpu through LLVM 16's
# plugin, tether's with TETHER_WAIT=spin and tether's with TETHER_WAIT=adaptive, so the ratios
# come from one machine and one time; the summary takes each figure's median over the rounds.
if want wait; then
  if [ $have_tether = 1 ] && [ -x "$work/bin/omp/waitcpu" ]; then
    native_launch=$work/bin/native/launch
    if [ ! -x "$native_launch" ]; then
      mkdir -p "$work/bin/native"
      nvcc -O2 -arch=sm_90 -o "$native_launch" "$root/test/cuda/native/launch.cu" -lcuda ||
        fail "wait: nvcc launch.cu"
    fi
    : >"$out/wait.txt"
    for r in $(seq "${TETHER_WAIT_ROUNDS:-3}"); do
      if [ -x "$native_launch" ]; then
        timeout "$limit" "$native_launch" | sed -n 's/^fig launch_empty /native fig wait_empty /p' |
          tee -a "$out/wait.txt"
      fi
      cfgs="llvm16 spin adaptive"
      [ -x "$work/bin/omp-rpc/waitcpu" ] && cfgs="$cfgs rpc"
      for cfg in $cfgs; do
        say "wait: round $r, $cfg"
        if [ $cfg = llvm16 ]; then
          omp_run plugins-llvm "$work/bin/omp/waitcpu" >"$work/wait.txt" 2>&1
        elif [ $cfg = rpc ]; then
          omp_run plugins-tether "$work/bin/omp-rpc/waitcpu" >"$work/wait.txt" 2>&1
        else
          TETHER_WAIT=$cfg omp_run plugins-tether "$work/bin/omp/waitcpu" >"$work/wait.txt" 2>&1
        fi
        rc=$?
        cat "$work/wait.txt"
        [ $rc -eq 0 ] || fail "wait: waitcpu ($cfg, round $r, exit $rc)"
        sed -n "s/^fig /$cfg fig /p" "$work/wait.txt" >>"$out/wait.txt"
      done
    done
    # Lines "<config> fig <name> <value> <unit>"; medians per config and name, then the goals.
    awk '
      $2 == "fig" { k = $1 SUBSEP $3; n[k]++; v[k, n[k]] = $4 + 0 }
      function med(cfg, name,   k, m, i, j, t, a) {
        k = cfg SUBSEP name; m = n[k] + 0
        if (m == 0) return -1
        for (i = 1; i <= m; i++) a[i] = v[k, i]
        for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      }
      function show(x) { return x < 0 ? "n/a" : sprintf("%.4g", x) }
      function ratio(a, b) { return (a < 0 || b <= 0) ? "n/a" : sprintf("%.2f", a / b) }
      function verdict(ok) { return ok ? "met" : "NOT met" }
      END {
        a = med("adaptive", "wait_cpu_2s")
        printf "wait: host CPU during a 2 s kernel, %% of one core: llvm16 %s, tether spin %s, tether adaptive %s (goal: adaptive <= 5: %s)\n",
          show(med("llvm16", "wait_cpu_2s")), show(med("spin", "wait_cpu_2s")), show(a), verdict(a >= 0 && a <= 5)
        a = med("rpc", "wait_cpu_2s")
        if (a >= 0)
          printf "wait: the same program linked with -ltether-device (its RPC server thread running), tether adaptive: %s %% (goal <= 5: %s)\n", show(a), verdict(a <= 5)
        nat = med("native", "wait_empty"); a = med("adaptive", "wait_empty"); s = med("spin", "wait_empty"); l = med("llvm16", "wait_empty")
        printf "wait: empty region, us: native %s, llvm16 %s (%sx native), tether spin %s (%sx), tether adaptive %s (%sx native, %sx spin; goal <= 1.3x native: %s)\n",
          show(nat), show(l), ratio(l, nat), show(s), ratio(s, nat), show(a), ratio(a, nat), ratio(a, s),
          verdict(a >= 0 && nat > 0 && a <= 1.3 * nat)
        r = med("rpc", "wait_empty")
        if (r >= 0)
          printf "wait: empty region of the program linked with -ltether-device, us: %s (%sx native, %sx without the library)\n",
            show(r), ratio(r, nat), ratio(r, a)
        split("wait_50us wait_100us wait_1ms", names, " ")
        split("50 us|100 us|1 ms", labels, "|")
        for (i = 1; i <= 3; i++) {
          a = med("adaptive", names[i]); s = med("spin", names[i]); l = med("llvm16", names[i])
          printf "wait: region with a %s kernel, us: llvm16 %s, tether spin %s, tether adaptive %s (%sx spin; goal <= 1.05x: %s)\n",
            labels[i], show(l), show(s), show(a), ratio(a, s), verdict(a >= 0 && s > 0 && a <= 1.05 * s)
          c = "wait_cpu_" substr(names[i], 6)
          printf "wait: host CPU during those regions, %% of one core: llvm16 %s, tether spin %s, tether adaptive %s\n",
            show(med("llvm16", c)), show(med("spin", c)), show(med("adaptive", c))
        }
      }' "$out/wait.txt" >"$out/wait-summary.txt"
    cat "$out/wait-summary.txt"
  else
    say "wait: no tether plugin or no bin/omp/waitcpu in the bundle, skipped"
    skipped+=(wait)
  fi
fi

# 5c. taskdeps: libomp 16's race in __kmpc_omp_taskwait_deps_51 (docs/conformance.md) aborts some
# runs of a program that waits for target tasks with `taskwait depend` with "Assertion failure
# at kmp_taskdeps.h(26)".  bin/stress/taskwait_deps runs N times through each plugin (the two
# alternating) and each run is classed: passed, hit that assertion, hit another libomp assertion
# (named in the report), or failed otherwise (a wrong value, another crash, a hang), which fails
# the step through tether's plugin.  One run per plugin first, with LIBOMPTARGET_INFO=16, proves
# which plugin launched the program's kernels.
if want taskdeps; then
  prog=$work/bin/stress/taskwait_deps
  if [ $have_tether = 1 ] && [ -x "$prog" ]; then
    say "taskdeps: $taskdeps_runs runs through each plugin"
    : >"$out/taskdeps.txt"
    served=1
    for cfg in llvm16 tether; do
      if [ $cfg = tether ]; then
        plugins="plugins-tether" pattern='^tether \(cuda\): device [0-9]+: launching kernel __omp_offloading_'
      else
        plugins="plugins-llvm" pattern='Launching kernel __omp_offloading_'
      fi
      LIBOMPTARGET_INFO=16 omp_run "$plugins" "$prog" 2 >"$work/taskdeps.txt" 2>&1
      if ! grep -Eq "$pattern" "$work/taskdeps.txt"; then
        echo "$cfg: the program's kernels were not launched by $plugins" | tee -a "$out/taskdeps.txt"
        tail -5 "$work/taskdeps.txt" | sed 's/^/    /' | tee -a "$out/taskdeps.txt"
        served=0
      fi
    done
    if [ $served = 1 ]; then
      # Per plugin: runs that hit kmp_taskdeps.h(26), another libomp assertion, another failure.
      declare -A runs=()
      count() { runs[$1]=$((${runs[$1]:-0} + 1)); }
      for r in $(seq "$taskdeps_runs"); do
        for cfg in llvm16 tether; do
          plugins="plugins-llvm"
          [ $cfg = tether ] && plugins="plugins-tether"
          omp_run "$plugins" "$prog" >"$work/taskdeps.txt" 2>&1
          rc=$?
          if grep -q 'Assertion failure at kmp_taskdeps\.h(26)' "$work/taskdeps.txt"; then
            count "$cfg deps"
          elif grep -q 'Assertion failure at ' "$work/taskdeps.txt"; then
            count "$cfg assert"
            echo "$cfg: run $r: $(grep -m1 -o 'Assertion failure at [^ ]*' "$work/taskdeps.txt")" >>"$out/taskdeps.txt"
          elif [ $rc -ne 0 ] || ! grep -q '^taskwait_deps: [0-9]* rounds ok' "$work/taskdeps.txt"; then
            count "$cfg other"
            echo "$cfg: run $r failed (exit $rc):" >>"$out/taskdeps.txt"
            tail -8 "$work/taskdeps.txt" | sed 's/^/    /' >>"$out/taskdeps.txt"
          fi
        done
      done
      for cfg in llvm16 tether; do
        echo "taskdeps: $cfg: $taskdeps_runs runs, ${runs[$cfg deps]:-0} hit the kmp_taskdeps.h(26) assertion, ${runs[$cfg assert]:-0} another libomp assertion, ${runs[$cfg other]:-0} failed otherwise" >>"$out/taskdeps.txt"
      done
      # libomp 16's race also ends some runs in a segmentation fault, under either plugin: fail
      # only when tether's plugin fails more runs that way than LLVM's in the same alternation.
      [ "${runs[tether other]:-0}" -le "${runs[llvm16 other]:-0}" ] ||
        fail "taskdeps: ${runs[tether other]} run(s) through tether's plugin failed other than by a libomp assertion (LLVM 16's: ${runs[llvm16 other]:-0})"
    else
      fail "taskdeps: a plugin did not serve the program"
    fi
    cat "$out/taskdeps.txt"
  else
    say "taskdeps: no tether plugin or no bin/stress/taskwait_deps in the bundle, skipped"
    skipped+=(taskdeps)
  fi
fi

# 6. Conformance through tether's plugin.  Each program checks by itself that tether's cuda
# plugin served it (conf_require_tether) and exits 0 only when every check passed.
if want conformance; then
  progs=()
  for prog in "$work"/bin/conformance/c[0-9]*; do
    [[ -x "$prog" && "$prog" != *.so ]] && progs+=("$prog")
  done
  if [ $have_tether = 1 ] && [ ${#progs[@]} -gt 0 ]; then
    : >"$out/conformance.txt"
    pass=0
    for prog in "${progs[@]}"; do
      omp_run plugins-tether "$prog" >"$work/conf.txt" 2>&1
      rc=$?
      if [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        echo "PASS $(basename "$prog")" >>"$out/conformance.txt"
      else
        echo "FAIL $(basename "$prog") (exit $rc)" >>"$out/conformance.txt"
        tail -15 "$work/conf.txt" | sed 's/^/    /' >>"$out/conformance.txt"
        fail "conformance $(basename "$prog")"
      fi
    done
    # The other way round: with only LLVM's plugin, c13 must see that tether does not serve it.
    if [ -x "$work/bin/conformance/c13_served" ]; then
      if omp_run plugins-llvm "$work/bin/conformance/c13_served" expect-llvm >"$work/conf.txt" 2>&1; then
        echo "PASS c13_served expect-llvm (LLVM 16's plugin)" >>"$out/conformance.txt"
      else
        echo "FAIL c13_served expect-llvm (LLVM 16's plugin)" >>"$out/conformance.txt"
        tail -15 "$work/conf.txt" | sed 's/^/    /' >>"$out/conformance.txt"
        fail "conformance c13_served expect-llvm"
      fi
    fi
    say "conformance: $pass of ${#progs[@]} passed through tether's plugin"
    cat "$out/conformance.txt"
  else
    say "conformance: no tether plugin or no conformance programs in the bundle, skipped"
  fi
fi

# 6a. LLVM 16's own offload test suite, each test with LLVM 16's plugin then tether's (every run
# checked for the plugin that served it: scripts/llvm-suite.sh, docs/conformance.md).
if want llvm-suite; then
  if [ $have_tether = 1 ] && [ -f "$work/llvm-suite/manifest" ]; then
    say "llvm-suite: LLVM 16's offload test suite, LLVM 16's plugin and tether's"
    extra=()
    IFS=: read -r -a extra <<<"${TETHER_DEVICE_EXTRA_LIBS:-}"
    TETHER_SUITE_LIMIT=$limit bash "$work/llvm-suite/llvm-suite.sh" run-exported "$work/llvm-suite" \
      "$work/plugins-llvm" "$work/plugins-tether" "$work/lib" ${extra[@]+"${extra[@]}"} \
      >"$work/llvm-suite.log" 2>&1
    rc=$?
    sed -n '/^LLVM 16.0.6 offload test suite/,$p' "$work/llvm-suite.log" >"$out/llvm-suite.txt"
    grep -v '^\[\(llvm\|tether\)\] ' "$work/llvm-suite.log" | tail -40
    [ $rc -eq 0 ] || fail "llvm-suite (exit $rc; $out/llvm-suite.txt)"
    # Each test's output under each plugin, for reading afterwards.
    (cd "$work/llvm-suite" && tar -czf "$out/llvm-suite-logs.tar.gz" logs) || true
  else
    say "llvm-suite: no tether plugin or no llvm-suite/ in the bundle, skipped"
    skipped+=(llvm-suite)
  fi
fi

# 6b. Two GPUs at once (test/cuda/multi): one program offloads to two devices from two host
# threads, printing and allocating on both.  multi_gpu checks results, heap data and the shared
# pinned map itself; check_multi.sh checks its stdout (every printed line exactly once per device)
# and its stderr (LIBOMPTARGET_INFO=16: "rpc:" lines from two devices, one server each).  Two
# shapes: 8 teams x 1 thread (one printing thread per team) and 4 teams x 4 threads.
if want multi; then
  if [ $have_tether = 1 ] && [ -x "$work/bin/multi/multi_gpu" ]; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
      visible=$(awk -F, '{ print NF }' <<<"$CUDA_VISIBLE_DEVICES")
      [ "$visible" -lt "$gpus" ] && gpus=$visible
    fi
    say "multi: $gpus GPU(s) visible"
    : >"$out/multi.txt"
    for shape in "8 1 4" "4 4 4"; do
      name=multi_gpu-${shape// /x}
      say "multi: $name"
      # shellcheck disable=SC2086 # the shape is three words on purpose
      LIBOMPTARGET_INFO=16 omp_run plugins-tether "$work/bin/multi/multi_gpu" $shape \
        >"$out/$name.stdout" 2>"$out/$name.stderr"
      rc=$?
      bash "$root/test/cuda/multi/check_multi.sh" $rc "$out/$name.stdout" "$out/$name.stderr" \
        >"$work/multi-check.txt"
      verdict=$?
      grep '^multi-gpu: ' "$out/$name.stdout"
      cat "$work/multi-check.txt"
      if [ $verdict -eq 77 ] && [ "$gpus" -lt 2 ]; then
        echo "SKIP $name (fewer than 2 GPUs)" >>"$out/multi.txt"
        skipped+=(multi)
        break
      elif [ $verdict -eq 77 ]; then
        echo "FAIL $name: skipped although $gpus GPUs are visible" >>"$out/multi.txt"
        fail "multi $name: tether's cuda plugin served fewer than 2 of $gpus GPUs"
      elif [ $verdict -eq 0 ]; then
        echo "PASS $name" >>"$out/multi.txt"
      else
        echo "FAIL $name (exit $rc)" >>"$out/multi.txt"
        sed 's/^/    /' "$work/multi-check.txt" >>"$out/multi.txt"
        grep -v '^multi-gpu-line' "$out/$name.stdout" | tail -15 | sed 's/^/    out: /' >>"$out/multi.txt"
        grep -v '^tether (cuda): device [0-9]*: \(Launching\|launch\)' "$out/$name.stderr" |
          tail -25 | sed 's/^/    err: /' >>"$out/multi.txt"
        fail "multi $name"
      fi
    done
    cat "$out/multi.txt"
  else
    say "multi: no tether plugin or no bin/multi/multi_gpu in the bundle, skipped"
    skipped+=(multi)
  fi
fi

# 6c. MPI (scripts/device-run-mpi.sh): its own runs, results and verdict.
if want mpi; then
  bash "$root/scripts/device-run-mpi.sh" "$work" "$out"
  case $? in
    0) ;;
    77) skipped+=(mpi) ;;
    *) fail "mpi (see $out/mpi.txt)" ;;
  esac
fi

# 7. Side by side (and the wait step's medians, when it ran).
if [ -f "$out/native.txt" ] && [ -f "$out/llvm16.txt" ]; then
  files=("$out/native.txt" "$out/llvm16.txt")
  [ -s "$out/tether.txt" ] && files+=("$out/tether.txt")
  say "figures"
  bash "$root/scripts/device-compare.sh" "${files[@]}" | tee "$out/summary.txt"
fi
if want wait && [ -s "$out/wait-summary.txt" ]; then
  { [ -f "$out/native.txt" ] && [ -f "$out/llvm16.txt" ]; } || : >"$out/summary.txt"
  tee -a "$out/summary.txt" <"$out/wait-summary.txt"
fi
if [ $failed != 0 ]; then
  say "some steps FAILED (see above)"
elif [ ${#skipped[@]} -gt 0 ]; then
  say "all steps run passed; SKIPPED (not passed): ${skipped[*]}"
  for s in "${skipped[@]}"; do
    [[ " $asked " == *" $s "* ]] && exit 77
  done
else
  say "all steps passed"
fi
exit $failed
