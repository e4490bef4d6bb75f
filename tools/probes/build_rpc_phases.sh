#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# build_rpc_phases.sh OUT - builds rpc_phases (rpc_phases.c, rpc_phases_lib.c: the device library's
# profiling build, rpc_phases_prof.c: its hooks) for sm_90;
# RPC_PHASES_FLAGS: more compiler flags.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
flags=(-O2 -fopenmp -fopenmp-cuda-mode -fopenmp-targets=nvptx64-nvidia-cuda
  -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 "--cuda-path=${CUDA_PATH:-/usr/local/cuda}"
  -Wno-unknown-cuda-version -Wno-incompatible-library-redeclaration -Wno-builtin-requires-header
  -foffload-lto -D_GNU_SOURCE -DNDEBUG -I"$root/include" ${RPC_PHASES_FLAGS:-})
# The hooks before the library: the device link takes the first definition of a name (the
# library's are weak and do nothing).
clang-16 "${flags[@]}" "$root/tools/probes/rpc_phases.c" "$root/tools/probes/rpc_phases_prof.c" \
  "$root/tools/probes/rpc_phases_lib.c" \
  -ldl -o "${1:?usage: build_rpc_phases.sh OUT}" 2>&1 | grep -v "CUDA version is newer" || true
[ -x "$1" ]
