#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# llvm-suite.sh - LLVM 16.0.6's own offload test suite (openmp/libomptarget/test from Debian's
# source package llvm-toolchain-16), run through LLVM 16's plugins and through tether's, side by
# side.  docs/conformance.md describes the run and its current results.
#
#   llvm-suite.sh [x86_64] [WORKDIR]      fetch the suite (once per machine), build every test with
#                                         clang-16 for x86_64-pc-linux-gnu, run it with lit twice:
#                                         LLVM 16's plugins, then tether's; print both side by side
#   llvm-suite.sh fetch                   only fetch the suite; print where it is
#   llvm-suite.sh export <x86_64|nvptx64> OUTDIR
#                                         build the tests for that target into OUTDIR, with
#                                         everything needed to run them where there is no clang,
#                                         no lit and no python (the GPU bundle)
#   llvm-suite.sh run-exported DIR LLVM_PLUGINS TETHER_PLUGINS [LIBDIR...]
#                                         run an exported folder with bash alone, once with each
#                                         plugin folder first on LD_LIBRARY_PATH (then LIBDIRs)
#
# Every run of a test binary is checked for the plugin that served it: the dynamic loader's own
# record (LD_DEBUG=files, written to a file, so the test's output is untouched) must show the
# target's plugin loaded from the folder under test, offering a device, and no offload plugin
# from anywhere else; on x86_64 the plugin must also have loaded the device image when LLVM's
# did.  A test that passes without that does not count as a pass ("plugin?", "no device",
# "no image").
#
# Exit status: 0 when every test that passes under LLVM 16's plugin passes under tether's and
# every plugin check holds; 1 otherwise; 2 for usage or set-up errors (no network for the first
# download, no lit, no plugin).
#
# Environment:
#   TETHER_BUILD        tether's build folder (default: build); its lib/ holds the plugins
#   TETHER_PLUGIN_DIR   tether's plugin folder (default: $TETHER_BUILD/lib)
#   TETHER_CACHE        download cache (default: ${XDG_CACHE_HOME:-$HOME/.cache}/tether)
#   TETHER_DEBIAN_MIRROR  Debian mirror for the source package (default: http://deb.debian.org/debian)
#   TETHER_SUITE_JOBS   parallel tests (default: nproc)
#   TETHER_SUITE_LIMIT  seconds one test binary may run before it is killed (default: 300)
#   TETHER_SUITE_FILTER lit --filter regex (x86_64 runs only; e.g. 'offloading/')
#   CUDA_PATH, NVPTX_ARCH  for nvptx64 builds (default: /usr/local/cuda, sm_90)
set -euo pipefail

self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
version=16.0.6
llvm=/usr/lib/llvm-16
targets_all="aarch64-unknown-linux-gnu aarch64-unknown-linux-gnu-LTO amdgcn-amd-amdhsa
amdgcn-amd-amdhsa-LTO powerpc64le-ibm-linux-gnu powerpc64le-ibm-linux-gnu-LTO
powerpc64-ibm-linux-gnu powerpc64-ibm-linux-gnu-LTO x86_64-pc-linux-gnu x86_64-pc-linux-gnu-LTO
nvptx64-nvidia-cuda nvptx64-nvidia-cuda-LTO nvptx64-nvidia-cuda-JIT-LTO"

say() { printf 'llvm-suite: %s\n' "$*" >&2; }
die() {
  printf 'llvm-suite: error: %s\n' "$*" >&2
  exit 2
}

# ---- wrappers the tests' RUN lines call (through lit's substitutions) ----------------------
#
# The environment carries the mode:
#   TETHER_SUITE_ROOT   the work folder (paths under it are compared as @ROOT@)
#   TETHER_SUITE_CC     build: compile and keep the result; replay: give back the kept result
#   TETHER_SUITE_SIDE   none (build only: running and checking are no-ops), llvm or tether
#   TETHER_SUITE_LIBS   LD_LIBRARY_PATH for the test binaries of this side
#   TETHER_SUITE_LIMIT  seconds a test binary may run
#   TETHER_SUITE_TOOLS  folder holding FileCheck, not and llvm-ar
#   TETHER_SUITE_TOOL_LIBS  LD_LIBRARY_PATH for those tools (the GPU bundle's libLLVM)

