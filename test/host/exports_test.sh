#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/host/exports_test.sh <libtether-rpc.so> <libtether-rpc.a> <include/tether/rpc.h>
# The installed server library exports the functions that tether/rpc.h declares and nothing
# else: the shared library's dynamic symbols (version script) and the static archive's global
# symbols (internal ones made local), and the shared library has a versioned SONAME.
set -euo pipefail
so=$1
archive=$2
header=$3
fail() {
  echo "rpc_library_exports: FAIL: $*" >&2
  exit 1
}

# Functions declared in the header (not static inline, not typedefs).  tether_rpc_register_user
# is declared there for OpenMP programs but defined in libtether-device.a's host part.
want=$(grep -Ev '^(static|typedef| \*|/\*)' "$header" |
  grep -oE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]tether_rpc_[a-z0-9_]+\(' |
  grep -oE 'tether_rpc_[a-z0-9_]+\($' | tr -d '(' | grep -vx tether_rpc_register_user | sort -u)
[ "$(echo "$want" | wc -l)" -ge 10 ] || fail "found only these functions in $header: $want"

got_so=$(nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
[ "$got_so" = "$want" ] || fail "$so exports:
$(diff <(echo "$want") <(echo "$got_so") || true)"

got_a=$(nm -g --defined-only "$archive" | awk 'NF == 3 { print $3 }' | sort -u)
[ "$got_a" = "$want" ] || fail "$archive has global symbols:
$(diff <(echo "$want") <(echo "$got_a") || true)"

soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname =~ ^libtether-rpc\.so\.[0-9]+$ ]] || fail "SONAME '$soname'"
echo "rpc_library_exports: $(echo "$want" | wc -l) functions, SONAME $soname: PASS"
