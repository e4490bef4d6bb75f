#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# scripts/test.sh [normal] [tsan] [asan] - build and run the test phases (all three by default),
# each in its own build folder:
#   normal  $BUILD        every test
#   tsan    $BUILD-tsan   ThreadSanitizer build, the tests labelled `tsan`
#   asan    $BUILD-asan   AddressSanitizer + UndefinedBehaviorSanitizer build, every test not
#                         labelled `noasan`
# A phase that fails (to build, or a test) does not stop the next one.  The last line sums the
# phases: "N passed, N failed[, N skipped]", then the failed tests of each phase; the exit status
# is 1 when anything failed.  `make test` runs this after scripts/setup.sh.
# Environment: BUILD (default build), JOBS (default: the number of cores), CMAKE_FLAGS (more
# cmake -D options for every phase).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
read -r -a extra <<< "${CMAKE_FLAGS:-}"
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(normal tsan asan)

passed=0 failed=0 skipped=0 failures=""

# Counts one phase's results from ctest's JUnit file: a test ctest skipped through its
# SKIP_RETURN_CODE or SKIP_REGULAR_EXPRESSION is a skip; one it could not run (no executable, a
# failed fixture) is a failure.  Prints "PASSED SKIPPED" and then one failed test per line.
count_junit() {
  awk '
    function unxml(s) {
      gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
      gsub(/&apos;/, "\047", s); gsub(/&amp;/, "\\&", s); return s
    }
    function attr(line, key,    s) {
      if (!match(line, key "=\"[^\"]*\"")) return ""
      s = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 3)
      return unxml(s)
    }
    /<testcase / {
      name = attr($0, "name"); status = attr($0, "status")
      if (status == "run") pass++
      else if (status == "fail") bad[++nbad] = name
      else if (status == "disabled") skip++
      else waiting = name
      next
    }
    /<skipped / && waiting != "" {
      if (attr($0, "message") ~ /^SKIP_/) skip++
      else bad[++nbad] = waiting " (not run: " attr($0, "message") ")"
      waiting = ""
    }
    END {
      print pass + 0, skip + 0
      for (i = 1; i <= nbad; i++) print bad[i]
    }' "$1"
}

# run_phase NAME DIR SANITIZE CTEST-ARGS...
run_phase() {
  local name=$1 dir=$2 sanitize=$3
  shift 3
  local abs=$dir rc=0 list="" counts p s
  [[ $dir = /* ]] || abs=$PWD/$dir
  local junit=$abs/ctest-junit.xml log=$abs/ctest.log
  echo "== $name: $dir"
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_SANITIZE="$sanitize" \
       "${extra[@]}" > /dev/null; then
    failed=$((failed + 1)) failures="$failures; $name: (cmake configure)"
    return
  fi
  if ! cmake --build "$dir" -j "$jobs"; then
    failed=$((failed + 1)) failures="$failures; $name: (build)"
    return
  fi
  rm -f "$junit"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --output-junit "$junit" "$@") 2>&1 |
    tee "$log"
  rc=${PIPESTATUS[0]}
  if [ ! -f "$junit" ]; then
    failed=$((failed + 1)) failures="$failures; $name: (ctest exit $rc, no results)"
    return
  fi
  counts=$(count_junit "$junit")
  read -r p s <<< "$(head -n 1 <<< "$counts")"
  local n=0 t
  while IFS= read -r t; do
    [ -n "$t" ] || continue
    if grep -F ": $t " "$log" | grep -qF '***Timeout'; then
      t="$t (timeout)"
    fi
    n=$((n + 1))
    list="${list:+$list, }$t"
  done < <(tail -n +2 <<< "$counts")
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then
    n=1 list="(ctest exit $rc)"
  fi
  echo "== $name: $p passed, $n failed, $s skipped"
  passed=$((passed + p)) failed=$((failed + n)) skipped=$((skipped + s))
  [ "$n" -eq 0 ] || failures="$failures; $name: $list"
}

for phase in "${phases[@]}"; do
  case $phase in
  normal) run_phase normal "$build" "" ;;
  tsan) run_phase tsan "$build-tsan" thread -L tsan ;;
  asan) run_phase asan "$build-asan" address -LE noasan ;;
  *) echo "usage: scripts/test.sh [normal] [tsan] [asan]" >&2; exit 2 ;;
  esac
done

line="$passed passed, $failed failed"
[ "$skipped" -eq 0 ] || line="$line, $skipped skipped"
[ -z "$failures" ] || line="$line (${failures#; })"
echo "$line"
[ "$failed" -eq 0 ]
