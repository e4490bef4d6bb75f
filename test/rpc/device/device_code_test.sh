#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/rpc/device/device_code_test.sh - compiles the device library (rpc/device/device_lib.c) for
# nvptx64 sm_90 to PTX and checks what its call path does and does not contain.
#
#   device_code_test.sh CLANG CUDA_PATH SOURCE_ROOT
#   Exits 77 (ctest SKIP_RETURN_CODE) when clang or the CUDA toolkit's ptxas is missing.
set -u
clang=$1 cuda=$2 root=$3
if ! command -v "$clang" >/dev/null 2>&1; then
    echo "SKIP: $clang not found (Debian package clang-16)"
    exit 77
fi
if [ ! -x "$cuda/bin/ptxas" ]; then
    echo "SKIP: no ptxas in $cuda/bin (CUDA toolkit missing): nvptx64 device code not compiled"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/device_code.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# The flags of rpc/device/CMakeLists.txt, PTX instead of bitcode.
flags="-std=c11 -O2 -fopenmp -D_GNU_SOURCE -DNDEBUG -Wall -Wextra -Werror
  -Wno-incompatible-library-redeclaration -Wno-builtin-requires-header -Wno-unknown-cuda-version
  -I$root/include -fopenmp-cuda-mode --offload-arch=sm_90 --cuda-path=$cuda --offload-device-only"

ptx() { # ptx OUT [FLAGS...]: the library's PTX
    out=$1
    shift
    # shellcheck disable=SC2086
    TMPDIR=$work "$clang" $flags "$@" -S "$root/rpc/device/device_lib.c" -o "$out" ||
        { echo "FAIL: device_lib.c does not compile for nvptx64 ($*)"; exit 1; }
}
has() {
    grep -q -- "$2" "$1" || { echo "FAIL: $1 lacks '$2'"; exit 1; }
    echo "has: $2"
}
lacks() {
    if grep -q -- "$2" "$1"; then
        echo "FAIL: $1 has '$2'"
        exit 1
    fi
    echo "lacks: $2"
}

ptx "$work/lib.s"
has "$work/lib.s" "atom.acquire.gpu.global.or.b64" # a port's lock
has "$work/lib.s" "st.release.gpu.global.u64"      # its unlock: every close is a release
lacks "$work/lib.s" "st.relaxed.gpu"               # no close without a fence
lacks "$work/lib.s" "%gridid"                      # no caller keys
# The learnt first-poll delay: an array of the library's own, a 16-bit state per port (the
# protocol's state words carry protocol state only).
has "$work/lib.s" ".global .align 2 .b8 dev_wait_state\[32768\]"
lacks "$work/lib.s" "tether_rpc_profile"           # no profiling hook in a normal build
# A call of one packet calls no function: a function that has called another reloads registers
# from the stack before it returns, after the port's acquire has emptied L1 (device_client.c).
sed -n '/^\.func .*dev_call_short(/,/^}/p' "$work/lib.s" >"$work/short.s"
has "$work/short.s" "atom.acquire.gpu.global.or.b64"
lacks "$work/short.s" "^[[:space:]]*call"
# printf's format walk is called only through a pointer (device_stdio.c: a direct call would
# give every kernel that may print the walk's registers on top of its callers'): it is defined,
# and no call names it (a direct call's target is the line after "call.uni").
has "$work/lib.s" "^\.func .*dev_printf_walk("
if grep -A1 "call" "$work/lib.s" | grep -q "^[[:space:]]*dev_printf_walk,"; then
    echo "FAIL: dev_printf_walk is called directly"
    exit 1
fi

# The profiling build (TETHER_RPC_PROFILE): the call path calls each hook, whose library
# definitions are weak.
ptx "$work/prof.s" -DTETHER_RPC_PROFILE
for hook in mark delay poll; do
    has "$work/prof.s" ".weak .func tether_rpc_profile_$hook"
    grep -A1 "call.uni" "$work/prof.s" | grep -q "tether_rpc_profile_$hook," || # target: next line
        { echo "FAIL: no call of tether_rpc_profile_$hook in the profiling build"; exit 1; }
done
echo "PASS: the device library's call path"
