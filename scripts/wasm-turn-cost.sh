#!/usr/bin/env bash
# CPU per whole turn of the core on wasm32, as the Worker runs it (BENCHMARKS.md):
# builds runway-wasm-bench with the Worker's profile (`release`: opt-level z, LTO) for
# wasm32-unknown-unknown, runs the pinned wasm-bindgen CLI and binaryen's wasm-opt -O (what
# worker-build does), and times plain, 1 MiB and model turns (a tool call, its result, a
# 500-token streamed answer, usage recorded) under the pinned Node 22.
#
#   scripts/wasm-turn-cost.sh [PLAIN_TURNS] [LONG_TURNS] [RUNS] [MODEL_TURNS]     (prints one JSON line)
#
# Uses CARGO_TARGET_DIR if set. Installs the Cloudflare tools on first use
# (scripts/setup-cloudflare.sh's cache). Nothing here is part of the Worker's upload.
#
# WASM_TURN_PROFILE=DIR: keeps the functions' names (`wasm-opt -O -g`) and writes V8's CPU
# profile of the run to DIR (`node --cpu-prof`); `node wasm-bench/profile-top.mjs DIR/*.cpuprofile`
# then says where the time went.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=../infra/cloudflare/tools.sh
. "$repo/infra/cloudflare/tools.sh"
cf_ensure_all
target="${CARGO_TARGET_DIR:-$repo/target}"
(cd "$repo" && cargo build --quiet --release --target wasm32-unknown-unknown -p runway-wasm-bench) >&2
pkg="$target/wasm-bench-pkg"
rm -rf "$pkg"
"$WASM_BINDGEN_BIN" --target nodejs --out-dir "$pkg" \
  "$target/wasm32-unknown-unknown/release/runway_wasm_bench.wasm"
profile="${WASM_TURN_PROFILE:-}"
"$WASM_OPT_BIN" -O ${profile:+-g} "$pkg/runway_wasm_bench_bg.wasm" -o "$pkg/runway_wasm_bench_bg.wasm"
node ${profile:+--cpu-prof --cpu-prof-interval 200 --cpu-prof-dir "$profile"} \
  "$repo/wasm-bench/turn-cost.mjs" "$pkg" "${1:-2000}" "${2:-20}" "${3:-5}" "${4:-200}"
