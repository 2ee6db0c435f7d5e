#!/usr/bin/env bash
# The playground's browser tests: builds `runway`, then drives the page in Debian's headless
# Chromium (tests/browser, node --test) against the real binary on loopback ports: `runway
# serve` with the demo agent, `runway playground` in front of an agent requiring two auth
# headers, `runway playground` in front of a small agent that breaks the contract, and `runway
# serve` with a workers file (prices) whose model agent calls a scripted model reporting known
# token usage (the page's usage figures).
# The test file stops every process it starts. Traffic stays on 127.0.0.1.
#
#   PLAYGROUND_SCREENSHOT=docs/playground.png scripts/test-playground.sh   # also refreshes the README's screenshot
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
echo "--- build runway"
cargo build -q -p runway
export RUNWAY_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/runway"
if [ -n "${PLAYGROUND_SCREENSHOT:-}" ]; then
  PLAYGROUND_SCREENSHOT=$(realpath -m "$PLAYGROUND_SCREENSHOT")
  export PLAYGROUND_SCREENSHOT
fi
echo "--- browser tests ($(/usr/bin/chromium --version 2>/dev/null))"
cd tests/browser
node --test --test-concurrency=1 --test-timeout=300000 playground.test.mjs
