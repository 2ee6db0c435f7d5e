#!/usr/bin/env bash
# What one turn in flight costs `runway serve` in resident memory: a linear fit of the server's
# RSS against the number of turns held in flight at once (BENCHMARKS.md, "Side by side with the
# FastAPI peer"). For each level N a fresh server (profile `fast`, demo agent, embedded SQLite,
# new data directory) takes N concurrent turns of `/slow HOLD` (the demo agent waits HOLD
# seconds, each turn on its own connection); once all N connections are established the
# script reads /proc/PID/smaps_rollup (Rss, Anonymous) and the established connections, then
# lets the turns finish. The slope is the bytes one more turn in flight costs; the intercept,
# the server with none.
#
#   scripts/rss-per-turn.sh [LEVELS] [HOLD]      (defaults "0 250 500 1000 2000", 4 s)
#
#   RUNWAY_BIN=/path/to/runway     serve this binary (default: this checkout's, built here)
#   SERVE_ENV="MALLOC_ARENA_MAX=1" environment for the server only
#
# Loopback only; at most 2,000 turns in flight (the server's own bound is 2,048). Not part of CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
levels="${1:-0 250 500 1000 2000}"
hold="${2:-4}"
target="${CARGO_TARGET_DIR:-$repo/target}"
out="$target/rss-per-turn"
rm -rf "$out" && mkdir -p "$out"
if [ -z "${RUNWAY_BIN:-}" ]; then
  cargo build --quiet --profile fast -p runway --bin runway -p runway-e2e --bin load
  RUNWAY_BIN="$target/fast/runway"
else
  cargo build --quiet --profile fast -p runway-e2e --bin load
fi
load="$target/fast/load"
read -r -a serve_env <<<"${SERVE_ENV:-}"

pid="" dir="" loader=""
stop() {
  if [ -n "$loader" ]; then wait "$loader" 2>/dev/null || true; loader=""; fi
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi
  if [ -n "$dir" ]; then rm -rf "$dir"; dir=""; fi
}
trap stop EXIT

kib() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$pid/smaps_rollup"; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $levels; do
  [ "$n" -le 2000 ] || { echo "rss-per-turn: at most 2000 turns in flight" >&2; exit 2; }
  dir="$(mktemp -d /tmp/runway-rss-XXXXXX)"
  env RUNWAY_AGENT=demo "${serve_env[@]}" "$RUNWAY_BIN" serve --listen 127.0.0.1:0 --data-dir "$dir" \
    >"$dir/stdout" 2>/dev/null &
  pid=$!
  base=""
  for _ in $(seq 1 100); do
    base="$(sed -n 's/^base_url: //p' "$dir/stdout" 2>/dev/null || true)"
    [ -n "$base" ] && curl -fsS "$base/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  port="${base##*:}"
  port="${port%%/*}"
  held=0
  if [ "$n" -gt 0 ]; then
    "$load" "$base" --input "/slow $hold" --concurrency "$n" --turns "$n" --json \
      >"$out/load-$n.json" 2>/dev/null &
    loader=$!
    # Wait (at most HOLD - 1 s) for every turn's connection, then let the last ones settle.
    for _ in $(seq 1 $(((hold - 1) * 10))); do
      held="$(ss -Htn state established "( sport = :$port )" | wc -l)"
      [ "$held" -ge "$n" ] && break
      sleep 0.1
    done
    sleep 0.3
    held="$(ss -Htn state established "( sport = :$port )" | wc -l)"
  fi
  echo "$n $held $(kib Rss) $(kib Anonymous)" >>"$out/levels.txt"
  stop
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out/levels.txt" "$hold" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
print(f"turns of '/slow {sys.argv[2]}' held in flight, one connection each; smaps_rollup while held")
print("| turns started | connections held | Rss | Anonymous |")
print("|---|---|---|---|")
for n, held, rss, anon in rows:
    print(f"| {n} | {held} | {rss / 1024:.1f} MiB | {anon / 1024:.1f} MiB |")
def fit(ys):
    xs = [r[1] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx
if len(rows) >= 2:
    for name, col in (("Rss", 2), ("Anonymous", 3)):
        slope, icpt = fit([r[col] for r in rows])
        print(f"{name}: {slope:.1f} KiB per turn in flight, {icpt / 1024:.1f} MiB with none (least squares)")
PY
