#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# device-bundle.sh [OUTDIR] - build, on this Debian 12 machine, everything a GPU machine
# without clang or Debian packages needs to run tether's GPU tests and benchmarks, and pack it
# into OUTDIR/tether-device.tar.xz (small enough to travel: under ~45 MiB).
#
#   lib/             Debian 12 runtime of libomptarget 16, pruned to the files it loads
#                    (libomp5-16, libllvm16 and their dependencies, fetched with apt-get download)
#   plugins-llvm/    libomptarget.rtl.cuda.nextgen.so -> LLVM 16's own CUDA plugin (the baseline)
#   plugins-tether/  tether's libomptarget.rtl.cuda.nextgen.so, when it has been built
#   bin/omp/         OpenMP programs from test/cuda/omp/, clang-16 for sm_90 (jit with
#                    -fopenmp-target-jit: its image is LLVM bitcode)
#   bin/omp-rpc/     printf, malloc and rpc of test/cuda/omp/ built with tether/device_libc.h and
#                    -ltether-device (rpc.c only here: it needs tether's RPC server), and rpc_lto:
#                    rpc.c with -foffload-lto too
#   bin/stress/      programs of test/cuda/stress/ for sm_90, run many times by device-run.sh
#                    (taskwait_deps: step taskdeps)
#   bin/multi/       the two-GPU acceptance test (test/cuda/multi/multi_gpu.c, sm_90, linked with
#                    $TETHER_BUILD/rpc/device/libtether-device.a), when that library is built
#   bin/conformance/ the conformance suite (test/conformance) for sm_90
#   llvm-suite/      LLVM 16.0.6's own offload test suite (openmp/libomptarget/test) built for
#                    sm_90, with its scripts, FileCheck, not and llvm-ar: run there by
#                    scripts/llvm-suite.sh run-exported (bundled too), no clang, lit or python
#   mpi/, bin/mpi/   Debian 12's Open MPI runtime, relocatable (. mpi/env.sh), and
#                    examples/mpi_halo.c for sm_90 with and without -ltether-device
#                    (scripts/device-bundle-mpi.sh; checked here after packing)
#
# The CUDA native programs (test/cuda/native/*.cu) are NOT built here: scripts/device-run.sh
# builds them with nvcc on the GPU machine.  Environment:
#   TETHER_BUILD  the CMake build folder holding tether's plugin (default: build)
#   CUDA_PATH     CUDA toolkit for ptxas/nvlink (default: /usr/local/cuda)
# Usage on the GPU machine: scripts/device-run.sh OUTDIR/tether-device.tar.xz  (docs/gpu-testing.md)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-build/device}
build=${TETHER_BUILD:-build}
cuda=${CUDA_PATH:-/usr/local/cuda}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/stage
debs=$out/debs

say() { printf 'device-bundle: %s\n' "$*"; }
die() { printf 'device-bundle: error: %s\n' "$*" >&2; exit 1; }

command -v clang-16 >/dev/null || die "clang-16 is missing (run scripts/setup.sh)"
[ -x "$cuda/bin/ptxas" ] || die "no ptxas in $cuda/bin (set CUDA_PATH)"

