#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# syscall_abi_test.sh ROOT CLANG CUDA_PATH DEVICE_LIB_DIR WORKDIR PLUGIN_DIR FAKE_SIM_DIR
# CPU-side ctest (test/cuda's simulated GPU), syscall_probe.c for sm_90.  ptxas compiles calls to
# malloc, free and vprintf as CUDA's system calls, which a separately compiled definition breaks:
#   0. the probe's device code compiled with tether/device_libc.h calls tether_device_malloc,
#      tether_device_free and tether_device_printf_packed, and declares none of malloc, free and
#      vprintf; the same for a C++ probe (std::malloc, std::printf) where clang++-16 is beside
#      CLANG;
#   1. own:      with own_malloc.c, a separately compiled global malloc/free: tether's CUDA plugin
#                refuses the image, naming the fix;
#   2. header:   with tether/device_libc.h and libtether-device.a (no -foffload-lto): the image
#                loads and has the RPC client and a heap reserve, and the plugin says nothing
#                about vprintf; noheap: the same with a region that only prints: no heap reserve
#                (the image has none of the library's allocating functions);
#   3. noheader: libtether-device.a without the header: the image loads (the library defines no
#                malloc, free or vprintf on NVIDIA) and LIBOMPTARGET_INFO=16 says once that its
#                printf goes to the driver;
#   4. lto:      the header, the library and -foffload-lto: as 2;
#   5. jit:      the header and the library with -fopenmp-target-jit: the image (bitcode, the
#                library's included) is compiled and loaded;
#   6. jitnolib: the same without the library, which a JIT build does not notice: the plugin
#                refuses the image, naming the library's function it lacks and -ltether-device.
# Exits 77 (ctest SKIP_RETURN_CODE) when CUDA_PATH has no ptxas.
set -uo pipefail
root=${1:?} clang=${2:?} cuda=${3:?} devlib=${4:?} work=${5:?} plugins=${6:?} sim=${7:?}
if [ ! -x "$cuda/bin/ptxas" ]; then
  echo "SKIP: no ptxas in $cuda/bin"
  exit 77
fi
mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
flags=(-O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
  -march=sm_90 "--cuda-path=$cuda" -Wno-unknown-cuda-version -Wall -Werror)
header=(-I"$root/include" -include "$root/include/tether/device_libc.h")
probe=$root/test/cuda/abi/syscall_probe.c

# 0. The device code's calls, in its PTX.
check_ptx() { # PTX WHAT
  local f
  for f in tether_device_malloc tether_device_free tether_device_printf_packed; do
    # (PTX call syntax puts the callee on a line of its own: "call.uni (retval0),\n\tname, ")
    grep -Eq "^[[:space:]]+$f,[[:space:]]*$" "$1" || fail "$2: the PTX does not call $f"
  done
  for f in malloc free vprintf; do
    if grep -Eq "^\.extern \.func (.*[[:space:]])?$f[[:space:]]*\(?$" "$1"; then
      fail "$2: the PTX declares CUDA's $f"
    fi
  done
}
TMPDIR=$work "$clang" "${flags[@]}" "${header[@]}" --offload-device-only -S "$probe" \
  -o "$work/probe.ptx" 2>"$work/build-ptx.txt" || fail "clang-16 -S syscall_probe.c"
check_ptx "$work/probe.ptx" syscall_probe.c
clangxx=$(dirname "$clang")/$(basename "$clang" | sed 's/^clang/clang++/')
if [ -x "$clangxx" ]; then
  cat >"$work/probe.cpp" <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <cstdint>
int main()
{
    std::uintptr_t seen = 0;
    /* The address leaves the region, so the compiler keeps the calls. */
#pragma omp target map(from : seen)
    {
        void *p = std::malloc(16);
        seen = reinterpret_cast<std::uintptr_t>(p);
        std::printf("probe %p\n", p);
        std::free(p);
    }
    return seen != 0 ? 0 : 1;
}
CPP
  TMPDIR=$work "$clangxx" "${flags[@]}" "${header[@]}" --offload-device-only -S "$work/probe.cpp" \
    -o "$work/probe-cpp.ptx" 2>"$work/build-ptx-cpp.txt" || fail "clang++-16 -S probe.cpp"
  check_ptx "$work/probe-cpp.ptx" probe.cpp
