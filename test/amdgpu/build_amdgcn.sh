#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# build_amdgcn.sh LLVM_BIN LLVM_LIB REPO OUTDIR ARCH conformance
# build_amdgcn.sh LLVM_BIN LLVM_LIB REPO OUTDIR ARCH devicelib LIBDIR
#
# Compile and link for amdgcn-amd-amdhsa ARCH (gfx90a, gfx940, ...) with Debian's clang-16:
#   conformance  every program of test/conformance (as scripts/build-conformance.sh builds them
#                for x86_64 and nvptx64), so the suite stays valid OpenMP for AMD GPUs;
#   devicelib    a program whose target region calls printf/malloc/free, compiled with
#                tether/device_libc.h and linked with LIBDIR/libtether-device.a; its device image
#                must contain __tether_rpc_client, and its printf must call the library's
#                tether_device_printf_packed (in the linked IR), not the device runtime's.
# Debian has no ROCm device libraries: -nogpulib, the device runtime from
# libomptarget.devicertl.a, and test/amdgpu/omp_rtl_flags.c for the globals clang then omits.
# Nothing is run (no AMD GPU here).  Exit 0 when everything built, 1 otherwise.
set -u
bin=$1 lib=$2 repo=$3 out=$4 arch=$5 what=$6
src=$repo/test/conformance
flags_c=$repo/test/amdgpu/omp_rtl_flags.c
offload="-D_GNU_SOURCE -fopenmp -fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa -march=$arch -nogpulib"
link="-L$lib -lomptarget.devicertl"
mkdir -p "$out"
failed=0

case $what in
conformance)
  [ -d "$src" ] || { echo "no $src"; exit 1; }
  # the flags file is C: compile it once, device and host parts, as an object
  "$bin/clang" -O2 $offload -c "$flags_c" -o "$out/omp_rtl_flags.o" || exit 1
  for main in "$src"/c[0-9][0-9]_*.c "$src"/c[0-9][0-9]_*.cpp; do
    [ -f "$main" ] || continue
    t=$(basename "$main"); t=${t%.c}; t=${t%.cpp}
    case $t in *_part[0-9]*|*_lib) continue ;; esac
    cc=$bin/clang
    case $main in *.cpp) cc=$bin/clang++ ;; esac
    parts=""
    for p in "$src/${t}"_part*.c; do [ -f "$p" ] && parts="$parts $p"; done
    libs=""
    if [ -f "$src/${t}_lib.c" ]; then
      if ! "$bin/clang" -O2 -Wall -Werror -I"$repo/include" -I"$src" \
           -DTETHER_EXPECT_PLUGIN=\"amdgpu\" $offload -fPIC -shared "$src/${t}_lib.c" \
           "$out/omp_rtl_flags.o" $link -o "$out/lib$t.so"; then
        echo "FAILED: lib$t.so for $arch"; failed=1; continue
      fi
      libs="-L$out -l$t"
    fi
    if "$cc" -O2 -Wall -Werror -I"$repo/include" -I"$src" -DTETHER_EXPECT_PLUGIN=\"amdgpu\" \
         $offload "$main" $parts "$out/omp_rtl_flags.o" $libs $link -o "$out/$t"; then
      echo "built $t for $arch"
    else
      echo "FAILED: $t for $arch"; failed=1
    fi
  done
  ;;
devicelib)
  libdir=$7
  [ -f "$libdir/libtether-device.a" ] || { echo "no $libdir/libtether-device.a"; exit 1; }
  cat > "$out/devicelib_use.c" <<'PROG'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    int r = 0;
#pragma omp target map(from : r)
    {
        char *p = malloc(16);
        r = printf("tether %d\n", 42) + (p != 0);
        free(p);
    }
    return r > 0 ? 0 : 1;
}
PROG
  mkdir -p "$out/tmp"
  if ! (cd "$out/tmp" && "$bin/clang" -O2 $offload -include "$repo/include/tether/device_libc.h" \
       "$out/devicelib_use.c" "$flags_c" -L"$libdir" -ltether-device $link -save-temps \
       -o "$out/devicelib_use"); then
    echo "FAILED: linking libtether-device.a for $arch"; exit 1
  fi
  # The linked module's __llvm_omp_vprintf is the header's, which calls the library.
  if "$bin/llvm-dis" "$out/tmp/devicelib_use.amdgcn-amd-amdhsa.$arch.postlink.bc" -o - |
     sed -n '/^define .*@__llvm_omp_vprintf(/,/^}/p' | grep -q "call .*@tether_device_printf_packed"; then
    echo "printf calls tether_device_printf_packed in the $arch image"
  else
    echo "FAILED: the $arch image's __llvm_omp_vprintf does not call tether_device_printf_packed"
    failed=1
  fi
  "$bin/llvm-objcopy" --dump-section .llvm.offloading="$out/devicelib_use.pack" \
      "$out/devicelib_use" "$out/devicelib_use.stripped" &&
  "$bin/clang-offload-packager" "$out/devicelib_use.pack" \
      --image=file="$out/devicelib_use.co",arch="$arch" || exit 1
  if "$bin/llvm-readelf" -s "$out/devicelib_use.co" | grep -q " __tether_rpc_client$"; then
    echo "libtether-device.a linked into the $arch image"
  else
    echo "FAILED: the $arch image has no __tether_rpc_client"; failed=1
  fi
  ;;
*)
  echo "usage: $0 LLVM_BIN LLVM_LIB REPO OUTDIR ARCH conformance|devicelib [LIBDIR]"; exit 2 ;;
esac
exit $failed