# cc COMPILER ARGS...: a compile, done once.  The result (the -o file, stdout, stderr, exit
# status) is kept under Output/.cc/<hash of the command line>; the second side and the GPU
# machine replay it, so both plugins run the same binary.
wrap_cc() {
  local compiler=$1 out="" prev="" key store rc
  shift
  for a in "$@"; do
    [ "$prev" = -o ] && out=$a
    prev=$a
  done
  if [ -z "$out" ]; then
    exec "$compiler" "$@"
  fi
  key=$(printf '%s\n' "$compiler" "$@" | sed "s|${TETHER_SUITE_ROOT}|@ROOT@|g" | sha256sum)
  store=$(dirname "$out")/.cc/${key%% *}
  if [ "${TETHER_SUITE_CC:-build}" = replay ] && [ -f "$store/rc" ]; then
    rc=$(cat "$store/rc")
    [ ! -f "$store/out" ] || cp -f "$store/out" "$out"
    cat "$store/stdout"
    cat "$store/stderr" >&2
    return "$rc"
  fi
  if ! command -v "$compiler" >/dev/null; then
    echo "llvm-suite: $out was not built here and there is no $compiler" >&2
    return 1
  fi
  rm -rf "$store"
  mkdir -p "$store"
  rc=0
  "$compiler" "$@" >"$store/stdout" 2>"$store/stderr" || rc=$?
  [ ! -f "$out" ] || [ $rc -ne 0 ] || cp -f "$out" "$store/out"
  echo $rc >"$store/rc"
  cat "$store/stdout"
  cat "$store/stderr" >&2
  return $rc
}

# exec BINARY ARGS...: run a test binary with this side's libraries, the loader's record of what
# it loaded in BINARY.ld-<side>.<pid>, under a time limit (timeout re-raises a crash signal, so
# `not --crash` still sees it).
wrap_exec() {
  local side=${TETHER_SUITE_SIDE:-none}
  [ "$side" != none ] || return 0
  exec timeout -k 10 "${TETHER_SUITE_LIMIT:-300}" env LD_LIBRARY_PATH="$TETHER_SUITE_LIBS" \
    LD_DEBUG=files LD_DEBUG_OUTPUT="$1.ld-$side" "$@"
}

# tool NAME ARGS...: FileCheck, not or ar (llvm-ar) from TETHER_SUITE_TOOLS (no-ops while only
# building).
wrap_tool() {
  local name=$1
  shift
  [ "${TETHER_SUITE_SIDE:-none}" != none ] || return 0
  [ "$name" != ar ] || name=llvm-ar
  LD_LIBRARY_PATH=${TETHER_SUITE_TOOL_LIBS:-} exec "$TETHER_SUITE_TOOLS/$name" "$@"
}

case ${1:-} in
  cc) shift; wrap_cc "$@"; exit $? ;;
  exec) shift; wrap_exec "$@"; exit $? ;;
  tool) shift; wrap_tool "$@"; exit $? ;;
esac

# ---- fetching the suite ---------------------------------------------------------------------

cache=${TETHER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tether}/llvm-suite-$version

