#!/usr/bin/env bash
# Installs what the playground's browser tests need, and the connected-account tests that drive
# the playground's card in a browser (tests/browser/connect-flow.mjs, run by serve_connect.rs,
# lambda_model.rs and cloudflare_model.rs); idempotent (a second run installs nothing):
#   - Debian's `chromium` package, when /usr/bin/chromium is missing (the tests drive it headless);
#   - `openssl`, when missing (connect-flow.mjs makes its reverse proxy's certificate with it);
#   - playwright-core, pinned in tests/browser/package-lock.json (npm ci), used only as a
#     DevTools client for that system Chromium (it downloads no browser of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "--- install Debian's ${missing[*]}"
  sudo_if_needed=()
  if [ "$(id -u)" != 0 ]; then sudo_if_needed=(sudo); fi
  "${sudo_if_needed[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_if_needed[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
/usr/bin/chromium --version
pinned=$(node -p 'require("./tests/browser/package-lock.json").packages["node_modules/playwright-core"].version')
installed=$(node -p 'try { require("./tests/browser/node_modules/playwright-core/package.json").version } catch { "" }')
if [ "$pinned" != "$installed" ]; then
  echo "--- npm ci in tests/browser"
  (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
echo "playground test tools ready: $(node --version), playwright-core $(node -p 'require("./tests/browser/node_modules/playwright-core/package.json").version')"
