#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cuda_bench.sh SOURCE_DIR BUILD_DIR - `make bench` on a machine with an NVIDIA GPU and Debian's
# toolchain: bundle, then run the native / LLVM 16 / tether benchmarks side by side in one run
# (docs/gpu-testing.md).  Started by cuda_bench (a C wrapper that first checks for a driver).
set -euo pipefail
src=$1 build=$2
out=$build/cuda-bench
TETHER_BUILD=$build bash "$src/scripts/device-bundle.sh" "$out"
OUT=$out/results bash "$src/scripts/device-run.sh" "$out/tether-device.tar.xz" native llvm16 tether
