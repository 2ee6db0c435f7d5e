#!/usr/bin/env bash
# Tests runway's Cloudflare Worker: wasm32 lint, the worker-build release build (one build, with
# the model agent), an offline `wrangler deploy --dry-run` (prints the upload size and checks it
# against the model Worker's budget), `wrangler check startup` (prints the start-up CPU), an
# SSE timing probe under `wrangler dev` (first frame and heartbeats timestamped on arrival), and
# the shared end-to-end suite under
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
scripts/setup-agui.sh
scripts/setup-oauth.sh
scripts/setup-playground.sh

# One wasm build serves the whole suite: the repo's Worker with the model agent, which
# tests/tests/cloudflare_model.rs needs (the other suites use demo and http-probe, in every
# build). The default build, without it, is what `npx wrangler deploy` uploads; its 512 KiB gzip
# budget is measured by scripts/worker-size.sh (BENCHMARKS.md), and guarded here, without a
# second build, by the crates it may not contain.
export RUNWAY_CF_FEATURES=builtin-worker,model
# The model Worker's own budget: measured 828.62 KiB gzip (2302.30 KiB) once MCP tools, the
# workers file and the model path's bounds joined the model agent (587 KiB before them), then
# 717.23 KiB (1856.40 KiB) without the wasm names section (infra/cloudflare/strip-names.mjs),
# then 761.25 KiB (1971.08 KiB) with connected accounts (AES-GCM vault, OAuth routes, token
# exchange), then 752.97 KiB (1912.63 KiB) with every agent served as `Workers` (one engine per
# wire format), then 792.45 KiB (2006.58 KiB) with AG-UI 1.0's route and dialect, the operators'
# list and revoke of connections and AG-UI's interrupt rules, then 811.39 KiB as issue 26 found
# it, then 778.44 KiB (1928.00 KiB) once the tools and workers files were read through
# runway-agents' own deserializer over toml's parse (toml_settings.rs), plus AG-UI's client tools,
# usage, snapshots before an interrupt and context (+2.5 KiB), then 796.40 KiB (1984.96 KiB)
# with MCP servers' own authorization (auth = "oauth"), 801.21 KiB (1995.92 KiB) at fb76b73, then
# 765.01 KiB (1887.96 KiB) once those files were read by hand over toml's parse (no serde
# derive per settings type: agents/src/toml_settings.rs), and about 15 KiB of room; the free
# plan allows 3 MB. Without the default features (Lowkey, AG-UI, connected accounts, MCP:
# a model Worker serving Console only) it is smaller still (BENCHMARKS.md). The default Worker's
# 512 KiB budget: scripts/worker-size.sh. What the remaining bytes are: BENCHMARKS.md, "The
# model Worker's size and start-up".
model_worker_budget_kib=780

step "tools.sh needs no flock, sha256sum or apt-get (macOS has none of them)"
shims="$(mktemp -d "${TMPDIR:-/tmp}/runway-cf-shims.XXXXXX")"
for tool in flock sha256sum apt-get; do
  printf '#!/bin/sh\necho "%s was called: not on macOS" >&2\nexit 97\n' "$tool" >"$shims/$tool"
  chmod +x "$shims/$tool"
done
PATH="$shims:$PATH" bash -c '
  set -euo pipefail
  . infra/cloudflare/tools.sh
  cf_ensure_all
  cf_locked true
  cf_node_ok v22.12.0 && cf_node_ok v24.1.0 && ! cf_node_ok v22.11.9 && ! cf_node_ok v20.19.5
  echo "tools.sh: no Linux-only tool called, Node $(node --version) accepted"
'
rm -rf "$shims"

step "clippy for wasm32-unknown-unknown"
cargo clippy -p runway-cloudflare --target wasm32-unknown-unknown --features builtin-worker -- -D warnings
# The model Worker serving Console only: every default feature off (README, "Cargo features").
cargo clippy -p runway-cloudflare --target wasm32-unknown-unknown --no-default-features \
  --features builtin-worker,model -- -D warnings

step "the default Worker has none of the model agent's crates"
# base64 is no longer one of them: the core's connected accounts (any agent's
# `Turn::connection`) encode the vault's sealed entries and HTTP Basic credentials with it.
model_crates="$(cargo tree -p runway-cloudflare --target wasm32-unknown-unknown \
  --features builtin-worker -e normal --prefix none | grep -E '^(toml|infer) ' || true)"
[ -z "$model_crates" ] || { printf 'in the default Worker:\n%s\n' "$model_crates" >&2; exit 1; }

step "build the Worker ($RUNWAY_CF_FEATURES)"
cf_build
export RUNWAY_CF_PREBUILT=1

step "wrangler deploy --dry-run (offline)"
cf_upload_size
cf_check_upload "$model_worker_budget_kib"

step "wrangler check startup (offline): the Worker's start-up CPU, printed, not asserted"
cf_startup

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
