#!/usr/bin/env bash
# Installs what runway's Cloudflare Worker needs to build, run under `wrangler dev` and be
# tested; idempotent (a second run installs nothing). Everything is pinned in repo files:
#   - the wasm32-unknown-unknown target (rust-toolchain.toml)
#   - Node 22, wrangler (workerd, esbuild) and binaryen's wasm-opt: cloudflare/package-lock.json
#   - wasm-bindgen-cli and worker-build: the exact pins in cloudflare/Cargo.toml
# and cached under RUNWAY_CACHE_DIR (default ~/.cache/runway). Only the package registries are
# used. On a fresh machine the two `cargo install`s take most of the time (about 9 minutes on
# 2 idle cores).
set -euo pipefail
# shellcheck source=../infra/cloudflare/tools.sh
. "$(dirname "$0")/../infra/cloudflare/tools.sh"
started=$SECONDS
# A fresh Debian machine (CI) may lack Node: its own nodejs and npm (Node 20) run npm, and npm
# brings the pinned Node 22 that wrangler needs. tools.sh itself never installs system packages.
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  cf_log "npm is missing: installing Debian's nodejs and npm"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } >&2
fi
cf_ensure_all
cf_log "ready in $((SECONDS - started)) s: node $(node --version), wrangler $(node "$CF_WRANGLER" --version), $(wasm-bindgen --version), worker-build $CF_WORKER_BUILD_VERSION"
