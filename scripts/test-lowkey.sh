#!/usr/bin/env bash
# The Lowkey package's tests (infra/lowkey), against a local runway on loopback:
#  1. installs the pinned Deno from infra/lowkey/package-lock.json (npm ci: idempotent);
#  2. checks configure.mjs on a URL, SAM outputs and a wrangler deploy log;
#  3. starts `runway serve` on 127.0.0.1:0, configures the package for it, and runs the web
#     variant's main.ts tests under exactly the jail's permissions
#     (`deno test --no-prompt --allow-net=<the manifest's net.egress domain>`): onInstall
#     passes, and fetches to any other domain, files and the environment are denied;
#  4. stops runway and checks onInstall reports the agent unreachable;
#  5. serves a /health without protocol version "1" and checks onInstall reports it.
# Every process it starts is stopped on exit. Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lk="$root/infra/lowkey"
export DENO_NO_UPDATE_CHECK=1 NO_COLOR=1

echo "--- install pinned deno (npm ci in infra/lowkey)"
(cd "$lk" && npm ci --no-audit --no-fund --loglevel=error)
deno="$lk/node_modules/.bin/deno"
"$deno" --version | head -1
(cd "$lk" && "$deno" fmt --check web test configure.mjs && "$deno" lint web test configure.mjs)

echo "--- build runway"
cargo build -q -p runway
bin="${CARGO_TARGET_DIR:-$root/target}/debug/runway"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# wait_for_base_url FILE PID: the URL a server printed as `base_url: URL` (30 s at most).
wait_for_base_url() {
  for _ in $(seq 300); do
    if url=$(grep -m1 -o 'base_url: .*' "$1" 2>/dev/null); then
      echo "${url#base_url: }"
      return 0
    fi
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "no base_url from $1:" >&2
  cat "$1" >&2
  return 1
}

# configured DIR: the web variant's granted domain.
granted_domain() {
  node -e 'const m = require(process.argv[1]); const c = m.capabilities.find((c) => c.type === "net.egress"); if (c.domains.length !== 1) process.exit(1); console.log(c.domains[0]);' "$1/web/manifest.json"
}

passed=0
check() { passed=$((passed + 1)); echo "ok: $*"; }

echo "--- configure.mjs"
node "$lk/configure.mjs" --url https://agent.example.com/ --out "$tmp/c1" >/dev/null
grep -q '"endpoint": "https://agent.example.com/lowkey/turn"' "$tmp/c1/sideload/manifest.json"
grep -q '"runtime": "external:runway-agent"' "$tmp/c1/sideload/manifest.json"
[ "$(granted_domain "$tmp/c1")" = agent.example.com ]
grep -q '^export const AGENT_BASE_URL = "https://agent.example.com";$' "$tmp/c1/web/main.ts"
check "--url writes the endpoint, the runtime, the egress domain and main.ts"
cat > "$tmp/sam.json" <<'EOF'
[
  {"OutputKey": "TableName", "OutputValue": "runway-Table-1"},
  {"OutputKey": "BaseUrl", "OutputValue": "https://abc123.lambda-url.eu-west-1.on.aws", "Description": "base_url"}
]
EOF
node "$lk/configure.mjs" --sam-outputs "$tmp/sam.json" --id fpt-agent --out "$tmp/c2" >/dev/null
grep -q '"endpoint": "https://abc123.lambda-url.eu-west-1.on.aws/lowkey/turn"' "$tmp/c2/web/manifest.json"
grep -q '"runtime": "external:fpt-agent"' "$tmp/c2/web/manifest.json"
check "--sam-outputs reads the BaseUrl output"
printf 'Total Upload: 325.10 KiB / gzip: 114.02 KiB\nUploaded runway (3.2 sec)\nDeployed runway triggers (0.4 sec)\n  https://runway.acme.workers.dev\nCurrent Version ID: 1\n' > "$tmp/wrangler.log"
node "$lk/configure.mjs" --wrangler-output "$tmp/wrangler.log" --out "$tmp/c3" >/dev/null
[ "$(granted_domain "$tmp/c3")" = runway.acme.workers.dev ]
check "--wrangler-output reads the workers.dev URL"
if node "$lk/configure.mjs" --url http://agent.example.com --out "$tmp/c4" 2>/dev/null; then
  echo "configure accepted a plain-http agent URL" >&2
  exit 1
fi
check "configure refuses a plain-http agent URL"

echo "--- web variant against a local runway"
mkdir -p "$tmp/data"
"$bin" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" >"$tmp/runway.out" 2>"$tmp/runway.err" &
runway_pid=$!
pids+=("$runway_pid")
base=$(wait_for_base_url "$tmp/runway.out" "$runway_pid")
node "$lk/configure.mjs" --url "$base" --out "$tmp/pkg" --allow-http-loopback
domain=$(granted_domain "$tmp/pkg")
cp "$lk"/test/*.ts "$tmp/pkg/web/"
(cd "$tmp/pkg/web" && "$deno" test --no-prompt --allow-net="$domain" main_test.ts)
check "main.ts under --no-prompt --allow-net=$domain against runway"

echo "--- the same package with the agent stopped"
kill "$runway_pid"
wait "$runway_pid" 2>/dev/null || true
(cd "$tmp/pkg/web" && "$deno" test --no-prompt --allow-net="$domain" unreachable_test.ts)
check "onInstall reports an unreachable agent"

echo "--- a /health without protocol version \"1\""
"$deno" run --no-prompt --allow-net=127.0.0.1 "$lk/test/fake_health.ts" >"$tmp/fake.out" 2>&1 &
fake_pid=$!
pids+=("$fake_pid")
fake=$(wait_for_base_url "$tmp/fake.out" "$fake_pid")
node "$lk/configure.mjs" --url "$fake" --out "$tmp/pkg-fake" --allow-http-loopback >/dev/null
cp "$lk"/test/*.ts "$tmp/pkg-fake/web/"
(cd "$tmp/pkg-fake/web" && "$deno" test --no-prompt --allow-net="$(granted_domain "$tmp/pkg-fake")" wrong_version_test.ts)
check "onInstall reports a missing protocol version \"1\""

echo "lowkey package: $passed passed, 0 failed"
