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
cf_ensure_all
cf_log "ready in $((SECONDS - started)) s: node $(node --version), wrangler $(node "$CF_WRANGLER" --version), $(wasm-bindgen --version), worker-build $CF_WORKER_BUILD_VERSION"
