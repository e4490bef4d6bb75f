#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# tether_run_test.sh TETHER_RUN PLUGIN_DIR VERSION - what tether-run does with its options and
# with the environment it passes on: --help on stdout with status 0, --version, unknown options,
# LIBOMPTARGET_INFO read as a number (never evaluated by the shell), the warning about
# LIBOMPTARGET_NEXTGEN_PLUGINS=0.
set -u
run=$1 plugins=$2 version=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tether_run_test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export TETHER_PLUGIN_DIR=$plugins
unset LIBOMPTARGET_INFO LIBOMPTARGET_NEXTGEN_PLUGINS

"$run" --help >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail "--help exits $rc"
grep -q '^usage: tether-run' "$tmp/out" || fail "--help prints no usage on stdout"
[ -s "$tmp/err" ] && fail "--help writes to stderr: $(cat "$tmp/err")"

out=$("$run" --version) || fail "--version failed"
[ "$out" = "tether-run (tether) $version" ] || fail "--version says '$out', not version $version"

"$run" --bogus true >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "an unknown option exits $rc, not 2"
grep -q 'unknown option --bogus' "$tmp/err" || fail "an unknown option is not named"

# The plugin directory comes first on the program's LD_LIBRARY_PATH.
out=$(LD_LIBRARY_PATH=/elsewhere "$run" sh -c 'echo "$LD_LIBRARY_PATH"')
case $out in "$(cd "$plugins" && pwd):/elsewhere") ;; *) fail "LD_LIBRARY_PATH is '$out'" ;; esac

# -v adds 0x18 to a decimal or hexadecimal LIBOMPTARGET_INFO and hands on a decimal value.
out=$("$run" -v sh -c 'echo "$LIBOMPTARGET_INFO"') || fail "-v failed"
[ "$out" = 24 ] || fail "-v without LIBOMPTARGET_INFO gives '$out', not 24"
out=$(LIBOMPTARGET_INFO=0x20 "$run" -v sh -c 'echo "$LIBOMPTARGET_INFO"')
[ "$out" = 56 ] || fail "-v with LIBOMPTARGET_INFO=0x20 gives '$out', not 56"
out=$(LIBOMPTARGET_INFO=1 "$run" -v sh -c 'echo "$LIBOMPTARGET_INFO"')
[ "$out" = 25 ] || fail "-v with LIBOMPTARGET_INFO=1 gives '$out', not 25"
# Not a number: a warning, 0x18, and nothing of it evaluated.
out=$(LIBOMPTARGET_INFO=abc "$run" -v sh -c 'echo "$LIBOMPTARGET_INFO"' 2>"$tmp/err"); rc=$?
[ $rc -eq 0 ] && [ "$out" = 24 ] || fail "-v with LIBOMPTARGET_INFO=abc: status $rc, '$out'"
grep -q 'LIBOMPTARGET_INFO=abc is not a number' "$tmp/err" || fail "no warning for abc"
LIBOMPTARGET_INFO="PATH[\$(touch $tmp/ran)]" "$run" -v true 2>/dev/null
[ -e "$tmp/ran" ] && fail "LIBOMPTARGET_INFO was evaluated by the shell"

# LIBOMPTARGET_NEXTGEN_PLUGINS=0 would bypass tether: said once; other values say nothing.
for v in 0 false OFF no; do
  LIBOMPTARGET_NEXTGEN_PLUGINS=$v "$run" true 2>"$tmp/err"
  grep -q 'LIBOMPTARGET_NEXTGEN_PLUGINS' "$tmp/err" || fail "no warning for NEXTGEN_PLUGINS=$v"
done
LIBOMPTARGET_NEXTGEN_PLUGINS=1 "$run" true 2>"$tmp/err"
[ -s "$tmp/err" ] && fail "a warning for NEXTGEN_PLUGINS=1: $(cat "$tmp/err")"

[ $fails -eq 0 ] || exit 1
echo "tether-run: ok"
