#!/usr/bin/env python3
"""Measures the `bootstrap` binary's init: wall time from exec until it asks the Lambda Runtime
API for its first invocation (what Lambda reports as Init Duration, minus the sandbox), and its
resident memory at that moment.

    lambda/bench/cold_start.py PATH/TO/bootstrap [RUNS]

A local socket stands in for the Runtime API: the binary's first act after init is
`GET /2018-06-01/runtime/invocation/next`, so the accept time marks the end of init. The
process is then killed; nothing else is served. The environment is what Lambda sets, with fake
credentials and a DynamoDB endpoint nobody is asked (init makes no DynamoDB call).
"""

import os
import socket
import statistics
import subprocess
import sys
import time


def rss_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def one(binary):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(30)
    port = srv.getsockname()[1]
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": "runway",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "RUNWAY_DYNAMODB_ENDPOINT": "http://127.0.0.1:9",
        "RUNWAY_AUTH_HEADERS": "X-API-Key: bench",
        "RUST_LOG": "warn",
    }
    t0 = time.perf_counter()
    p = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn, _ = srv.accept()
        t1 = time.perf_counter()
        rss, hwm = rss_kib(p.pid)
        conn.close()
    finally:
        p.kill()
        p.wait()
        srv.close()
    return (t1 - t0) * 1000, rss, hwm


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    one(binary)  # warm the page cache
    samples = [one(binary) for _ in range(runs)]
    ms = sorted(s[0] for s in samples)
    print(f"binary: {binary} ({os.path.getsize(binary)} bytes)")
    print(f"init (exec -> first /next), {runs} runs: median {statistics.median(ms):.1f} ms, "
          f"p90 {ms[int(0.9 * (runs - 1))]:.1f} ms, min {ms[0]:.1f} ms")
    print(f"RSS at end of init: median {statistics.median(s[1] for s in samples):.0f} KiB "
          f"(peak {max(s[2] for s in samples)} KiB)")


if __name__ == "__main__":
    main()
