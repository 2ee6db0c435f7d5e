#!/usr/bin/env bash
# What `runway playground`'s proxy adds to a turn: time to STEP_STARTED and to the end of the
# stream for 30 demo-agent turns, sent straight to `runway serve` and then through the proxy
# (raw HTTP/1.1 over loopback, one connection per turn). Stops both servers on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p runway
B="${CARGO_TARGET_DIR:-$PWD/target}/debug/runway"
d=$(mktemp -d)
$B serve --listen 127.0.0.1:0 --data-dir $d > $d/serve.out 2>$d/serve.err & SP=$!
trap 'kill $SP ${PP:-} 2>/dev/null || true; wait $SP ${PP:-} 2>/dev/null || true; rm -rf "$d"' EXIT
sleep 1; base=$(grep -o 'base_url: .*' $d/serve.out | cut -d' ' -f2)
$B playground $base --listen 127.0.0.1:0 > $d/pg.out 2>$d/pg.err & PP=$!
sleep 1; pg=$(grep -o 'open: .*' $d/pg.out | cut -d' ' -f2); pg=${pg%/}
cat > $d/t.py <<'EOF'
import socket, sys, time, json, statistics
def turn(host, port, rid):
    body = json.dumps({"protocolVersion":"1","runId":rid,"threadId":"t"+rid,"agentId":"a","workspaceId":"w","input":"Hello"}).encode()
    s = socket.create_connection((host, port)); t0 = time.perf_counter()
    s.sendall(b"POST /runs HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (host.encode(), port, len(body)) + body)
    buf = b""; ff = None
    while True:
        c = s.recv(65536)
        if not c: break
        buf += c
        if ff is None and b"STEP_STARTED" in buf: ff = time.perf_counter() - t0
    return ff * 1000, (time.perf_counter() - t0) * 1000
for name, url in (("direct", sys.argv[1]), ("proxy", sys.argv[2])):
    hp = url.split("//")[1]; host, port = hp.rsplit(":", 1)
    r = [turn(host, int(port), "%s%d" % (name, i)) for i in range(30)]
    print("%s: n=30 median STEP_STARTED %.2f ms, median end %.2f ms" % (name, statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)))
EOF
python3 $d/t.py "$base" "$pg"

