#!/usr/bin/env bash
# test/host/install_test.sh <build dir> <clang-16> <source dir>
# `cmake --install` into a temporary prefix, then: the plugin, headers, pkg-config file and
# tether-run are where the issue says; a program built with stock clang-16 against the installed
# header runs on tether's plugin through tether-run; and without tether-run it does not.
set -euo pipefail
build=$1
clang=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
fail() { echo "host_install: FAIL: $*" >&2; exit 1; }
[ -f "$tmp/prefix/lib/tether/libomptarget.rtl.x86_64.nextgen.so" ] || fail "no x86_64 plugin"
[ -f "$tmp/prefix/include/tether/tether.h" ] || fail "no tether.h"
[ -f "$tmp/prefix/include/tether/status.h" ] || fail "no status.h"
[ -x "$tmp/prefix/bin/tether-run" ] || fail "no tether-run"
[ -f "$tmp/prefix/lib/pkgconfig/tether.pc" ] || fail "no tether.pc"
cflags=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags tether)
plugindir=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --variable=plugindir tether)
[ "$(cd "$plugindir" && pwd)" = "$(cd "$tmp/prefix/lib/tether" && pwd)" ] || fail "plugindir $plugindir"

cat > "$tmp/prog.c" <<'PROG'
#include <omp.h>
#include <stdio.h>
#include <tether/tether.h>
int main(void)
{
    struct tether_device_info info;
    int initial = 1;
#pragma omp target map(from : initial)
    initial = omp_is_initial_device();
    if (tether_device_query(omp_get_default_device(), &info) != TETHER_OK) {
        printf("not served by tether (offloaded %d)\n", !initial);
        return 3;
    }
    printf("served by %s: %s (offloaded %d)\n", info.library, info.name, !initial);
    return initial;
}
PROG
"$clang" -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu $cflags "$tmp/prog.c" -o "$tmp/prog"
# Through tether-run: served by tether.  Without: not (no tether plugin on the path).
out=$(env -u LD_LIBRARY_PATH "$tmp/prefix/bin/tether-run" "$tmp/prog") || fail "tether-run: $out"
echo "$out"
case $out in *"served by libomptarget.rtl.x86_64.nextgen.so"*"offloaded 1"*) ;; *) fail "$out" ;; esac
set +e
env -u LD_LIBRARY_PATH "$tmp/prog" > "$tmp/plain.out" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || fail "without tether-run the program said: $(cat "$tmp/plain.out") (rc $rc)"
# tether-run -v turns on the plugin's messages.
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/tether-run" -v "$tmp/prog" 2> "$tmp/verbose.err" > /dev/null
grep -q "tether (x86_64): device 0: launching kernel" "$tmp/verbose.err" || fail "tether-run -v"
echo "host_install: PASS"
