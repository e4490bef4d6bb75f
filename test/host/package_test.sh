#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/host/package_test.sh <source dir> <clang-16>
# A package build as a distribution makes one, in a temporary folder:
#   cmake -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX=/opt/tether
#         -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu (Debian's multiarch layout)
#   cmake --build; DESTDIR=<stage> cmake --install
# (the device library for one NVIDIA and one AMD architecture, to bound the work).  Checks: the
# build compiled no test, fuzzer, benchmark, demo or example; the staged tree holds exactly the
# files a package ships; the staged tether-run finds the plugins in <libdir>/tether and a program
# built with the staged pkg-config files runs on tether's plugin with tether's RPC; the CMake
# package points into <libdir>; uninstall with the same DESTDIR leaves no file.
set -euo pipefail
src=$(cd "$1" && pwd)
clang=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "package_build: FAIL: $*" >&2
  exit 1
}
unset MAKEFLAGS MAKELEVEL MFLAGS
b=$tmp/build
stage=$tmp/stage
root=$stage/opt/tether
libdir=lib/x86_64-linux-gnu

cmake -S "$src" -B "$b" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX=/opt/tether -DCMAKE_INSTALL_LIBDIR=$libdir \
  -DTETHER_DEVICE_NVPTX_ARCHS=sm_90 -DTETHER_DEVICE_AMDGPU_ARCHS=gfx90a > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configure"; }
cmake --build "$b" -j 2 > "$tmp/build.log" 2>&1 || { tail -n 40 "$tmp/build.log"; fail "build"; }
DESTDIR=$stage cmake --install "$b" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "install"; }

# Nothing test-like was built: no test folders, no executables outside CMake's own probes.
for d in test examples; do
  [ ! -e "$b/$d" ] || fail "the package build has $d/"
done
exes=$(find "$b" -path "$b/CMakeFiles" -prune -o -type f -executable -print |
  while read -r f; do
    if readelf -l "$f" 2> /dev/null | grep -q "program interpreter"; then echo "${f#$b/}"; fi
  done)
[ -z "$exes" ] || fail "the package build made executables: $exes"
grep -Eiq "fuzz|bench|demo|conformance" "$tmp/build.log" && fail "the build log names tests: $(grep -Ei 'fuzz|bench|demo|conformance' "$tmp/build.log" | head -5)"

# Exactly what a package ships.
l=$libdir
allowed="^(bin/tether-run|include/tether/(device_libc|rpc|rpc_opcodes|status|tether)\.h|include/tether/port/(rpc|rpc_arch|rpc_stream)\.h|$l/libtether-device\.a|$l/libtether-rpc\.(a|so|so\.[0-9]+|so\.[0-9]+\.[0-9]+\.[0-9]+)|$l/tether/libomptarget\.rtl\.(x86_64|cuda|amdgpu)\.nextgen\.so|$l/pkgconfig/tether(-rpc)?\.pc|$l/cmake/tether/tetherConfig(Version)?\.cmake)\$"
files=$(cd "$stage" && find . -type f -o -type l | sed 's#^\./##' | sort)
[ "$(echo "$files" | grep -c '^opt/tether/')" -eq "$(echo "$files" | wc -l)" ] ||
  fail "files outside the prefix: $files"
extra=$(echo "$files" | sed 's#^opt/tether/##' | grep -Ev "$allowed" || true)
[ -z "$extra" ] || fail "not part of a package: $extra"
for f in bin/tether-run $l/tether/libomptarget.rtl.x86_64.nextgen.so $l/libtether-device.a \
  $l/libtether-rpc.a $l/libtether-rpc.so $l/pkgconfig/tether.pc $l/pkgconfig/tether-rpc.pc \
  $l/cmake/tether/tetherConfig.cmake include/tether/rpc.h; do
  [ -e "$root/$f" ] || fail "missing: $f"
done

# The staged tree works where it lies: tether-run, pkg-config, the CMake package.
export PKG_CONFIG_PATH=$root/$l/pkgconfig
cp "$src/examples/device_rpc.c" "$tmp/prog.c"
(cd "$tmp" && "$clang" -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
  $(pkg-config --cflags tether) prog.c $(pkg-config --libs tether) -o prog) ||
  fail "building against the staged tree"
out=$(env -u LD_LIBRARY_PATH -u TETHER_PLUGIN_DIR LIBOMPTARGET_INFO=16 "$root/bin/tether-run" \
  "$tmp/prog" 2>&1) || fail "the program under the staged tether-run: $out"
echo "$out" | grep -q "^device_rpc: PASS" || fail "$out"
echo "$out" | grep -Eq "tether \(x86_64\): device 0: loaded image .*RPC client" ||
  fail "not served by the staged x86_64 plugin: $out"
grep -qx "plugins=../$l/tether" "$root/bin/tether-run" || fail "tether-run's plugin path"
[ "$(pkg-config --variable=libdir tether-rpc)" -ef "$root/$l" ] || fail "tether-rpc.pc libdir"
mkdir "$tmp/find"
cat > "$tmp/find/CMakeLists.txt" << 'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(find_tether C)
find_package(tether REQUIRED CONFIG)
message(STATUS "tether ${tether_VERSION} plugins ${tether_PLUGIN_DIR}")
get_target_property(loc tether::rpc_server IMPORTED_LOCATION)
if(NOT EXISTS "${loc}" OR NOT TARGET tether::device)
  message(FATAL_ERROR "tether package: rpc_server at '${loc}', tether::device missing?")
endif()
CMAKE
cmake -S "$tmp/find" -B "$tmp/find/b" -DCMAKE_PREFIX_PATH="$root" > "$tmp/find.log" 2>&1 ||
  { cat "$tmp/find.log"; fail "find_package(tether) in the staged tree"; }
grep -q "plugins $root/$l/tether" "$tmp/find.log" || fail "$(cat "$tmp/find.log")"

# Uninstall with the same DESTDIR.
DESTDIR=$stage cmake --build "$b" --target uninstall > "$tmp/uninstall.log" 2>&1 ||
  { cat "$tmp/uninstall.log"; fail "uninstall"; }
left=$(find "$stage" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "package_build: $(echo "$files" | wc -l) files installed, libdir $l: PASS"
