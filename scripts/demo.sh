#!/usr/bin/env bash
# Run the main example on the best device present.  Called by `make demo`.
set -euo pipefail
build=${1:-build}
if [ -x "$build/test/demo/tether_demo" ]; then
  exec "$build/test/demo/tether_demo"
fi
if [ -x "$build/rpc/rpc_demo" ]; then
  exec "$build/rpc/rpc_demo"
fi
echo "tether: no demo has been built yet (see README.md, Status)" >&2
exit 1
