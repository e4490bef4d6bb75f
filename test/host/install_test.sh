#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/host/install_test.sh <build dir> <source dir> <CUDA toolkit or "">
#
# Runs the shell commands of README.md's "Using it" section as a user would: every ```sh block
# of that section, taken from the README as it is, with only the install prefix ($HOME/tether ->
# a temporary directory) and the program's paths (prog.c, -o NAME, ./NAME -> files in that
# directory) replaced; `make install` runs in the source tree on this build (BUILD=<build dir>).
# prog.c is examples/device_rpc.c: device printf and tether_rpc_call through tether's RPC.
# Then checks that what ran really went through tether:
#   - the program passed its own checks (every call answered by its host handler),
#   - LIBOMPTARGET_INFO=16 shows tether's x86_64 plugin loading an image with tether's RPC
#     client and its server serving the calls and the device printf lines,
#   - the program holds tether's RPC client (__tether_rpc_client), the NVIDIA build too (only
#     where a CUDA toolkit is there, with a message otherwise), and without tether-run the
#     program finds no tether plugin;
#   - the server-library example built with `pkg-config --cflags --libs tether-rpc` passed;
#   - the installed CMake package: examples/ configured on its own against the prefix
#     (tether::rpc_server, and tether::device with clang-16) and its tests run;
#   - `uninstall` removes every installed file.
# If the README put `pkg-config --libs tether` before prog.c, libtether-device.a would be left
# out: the link fails (tether_rpc_call undefined) and the image has no RPC client.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cuda=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "host_install: FAIL: $*" >&2
  exit 1
}

# The ```sh blocks of "## Using it", one file each, with the substitutions.
awk -v dir="$tmp" '
  /^## / { in_section = ($0 == "## Using it") }
  in_section && /^```sh$/ { n++; file = sprintf("%s/block%d.sh", dir, n); next }
  in_section && /^```$/ && file != "" { close(file); file = ""; next }
  file != "" { print > file }
' "$src/README.md"
blocks=$(ls "$tmp"/block*.sh 2> /dev/null | wc -l)
[ "$blocks" -eq 3 ] ||
  fail "README.md's \"Using it\" has $blocks sh blocks; this test knows 3 (x86_64, NVIDIA, tether-rpc)"
for f in "$tmp"/block*.sh; do
  sed -i -e "s#\$HOME/tether#$tmp/prefix#g" -e "s#\bprog\.c\b#$tmp/prog.c#g" \
    -e "s#-o \([A-Za-z0-9_]*\)#-o $tmp/\1#g" -e "s#\./\([A-Za-z0-9_]*\)#$tmp/\1#g" "$f"
done
cp "$src/examples/device_rpc.c" "$tmp/prog.c"

b1=$tmp/block1.sh
b2=$tmp/block2.sh
b3=$tmp/block3.sh
grep -q "make install" "$b1" || fail "block 1 does not install"
grep -q "x86_64-pc-linux-gnu" "$b1" || fail "block 1 does not build for x86_64"
grep -q "nvptx64-nvidia-cuda" "$b2" || fail "block 2 is not the NVIDIA build"
grep -q "pkg-config --cflags --libs tether-rpc" "$b3" || fail "block 3 does not use tether-rpc"

# One shell session, as a user's: block 1 (install, build prog.c for x86_64, run it through
# tether-run, plainly and with INFO), block 2 (the NVIDIA build, only where a CUDA toolkit is
# there; there is no GPU to run it on), block 3 (the server library through tether-rpc.pc).
# Between blocks the test keeps the x86_64 program and marks the log.
nvidia=0
if [ -n "$cuda" ] && [ -x "$cuda/bin/ptxas" ] && [ -x /usr/local/cuda/bin/ptxas ]; then
  nvidia=1
fi
{
  echo "set -e"
  cat "$b1"
  echo "cp '$tmp/prog' '$tmp/prog_x86'; rm '$tmp/prog'; echo '==== block 2'"
  if [ $nvidia -eq 1 ]; then cat "$b2"; else echo "echo 'NVIDIA build not tried: no CUDA toolkit'"; fi
  echo "echo '==== block 3'"
  cat "$b3"
} > "$tmp/session.sh"
log=$tmp/session.log
echo "---- README.md commands, as run:"
cat "$tmp/session.sh"
(cd "$src" && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH \
  BUILD="$build" bash "$tmp/session.sh") > "$log" 2>&1 || {
  tail -n 40 "$log"
  fail "the README commands failed"
}
sed -n '1,/^==== block 2/p' "$log" > "$tmp/block1.log"