# fetch: ensure $cache/test holds openmp/libomptarget/test of llvm-toolchain-16's orig tarball.
# apt runs with a private configuration (its own sources list with one deb-src line, its own
# lists and cache folders): the system's apt set-up is neither read nor changed.  Works as any
# user with network access to the mirror; a lock keeps concurrent runs from fetching twice.
fetch() {
  [ -f "$cache/test/lit.cfg" ] && return 0
  mkdir -p "$cache" || die "cannot create $cache (set TETHER_CACHE)"
  (
    flock 9
    [ -f "$cache/test/lit.cfg" ] && exit 0
    command -v apt-get >/dev/null || die "apt-get is missing: the suite comes from Debian's source package"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$keyring" ] || die "$keyring is missing (package debian-archive-keyring)"
    local apt=$cache/apt mirror=${TETHER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    rm -rf "$apt" "$cache/download" "$cache/extract"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$cache/download"
    echo "deb-src [signed-by=$keyring] $mirror bookworm main" >"$apt/sources.list"
    local opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Acquire::Languages=none")
    say "fetching llvm-toolchain-16's source (deb-src $mirror bookworm) into $cache"
    if ! apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 ||
      grep -q '^\(W\|E\): \(Failed to fetch\|Some index files failed\)' "$apt/update.log"; then
      sed 's/^/  /' "$apt/update.log" >&2
      die "cannot download Debian's source index from $mirror (no network?); the suite cannot run"
    fi
    if ! (cd "$cache/download" && apt-get "${opts[@]}" source --download-only llvm-toolchain-16) \
      >"$apt/source.log" 2>&1; then
      sed 's/^/  /' "$apt/source.log" >&2
      die "apt-get source --download-only llvm-toolchain-16 failed (above)"
    fi
    local orig=$cache/download/llvm-toolchain-16_$version.orig.tar.xz
    [ -f "$orig" ] || die "the source package is not LLVM $version: $(ls "$cache/download")"
    say "extracting openmp/libomptarget/test"
    mkdir -p "$cache/extract"
    tar -xJf "$orig" -C "$cache/extract" "llvm-toolchain-16_$version/openmp/libomptarget/test" ||
      die "cannot extract the suite from $orig"
    sha256sum "$orig" >"$cache/orig.sha256"
    cp "$cache"/download/*.dsc "$cache/" 2>/dev/null || true
    rm -rf "$cache/test"
    mv "$cache/extract/llvm-toolchain-16_$version/openmp/libomptarget/test" "$cache/test"
    rm -rf "$cache/extract" "$cache/download" "$apt"
  ) 9>"$cache/lock"
  [ -f "$cache/test/lit.cfg" ] || exit 2
}

# ---- building and running with lit ----------------------------------------------------------

lit_py() {
  local lit=$llvm/build/utils/lit/lit.py py=python3
  [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  [ -f "$lit" ] || die "no $lit: install llvm-16-tools"
  command -v "$py" >/dev/null || die "python3 is missing (lit needs it)"
  echo "$py $lit"
}

# prepare WORK TARGET: WORK/src (a copy of the suite), WORK/<triple>/lit.site.cfg with the values
# CMake would have written for this Debian install, and the wrapper script.
prepare() {
  local work=$1 triple=$2 extra=$3 cuda=$4 arch=$5
  rm -rf "$work/src" "$work/$triple"
  mkdir -p "$work/$triple"
  cp -r "$cache/test" "$work/src"
  cp "$self" "$work/llvm-suite.sh"
  local c_features="['clang', 'clang-16', 'clang-16.0', 'clang-$version']"
  cat >"$work/$triple/lit.site.cfg" <<EOF
## Written by scripts/llvm-suite.sh: what lit.site.cfg.in becomes in a CMake build, for Debian's
## LLVM 16 in $llvm.  Compiles, runs and checks go through llvm-suite.sh's wrappers.
import os
import lit.formats
config.test_c_compiler = "bash $work/llvm-suite.sh cc $llvm/bin/clang"
config.test_cxx_compiler = "bash $work/llvm-suite.sh cc $llvm/bin/clang++"
config.test_compiler_features = $c_features
config.test_openmp_flags = "-fopenmp -pthread"
config.test_extra_flags = "$extra"
config.cuda_path = "$cuda"
config.cuda_libdir = ""
config.cuda_test_arch = "$arch"
config.libomptarget_obj_root = "$work/$triple"
config.library_dir = "$llvm/lib"
config.omp_header_directory = "$llvm/lib/clang/16/include"
config.omp_host_rtl_directory = "$llvm/lib"
config.llvm_lib_directory = "$llvm/lib"
config.operating_system = "Linux"
config.libomptarget_all_targets = "$(echo $targets_all)".split()
config.libomptarget_current_target = "$triple"
config.libomptarget_filecheck = "bash $work/llvm-suite.sh tool FileCheck"
config.libomptarget_not = "bash $work/llvm-suite.sh tool not"
config.libomptarget_debug = False

lit_config.load_config(config, "$work/src/lit.cfg")

# Only the run step differs between the two sides: %libomptarget-run-* goes through the wrapper.
subs = []
for (key, value) in config.substitutions:
    if key == "%libomptarget-run-$triple":
        value = "bash $work/llvm-suite.sh exec %t"
    elif key == "%libomptarget-run-fail-$triple":
        value = "%not --crash bash $work/llvm-suite.sh exec %t"
    subs.append((key, value))
config.substitutions = subs
for name in ("TETHER_SUITE_ROOT", "TETHER_SUITE_CC", "TETHER_SUITE_SIDE", "TETHER_SUITE_LIBS",
             "TETHER_SUITE_TOOLS", "TETHER_SUITE_TOOL_LIBS", "TETHER_SUITE_LIMIT"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
if lit_config.params.get("tether_external"):
    config.test_format = lit.formats.ShTest(execute_external=True)
EOF
}

# lit_results JSON OUT: "<test> <code>" lines from lit's JSON output.
lit_results() {
  "${py:-python3}" - "$1" >"$2" <<'EOF'
import json, sys
for t in json.load(open(sys.argv[1]))["tests"]:
    print(t["name"].split(" :: ")[-1], t["code"])
EOF
}

# ---- checking which plugin served each run --------------------------------------------------

# plugin_check OBJ TEST SIDE PLUGIN_DIR PLUGIN: "ok <images>" (the plugin served the test),
# "nodevice" (it loaded but offered no device: libomptarget then tries the classic plugin's name,
# and runs target regions on the host), "none" (no run), or what went wrong.  Each process that
# loaded libomptarget must have loaded libomptarget.rtl.<PLUGIN>[.nextgen].so from PLUGIN_DIR
# and no libomptarget.rtl.* from anywhere else.  <images>: device images the x86_64 plugin
# dlopen()ed (a file it wrote or a memfd).
plugin_check() {
  local obj=$1 test=$2 side=$3 dir=$4 plugin=$5
  local base=$obj/$(dirname "$test")/Output/$(basename "$test").tmp.ld-$side
  local files=("$base".*)
  [ -e "${files[0]}" ] || { echo none; return; }
  awk -v dir="$dir" -v plugin="$plugin" '
    function flush() {
      if (omp) {
        procs++
        if (foreign != "" && bad == "") bad = "foreign plugin " foreign
        else if (!ours && bad == "") bad = "no " plugin " plugin from " dir
        else if (ours && !rejected) served++
      }
      omp = 0; ours = 0; rejected = 0; foreign = ""
    }
    FNR == 1 && NR > 1 { flush() }
    /calling init: .*\/libomptarget\.so/ { omp = 1 }
    /calling init: .*\/libomptarget\.rtl\./ {
      path = $NF; d = path; sub(/\/[^\/]*$/, "", d); name = path; sub(/.*\//, "", name)
      if (d != dir) foreign = path
      else if (name ~ "^libomptarget\\.rtl\\." plugin "(\\.nextgen)?\\.so") ours = 1
    }
    ours && index($0, "file=libomptarget.rtl." plugin ".so ") { rejected = 1 }
    /dynamically loaded by .*(libomptarget\.rtl\.|libLLVM)/ {
      f = $0; sub(/.*file=/, "", f); sub(/ .*/, "", f); n = f; sub(/.*\//, "", n)
      if (f ~ /^\// && n !~ /^lib.*\.so(\.[0-9]+)*$/) images++
    }
    END {
      flush()
      if (procs == 0) print "none"
      else if (bad != "") print bad
      else if (served == 0) print "nodevice"
      else print "ok " images + 0
    }' "${files[@]}"
}

# reason SRC TEST: why lit does not run TEST here (its REQUIRES/UNSUPPORTED lines).
reason() {
  grep -h -o '\(REQUIRES\|UNSUPPORTED\): .*' "$1/$2" 2>/dev/null | paste -sd ';' | sed 's/;/; /g'
}

# summarize WORK TRIPLE PLUGIN LLVM_DIR TETHER_DIR LOG_LLVM LOG_TETHER: the side-by-side table,
# the tallies and the verdict (return 0 or 1).  WORK/results-<side>.txt hold "<test> <code>".
summarize() {
  local work=$1 triple=$2 plugin=$3 dir_llvm=$4 dir_tether=$5 log_llvm=$6 log_tether=$7
  local obj=$work/$triple src=$work/src
  local ran=0 pass_l=0 pass_t=0 only_l=0 only_t=0 unsup=0 debug=0 setup=0
  local only_llvm=() line test code_l code_t v_l v_t c_l c_t
  printf '\nLLVM %s offload test suite (openmp/libomptarget/test), %s\n' "$version" "$triple"
  printf '  LLVM 16: plugins from %s\n  tether:  plugins from %s\n\n' "$dir_llvm" "$dir_tether"
  printf '%-62s %-12s %s\n' test "LLVM 16" tether
  while read -r test code_l; do
    code_t=$(awk -v t="$test" '$1 == t { print $2 }' "$work/results-tether.txt")
    if [ "$code_l" = UNSUPPORTED ]; then
      unsup=$((unsup + 1))
      line=$(reason "$src" "$test")
      [[ "$line" != *libomptarget-debug* ]] || debug=$((debug + 1))
      printf '%-62s unsupported here (%s)\n' "$test" "$line"
      continue
    fi
    ran=$((ran + 1))
    c_l=$(plugin_check "$obj" "$test" llvm "$dir_llvm" "$plugin")
    c_t=$(plugin_check "$obj" "$test" tether "$dir_tether" "$plugin")
    v_l=$code_l
    v_t=${code_t:-MISSING}
    local note="" block_t=""
    # No device under both plugins is the test's own doing (CUDA_VISIBLE_DEVICES= ...).  Where
    # only LLVM's plugin offered a device, tether's run fell back to the host: not a pass.  LLVM's
    # plugin without a device where tether's had one is a set-up error (below).  On x86_64,
    # tether's plugin must also have loaded a device image wherever LLVM's did.
    if [ "$c_l" = nodevice ] && [ "$c_t" = nodevice ]; then
      c_l="ok -" c_t="ok -"
    elif [ "$c_t" = nodevice ] && [[ "$c_l" == ok* ]]; then
      c_t="ok -" block_t="no device"
      note+="  [tether: its plugin offered no device, LLVM's did]"
    elif [ "$c_l" = nodevice ]; then
      c_l="its plugin offered no device"
    fi
    if [ "$plugin" = x86_64 ] && [[ "$c_l" == ok\ [1-9]* && "$c_t" == "ok 0" ]]; then
      block_t="no image"
      note+="  [tether: no device image loaded, LLVM's plugin loaded ${c_l#ok }]"
    fi
    if [ -n "$block_t" ] && [[ "$v_t" == PASS || "$v_t" == XFAIL ]]; then
      v_t=$block_t
    fi
    # A pass whose plugin check failed is not a pass; a check failure on any run is a set-up
    # error (the run did not test the plugin it names).
    if [[ "$c_l" != ok* && "$c_l" != none ]]; then
      setup=1
      note+="  [LLVM 16: $c_l]"
      [[ "$v_l" != PASS && "$v_l" != XFAIL ]] || v_l="plugin?"
    fi
    if [[ "$c_t" != ok* && "$c_t" != none ]]; then
      setup=1
      note+="  [tether: $c_t]"
      [[ "$v_t" != PASS && "$v_t" != XFAIL ]] || v_t="plugin?"
    fi
    local ok_l=0 ok_t=0
    [[ "$v_l" != PASS && "$v_l" != XFAIL ]] || ok_l=1
    [[ "$v_t" != PASS && "$v_t" != XFAIL ]] || ok_t=1
    pass_l=$((pass_l + ok_l))
    pass_t=$((pass_t + ok_t))
    if [ $ok_l = 1 ] && [ $ok_t = 0 ]; then
      only_l=$((only_l + 1))
      only_llvm+=("$test")
      note+="  <- fails only under tether"
    elif [ $ok_l = 0 ] && [ $ok_t = 1 ]; then
      only_t=$((only_t + 1))
      note+="  <- passes only under tether"
    fi
    printf '%-62s %-12s %s%s\n' "$test" "$v_l" "$v_t" "$note"
  done <"$work/results-llvm.txt"
  for test in "${only_llvm[@]}"; do
    printf '\n---- %s under tether:\n' "$test"
    if [ -d "$log_tether" ]; then
      tail -30 "$log_tether/$test.log" 2>/dev/null
    else
      awk -v t="$test" 'index($0, "TEST ") && index($0, ":: " t "'"'"' FAILED") { on = 1 }
        on { print; if (++n > 60) exit } on && /^\*+$/ && n > 2 { exit }' "$log_tether"
    fi
  done
  printf '\nsummary (%s): ran %d, passed LLVM 16 %d, passed tether %d, only LLVM 16 %d, only tether %d; ' \
    "$triple" "$ran" "$pass_l" "$pass_t" "$only_l" "$only_t"
  printf 'unsupported here %d (of which %d need a debug libomptarget)\n' "$unsup" "$debug"
  if [ $setup = 1 ]; then
    echo "FAIL: a plugin check failed (above): some runs did not use the plugin named"
    return 1
  fi
  if [ "$pass_l" -eq 0 ]; then
    echo "FAIL: no test passed under LLVM 16's plugin: the set-up is broken"
    return 1
  fi
  if [ $only_l -gt 0 ]; then
    echo "FAIL: $only_l test(s) pass under LLVM 16's plugin and fail under tether's"
    return 1
  fi
  echo "PASS: every test that passes under LLVM 16's plugin passes under tether's"
}

tools_env() {
  export TETHER_SUITE_TOOLS=$llvm/bin TETHER_SUITE_TOOL_LIBS=""
}

# x86_64 [WORK]: the whole run here.
run_x86_64() {
  local work=${1:-${TETHER_BUILD:-build}/llvm-suite}
  local triple=x86_64-pc-linux-gnu
  local build=${TETHER_BUILD:-build}
  local tdir=${TETHER_PLUGIN_DIR:-$build/lib}
  local lit
  lit=$(lit_py)
  py=${lit%% *}
  [ -f "$tdir/libomptarget.rtl.x86_64.nextgen.so" ] ||
    die "no tether plugin $tdir/libomptarget.rtl.x86_64.nextgen.so (build tether, or set TETHER_PLUGIN_DIR)"
  [ -f "$llvm/lib/libomptarget.rtl.x86_64.nextgen.so" ] ||
    die "no $llvm/lib/libomptarget.rtl.x86_64.nextgen.so (install libomp-16-dev)"
  tdir=$(cd "$tdir" && pwd)
  fetch
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  prepare "$work" "$triple" "" "" ""
  tools_env
  export TETHER_SUITE_ROOT=$work TETHER_SUITE_LIMIT=${TETHER_SUITE_LIMIT:-300}
  local jobs=${TETHER_SUITE_JOBS:-$(nproc)} filter=()
  [ -z "${TETHER_SUITE_FILTER:-}" ] || filter=(--filter "$TETHER_SUITE_FILTER")
  local side
  for side in llvm tether; do
    local libs=$llvm/lib cc=build
    [ $side = llvm ] || { libs=$tdir; cc=replay; }
    say "lit, $side's plugins (LD_LIBRARY_PATH=$libs), $jobs jobs"
    find "$work/$triple" -name "*.ld-$side.*" -delete
    local t0=$SECONDS
    # lit's own exit status is not the verdict (tests fail under LLVM's plugin too).
    TETHER_SUITE_CC=$cc TETHER_SUITE_SIDE=$side TETHER_SUITE_LIBS=$libs \
      $lit -v -j "$jobs" "${filter[@]}" -o "$work/lit-$side.json" "$work/$triple" \
      >"$work/lit-$side.log" 2>&1 || true
    [ -f "$work/lit-$side.json" ] || { tail -30 "$work/lit-$side.log" >&2; die "lit did not run (log above)"; }
    lit_results "$work/lit-$side.json" "$work/results-$side.txt"
    say "$side: $(wc -l <"$work/results-$side.txt") tests in $((SECONDS - t0)) s"
  done
  summarize "$work" "$triple" x86_64 "$llvm/lib" "$tdir" "$work/lit-llvm.log" "$work/lit-tether.log"
}

# export TARGET OUTDIR: build every test for TARGET with lit (compiles only; running and checking
# are no-ops), keep each test's script as lit writes it for an external shell, and everything the
# scripts call: FileCheck, not, this script, the suite's sources.
run_export() {
  local target=${1:?usage: export <x86_64|nvptx64> OUTDIR} out=${2:?usage: export <x86_64|nvptx64> OUTDIR}
  local triple extra="" cuda="" arch="" plugin
  case $target in
    x86_64) triple=x86_64-pc-linux-gnu plugin=x86_64 ;;
    nvptx64)
      triple=nvptx64-nvidia-cuda plugin=cuda
      cuda=${CUDA_PATH:-/usr/local/cuda}
      arch=${NVPTX_ARCH:-sm_90}
      [ -x "$cuda/bin/ptxas" ] || die "no ptxas in $cuda/bin (set CUDA_PATH)"
      # No GPU here for clang to detect: name the architecture, as a GPU build machine would find.
      extra="-Xopenmp-target=nvptx64-nvidia-cuda -march=$arch -Wno-unknown-cuda-version"
      ;;
    *) die "export: target must be x86_64 or nvptx64" ;;
  esac
  local lit
  lit=$(lit_py)
  py=${lit%% *}
  fetch
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  prepare "$out" "$triple" "$extra" "$cuda" "$arch"
  tools_env
  export TETHER_SUITE_ROOT=$out
  say "building the suite for $triple in $out"
  TETHER_SUITE_CC=build TETHER_SUITE_SIDE=none \
    $lit -j "${TETHER_SUITE_JOBS:-$(nproc)}" --param tether_external=1 -o "$out/lit-build.json" \
    "$out/$triple" >"$out/lit-build.log" 2>&1 || true
  [ -f "$out/lit-build.json" ] || { tail -30 "$out/lit-build.log" >&2; die "lit did not run"; }
  lit_results "$out/lit-build.json" "$out/build.txt"
  # What each test is to the runner: run (lit would run it), xfail (lit expects it to fail here),
  # unsupported, or broken (it did not build; its log is in lit-build.log).
  : >"$out/tests.txt"
  local test code n_broken=0
  while read -r test code; do
    case $code in
      PASS) echo "$test run" ;;
      XPASS) echo "$test xfail" ;;
      UNSUPPORTED) echo "$test unsupported" ;;
      *) echo "$test broken"; n_broken=$((n_broken + 1)) ;;
    esac >>"$out/tests.txt"
  done <"$out/build.txt"
  [ $n_broken -eq 0 ] || say "warning: $n_broken test(s) did not build (lit-build.log)"
  # Paths: the scripts name the export folder; run-exported puts the folder it finds instead.
  # `ar` (static_linking.c) goes through the tool wrapper, so it is the bundled llvm-ar.
  find "$out/$triple" -name '*.script' -exec sed -i -e "s|$out|@ROOT@|g" \
    -e "s|\(RUN: at line [0-9]*'; *\)ar |\1bash @ROOT@/llvm-suite.sh tool ar |" {} +
  # The compiled files live in Output/.cc (the replay copies them back): no second copy.
  find "$out/$triple" -path '*/Output/*' ! -path '*/.cc/*' -type f ! -name '*.script' -delete
  mkdir -p "$out/bin"
  cp "$llvm/bin/FileCheck" "$llvm/bin/not" "$llvm/bin/llvm-ar" "$out/bin/"
  # Every command a script runs must be one the GPU machine has: the wrappers, echo, env, `:`.
  local odd
  odd=$(sed -n "s/.*RUN: at line [0-9]*'; *\([^ ]*\).*/\1/p" "$out/$triple"/*/Output/*.script \
    "$out/$triple"/*/*/Output/*.script 2>/dev/null | sort -u | grep -v -x -e bash -e echo -e env -e : || true)
  [ -z "$odd" ] || say "warning: exported scripts run commands the runner does not provide: $odd"
  printf 'triple=%s\nplugin=%s\nversion=%s\n' "$triple" "$plugin" "$version" >"$out/manifest"
  rm -f "$out/$triple/lit.site.cfg"
  say "exported $(grep -c ' run$' "$out/tests.txt") runnable tests ($(grep -c ' unsupported$' "$out/tests.txt") unsupported) for $triple"
}

# run-exported DIR LLVM_PLUGINS TETHER_PLUGINS [LIBDIR...]: what lit would do with the exported
# scripts, in bash: each test's script runs in its folder with a clean environment.
run_exported() {
  local dir=${1:?usage: run-exported DIR LLVM_PLUGINS TETHER_PLUGINS [LIBDIR...]}
  local dl=${2:?usage} dt=${3:?usage}
  shift 3
  dir=$(cd "$dir" && pwd)
  dl=$(cd "$dl" && pwd)
  dt=$(cd "$dt" && pwd)
  local extra="" d
  for d in "$@"; do
    [ -z "$d" ] || extra+=:$(cd "$d" && pwd)
  done
  [ -f "$dir/manifest" ] || die "$dir is not an exported suite (no manifest)"
  local triple plugin
  triple=$(sed -n 's/^triple=//p' "$dir/manifest")
  plugin=$(sed -n 's/^plugin=//p' "$dir/manifest")
  local obj=$dir/$triple side test kind
  # The exported wrapper replays builds; FileCheck and not come from the folder (their libraries
  # from the LIBDIRs: the bundle's libLLVM dependencies).
  for side in llvm tether; do
    local pdir=$dl
    [ $side = llvm ] || pdir=$dt
    say "running $(grep -c ' \(run\|xfail\)$' "$dir/tests.txt") tests with $side's plugins ($pdir)"
    find "$obj" -name "*.ld-$side.*" -delete
    rm -rf "$dir/logs/$side"
    : >"$dir/results-$side.txt"
    while read -r test kind; do
      case $kind in
        unsupported) echo "$test UNSUPPORTED" >>"$dir/results-$side.txt"; continue ;;
        broken) echo "$test FAIL" >>"$dir/results-$side.txt"; continue ;;
      esac
      local tdir script log rc code
      tdir=$obj/$(dirname "$test")
      script=$tdir/Output/$(basename "$test").script
      log=$dir/logs/$side/$test.log
      mkdir -p "$(dirname "$log")"
      sed "s|@ROOT@|$dir|g" "$script" >"$script.$side"
      rc=0
      (cd "$tdir" && env -i PATH="$PATH" HOME="${HOME:-/tmp}" TMPDIR="${TMPDIR:-/tmp}" \
        ${CUDA_VISIBLE_DEVICES+CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES"} \
        TETHER_SUITE_ROOT="$dir" TETHER_SUITE_CC=replay TETHER_SUITE_SIDE=$side \
        TETHER_SUITE_LIBS="$pdir$extra" TETHER_SUITE_TOOLS="$dir/bin" \
        TETHER_SUITE_TOOL_LIBS="${extra#:}" TETHER_SUITE_LIMIT="${TETHER_SUITE_LIMIT:-300}" \
        bash "$script.$side") >"$log" 2>&1 || rc=$?
      if [ "$kind" = xfail ]; then
        code=XFAIL
        [ $rc -ne 0 ] || code=XPASS
      else
        code=PASS
        [ $rc -eq 0 ] || code=FAIL
      fi
      echo "$test $code" >>"$dir/results-$side.txt"
      printf '[%s] %s %s\n' "$side" "$code" "$test"
    done <"$dir/tests.txt"
  done
  summarize "$dir" "$triple" "$plugin" "$dl" "$dt" "" "$dir/logs/tether"
}

case ${1:-x86_64} in
  fetch) fetch; echo "$cache/test" ;;
  x86_64) shift || true; run_x86_64 "$@" ;;
  export) shift; run_export "$@" ;;
  run-exported) shift; run_exported "$@" ;;
  -h|--help|help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' ;;
  *) die "unknown command '$1' (see --help)" ;;
esac
