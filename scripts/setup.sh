#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Install the Debian packages tether needs, and only those that are missing.
# Runs as root, through sudo, or prints the exact command a person must run.
set -euo pipefail

PKGS=(clang-16 clang-tools-16 lld-16 llvm-16 llvm-16-tools libomp-16-dev libclang-rt-16-dev
      libhwloc-dev libffi-dev libhsa-runtime-dev cmake spin pkg-config make
      openmpi-bin libopenmpi-dev)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "tether: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "tether: cannot install packages (not root, no password-less sudo)." >&2
  echo "Run this, then retry:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
