#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/rpc/rpc_gpu_check.sh - builds and runs rpc_gpu_check.c, the port
# protocol with an NVIDIA GPU as the client (not part of ctest: it needs a GPU).
#
#   rpc_gpu_check.sh build DIR   (on a machine with clang-16 and the CUDA
#                                 toolkit: writes DIR/rpc_gpu_check_{ndebug,checked};
#                                 with `apt-get download` it also puts the
#                                 LLVM 16 runtime .debs into DIR/debs)
#   rpc_gpu_check.sh run DIR     (on the GPU machine: unpacks DIR/debs if
#                                 there, runs both builds in several shapes)
# See docs/rpc-protocol.md, "Tests and figures", for what it showed on an H200.
set -u
mode=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cuda=${CUDA_PATH:-/usr/local/cuda}
case $mode in
build)
    mkdir -p "$dir" || exit 1
    for v in ndebug checked; do
        if [ $v = checked ]; then f=-UNDEBUG; else f=-DNDEBUG; fi
        clang-16 -O2 $f -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$root/rpc" \
            -I"$root/include" -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda \
            -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path="$cuda" \
            -Wno-unknown-cuda-version "$here/rpc_gpu_check.c" -o "$dir/rpc_gpu_check_$v" \
            -ldl -lpthread || exit 1
    done
    if [ ! -d "$dir/debs" ] && command -v apt-get >/dev/null 2>&1; then
        mkdir -p "$dir/debs" && (cd "$dir/debs" && apt-get download libomp5-16 libllvm16 \
            libz3-4 libicu72 libxml2 libedit2 libbsd0 libmd0 libffi8 libtinfo6)
    fi
    ;;
run)
    cd "$dir" || exit 1
    if [ -d debs ]; then
        mkdir -p root && for d in debs/*.deb; do dpkg-deb -x "$d" root; done
        lib=$PWD/root/usr/lib/llvm-16/lib
        # libomptarget 16 dlopens the plugins by their unversioned names.
        (cd "$lib" && for f in libomptarget.rtl.*.so.16; do ln -sf "$f" "${f%.16}"; done)
        export LD_LIBRARY_PATH=$lib:$PWD/root/usr/lib/x86_64-linux-gnu:$PWD/root/lib/x86_64-linux-gnu
    fi
    status=0
    for v in checked ndebug; do
        for cfg in "1 2 1 1" "528 64 0 0" "528 64 1 0" "1056 32 1 0"; do
            echo "== $v: teams calls diverge verbose = $cfg"
            # shellcheck disable=SC2086
            timeout -s KILL 60 "./rpc_gpu_check_$v" $cfg || status=1
        done
    done
    exit $status
    ;;
esac
echo "usage: rpc_gpu_check.sh build|run DIR"
exit 2