runs=$(grep -c "^device_rpc: PASS" "$tmp/block1.log" || true)
[ "$runs" -eq 2 ] || fail "the program passed $runs times, expected 2 (tether-run, with INFO)"
grep -q "^device_rpc: device thread for i = 0: the host says 0 squared is 0" "$tmp/block1.log" ||
  fail "no device printf line"
grep -Eq "tether \(x86_64\): device 0: loaded image .*RPC client" "$tmp/block1.log" ||
  fail "INFO: tether's x86_64 plugin loaded no image with tether's RPC client"
grep -Eq "tether \(x86_64\): device 0: rpc: (6[4-9]|[7-9][0-9]|[1-9][0-9]{2,}) calls .*, [1-9][0-9]* printf/write calls" \
  "$tmp/block1.log" || fail "INFO: tether's RPC server did not serve the calls and the printf lines"
x86=$tmp/prog_x86
grep -q "__tether_rpc_client" "$x86" || fail "the x86_64 program has no tether RPC client"
if [ $nvidia -eq 1 ]; then
  grep -q "__tether_rpc_client" "$tmp/prog" || fail "the NVIDIA image has no tether RPC client"
  echo "NVIDIA build: ok"
else
  echo "NVIDIA build: not tried (no CUDA toolkit in /usr/local/cuda and in the build)"
fi
grep -q "^rpc_two_process: PASS" "$log" || fail "rpc_two_process did not pass"
grep -E "PASS|loaded image|rpc: [0-9]+ calls" "$log"

# Around the README: what was installed, and the program without tether-run.
prefix=$tmp/prefix
for f in bin/tether-run lib/tether/libomptarget.rtl.x86_64.nextgen.so include/tether/tether.h \
  include/tether/device_libc.h include/tether/rpc.h include/tether/port/rpc.h lib/libtether-device.a lib/libtether-rpc.a \
  lib/libtether-rpc.so.0 lib/pkgconfig/tether.pc lib/pkgconfig/tether-rpc.pc \
  lib/cmake/tether/tetherConfig.cmake lib/cmake/tether/tetherConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
plugindir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=plugindir tether)
[ "$(cd "$plugindir" && pwd)" = "$prefix/lib/tether" ] || fail "plugindir $plugindir"
cflags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags tether)
[ "$(grep -o -- "-include [^ ]*/include/tether/device_libc.h" <<<"$cflags" | wc -l)" -eq 1 ] ||
  fail "pkg-config --cflags does not force-include tether/device_libc.h once: $cflags"
[ -f "$(sed -E 's/.*-include ([^ ]*).*/\1/' <<<"$cflags")" ] ||
  fail "pkg-config --cflags names a device_libc.h that is not installed: $cflags"
set +e
env -u LD_LIBRARY_PATH "$x86" > "$tmp/plain.out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "no tether plugin with RPC" "$tmp/plain.out" ||
  fail "without tether-run the program said: $(cat "$tmp/plain.out") (rc $rc)"
env -u LD_LIBRARY_PATH "$prefix/bin/tether-run" -v "$x86" 2> "$tmp/verbose.err" > /dev/null
grep -q "tether (x86_64): device 0: launching kernel" "$tmp/verbose.err" || fail "tether-run -v"

# The CMake package: examples/ on its own against the installed prefix.
(cd "$tmp" && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS CC=clang-16 cmake -S "$src/examples" \
  -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/examples.log" 2>&1 &&
  env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS cmake --build "$tmp/examples" >> "$tmp/examples.log" 2>&1 &&
  cd "$tmp/examples" && env -u LD_LIBRARY_PATH ctest --output-on-failure >> "$tmp/examples.log" 2>&1) || {
  tail -n 40 "$tmp/examples.log"
  fail "examples/ against the installed CMake package"
}
grep -q "examples.device_rpc .*Passed" "$tmp/examples.log" || fail "tether::device example not run"
grep -q "examples.rpc_two_process .*Passed" "$tmp/examples.log" || fail "tether::rpc_server example"

# uninstall removes what the install wrote.
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS cmake --build "$build" --target uninstall > "$tmp/uninstall.log"
left=$(find "$prefix" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "host_install: PASS"
