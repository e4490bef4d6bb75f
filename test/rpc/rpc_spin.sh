#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# test/rpc/rpc_spin.sh - model-checks test/rpc/rpc_port.pml with spin.
#
#   rpc_spin.sh MODEL EXPECT CHECK [-DNAME[=VALUE]...]
#     EXPECT  pass: spin must find no error in a complete search;
#             fail: spin must find one (a mutated model: the test passes only
#             when the violation is found)
#     CHECK   safety (assertions + invalid end states) or an ltl claim name
#             (acceptance cycles under weak fairness; assertions are left to
#             the safety run: -A)
#   Exits 77 (ctest SKIP_RETURN_CODE) when spin or a C compiler is missing.
#
# Every search is bounded by depth and memory, never by time: a search that
# needs more fails and says which bound stopped it.  The largest check today
# takes 2.1 GB (about 36 million states), the deepest reaches depth 1146;
# raise a bound here when the model grows past it.
#   SPIN_DEPTH      pan -m: the deepest path searched (default 10000 steps)
#   SPIN_MEMORY_MB  pan -DMEMLIM: every byte pan allocates, the 128 MB hash
#                   table (-w24) included (default 3072 MB)
set -u
model=$1 expect=$2 check=$3
shift 3
cc=${CC:-cc}
depth=${SPIN_DEPTH:-10000}
memory=${SPIN_MEMORY_MB:-3072}
if ! command -v spin >/dev/null 2>&1; then
    echo "SKIP: spin is not installed (Debian package 'spin')"
    exit 77
fi
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "SKIP: no C compiler ($cc) to build spin's verifier"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rpc_spin.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/model.pml" || exit 1
cd "$work" || exit 1

# -w: pan.c is generated code (gcc's -Wstringop-overflow misreads its checked array stores).
spin -a "$@" model.pml >spin.log 2>&1 || { cat spin.log; echo "spin -a failed"; exit 1; }
flags="-O2 -w -DCOLLAPSE -DMEMLIM=$memory"
if [ "$check" = safety ]; then
    # shellcheck disable=SC2086
    "$cc" $flags -DSAFETY -DNOCLAIM -o pan pan.c || exit 1
    ./pan -m"$depth" -w24 >pan.log 2>&1
else
    # shellcheck disable=SC2086
    "$cc" $flags -o pan pan.c || exit 1
    ./pan -a -f -A -m"$depth" -w24 -N "$check" >pan.log 2>&1
fi
status=$?
errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | head -n 1)
grep -E "^pan:[0-9]|^pan: reached|states, stored" pan.log
reached=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' pan.log | head -n 1)
used=$(sed -n 's/^ *\([0-9.][0-9.]*\)[[:space:]]*total actual memory usage.*/\1/p' pan.log)
echo "depth reached ${reached:-?} of $depth, ${used:-?} MB of $memory MB"
if [ -z "$errors" ]; then
    cat pan.log
    echo "FAIL: could not read the verifier's result (pan exit status $status)"
    exit 1
fi
# A violation pan found is real whatever bound cut the rest of the search short; a search
# that found nothing proves nothing unless it covered every state.
if [ "$errors" -eq 0 ]; then
    if grep -q "reached -DMEMLIM bound" pan.log; then
        echo "FAIL: incomplete search: the memory bound of $memory MB stopped it" \
             "(raise SPIN_MEMORY_MB in rpc_spin.sh)"
        exit 1
    fi
    if grep -q "max search depth too small" pan.log; then
        echo "FAIL: incomplete search: paths longer than the depth bound of $depth steps were" \
             "cut (raise SPIN_DEPTH in rpc_spin.sh)"
        exit 1
    fi
    if grep -q "Search not completed\|out of memory" pan.log; then
        cat pan.log
        echo "FAIL: incomplete search"
        exit 1
    fi
fi
case $expect in
pass)
    if [ "$errors" -eq 0 ]; then echo "PASS: no error ($check $*)"; exit 0; fi
    echo "FAIL: spin found $errors error(s) ($check $*)"; exit 1 ;;
fail)
    if [ "$errors" -gt 0 ]; then echo "PASS: spin found the violation ($check $*)"; exit 0; fi
    echo "FAIL: spin found no error in the mutated model ($check $*)"; exit 1 ;;
esac
echo "usage: rpc_spin.sh MODEL pass|fail safety|CLAIM [-D...]"
exit 2
