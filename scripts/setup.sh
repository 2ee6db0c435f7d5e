#!/usr/bin/env bash
# Installs what the Rust side of the tests needs on a fresh machine. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
# rust-toolchain.toml pins the toolchain; rustup installs it on first use but not its extra
# target, so add that explicitly.
rustup component add rustfmt clippy >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
# The MCP servers the model agent's end-to-end tests call (tests/tests/model_agent.rs runs in
# `cargo test --workspace`).
scripts/setup-mcp.sh
scripts/setup-oauth.sh
scripts/setup-agui.sh
# Chromium and playwright-core: tests/tests/serve_connect.rs drives the playground's
# authorization card in a browser.
scripts/setup-playground.sh
