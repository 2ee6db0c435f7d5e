#!/usr/bin/env bash
# Peak RSS and CPU per turn of `runway serve` under the load tool (issue 26's "peak RSS
# ≤ 24 MiB at 1,000 concurrent turns"; BENCHMARKS.md, "Side by side with the FastAPI peer").
# Each run starts a fresh server (profile `fast`, demo agent, embedded SQLite in a new data
# directory, no padding: as scripts/bench-peer.sh runs it), reads its idle RSS (`VmRSS` once
# `/health` answers), sends TURNS turns at CONCURRENCY with a new connection per turn (10 turns
# per Console thread), and takes the server's peak RSS (`VmHWM`) and CPU per turn from the load
# tool's `--server-pid` report. Prints the medians (min–max) per binary.
#
#   scripts/peak-rss.sh [RUNS] [TURNS] [CONCURRENCY]      (defaults 3 runs, 10,000 turns, 1,000)
#
#   RUNWAY_BINS="before=/path/a after=/path/b"   compare binaries, alternating run by run
#                                                 (default: this checkout's, built here)
#   SERVE_ENV="MALLOC_ARENA_MAX=1"               environment for the server only
#
# Loopback only; each run bounded by the load tool's limits (120 s). Not part of CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
runs="${1:-3}"
turns="${2:-10000}"
conc="${3:-1000}"
target="${CARGO_TARGET_DIR:-$repo/target}"
out="$target/peak-rss"
rm -rf "$out" && mkdir -p "$out"

if [ -z "${RUNWAY_BINS:-}" ]; then
  cargo build --quiet --profile fast -p runway --bin runway -p runway-e2e --bin load
  RUNWAY_BINS="runway=$target/fast/runway"
else
  cargo build --quiet --profile fast -p runway-e2e --bin load
fi
load="$target/fast/load"
read -r -a serve_env <<<"${SERVE_ENV:-}"

pid="" dir=""
stop() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi
  if [ -n "$dir" ]; then rm -rf "$dir"; dir=""; fi
}
trap stop EXIT

# Starts `$1` on a free loopback port; sets pid and base.
start() {
  dir="$(mktemp -d /tmp/runway-rss-XXXXXX)"
  env RUNWAY_AGENT=demo "${serve_env[@]}" "$1" serve --listen 127.0.0.1:0 --data-dir "$dir" \
    >"$dir/stdout" 2>/dev/null &
  pid=$!
  base=""
  for _ in $(seq 1 100); do
    base="$(sed -n 's/^base_url: //p' "$dir/stdout" 2>/dev/null || true)"
    [ -n "$base" ] && curl -fsS "$base/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "peak-rss: $1 did not start" >&2
  exit 1
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$runs"); do
  for entry in $RUNWAY_BINS; do
    label="${entry%%=*}" bin="${entry#*=}"
    start "$bin"
    idle="$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status")"
    "$load" "$base" --concurrency "$conc" --turns "$turns" --server-pid "$pid" --json \
      >"$out/$label-$i.json" || true
    echo "$idle" >"$out/$label-$i.idle"
    stop
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$runs" "$turns" "$conc" $RUNWAY_BINS <<'PY'
import json, statistics, sys
out, runs, turns, conc, entries = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
print(f"load BASE --concurrency {conc} --turns {turns} --server-pid PID; "
      f"medians (min–max) of {runs} runs, each server fresh")
print("| binary | idle RSS | peak RSS | CPU per turn (user + system) | turns/s | errors |")
print("|---|---|---|---|---|---|")
def span(vals, fmt):
    return f"{fmt(statistics.median(vals))} ({fmt(min(vals))}–{fmt(max(vals))})"
for entry in entries:
    label = entry.split("=", 1)[0]
    reports = [json.load(open(f"{out}/{label}-{i}.json")) for i in range(1, runs + 1)]
    idle = [int(open(f"{out}/{label}-{i}.idle").read()) / 1024 for i in range(1, runs + 1)]
    peak = [r["server"]["peak_rss_kib"] / 1024 for r in reports]
    cpu = [r["server"]["cpu_ms_per_turn"] for r in reports]
    user = statistics.median(r["server"]["cpu_user_ms"] / r["ok"] for r in reports)
    system = statistics.median(r["server"]["cpu_system_ms"] / r["ok"] for r in reports)
    tps = statistics.median(r["turns_per_s"] for r in reports)
    errors = sum(r["errors"] for r in reports)
    mib = lambda v: f"{v:.1f} MiB"
    print(f"| {label} | {span(idle, mib)} | **{span(peak, mib)}** | "
          f"{span(cpu, lambda v: f'{v:.3f} ms')} ({user:.2f} + {system:.2f}) | {tps:.0f} | {errors} |")
PY
