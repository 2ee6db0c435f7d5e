#!/usr/bin/env bash
# Installs the official AG-UI client and schema the AG-UI tests run (tests/agui/run.mjs):
# @ag-ui/client and @ag-ui/core, pinned in tests/agui/package-lock.json (npm ci), and the
# conformance validator ag-ui-validate (PyPI, tests/agui/conformance.py), pinned in
# tests/agui/requirements.txt + constraints.txt, in a venv under
# ${RUNWAY_CACHE_DIR:-~/.cache/runway}/agui-venv; idempotent (a second run installs nothing).
# The tests find them there (tests/src/agui.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node python3; do
  command -v "$tool" >/dev/null || { echo "setup-agui: $tool is required" >&2; exit 1; }
done
version() { node -p "try { require('./tests/agui/$1').version } catch { '' }"; }
pinned="$(node -p 'const p = require("./tests/agui/package-lock.json").packages; p["node_modules/@ag-ui/client"].version + " " + p["node_modules/@ag-ui/core"].version')"
installed="$(version node_modules/@ag-ui/client/package.json) $(version node_modules/@ag-ui/core/package.json)"
if [ "$pinned" != "$installed" ]; then
  echo "--- npm ci in tests/agui"
  (cd tests/agui && npm ci --no-audit --no-fund --loglevel=error)
fi
# shellcheck source=../tests/agui/venv.sh
source tests/agui/venv.sh
venv="$(runway_agui_venv)"
echo "setup-agui: @ag-ui/client and @ag-ui/core $pinned, $("$venv/bin/python" -m pip show ag-ui-validate 2>/dev/null | sed -n 's/^Version: /ag-ui-validate /p')"
