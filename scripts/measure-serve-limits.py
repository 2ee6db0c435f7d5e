#!/usr/bin/env python3
"""Measures `runway serve` under the loads of issue 11 items 3 and 5, on loopback only.

    scripts/measure-serve-limits.py memory RUNWAY_BINARY [TURNS] [BYTES]
        TURNS (default 100, at most 200) concurrent `/long BYTES` turns (default 9,000,000),
        every client reading normally; samples the server's VmRSS from /proc every 100 ms and
        the latency of `GET /health` (a new connection each) every 250 ms.
    scripts/measure-serve-limits.py burst RUNWAY_BINARY [CONNECTIONS]
        CONNECTIONS (default 1,000, at most 2,000) new connections at once, each a plain turn;
        TcpExtListenOverflows (nstat, system-wide) before and after, errors, first-frame p99.

Starts the binary itself (`serve --listen 127.0.0.1:0`, a fresh data dir, demo agent, no auth)
and stops it. Standard library only.
"""

import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def start(binary):
    data = tempfile.mkdtemp(prefix="runway-measure-")
    env = dict(os.environ, RUNWAY_LOG="off")
    env.pop("RUNWAY_AUTH_HEADERS", None)
    proc = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.match(r"base_url:\s*http://([\d.]+):(\d+)", line.strip())
        if m:
            return proc, m.group(1), int(m.group(2))
    proc.kill()
    sys.exit("runway serve did not print base_url")


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def turn_request(host, port, run_id, text):
    body = json.dumps(
        {
            "protocolVersion": "1",
            "runId": run_id,
            "threadId": "t-" + run_id,
            "agentId": "a",
            "workspaceId": "w",
            "input": text,
        }
    ).encode()
    head = (
        f"POST /runs HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return head + body


async def turn(host, port, run_id, text, timeout=120):
    """Sends one turn on a new connection, reads to the end: (bytes, first-frame s, total s)."""
    # A plain non-blocking socket on a numeric address: the SYN leaves as soon as the task
    # starts (asyncio.open_connection resolves names on a thread pool, which spreads a
    # burst out over seconds).
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.wait_for(loop.sock_connect(sock, (host, port)), timeout)
        await loop.sock_sendall(sock, turn_request(host, port, run_id, text))
        first = None
        total = 0
        while True:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), timeout)
            if not chunk:
                break
            if first is None and b"data:" in chunk:
                first = time.perf_counter() - t0
            total += len(chunk)
    finally:
        sock.close()
    return total, first, time.perf_counter() - t0


async def health_latency(host, port):
    t0 = time.perf_counter()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
    writer.write(f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:100]
    return time.perf_counter() - t0


async def memory(binary, turns, size):
    proc, host, port = start(binary)
    try:
        idle = rss_kib(proc.pid)
        samples, health = [], []
        done = asyncio.Event()

        async def sample_rss():
            while not done.is_set():
                samples.append(rss_kib(proc.pid)["VmRSS"])
                await asyncio.sleep(0.1)

        async def sample_health():
            while not done.is_set():
                health.append(await health_latency(host, port))
                await asyncio.sleep(0.25)

        samplers = [asyncio.create_task(sample_rss()), asyncio.create_task(sample_health())]
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(turn(host, port, f"m{i}-{os.getpid()}", f"/long {size}") for i in range(turns)),
            return_exceptions=True,
        )
        wall = time.perf_counter() - t0
        done.set()
        await asyncio.gather(*samplers)
        end = rss_kib(proc.pid)
    finally:
        stop(proc)
    errors = [r for r in results if isinstance(r, BaseException)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    print(
        json.dumps(
            {
                "scenario": f"{turns} concurrent /long {size}",
                "turns_ok": len(ok),
                "errors": [repr(e) for e in errors[:5]],
                "bytes_per_turn_median": statistics.median(r[0] for r in ok) if ok else 0,
                "wall_s": round(wall, 2),
                "rss_idle_mib": round(idle["VmRSS"] / 1024, 1),
                "rss_peak_sampled_mib": round(max(samples) / 1024, 1),
                "vmhwm_mib": round(end["VmHWM"] / 1024, 1),
                "health_samples": len(health),
                "health_median_ms": round(statistics.median(health) * 1000, 1),
                "health_max_ms": round(max(health) * 1000, 1),
            },
            indent=1,
        )
    )


def nstat_overflows():
    out = subprocess.run(
        ["nstat", "-az", "TcpExtListenOverflows"], capture_output=True, text=True
    ).stdout
    m = re.search(r"TcpExtListenOverflows\s+(\d+)", out)
    return int(m.group(1)) if m else -1


async def burst(binary, n):
    proc, host, port = start(binary)
    try:
        before = nstat_overflows()
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(turn(host, port, f"b{i}-{os.getpid()}", "hello", timeout=30) for i in range(n)),
            return_exceptions=True,
        )
        wall = time.perf_counter() - t0
        after = nstat_overflows()
    finally:
        stop(proc)
    errors = [r for r in results if isinstance(r, BaseException)]
    firsts = sorted(r[1] for r in results if not isinstance(r, BaseException) and r[1])
    p = lambda q: round(firsts[min(len(firsts) - 1, int(q * (len(firsts) - 1)))] * 1000, 1)
    print(
        json.dumps(
            {
                "scenario": f"{n} new connections at once, one plain turn each",
                "listen_overflows_before": before,
                "listen_overflows_after": after,
                "listen_overflows_delta": after - before,
                "errors": len(errors),
                "error_kinds": sorted({type(e).__name__ for e in errors}),
                "first_frame_p50_ms": p(0.5) if firsts else None,
                "first_frame_p99_ms": p(0.99) if firsts else None,
                "wall_s": round(wall, 2),
            },
            indent=1,
        )
    )


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("memory", "burst"):
        sys.exit(__doc__)
    binary = sys.argv[2]
    if sys.argv[1] == "memory":
        turns = min(int(sys.argv[3]) if len(sys.argv) > 3 else 100, 200)
        size = int(sys.argv[4]) if len(sys.argv) > 4 else 9_000_000
        asyncio.run(memory(binary, turns, size))
    else:
        n = min(int(sys.argv[3]) if len(sys.argv) > 3 else 1000, 2000)
        asyncio.run(burst(binary, n))


if __name__ == "__main__":
    main()
