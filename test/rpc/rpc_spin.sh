#!/bin/sh
# test/rpc/rpc_spin.sh - model-checks test/rpc/rpc_port.pml with spin.
#
#   rpc_spin.sh MODEL EXPECT CHECK [-DNAME[=VALUE]...]
#     EXPECT  pass: spin must find no error;  fail: spin must find one
#             (a mutated model: the test passes only when the violation is found)
#     CHECK   safety (assertions + invalid end states) or an ltl claim name
#             (acceptance cycles under weak fairness; assertions are left to
#             the safety run: -A)
#   Exits 77 (ctest SKIP_RETURN_CODE) when spin or a C compiler is missing.
set -u
model=$1 expect=$2 check=$3
shift 3
cc=${CC:-cc}
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
if [ "$check" = safety ]; then
    "$cc" -O2 -w -DSAFETY -DNOCLAIM -DCOLLAPSE -o pan pan.c || exit 1
    ./pan -m400000 >pan.log 2>&1
else
    "$cc" -O2 -w -DCOLLAPSE -o pan pan.c || exit 1
    ./pan -a -f -A -m400000 -N "$check" >pan.log 2>&1
fi
errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | head -n 1)
grep -E "^pan:|errors:|states, stored|violated|acceptance cycle|invalid end" pan.log
if [ -z "$errors" ]; then
    cat pan.log
    echo "FAIL: could not read the verifier's result"
    exit 1
fi
if grep -q "search not completed\|max search depth too small" pan.log && [ "$errors" -eq 0 ]; then
    echo "FAIL: incomplete search"
    exit 1
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
