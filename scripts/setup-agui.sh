#!/usr/bin/env bash
# Installs the official AG-UI client and schema the AG-UI tests run (tests/agui/run.mjs):
# @ag-ui/client and @ag-ui/core, pinned in tests/agui/package-lock.json (npm ci); idempotent
# (a second run installs nothing). The tests find them there (tests/tests/serve_agui.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "setup-agui: node is required" >&2; exit 1; }
version() { node -p "try { require('./tests/agui/$1').version } catch { '' }"; }
pinned="$(node -p 'const p = require("./tests/agui/package-lock.json").packages; p["node_modules/@ag-ui/client"].version + " " + p["node_modules/@ag-ui/core"].version')"
installed="$(version node_modules/@ag-ui/client/package.json) $(version node_modules/@ag-ui/core/package.json)"
if [ "$pinned" != "$installed" ]; then
  echo "--- npm ci in tests/agui"
  (cd tests/agui && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup-agui: @ag-ui/client and @ag-ui/core $pinned"
