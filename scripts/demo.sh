#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run the main example on the best device present.  Called by `make demo`.
# The demo is an ordinary OpenMP program; tether's plugins (in <build>/lib) go first on
# LD_LIBRARY_PATH so Debian's libomptarget.so.16 loads them instead of LLVM's.
set -euo pipefail
build=${1:-build}
if [ -x "$build/test/demo/tether_demo" ]; then
  export LD_LIBRARY_PATH="$(cd "$build/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  exec "$build/test/demo/tether_demo"
fi
if [ -x "$build/rpc/rpc_demo" ]; then
  exec "$build/rpc/rpc_demo"
fi
echo "tether: no demo has been built yet (see README.md, Status)" >&2
exit 1
