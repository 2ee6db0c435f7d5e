#!/usr/bin/env bash
# runway serve and the FastAPI peer (tests/peer/app.py) side by side, in one run, on one machine:
# the load tool (a new connection per turn, 10 turns per Console thread) against each in turn,
# at 100 and 1,000 concurrent, RUNS runs each, and the medians of the server's CPU per turn,
# first-frame p99 and peak RSS with the ratio (issue 26's "local goals"; BENCHMARKS.md).
#
#   scripts/bench-peer.sh [RUNS] [TURNS]        (defaults 3 runs, 10,000 turns)
#
# Loopback only. runway: profile `fast`, demo agent, embedded SQLite, no padding (the default);
# the peer: uvicorn[standard] (uvloop, httptools), one process, SQLite in WAL mode. Not part of CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
runs="${1:-3}"
turns="${2:-10000}"
target="${CARGO_TARGET_DIR:-$repo/target}"
out="$target/bench-peer"
rm -rf "$out" && mkdir -p "$out"
# shellcheck source=../tests/peer/venv.sh
source tests/peer/venv.sh
venv="$(runway_peer_venv)"

cargo build --quiet --profile fast -p runway --bin runway -p runway-e2e --bin load
runway="$target/fast/runway"
load="$target/fast/load"

pid="" dir=""
stop() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi
  if [ -n "$dir" ]; then rm -rf "$dir"; dir=""; fi
}
trap stop EXIT

wait_health() {
  for _ in $(seq 1 100); do
    curl -fsS "$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "bench-peer: $1 did not start" >&2
  exit 1
}

start_runway() {
  dir="$(mktemp -d /tmp/runway-peer-XXXXXX)"
  "$runway" serve --listen 127.0.0.1:0 --data-dir "$dir" >"$dir/stdout" 2>/dev/null &
  pid=$!
  base=""
  for _ in $(seq 1 100); do
    base="$(sed -n 's/^base_url: //p' "$dir/stdout" 2>/dev/null || true)"
    [ -n "$base" ] && break
    sleep 0.1
  done
  wait_health "$base"
}

start_peer() {
  dir="$(mktemp -d /tmp/runway-peer-XXXXXX)"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  (cd "$dir" && PEER_DB="$dir/peer.sqlite3" exec "$venv/bin/python" -m uvicorn --app-dir "$repo/tests/peer" \
    app:app --host 127.0.0.1 --port "$port" --log-level warning --no-access-log --backlog 4096) &
  pid=$!
  base="http://127.0.0.1:$port"
  wait_health "$base"
}

for conc in 100 1000; do
  for i in $(seq 1 "$runs"); do
    for who in runway peer; do
      "start_$who"
      "$load" "$base" --concurrency "$conc" --turns "$turns" --server-pid "$pid" --json \
        >"$out/$who-c$conc-$i.json" || true
      stop
    done
  done
done

python3 - "$out" "$runs" "$turns" <<'PY'
import json, statistics, sys
out, runs, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def med(who, conc, get):
    vals = []
    for i in range(1, runs + 1):
        j = json.load(open(f"{out}/{who}-c{conc}-{i}.json"))
        vals.append(get(j))
    return statistics.median(vals)
print(f"load BASE --concurrency C --turns {turns} --server-pid PID (medians of {runs} runs, each server fresh)")
print("| concurrent | | CPU per turn | first frame p99 | peak RSS | errors |")
print("|---|---|---|---|---|---|")
for conc in (100, 1000):
    row = {}
    for who in ("runway", "peer"):
        cpu = med(who, conc, lambda j: j["server"]["cpu_ms_per_turn"])
        p99 = med(who, conc, lambda j: j["first_frame_ms"]["p99"])
        rss = med(who, conc, lambda j: j["server"]["peak_rss_kib"] / 1024)
        err = med(who, conc, lambda j: j["errors"])
        row[who] = cpu
        print(f"| {conc} | {who} | {cpu:.3f} ms | {p99:.1f} ms | {rss:.1f} MiB | {err} |")
    print(f"| {conc} | ratio | **{row['peer'] / row['runway']:.1f}× less CPU** | | | |")
PY
