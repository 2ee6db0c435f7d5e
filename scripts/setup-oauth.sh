#!/usr/bin/env bash
# Installs the OAuth server the connected-account tests run against (tests/oauth/server.mjs):
# oidc-provider, pinned in tests/oauth/package-lock.json (npm ci); idempotent (a second run
# installs nothing). The tests find it there (tests/tests/serve_connect.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "setup-oauth: node is required" >&2; exit 1; }
pinned=$(node -p 'require("./tests/oauth/package-lock.json").packages["node_modules/oidc-provider"].version')
installed=$(node -p 'try { require("./tests/oauth/node_modules/oidc-provider/package.json").version } catch { "" }')
if [ "$pinned" != "$installed" ]; then
  echo "--- npm ci in tests/oauth"
  (cd tests/oauth && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup-oauth: oidc-provider $(node -p 'require("./tests/oauth/node_modules/oidc-provider/package.json").version')"