# 1. The Debian runtime packages (toolchain-notes.md), downloaded once.
pkgs=(libomp5-16 libllvm16 libz3-4 libicu72 libxml2 libedit2 libbsd0 libmd0 libffi8 libtinfo6)
mkdir -p "$debs"
missing=()
for p in "${pkgs[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get download ${missing[*]}"
  (cd "$debs" && apt-get download "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  for p in "${missing[@]}"; do
    compgen -G "$debs/${p}_*.deb" >/dev/null || die "apt-get download $p failed"
  done
fi

# 2. Unpack and keep only what libomptarget and LLVM's CUDA plugin load.
rm -rf "$stage" "$out/unpacked"
mkdir -p "$out/unpacked" "$stage/lib" "$stage/plugins-llvm" "$stage/plugins-tether" \
  "$stage/bin/omp" "$stage/bin/stress" "$stage/bin/conformance" "$stage/bin/multi"
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$out/unpacked"; done
u=$out/unpacked
keep=(
  usr/lib/llvm-16/lib/libomp.so.5
  usr/lib/llvm-16/lib/libomptarget.so.16
  usr/lib/llvm-16/lib/libomptarget.rtl.cuda.nextgen.so.16
  usr/lib/x86_64-linux-gnu/libLLVM-16.so.1
  usr/lib/x86_64-linux-gnu/libz3.so.4
  usr/lib/x86_64-linux-gnu/libxml2.so.2
  usr/lib/x86_64-linux-gnu/libicuuc.so.72
  usr/lib/x86_64-linux-gnu/libicudata.so.72
  usr/lib/x86_64-linux-gnu/libedit.so.2
  usr/lib/x86_64-linux-gnu/libbsd.so.0
  usr/lib/x86_64-linux-gnu/libmd.so.0
  usr/lib/x86_64-linux-gnu/libffi.so.8
  lib/x86_64-linux-gnu/libtinfo.so.6
)
for f in "${keep[@]}"; do
  [ -e "$u/$f" ] || die "$f is not in the unpacked packages"
  cp -L "$u/$f" "$stage/lib/"   # -L: store the file under its SONAME, no symlink chains
done
rm -rf "$u"
# tether's plugin links hwloc (server thread placement); the GPU machine may not have it.
cp -L /usr/lib/x86_64-linux-gnu/libhwloc.so.15 "$stage/lib/"
# libomptarget 16 dlopens the plugins by their unversioned names; Debian ships those only as
# symlinks in libomp-16-dev.  One folder per plugin choice, put first on LD_LIBRARY_PATH.
ln -s ../lib/libomptarget.rtl.cuda.nextgen.so.16 "$stage/plugins-llvm/libomptarget.rtl.cuda.nextgen.so"

# 3. tether's CUDA plugin, when built (tether_add_plugin puts plugins in <build>/lib).
plugin=$build/lib/libomptarget.rtl.cuda.nextgen.so
if [ -f "$plugin" ]; then
  cp "$plugin" "$stage/plugins-tether/"
  strip --strip-unneeded "$stage/plugins-tether/libomptarget.rtl.cuda.nextgen.so"
  say "tether plugin: $plugin"
else
  say "no tether CUDA plugin at $plugin yet: the bundle runs LLVM 16's plugin and CUDA native only"
fi

# 4. OpenMP programs for sm_90.
ompflags=(-O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
  -march=sm_90 "--cuda-path=$cuda" -Wall -Wextra -Werror -Wno-unknown-cuda-version)
for src in "$root"/test/cuda/omp/*.c; do
  name=$(basename "$src" .c)
  [ "$name" = rpc ] && continue # needs libtether-device.a: bin/omp-rpc only
  jit=() # jit.c: an LLVM bitcode image, compiled by the plugin at load time
  [ "$name" = jit ] && jit=(-fopenmp-target-jit)
  clang-16 "${ompflags[@]}" "${jit[@]}" -o "$stage/bin/omp/$name" "$src" 2>&1 | grep -v "CUDA version is newer" || true
  [ -x "$stage/bin/omp/$name" ] || die "clang-16 failed on $src"
done
say "OpenMP programs: $(ls "$stage/bin/omp" | tr '\n' ' ')"

# 4a. Stress programs for sm_90: each is run many times on the GPU machine and its failures
# counted (test/cuda/stress/taskwait_deps.c: libomp 16's taskwait-depend race, step taskdeps).
for src in "$root"/test/cuda/stress/*.c; do
  name=$(basename "$src" .c)
  clang-16 "${ompflags[@]}" -o "$stage/bin/stress/$name" "$src" 2>&1 | grep -v "CUDA version is newer" || true
  [ -x "$stage/bin/stress/$name" ] || die "clang-16 failed on $src"
done
say "stress programs: $(ls "$stage/bin/stress" | tr '\n' ' ')"

# 4b. The two-GPU acceptance test, with the RPC device library (printf/malloc over RPC).
devlib=$build/rpc/device/libtether-device.a
devflags=(-I"$root/include" -include "$root/include/tether/device_libc.h")  # pkg-config --cflags tether
if [ -f "$devlib" ]; then
  clang-16 "${ompflags[@]}" "${devflags[@]}" -o "$stage/bin/multi/multi_gpu" \
    "$root/test/cuda/multi/multi_gpu.c" -L"$(dirname "$devlib")" -ltether-device 2>&1 |
    grep -v "CUDA version is newer" || true
  [ -x "$stage/bin/multi/multi_gpu" ] || die "clang-16 failed on test/cuda/multi/multi_gpu.c"
  say "two-GPU test: bin/multi/multi_gpu"
  # printf and malloc once more with the RPC device library: what tether's plugin is measured
  # with (printf and malloc over tether's RPC server and device heap instead of CUDA's).
  mkdir -p "$stage/bin/omp-rpc"
  for name in printf malloc rpc waitcpu; do
    clang-16 "${ompflags[@]}" "${devflags[@]}" -o "$stage/bin/omp-rpc/$name" "$root/test/cuda/omp/$name.c" \
      -L"$(dirname "$devlib")" -ltether-device 2>&1 | grep -v "CUDA version is newer" || true
    [ -x "$stage/bin/omp-rpc/$name" ] || die "clang-16 failed on $name.c with -ltether-device"
  done
  clang-16 "${ompflags[@]}" "${devflags[@]}" -foffload-lto -o "$stage/bin/omp-rpc/rpc_lto" \
    "$root/test/cuda/omp/rpc.c" -L"$(dirname "$devlib")" -ltether-device 2>&1 |
    grep -v "CUDA version is newer" || true
  [ -x "$stage/bin/omp-rpc/rpc_lto" ] || die "clang-16 failed on rpc.c with -foffload-lto"
  say "RPC benchmarks: bin/omp-rpc/printf, malloc, rpc, rpc_lto, waitcpu"
else
  say "no $devlib: no two-GPU test in the bundle"
fi

# 5. The conformance suite for sm_90 (scripts/build-conformance.sh, owned by common/).
conf=$root/scripts/build-conformance.sh
if [ -f "$conf" ]; then
  CUDA_PATH=$cuda NVPTX_ARCH=sm_90 bash "$conf" nvptx64 "$stage/bin/conformance" 2>&1 |
    grep -v "CUDA version is newer" || die "building the conformance suite failed"
  say "conformance: $(ls "$stage/bin/conformance" | wc -l) files"
else
  say "no scripts/build-conformance.sh: no conformance programs in the bundle"
fi

# 5b. LLVM 16's own offload test suite for sm_90 (scripts/llvm-suite.sh: downloaded once per
# machine, built here, run there through LLVM 16's plugin and tether's side by side).
CUDA_PATH=$cuda NVPTX_ARCH=sm_90 bash "$root/scripts/llvm-suite.sh" export nvptx64 "$out/llvm-suite" ||
  die "building LLVM's offload test suite for sm_90 failed (log: $out/llvm-suite/lit-build.log)"
mkdir -p "$stage/llvm-suite"
(cd "$out/llvm-suite" && tar -cf - --exclude=lit-build.log --exclude=lit-build.json --exclude=logs \
  --exclude='results-*.txt' .) | tar -xf - -C "$stage/llvm-suite"
say "LLVM offload test suite: $(grep -c ' run$' "$stage/llvm-suite/tests.txt") tests for sm_90"

# 5c. MPI (scripts/device-bundle-mpi.sh): Open MPI's runtime and mpi_halo, when the RPC device
# library is built.
if [ -f "$devlib" ]; then
  bash "$root/scripts/device-bundle-mpi.sh" "$stage" "$debs" "$build" "$cuda"
else
  say "no $devlib: no MPI example in the bundle"
fi

# 6. Pack.
say "packing (xz) ..."
tar -C "$stage" -cf - . | xz -T2 -6 >"$out/tether-device.tar.xz.tmp"
mv "$out/tether-device.tar.xz.tmp" "$out/tether-device.tar.xz"
size=$(stat -c %s "$out/tether-device.tar.xz")
say "$out/tether-device.tar.xz: $((size / 1048576)) MiB"
[ "$size" -lt $((56 * 1048576)) ] || die "bundle is over 56 MiB: it would not travel with the tree"

# 6b. The bundled Open MPI, unpacked elsewhere, runs mpi_halo with nothing from the system's.
if [ -d "$stage/mpi" ]; then
  bash "$root/scripts/device-bundle-mpi.sh" --check "$out/tether-device.tar.xz" ||
    die "the bundled Open MPI does not run relocated"
fi
