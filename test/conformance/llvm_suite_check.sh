#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# llvm_suite_check.sh LLVM_SUITE_SH WORKDIR - the check of scripts/llvm-suite.sh that each run used
# the plugin it names must catch a run where libomptarget found no plugin and ran the target
# regions on the host.  Two tests of LLVM's suite run with a "tether plugin folder" whose x86_64
# plugin cannot load: mapping/pr38704.c then passes on the host, and must be reported as
# "plugin?" (not a pass), the run as a failed plugin check, the exit status as 1.
set -uo pipefail
script=${1:?usage: llvm_suite_check.sh LLVM_SUITE_SH WORKDIR}
work=${2:?usage: llvm_suite_check.sh LLVM_SUITE_SH WORKDIR}
fail() {
  echo "llvm_suite_check: FAIL: $*"
  exit 1
}

rm -rf "$work"
mkdir -p "$work/plugins"
fake=$(cd "$work/plugins" && pwd)
echo "not a shared library" >"$fake/libomptarget.rtl.x86_64.nextgen.so"
out=$(TETHER_PLUGIN_DIR=$fake TETHER_SUITE_FILTER='mapping/pr38704\.c|offloading/offloading_success\.c' \
  bash "$script" x86_64 "$work/run" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "llvm-suite.sh exited $rc, expected 1"
grep -q "^mapping/pr38704.c  *PASS  *plugin?  .*tether: no x86_64 plugin from $fake" <<<"$out" ||
  fail "pr38704.c passed on the host without being flagged"
grep -q "^offloading/offloading_success.c  *PASS  *FAIL" <<<"$out" ||
  fail "offloading_success.c did not fail without a plugin"
grep -q '^FAIL: a plugin check failed' <<<"$out" || fail "no failed plugin check reported"
echo "llvm_suite_check: PASS"
