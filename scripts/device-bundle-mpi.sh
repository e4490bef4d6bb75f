#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# device-bundle-mpi.sh STAGE DEBS BUILD CUDA_PATH - the MPI step of scripts/device-bundle.sh
# (docs/mpi.md, docs/gpu-testing.md section "MPI").  Puts into STAGE:
#
#   mpi/usr/...            Debian 12's Open MPI 4.1 runtime (openmpi-bin, libopenmpi3,
#                          openmpi-common, libpmix2, libmunge2, libevent-core/pthreads, fetched
#                          into DEBS with apt-get download), in Debian's own layout, pruned to
#                          what mpirun, orted and libmpi load on one node: the three libraries,
#                          the MCA components whose libraries are all in the bundle (no UCX,
#                          libfabric, verbs, PSM or OpenSHMEM ones), PMIx, help texts
#   mpi/etc/openmpi/       Debian's openmpi-mca-params.conf and default hostfile
#   mpi/env.sh             `. mpi/env.sh` points Open MPI at this copy wherever it was unpacked:
#                          OPAL_PREFIX, OPAL_SYSCONFDIR, PMIX_*, PATH, LD_LIBRARY_PATH
#   bin/mpi/mpi_halo       examples/mpi_halo.c for sm_90 with -ltether-device (for tether's
#                          plugin: device printf through its RPC server)
#   bin/mpi/mpi_halo_plain the same without libtether-device.a (for LLVM 16's plugin, which has
#                          no RPC server: CUDA's printf)
#   bin/mpi/mpi_halo_lto   mpi_halo built with -foffload-lto too: what LTO costs the kernel
#                          (tools/probes/kernel_cost.sh)
#
# The MPI headers come from this machine's libopenmpi-dev (the same Debian release as the
# runtime).  Fails with a message when they or the RPC device library are missing.
# check: `device-bundle-mpi.sh --check BUNDLE` unpacks mpi/ and bin/mpi/ of a packed bundle into
# a temporary folder and runs mpi_halo_plain with 2 ranks through that copy of Open MPI, with
# only its bin/ on PATH and offloading disabled (runs on any machine): the answers must be right
# and every Open MPI library and component the processes load must come from the temporary
# folder (LD_DEBUG=files), none from the system's Open MPI.
set -euo pipefail

