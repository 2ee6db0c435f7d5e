#!/usr/bin/env bash
# What each per-turn step of `runway serve` costs, in instructions: the server (profile `fast`)
# runs under valgrind's callgrind while the load tool sends TURNS turns (10 concurrent, a new
# connection per turn, demo agent, loopback), once per configuration:
#
#   default      what `runway serve` does out of the box (usage recorded, no limits, no padding)
#   padding      + RUNWAY_FIRST_FLUSH_BYTES=102400 (Lambda's default)
#   limits       + a turns-per-minute limit and a token budget on the worker (admission: one
#                  budget read and one atomic take per turn)
#
# For each it prints the server's user-space instructions per turn (counted after a warm-up)
# and the inclusive share of the steps a feature's note should quote: admission, usage
# recording, the store's claim/load (`start`) and commit (`finish`), the tracing line. A step
# that can be switched off is the difference between two configurations (padding, limits);
# usage recording cannot be switched off, so its functions are quoted. The kernel's work
# (loopback TCP: most of the padding's cost) is not counted by callgrind. Instruction counts do not depend on the machine's load, so the figures compare
# across runs and commits where CPU times on a shared 2-core machine do not (this VM exposes
# no hardware counters to `perf`). Needs valgrind (Debian: `apt-get install -y valgrind`).
#
#   scripts/turn-instructions.sh [TURNS]        (default 500; about a minute per configuration)
#
# Loopback only; not part of CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
turns="${1:-500}"
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
target="${CARGO_TARGET_DIR:-$repo/target}"
cargo build --quiet --profile fast -p runway --bin runway -p runway-e2e --bin load
runway="$target/fast/runway"
load="$target/fast/load"

limits_file='
[workers."918273688800000200"]
agent = "demo"

[workspaces."*".workers."918273688800000200"]
limits = { turns_per_minute = 1000000000, tokens_per_day = 1000000000 }
'

# Functions whose inclusive instructions are a step of the turn (the SQLite thread's share
# included: store calls run there, not inside the async step that made them).
steps=(
  "admission: turns taken|SqlStore<S>>::take_turns"
  "admission: budget reads|SqlStore<S>>::tallies"
  "usage recording (the usage write)|runway_core::turn::usage_record::store_report"
  "tally writes (usage, counts)|SqlStore<S>>::add_tally"
  "store start (claim + load)|runway_core::store::sql_store::SqlStore<S>::start"
  "store finish (commit)|runway_core::store::sql_store::SqlStore<S>::finish"
  "tracing (log lines, spans)|tracing_subscriber::fmt::Subscriber<N,E,F,W> as tracing_core::subscriber::Subscriber>::event"
)

measure() {
  local name="$1"; shift
  local d; d="$(mktemp -d /tmp/runway-instr-XXXXXX)"
  env "$@" valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" \
    "$runway" serve --listen 127.0.0.1:0 --data-dir "$d" >"$d/stdout" 2>"$d/valgrind.log" &
  local pid=$! base=""
  for _ in $(seq 1 300); do
    base="$(sed -n 's/^base_url: //p' "$d/stdout" 2>/dev/null || true)"
    [ -n "$base" ] && break
    sleep 0.2
  done
  [ -n "$base" ] || { echo "runway serve did not start under valgrind" >&2; exit 1; }
  "$load" "$base" --concurrency 10 --turns 100 --connection new --json >/dev/null
  callgrind_control -z "$pid" >/dev/null
  "$load" "$base" --concurrency 10 --turns "$turns" --connection new --json >"$d/load.json"
  callgrind_control -d "$pid" >/dev/null
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  local dump; dump="$(ls "$d"/cg.*.1)"
  callgrind_annotate --inclusive=yes --threshold=100 "$dump" >"$d/inclusive.txt" 2>/dev/null
  python3 - "$d" "$turns" "$name" "${steps[@]}" <<'PY'
import json, sys
d, turns, name, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
errors = json.load(open(f"{d}/load.json"))["errors"]
lines = open(f"{d}/inclusive.txt").read().splitlines()
def ir(line):
    return int(line.split()[0].replace(",", ""))
total = next(ir(l) for l in lines if "PROGRAM TOTALS" in l)
print(f"{name}: {total / turns / 1000:.0f}k instructions per turn ({errors} errors)")
for step in steps:
    label, func = step.split("|", 1)
    hits = [ir(l) for l in lines if func in l]
    per_turn = max(hits) / turns / 1000 if hits else 0.0
    print(f"  {label:28} {per_turn:7.1f}k  ({100 * per_turn * 1000 * turns / total:4.1f} %)")
PY
  rm -rf "$d"
}

measure default
measure padding RUNWAY_FIRST_FLUSH_BYTES=102400
measure limits RUNWAY_WORKERS="$limits_file"