else
  echo "no $clangxx: the C++ probe is not compiled"
fi

for mode in own header noheap noheader lto jit jitnolib; do
  case $mode in
    own) extra=("$root/test/cuda/abi/own_malloc.c") ;;
    header) extra=("${header[@]}" -L"$devlib" -ltether-device) ;;
    noheap) extra=(-DSYSCALL_PROBE_NO_HEAP "${header[@]}" -L"$devlib" -ltether-device) ;;
    noheader) extra=(-L"$devlib" -ltether-device) ;;
    lto) extra=(-foffload-lto "${header[@]}" -L"$devlib" -ltether-device) ;;
    jit) extra=(-fopenmp-target-jit "${header[@]}" -L"$devlib" -ltether-device) ;;
    jitnolib) extra=(-fopenmp-target-jit "${header[@]}") ;;
  esac
  TMPDIR=$work "$clang" "${flags[@]}" "$probe" "${extra[@]}" -o "$work/probe-$mode" \
    2>"$work/build-$mode.txt"
  rc=$?
  grep -v 'CUDA version is newer' "$work/build-$mode.txt"
  [ $rc -eq 0 ] || { fail "clang-16 syscall_probe.c ($mode, exit $rc)"; continue; }
  LD_LIBRARY_PATH=$sim:$plugins OMP_TARGET_OFFLOAD=MANDATORY LIBOMPTARGET_INFO=16 \
    "$work/probe-$mode" >"$work/run-$mode.out" 2>"$work/run-$mode.err"
  rc=$?
  echo "$mode: exit $rc"
  grep -E 'defines a global|calls vprintf|does not contain it' "$work/run-$mode.err" | sed 's/^/    /' | head -3
  refused=$(grep -c 'the image defines a global .*build and link the program with -foffload-lto' \
    "$work/run-$mode.err")
  said=$(grep -c 'has a tether RPC client but calls vprintf.*pkg-config --cflags tether' \
    "$work/run-$mode.err")
  client=$(grep -c 'RPC client$' "$work/run-$mode.err")
  reserve=$(grep -c 'rpc: .* ports x .*, heap reserve 262144 KiB$' "$work/run-$mode.err")
  case $mode in
    header | lto) [ "$reserve" = 1 ] || fail "$mode: no line naming the heap reserve" ;;
    noheap) [ "$reserve" = 0 ] && grep -q 'rpc: .* ports x ' "$work/run-$mode.err" ||
      fail "noheap: an image that cannot allocate got a heap reserve, or no server line" ;;
  esac
  case $mode in
    own) [ "$refused" -ge 1 ] && [ $rc != 0 ] || fail "own: the image with a global malloc/free was not refused" ;;
    jit)
      [ $rc = 0 ] && grep -q "JIT-compiled" "$work/run-$mode.err" &&
        ! grep -q "does not contain it" "$work/run-$mode.err" ||
        fail "jit: the JIT image with the library was not compiled and loaded (exit $rc)" ;;
    jitnolib)
      [ $rc != 0 ] && grep -q "the image calls tether_device_[a-z_]*() of libtether-device.a but does not contain it: link the program with -ltether-device" \
        "$work/run-$mode.err" || fail "jitnolib: the JIT image without the library was not refused by name (exit $rc)" ;;
    noheader)
      [ "$refused" = 0 ] && [ $rc = 0 ] || fail "noheader: the image was refused or failed (exit $rc)"
      [ "$said" = 1 ] || fail "noheader: not one line saying the image's printf goes to the driver ($said)" ;;
    *)
      [ "$refused" = 0 ] && [ $rc = 0 ] || fail "$mode: the image was refused or failed (exit $rc)"
      [ "$client" -ge 1 ] || fail "$mode: the image has no RPC client"
      [ "$said" = 0 ] || fail "$mode: the plugin says the image calls vprintf" ;;
  esac
done
[ $failed = 0 ] && echo "PASS: with tether/device_libc.h the device code calls the library, not CUDA's malloc/free/vprintf, with and without -foffload-lto; only an image that can allocate gets a heap reserve; a global malloc of the program's own is refused; without the header the plugin says printf goes to the driver; a JIT image is compiled with the library, refused by name without it"
exit $failed