say() { printf 'device-bundle (mpi): %s\n' "$*"; }
die() { printf 'device-bundle (mpi): error: %s\n' "$*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- --check BUNDLE ------------------------------------------------------------------------
if [ "${1:-}" = --check ]; then
  bundle=${2:?usage: device-bundle-mpi.sh --check BUNDLE}
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/tether-mpi-check.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  xz -dc "$bundle" | tar -x -C "$tmp" ./mpi ./bin/mpi || die "no mpi/ or bin/mpi/ in $bundle"
  mkdir -p "$tmp/ld"
  # A clean environment: the bundle's Open MPI only (its bin/ the whole PATH), offloading off
  # (no GPU needed: the target regions run on the host), one node, as root, few cores.
  set +e
  env -i HOME="$tmp" TMPDIR="$tmp" bash -c '
    . "$1/mpi/env.sh"
    export PATH=$1/mpi/usr/bin
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
    export OMP_TARGET_OFFLOAD=DISABLED LD_DEBUG=files LD_DEBUG_OUTPUT=$1/ld/trace
    exec mpirun -np 2 "$1/bin/mpi/mpi_halo_plain" device 4096 20 10' check "$tmp" \
    >"$tmp/out.txt" 2>"$tmp/err.txt"
  rc=$?
  set -e
  if [ $rc -ne 0 ] || ! grep -q '^mpi_halo: PASS (2 ranks' "$tmp/out.txt"; then
    tail -20 "$tmp/out.txt" "$tmp/err.txt" >&2
    die "the relocated Open MPI did not run mpi_halo_plain (exit $rc)"
  fi
  # Every Open MPI object initialised, in mpirun and in both ranks: from $tmp only.
  loaded=$(cat "$tmp"/ld/trace.* | sed -n 's/.*calling init: //p' |
    grep -E '/(libmpi|libopen-rte|libopen-pal|libpmix|libmca_common_[a-z]+|(pmix_)?mca_[a-z0-9_]+)\.so' | sort -u)
  outside=$(grep -v "^$tmp/" <<<"$loaded" || true)
  [ -z "$outside" ] || die "loaded from outside the bundle: $(tr '\n' ' ' <<<"$outside")"
  for want in libmpi.so.40 libopen-pal.so.40 libpmix.so.2 mca_pml_ob1.so mca_btl_vader.so \
              mca_pmix_ext3x.so mca_plm_isolated.so pmix_mca_pcompress_zlib.so; do
    grep -q "/$want\$" <<<"$loaded" || die "$want was not loaded from the bundle"
  done
  say "relocated Open MPI: mpi_halo_plain passed with 2 ranks; $(wc -l <<<"$loaded") Open MPI" \
      "objects loaded, all from the unpacked copy"
  exit 0
fi

# ---- the step ------------------------------------------------------------------------------
stage=${1:?usage: device-bundle-mpi.sh STAGE DEBS BUILD CUDA_PATH}
debs=${2:?} build=${3:?} cuda=${4:?}
devlib=$build/rpc/device/libtether-device.a
[ -f "$devlib" ] || die "no $devlib: build tether first"
command -v mpicc >/dev/null || die "mpicc is missing (Debian: libopenmpi-dev; scripts/setup.sh)"
read -r -a mpi_cflags <<<"$(mpicc --showme:compile)"
read -r -a mpi_libs <<<"$(mpicc --showme:link)"

# 1. The packages, downloaded once into DEBS (beside the bundle's others).
pkgs=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libmunge2 libevent-core-2.1-7
      libevent-pthreads-2.1-7)
mkdir -p "$debs"
missing=()
for p in "${pkgs[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get download ${missing[*]}"
  (cd "$debs" && apt-get download "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  for p in "${missing[@]}"; do
    compgen -G "$debs/${p}_*.deb" >/dev/null || die "apt-get download $p failed"
  done
fi

# 2. Unpack, keep what one node's mpirun and libmpi load, in Debian's layout (which OPAL_PREFIX
#    relocates: libdir, pkglibdir and pkgdatadir are all under the prefix).
u=$(mktemp -d "${TMPDIR:-/tmp}/tether-mpi-unpack.XXXXXX")
trap 'rm -rf "$u"' EXIT
for p in "${pkgs[@]}"; do dpkg-deb -x "$(compgen -G "$debs/${p}_*.deb" | head -1)" "$u"; done
m=$stage/mpi
rm -rf "$m" "$stage/bin/mpi"
mkdir -p "$m/etc/openmpi" "$stage/bin/mpi"
lib=usr/lib/x86_64-linux-gnu
keep() { # copy paths relative to $u into $m, dereferencing symlinks
  local f
  for f in "$@"; do
    [ -e "$u/$f" ] || die "$f is not in the unpacked packages"
    mkdir -p "$m/$(dirname "$f")"
    cp -L "$u/$f" "$m/$f"
  done
}
keep usr/bin/orterun usr/bin/orted
ln -s orterun "$m/usr/bin/mpirun"
ln -s orterun "$m/usr/bin/mpiexec"
libs=(libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40 libmca_common_sm.so.40
      libmca_common_monitoring.so.50 libmca_common_ompio.so.41 libpmix.so.2 libmunge.so.2
      libevent_core-2.1.so.7 libevent_pthreads-2.1.so.7)
for l in "${libs[@]}"; do keep "$lib/$l"; done
# Components: those whose every library is bundled (libhwloc.so.15 is in the bundle's lib/) or
# glibc's.
allowed=" ${libs[*]} libhwloc.so.15 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2 libz.so.1 "
kept=0 dropped=()
for c in "$u/$lib"/openmpi/lib/openmpi3/mca_*.so "$u/$lib"/pmix2/lib/pmix/pmix_mca_*.so; do
  ok=1
  for need in $(readelf -d "$c" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ "$allowed" == *" $need "* ]] || { ok=0; break; }
  done
  if [ $ok = 1 ]; then keep "${c#"$u"/}"; kept=$((kept + 1)); else dropped+=("$(basename "$c" .so)"); fi
