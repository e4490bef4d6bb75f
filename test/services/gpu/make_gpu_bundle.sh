#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/services/gpu/make_gpu_bundle.sh BUILD - packs what a GPU machine without clang or
# Debian packages needs to run the services tests on NVIDIA (sm_90) into
# BUILD/svc-gpu/svc-gpu.tar.xz:
#   lib/      Debian 12's libomptarget 16 runtime (apt-get download, as scripts/device-bundle.sh)
#             and libhwloc.so.15
#   plugin/   the CUDA plugin, whose common/plugin_rpc.c serves RPC (BUILD/lib)
#   bin/      test/services/offload/*.c and gpu/gpu_diag.c for sm_90 with libtether-device.a, and
#             bench_rpc_thread (test/rpc/server)
#   img/      gpu_diag's device image (run_diag.sh disassembles it there)
#   run_offload.sh, run_gpu.sh
# On the GPU machine: test/services/gpu/run_gpu.sh BUILD/svc-gpu/svc-gpu.tar.xz (the tests) or
# test/services/gpu/run_diag.sh BUILD/svc-gpu/svc-gpu.tar.xz (diagnostics, gpu_diag.c).
# SVC_NO_RUNTIME=1 leaves lib/ out (a smaller bundle that travels next to
# scripts/device-bundle.sh's, whose lib/ the runners then use: SVC_RUNTIME=/tmp/tether-device/lib).
set -euo pipefail
build=$(cd "${1:?usage: make_gpu_bundle.sh BUILD}" && pwd)
root=$(cd "$(dirname "$0")/../../.." && pwd)
cuda=${CUDA_PATH:-/usr/local/cuda}
out=$build/svc-gpu
stage=$out/stage
debs=$out/debs
mkdir -p "$debs"
rm -rf "$stage" "$out/unpacked"
mkdir -p "$stage/lib" "$stage/plugin" "$stage/bin" "$out/unpacked"

if [ -z "${SVC_NO_RUNTIME:-}" ]; then
pkgs=(libomp5-16 libllvm16 libz3-4 libicu72 libxml2 libedit2 libbsd0 libmd0 libffi8 libtinfo6)
for p in "${pkgs[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null ||
    (cd "$debs" && apt-get download "$p" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  compgen -G "$debs/${p}_*.deb" >/dev/null || { echo "apt-get download $p failed" >&2; exit 1; }
done
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$out/unpacked"; done
u=$out/unpacked
for f in usr/lib/llvm-16/lib/libomp.so.5 usr/lib/llvm-16/lib/libomptarget.so.16 \
  usr/lib/x86_64-linux-gnu/libLLVM-16.so.1 usr/lib/x86_64-linux-gnu/libz3.so.4 \
  usr/lib/x86_64-linux-gnu/libxml2.so.2 usr/lib/x86_64-linux-gnu/libicuuc.so.72 \
  usr/lib/x86_64-linux-gnu/libicudata.so.72 usr/lib/x86_64-linux-gnu/libedit.so.2 \
  usr/lib/x86_64-linux-gnu/libbsd.so.0 usr/lib/x86_64-linux-gnu/libmd.so.0 \
  usr/lib/x86_64-linux-gnu/libffi.so.8 lib/x86_64-linux-gnu/libtinfo.so.6; do
  cp -L "$u/$f" "$stage/lib/"
done
rm -rf "$u"
fi
cp -L /usr/lib/x86_64-linux-gnu/libhwloc.so.15 "$stage/lib/"

cp "$build/lib/libomptarget.rtl.cuda.nextgen.so" "$stage/plugin/"
strip --strip-unneeded "$stage/plugin/libomptarget.rtl.cuda.nextgen.so"
flags=(-O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
  -march=sm_90 "--cuda-path=$cuda" -Wno-unknown-cuda-version -DSVC_GPU -Wall -Werror
  -I"$root/include" -include "$root/include/tether/device_libc.h")
for p in printf heap heap_checks user exit bad; do
  clang-16 "${flags[@]}" "$root/test/services/offload/offload_$p.c" \
    -L"$build/rpc/device" -ltether-device -o "$stage/bin/offload_$p" 2>&1 |
    grep -v "CUDA version is newer" || true
  [ -x "$stage/bin/offload_$p" ] || { echo "clang-16 failed on offload_$p" >&2; exit 1; }
done
# gpu_diag (run_diag.sh), with its device image and offload_printf's kept for cuobjdump there.
mkdir -p "$stage/img" "$out/tmp"
(cd "$out/tmp" && clang-16 "${flags[@]}" -save-temps "$root/test/services/gpu/gpu_diag.c" \
  -L"$build/rpc/device" -ltether-device -o "$stage/bin/gpu_diag" 2>&1 | grep -v "CUDA version is newer" || true
  cp gpu_diag.nvptx64.sm_90.img "$stage/img/")
[ -x "$stage/bin/gpu_diag" ] || { echo "clang-16 failed on gpu_diag" >&2; exit 1; }
rm -rf "$out/tmp"
cp "$build/test/rpc/server/bench_rpc_thread" "$stage/bin/"
cp "$root/test/services/run_offload.sh" "$root/test/services/gpu/run_gpu.sh" \
  "$root/test/services/gpu/run_diag.sh" "$stage/"
tar -C "$stage" -cf - . | xz -T2 -6 >"$out/svc-gpu.tar.xz"
echo "$out/svc-gpu.tar.xz: $(($(stat -c %s "$out/svc-gpu.tar.xz") / 1048576)) MiB"
