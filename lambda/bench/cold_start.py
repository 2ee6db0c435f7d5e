#!/usr/bin/env python3
"""Measures the `bootstrap` binary's init: wall time from exec until it asks the Lambda Runtime
API for its first invocation (what Lambda reports as Init Duration, minus the sandbox), and its
resident memory and CPU time at that moment (on a loaded machine the CPU time is the steadier
figure).

    lambda/bench/cold_start.py PATH/TO/bootstrap [RUNS]

A local socket stands in for the Runtime API: the binary's first act after init is
`GET /2018-06-01/runtime/invocation/next`, so the first request line read from it marks the end
of init (the request is checked, not just the connection). The process is then killed; nothing
else is served. The environment is what Lambda sets, with fake credentials and a DynamoDB
endpoint nobody is asked (init makes no DynamoDB call).

An aarch64 binary (what the template deploys) runs under Debian's `qemu-aarch64` user-mode
emulator with the cross libc (`apt-get install qemu-user libc6-arm64-cross`; see
`scripts/lambda-init.sh`). Its times are emulated: compare arm64 builds with each other, not
with Graviton. Its RSS is the qemu process's, so it counts the emulator (and its translated
code) as well as the guest's pages.
"""

import os
import socket
import statistics
import subprocess
import sys
import time

EM_AARCH64 = 183
# Where Debian's libc6-arm64-cross puts the aarch64 loader and libc.
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"


def elf_machine(path):
    with open(path, "rb") as f:
        header = f.read(20)
    if header[:4] != b"\x7fELF":
        sys.exit(f"{path}: not an ELF file")
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def command(binary):
    """The argv that runs `binary` here: itself, or under qemu when it is aarch64 on another host."""
    if elf_machine(binary) == EM_AARCH64 and os.uname().machine != "aarch64":
        return ["qemu-aarch64", "-L", AARCH64_SYSROOT, binary], "qemu-aarch64"
    return [binary], "native"


def rss_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def cpu_ms(pid):
    """Time the process has spent on a CPU so far (all its threads; /proc/PID/schedstat, in ns):
    unlike wall time, barely moved by other processes competing for the cores."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e6


def one(argv):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(60)
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
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn, _ = srv.accept()
        conn.settimeout(60)
        request = b""
        while b"\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                break
            request += chunk
        t1 = time.perf_counter()
        rss, hwm = rss_kib(p.pid)
        cpu = cpu_ms(p.pid)
        conn.close()
    finally:
        p.kill()
        p.wait()
        srv.close()
    line = request.split(b"\r\n", 1)[0].decode("latin-1")
    if not line.startswith("GET /2018-06-01/runtime/invocation/next "):
        sys.exit(f"the first request was not the Runtime API's next invocation: {line!r}")
    return (t1 - t0) * 1000, rss, hwm, cpu


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    argv, how = command(binary)
    one(argv)  # warm the page cache
    samples = [one(argv) for _ in range(runs)]
    ms = sorted(s[0] for s in samples)
    print(f"binary: {binary} ({os.path.getsize(binary)} bytes, run {how})")
    print(f"init (exec -> first /next), {runs} runs: median {statistics.median(ms):.1f} ms, "
          f"p90 {ms[int(0.9 * (runs - 1))]:.1f} ms, min {ms[0]:.1f} ms")
    cpu = sorted(s[3] for s in samples)
    print(f"CPU time until then (all threads): median {statistics.median(cpu):.1f} ms, "
          f"min {cpu[0]:.1f} ms")
    print(f"RSS at end of init: median VmRSS {statistics.median(s[1] for s in samples):.0f} KiB, "
          f"median VmHWM {statistics.median(s[2] for s in samples):.0f} KiB "
          f"(max VmHWM {max(s[2] for s in samples)} KiB)")


if __name__ == "__main__":
    main()