done
say "Open MPI components: $kept kept, ${#dropped[@]} left out (their libraries are not bundled): ${dropped[*]}"
for f in "$u"/usr/share/openmpi/help-*.txt "$u/$lib"/pmix2/share/pmix/help-*.txt \
         "$u/$lib"/pmix2/share/pmix-mca-params.conf; do
  keep "${f#"$u"/}"
done
# Debian's PMIx configuration names its component folder by absolute path: leave that to
# PMIX_PKGLIBDIR (env.sh).
sed -i 's|^mca_base_component_path|# relocated by PMIX_PKGLIBDIR: &|' "$m/$lib/pmix2/share/pmix-mca-params.conf"
cp "$u/etc/openmpi/openmpi-mca-params.conf" "$u/etc/openmpi/openmpi-default-hostfile" "$m/etc/openmpi/"
cat >"$m/env.sh" <<'ENV'
# . mpi/env.sh - use the bundle's Open MPI from wherever the bundle was unpacked.
mpi_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
export OPAL_PREFIX=$mpi_root/usr                 # libdir, components, help texts
export OPAL_SYSCONFDIR=$mpi_root/etc/openmpi     # openmpi-mca-params.conf
export PMIX_PREFIX=$mpi_root/usr/lib/x86_64-linux-gnu/pmix2    # PMIx, which Open MPI's mpirun
export PMIX_SYSCONFDIR=$PMIX_PREFIX/share                      # and ranks load: its configuration,
export PMIX_PKGLIBDIR=$PMIX_PREFIX/lib/pmix                    # components
export PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix                 # and help texts
export PATH=$mpi_root/usr/bin${PATH:+:$PATH}
export LD_LIBRARY_PATH=$mpi_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ENV
say "Open MPI runtime: mpi/ ($(du -sh "$m" | cut -f1))"

# 3. mpi_halo for sm_90, with tether's device library and without.
flags=(-O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda
  -march=sm_90 "--cuda-path=$cuda" -Wall -Wextra -Werror -Wno-unknown-cuda-version
  "${mpi_cflags[@]}" -I"$root/include")
devflags=(-include "$root/include/tether/device_libc.h" "$root/examples/mpi_halo.c"
  -L"$(dirname "$devlib")" -ltether-device "${mpi_libs[@]}" -lm)
clang-16 "${flags[@]}" "${devflags[@]}" -o "$stage/bin/mpi/mpi_halo" 2>&1 |
  grep -v "CUDA version is newer" || true
clang-16 "${flags[@]}" "$root/examples/mpi_halo.c" "${mpi_libs[@]}" -lm \
  -o "$stage/bin/mpi/mpi_halo_plain" 2>&1 | grep -v "CUDA version is newer" || true
clang-16 "${flags[@]}" -foffload-lto "${devflags[@]}" -o "$stage/bin/mpi/mpi_halo_lto" 2>&1 |
  grep -v "CUDA version is newer" || true
[ -x "$stage/bin/mpi/mpi_halo" ] && [ -x "$stage/bin/mpi/mpi_halo_plain" ] &&
  [ -x "$stage/bin/mpi/mpi_halo_lto" ] || die "clang-16 failed on examples/mpi_halo.c"
say "MPI example: bin/mpi/mpi_halo (tether), bin/mpi/mpi_halo_plain (LLVM 16), bin/mpi/mpi_halo_lto"
