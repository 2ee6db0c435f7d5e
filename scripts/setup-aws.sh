#!/usr/bin/env bash
# Installs what the AWS Lambda tests need, idempotently, from the package registries only:
#   - a venv with moto[server] and cargo-lambda (infra/aws/requirements.txt + constraints.txt)
#   - a venv with cfn-lint and aws-sam-cli (infra/aws/requirements-lint.txt + constraints-lint.txt)
#   - the crates of the workspace (cargo fetch)
#   - with --arm64: the aarch64-unknown-linux-gnu Rust target (zig comes with cargo-lambda)
# The venvs live under ${RUNWAY_CACHE_DIR:-~/.cache/runway}; a second run changes nothing.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
arm64=0
for a in "$@"; do
  case "$a" in
    --arm64) arm64=1 ;;
    *) echo "setup-aws: unknown option $a" >&2; exit 2 ;;
  esac
done

for tool in python3 curl cargo flock; do
  command -v "$tool" >/dev/null || { echo "setup-aws: $tool is required" >&2; exit 1; }
done
python3 -c 'import venv, ensurepip' 2>/dev/null || {
  echo "setup-aws: python3 needs the venv module (Debian: apt-get install python3-venv)" >&2
  exit 1
}

# shellcheck source=infra/aws/venv.sh
source "$repo/infra/aws/venv.sh"
venv="$(runway_aws_venv)"
lint="$(runway_aws_lint_venv)"
echo "setup-aws: $("$venv/bin/python" -m pip show moto 2>/dev/null | sed -n 's/^Version: /moto /p'), $("$venv/bin/cargo-lambda" lambda --version 2>/dev/null | head -1)"
echo "setup-aws: cfn-lint $("$lint/bin/cfn-lint" --version 2>/dev/null | awk '{print $2}'), $(SAM_CLI_TELEMETRY=0 "$lint/bin/sam" --version 2>/dev/null)"

(cd "$repo" && cargo fetch --quiet)
if [[ $arm64 == 1 ]]; then
  rustup target add aarch64-unknown-linux-gnu
fi
echo "setup-aws: ready"
