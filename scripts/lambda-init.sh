#!/usr/bin/env bash
# The Lambda `bootstrap`'s package size and init: for each binary, its size stripped and
# `gzip -9`, then lambda/bench/cold_start.py (wall time from exec to its first Runtime API
# request against a stand-in Runtime API on loopback, and its RSS at that moment). An arm64
# binary (what the template deploys) runs under Debian's qemu-user emulator, installed here with
# apt when missing: its times and RSS are the emulator's, to compare arm64 builds with each
# other, never with Graviton. Not part of CI (two release builds take 10-30 minutes on two
# cores); BENCHMARKS.md ("AWS Lambda") quotes what this prints.
#
#   scripts/lambda-init.sh [--build] [--runs N] [BOOTSTRAP...]
#
# --build first builds both as the deploy tools do: `cargo lambda build --release --arm64`
# (SAM's rust-cargolambda builder) and `cargo build --release` for x86_64. Without binaries it
# measures those two builds' outputs under $CARGO_TARGET_DIR (default target/).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-$repo/target}"
build=0 runs=20 binaries=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=1 ;;
    --runs) runs="$2"; shift ;;
    -*) echo "lambda-init: unknown option $1" >&2; exit 2 ;;
    *) binaries+=("$1") ;;
  esac
  shift
done

if ! command -v qemu-aarch64 >/dev/null || [[ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]]; then
  echo "lambda-init: installing qemu-user and libc6-arm64-cross (apt)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user libc6-arm64-cross >/dev/null
fi

if [[ $build == 1 ]]; then
  scripts/setup-aws.sh --arm64
  # shellcheck source=infra/aws/venv.sh
  source infra/aws/venv.sh
  PATH="$(runway_aws_venv)/bin:$PATH" \
    cargo lambda build --release --arm64 --package runway-lambda --bin bootstrap
  cargo build --release -p runway-lambda --bin bootstrap
fi
if [[ ${#binaries[@]} == 0 ]]; then
  binaries=("$target/lambda/bootstrap/bootstrap" "$target/release/bootstrap")
fi

for bin in "${binaries[@]}"; do
  stripped="$(mktemp)"
  cp "$bin" "$stripped"
  # cargo-lambda strips its output already; the host's strip handles the x86_64 build.
  if ! file "$stripped" | grep -q ', stripped'; then
    strip "$stripped"
  fi
  echo "== $bin"
  echo "size: $(stat -c %s "$bin") bytes, stripped $(stat -c %s "$stripped"), gzip -9 of stripped $(gzip -9 -c "$stripped" | wc -c)"
  rm -f "$stripped"
  python3 lambda/bench/cold_start.py "$bin" "$runs"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
