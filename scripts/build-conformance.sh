#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Build tether's OpenMP conformance suite (test/conformance) for one offload target.
#
#   scripts/build-conformance.sh <x86_64|nvptx64> <outdir> [test ...]
#
# Each test cNN_name is cNN_name.c (or .cpp) plus any cNN_name_part*.c in the same program, and
# a shared library libcNN_name.so from cNN_name_lib.c when that file exists (a second device
# image).  Programs are plain `clang-16 -fopenmp -fopenmp-targets=...` builds; nothing
# tether-specific is linked.  Environment: CLANG (clang-16), CLANGXX (clang++-16), CUDA_PATH
# (/usr/local/cuda), NVPTX_ARCH (sm_90), EXTRA_CFLAGS.
# Run a built program with tether's plugins first on the library path:
#   LD_LIBRARY_PATH=<build>/lib <outdir>/c01_target
set -euo pipefail

usage() {
  echo "usage: $0 <x86_64|nvptx64> <outdir> [test ...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
target=$1
out=$2
shift 2

repo=$(cd "$(dirname "$0")/.." && pwd)
src=$repo/test/conformance
CLANG=${CLANG:-clang-16}
CLANGXX=${CLANGXX:-clang++-16}
CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
NVPTX_ARCH=${NVPTX_ARCH:-sm_90}

case $target in
  x86_64)
    offload=(-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu)
    plugin=x86_64 ;;
  nvptx64)
    if [ ! -x "$CUDA_PATH/bin/ptxas" ]; then
      echo "$0: no ptxas in $CUDA_PATH/bin (set CUDA_PATH)" >&2
      exit 1
    fi
    offload=(-fopenmp -fopenmp-targets=nvptx64-nvidia-cuda
             -Xopenmp-target=nvptx64-nvidia-cuda "-march=$NVPTX_ARCH"
             "--cuda-path=$CUDA_PATH" -Wno-unknown-cuda-version)
    plugin=cuda ;;
  *) usage ;;
esac

cflags=(-O2 -Wall -Werror -I"$repo/include" -I"$src" "-DTETHER_EXPECT_PLUGIN=\"$plugin\""
        ${EXTRA_CFLAGS:-})

if [ $# -eq 0 ]; then
  set -- $(cd "$src" && ls c[0-9][0-9]_*.c c[0-9][0-9]_*.cpp 2>/dev/null |
           grep -v -e '_part[0-9]*\.c$' -e '_lib\.c$' | sed 's/\.c\(pp\)\{0,1\}$//' | sort -u)
fi

mkdir -p "$out"
for t in "$@"; do
  cc=$CLANG
  main=$src/$t.c
  if [ -f "$src/$t.cpp" ]; then
    cc=$CLANGXX
    main=$src/$t.cpp
  fi
  [ -f "$main" ] || { echo "$0: no test $t in $src" >&2; exit 1; }
  parts=()
  for p in "$src/${t}"_part*.c; do
    [ -f "$p" ] && parts+=("$p")
  done
  libs=()
  if [ -f "$src/${t}_lib.c" ]; then
    "$CLANG" "${cflags[@]}" "${offload[@]}" -fPIC -shared "$src/${t}_lib.c" -o "$out/lib$t.so"
    libs=(-L"$out" -l"$t" -Wl,-rpath,'$ORIGIN')
  fi
  "$cc" "${cflags[@]}" "${offload[@]}" "$main" "${parts[@]}" "${libs[@]}" -o "$out/$t"
  echo "built $out/$t ($target)"
done
