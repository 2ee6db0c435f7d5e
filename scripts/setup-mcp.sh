#!/usr/bin/env bash
# Installs the MCP servers the model agent's end-to-end tests call; idempotent (a second run
# installs nothing), from the package registries only:
#   - the reference "everything" server, pinned in tests/mcp/package-lock.json (npm ci);
#   - a venv with the official Python SDK for tests/mcp/orders_server.py, pinned in
#     tests/mcp/requirements.txt + constraints.txt, under ${RUNWAY_CACHE_DIR:-~/.cache/runway}/mcp-venv.
# The tests find them there (tests/src/mcp_servers.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "setup-mcp: $tool is required" >&2; exit 1; }
done
pinned=$(node -p 'require("./tests/mcp/package-lock.json").packages["node_modules/@modelcontextprotocol/server-everything"].version')
installed=$(node -p 'try { require("./tests/mcp/node_modules/@modelcontextprotocol/server-everything/package.json").version } catch { "" }')
if [ "$pinned" != "$installed" ]; then
  echo "--- npm ci in tests/mcp"
  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)
fi
# shellcheck source=../tests/mcp/venv.sh
source tests/mcp/venv.sh
venv="$(runway_mcp_venv)"
echo "setup-mcp: server-everything $(node -p 'require("./tests/mcp/node_modules/@modelcontextprotocol/server-everything/package.json").version'), $("$venv/bin/python" -m pip show mcp 2>/dev/null | sed -n 's/^Version: /python mcp /p')"
