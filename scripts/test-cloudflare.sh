#!/usr/bin/env bash
# Tests runway's Cloudflare Worker: wasm32 lint, the worker-build release build, an offline
# `wrangler deploy --dry-run` (prints the upload size), an SSE timing probe under `wrangler dev`
# (first frame and heartbeats timestamped on arrival), and the shared end-to-end suite under
# `wrangler dev` with local Durable Objects and KV, including a wrangler restart, then
# `runway check --strict` against the same Worker, then an agent's streamed `fetch` of a
# loopback server (and its abort when the user hangs up); then a crate written by `runway new`
# checked the same way (tests/tests/new_crate_cloudflare.rs).
# Run scripts/setup-cloudflare.sh first (this script installs what is missing too).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../infra/cloudflare/tools.sh
. infra/cloudflare/tools.sh
started=$SECONDS
step() { printf '\n--> cloudflare: %s (%ss)\n' "$*" "$((SECONDS - started))"; }

cf_ensure_all
scripts/setup-mcp.sh

step "clippy for wasm32-unknown-unknown"
cargo clippy -p runway-cloudflare --target wasm32-unknown-unknown --features builtin-worker -- -D warnings

step "build the Worker"
cf_build
export RUNWAY_CF_PREBUILT=1

step "wrangler deploy --dry-run (offline)"
out="$(mktemp -d "${TMPDIR:-/tmp}/runway-cf-dist.XXXXXX")"
(cd cloudflare && node "$CF_WRANGLER" deploy --dry-run --outdir "$out") 2>&1 | tee "$out.log"
upload="$(grep -o 'Total Upload: .*' "$out.log" | head -n1 || true)"
[ -n "$upload" ] || { echo "dry-run printed no upload size" >&2; exit 1; }
echo "upload size: ${upload#Total Upload: }"
rm -rf "$out" "$out.log"

step "SSE timing probe under wrangler dev"
export RUNWAY_AUTH_HEADERS=$'X-API-Key: test-key\nX-Tenant: acme' RUNWAY_HEARTBEAT_SECS=1 \
  RUNWAY_TURN_DEADLINE_SECS=8 RUNWAY_AGENT=demo RUNWAY_LOG=warn RUNWAY_CF_WRANGLER_LOG=warn
fifo="$(mktemp -u "${TMPDIR:-/tmp}/runway-cf-fifo.XXXXXX")"
mkfifo "$fifo"
infra/cloudflare/local --no-build >"$fifo" &
local_pid=$!
trap 'kill -TERM "$local_pid" 2>/dev/null || true; wait "$local_pid" 2>/dev/null || true; rm -f "$fifo"' EXIT
base=""
exec 3<"$fifo"
while IFS= read -r -t 180 line <&3; do
  case "$line" in base_url:*) base="${line#base_url: }"; break ;; esac
done
[ -n "$base" ] || { echo "infra/cloudflare/local did not print base_url" >&2; exit 1; }
node infra/cloudflare/sse-timing.mjs "$base" "/slow 3"
kill -TERM "$local_pid"
wait "$local_pid" || true
exec 3<&-
trap - EXIT
rm -f "$fifo"

step "end-to-end suite and runway check under wrangler dev"
cargo build -p runway
cargo test -p runway-e2e --test cloudflare -- --ignored --nocapture

step "agents' HTTP client (fetch) under wrangler dev: streamed body, abort on hang-up"
cargo test -p runway-e2e --test cloudflare_http -- --ignored --nocapture

step "runway new: the generated crate's Worker passes runway check under wrangler dev"
cargo test -p runway-e2e --test new_crate_cloudflare -- --ignored --nocapture

step "the model agent under wrangler dev: streamed text, tools, approval, a retried 429, MCP servers"
# One wrangler dev at a time: each test starts its own.
cargo test -p runway-e2e --test cloudflare_model -- --ignored --nocapture --test-threads=1

step "done"
