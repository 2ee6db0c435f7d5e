#!/usr/bin/env bash
# The AWS Lambda checks: template lints (offline), the adapter's unit and template tests, the
# DynamoDB store against moto, and the end-to-end suite against the real `bootstrap` under
# cargo-lambda's emulator (tests/tests/lambda.rs, and the model agent with HTTP and MCP tools:
# lambda_model.rs).
#
#   scripts/test-aws.sh [--build]
#
# --build also runs `cargo lambda build --release --arm64` (x86_64 when the aarch64 target
# cannot be added) and prints the binary's size.
# Installs what it needs first (scripts/setup-aws.sh). Uses $CARGO_TARGET_DIR if set.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build=0
for a in "$@"; do
  case "$a" in
    --build) build=1 ;;
    *) echo "test-aws: unknown option $a" >&2; exit 2 ;;
  esac
done

step() { echo; echo "== test-aws: $*"; }

step "setup"
scripts/setup-aws.sh
scripts/setup-mcp.sh
scripts/setup-agui.sh
scripts/setup-oauth.sh
scripts/setup-playground.sh
# shellcheck source=infra/aws/venv.sh
source infra/aws/venv.sh
lint="$(runway_aws_lint_venv)"
venv="$(runway_aws_venv)"

step "cfn-lint infra/aws/template.yaml"
"$lint/bin/cfn-lint" infra/aws/template.yaml

step "sam validate --lint"
SAM_CLI_TELEMETRY=0 "$lint/bin/sam" validate --lint --template-file infra/aws/template.yaml \
  --region us-east-1

step "template: the function URL streams (neither linter checks InvokeMode)"
"$lint/bin/python" - infra/aws/template.yaml <<'PY'
import sys
from cfnlint.decode import decode
template, errors = decode(sys.argv[1])
if errors:
    sys.exit(f"cannot parse the template: {errors}")
functions = {k: r for k, r in template["Resources"].items()
             if r.get("Type") == "AWS::Serverless::Function"}
assert functions, "no AWS::Serverless::Function"
for name, r in functions.items():
    mode = r["Properties"].get("FunctionUrlConfig", {}).get("InvokeMode")
    assert mode == "RESPONSE_STREAM", f"{name}: InvokeMode is {mode!r}, not RESPONSE_STREAM"
    print(f"{name}: InvokeMode RESPONSE_STREAM")
PY

step "runway new: the generated crate's template.yaml passes cfn-lint and sam validate --lint"
timeout 1800 cargo build -p runway
generated="$(mktemp -d "${TMPDIR:-/tmp}/runway-new-lint.XXXXXX")"
"${CARGO_TARGET_DIR:-$repo/target}/debug/runway" new "$generated/my-agent" >/dev/null
"$lint/bin/cfn-lint" "$generated/my-agent/template.yaml"
(cd "$generated/my-agent" && SAM_CLI_TELEMETRY=0 "$lint/bin/sam" validate --lint --region us-east-1)
rm -rf "$generated"

step "runway-lambda unit and template tests"
timeout 1800 cargo test -p runway-lambda

step "DynamoDB store against moto"
timeout 900 cargo test -p runway-lambda --test store -- --ignored

step "end-to-end suite against bootstrap under cargo lambda watch"
# Build the function once so every start of infra/aws/local is quick.
timeout 1800 cargo build -p runway-lambda --bin bootstrap
timeout 1800 cargo test -p runway-e2e --test lambda -- --ignored --nocapture

step "the model agent in bootstrap under cargo lambda watch (scripted model, tools, attachments, MCP servers)"
timeout 1800 cargo test -p runway-e2e --test lambda_model -- --ignored --nocapture

step "runway new: the generated crate's bootstrap passes runway check under cargo lambda watch"
timeout 1800 cargo test -p runway-e2e --test new_crate_lambda -- --ignored --nocapture

if [[ $build == 1 ]]; then
  step "cargo lambda build --release"
  export PATH="$venv/bin:$PATH"
  if rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1; then
    arch=(--arm64); triple=aarch64-unknown-linux-gnu
  else
    echo "test-aws: the aarch64 target is not available: building for x86_64" >&2
    arch=(--x86-64); triple=x86_64-unknown-linux-gnu
  fi
  timeout 2400 cargo lambda build --release "${arch[@]}" --package runway-lambda --bin bootstrap
  out="${CARGO_TARGET_DIR:-$repo/target}/lambda/bootstrap/bootstrap"
  echo "test-aws: $triple bootstrap: $(stat -c %s "$out") bytes"
fi
echo
echo "test-aws: all AWS checks passed"
