#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/rpc/rpc_device_compile.sh - compiles rpc_device_compile.c (every
# rpc.h operation inside `#pragma omp declare target`) for one offload
# target, with and without the protocol checks, and checks that the device
# code uses the system-scope operations rpc_arch.h promises.
#
#   rpc_device_compile.sh CLANG nvptx|amdgcn|x86_64 TEST_SOURCE RPC_DIR INCLUDE_DIR
#   Exits 77 (ctest SKIP_RETURN_CODE) when clang or, for nvptx, the CUDA
#   toolkit's ptxas is missing.
set -u
clang=$1 target=$2 tu=$3 src=$4 inc=$5
if ! command -v "$clang" >/dev/null 2>&1; then
    echo "SKIP: $clang not found (Debian package clang-16)"
    exit 77
fi
cuda=${CUDA_PATH:-/usr/local/cuda}
case $target in
nvptx)
    if [ ! -x "$cuda/bin/ptxas" ]; then
        echo "SKIP: no ptxas in $cuda/bin (CUDA toolkit missing): nvptx64 device code not compiled"
        exit 77
    fi
    flags="-fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path=$cuda -Wno-unknown-cuda-version" ;;
amdgcn)
    flags="-fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa -march=gfx90a -nogpulib" ;;
x86_64)
    flags="-fopenmp-targets=x86_64-pc-linux-gnu" ;;
*)
    echo "unknown target $target"; exit 2 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/rpc_dev.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
common="-O2 -std=c11 -Wall -Wextra -Werror -fopenmp -I$src -I$inc $flags"
for mode in -DNDEBUG -UNDEBUG; do
    # shellcheck disable=SC2086
    "$clang" $common $mode -c "$tu" -o "$work/obj.o" || {
        echo "FAIL: $target compile ($mode)"; exit 1; }
    echo "compiled for $target ($mode)"
done

# What the device code must contain (system scope for the mailboxes).
check() {
    if ! grep -q -- "$1" "$work/dev.s"; then
        echo "FAIL: $target device code lacks '$1'"
        exit 1
    fi
    echo "device code has: $1"
}
check_absent() {
    if grep -q -- "$1" "$work/dev.s"; then
        echo "FAIL: $target device code has '$1'"
        exit 1
    fi
    echo "device code lacks: $1"
}
case $target in
nvptx|amdgcn)
    # shellcheck disable=SC2086
    "$clang" $common -DNDEBUG --offload-device-only -S "$tu" \
        -o "$work/dev.s" || { echo "FAIL: device-only compile"; exit 1; }
    ;;
esac
case $target in
nvptx)
    check "st.volatile.u8"      # W3 flip: the flag byte, a posted store
    check "fence.acq_rel.sys"   # W2/W3 fences (acquire and release patterns)
    check "ld.volatile"         # W1 relaxed system-scope loads
    check "ld.acquire.sys.global.v2.u64"  # answer head: one 16-byte read
    check "atom.acquire.gpu.global.or.b64" # client port state word: lock
    check "st.release.gpu.global.u64"     # ... and unlock, always a release
    check_absent "st.relaxed.gpu"         # no close without a fence
    check "shfl.sync.idx"       # warp-uniform mailbox values
    ;;
amdgcn)
    check "store atomic i8 .* monotonic"     # W3 flip: the flag byte (no syncscope: system)
    check "fence release"                    # W3 release, system scope
    check "fence acquire"                    # W2
    check "load atomic i32"                  # W1
    check "llvm.amdgcn.readfirstlane"
    ;;
esac
echo "PASS: rpc.h compiles for $target"
