#!/usr/bin/env python3
"""Turns scripts/bench.sh's raw results into BENCHMARKS.md's regenerated section.

    scripts/bench-report.py OUT_DIR RUNS SECONDS        prints the section (Markdown)
    scripts/bench-report.py --replace BENCHMARKS.md SECTION_FILE
        replaces the text between the `bench.sh:begin` and `bench.sh:end` markers

Every figure is the median over the runs of that case. Standard library only.
"""

import datetime
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys

BEGIN = "<!-- bench.sh:begin -->"
END = "<!-- bench.sh:end -->"

SERVE_CASES = [
    ("c1", "1, new connection per turn"),
    ("c100", "100, new connection per turn"),
    ("c100-keepalive", "100, keep-alive"),
    ("c1000", "1,000, new connection per turn"),
    ("burst1000", "1,000 at once, one turn each (burst)"),
]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, digits=2):
    if x is None:
        return "–"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.{digits}f}"
    return f"{int(x):,}"


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        rustc = "rustc unknown"
    return model, os.cpu_count(), platform.release(), rustc


def serve_rows(out):
    rows = []
    for name, label in SERVE_CASES:
        files = sorted(
            p
            for p in glob.glob(os.path.join(out, f"serve-{name}-*.json"))
            if re.fullmatch(rf"serve-{re.escape(name)}-\d+\.json", os.path.basename(p))
        )
        runs = [json.load(open(p)) for p in files]
        if not runs:
            continue
        cmd = open(os.path.join(out, f"serve-{name}.cmd")).read().strip()

        def m(get):
            vals = []
            for r in runs:
                try:
                    vals.append(get(r))
                except (KeyError, TypeError):
                    vals.append(None)
            return median(vals)

        errors = [r["errors"] for r in runs]
        rows.append(
            "| {label} | {tps} | {ff50} / {ff99} / {ffmax} | {fc50} / {fc99} | {wt50} / {wt99} | {cpu} | {rss} | {ovf} | {err} | {client} | `{cmd}` |".format(
                label=label,
                tps=fmt(m(lambda r: r["turns_per_s"]), 0),
                ff50=fmt(m(lambda r: r["first_frame_ms"]["p50"])),
                ff99=fmt(m(lambda r: r["first_frame_ms"]["p99"])),
                ffmax=fmt(m(lambda r: r["first_frame_ms"]["max"])),
                fc50=fmt(m(lambda r: r["first_frame_after_connect_ms"]["p50"])),
                fc99=fmt(m(lambda r: r["first_frame_after_connect_ms"]["p99"])),
                wt50=fmt(m(lambda r: r["whole_turn_ms"]["p50"])),
                wt99=fmt(m(lambda r: r["whole_turn_ms"]["p99"])),
                cpu=fmt(m(lambda r: r["server"]["cpu_ms_per_turn"]), 3),
                rss=fmt(m(lambda r: r["server"]["peak_rss_kib"] / 1024), 1),
                ovf=fmt(m(lambda r: r["listen_overflows"]), 0),
                err="/".join(str(e) for e in errors),
                client=fmt(m(lambda r: r["client_cpu_ms_per_turn"]), 3),
                cmd=cmd,
            )
        )
    return rows


def criterion_throughputs(out):
    """Bytes per iteration of the benches that declare a throughput, by bench name, read from
    criterion's own records ($CARGO_TARGET_DIR/criterion/**/new/benchmark.json)."""
    found = {}
    root = os.path.join(os.path.dirname(os.path.abspath(out)), "criterion")
    for dirpath, _, files in os.walk(root):
        if os.path.basename(dirpath) != "new" or "benchmark.json" not in files:
            continue
        try:
            meta = json.load(open(os.path.join(dirpath, "benchmark.json")))
        except (OSError, ValueError):
            continue
        bytes_ = (meta.get("throughput") or {}).get("Bytes")
        if bytes_:
            found[meta.get("full_id") or meta.get("title")] = bytes_
    return found


def criterion_rows(out):
    path = os.path.join(out, "criterion.txt")
    rows = []
    if not os.path.exists(path):
        return rows
    throughputs = criterion_throughputs(out)
    for line in open(path):
        m = re.match(r"test (.+?) \.\.\. bench:\s+([\d,]+) ns/iter \(\+/- ([\d,]+)\)", line)
        if m:
            ns = int(m.group(2).replace(",", ""))
            spread = int(m.group(3).replace(",", "")) / 1000
            rate = ""
            if m.group(1) in throughputs and ns > 0:
                rate = f"{throughputs[m.group(1)] / (ns / 1e9) / 1e6:,.0f} MB/s of SSE"
            rows.append(f"| {m.group(1)} | {ns / 1000:,.1f} µs | ± {spread:,.1f} µs | {rate} |")
    return rows


def section(out, runs, seconds):
    model, cpus, kernel, rustc = machine()
    load_start = open(os.path.join(out, "loadavg-start")).read().split()[:3]
    load_end = open(os.path.join(out, "loadavg-end")).read().split()[:3]
    date_path = os.path.join(out, "date")
    if os.path.exists(date_path):
        now = open(date_path).read().strip()
    else:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        BEGIN,
        "## Regenerated by `scripts/bench.sh`",
        "",
        f"Taken {now} by `scripts/bench.sh --runs {runs}` in {seconds} s: {cpus} CPUs ({model}), "
        f"Linux {kernel}, {rustc}; load average {' '.join(load_start)} at the start, "
        f"{' '.join(load_end)} at the end. Each figure is the median of {runs} runs.",
        "",
        "### `runway serve` (demo agent, profile `fast`, loopback)",
        "",
        "A fresh server and database per run, default logging (`RUNWAY_LOG=info`). Server CPU is "
        "its utime+stime from `/proc/PID/stat` around the run divided by the turns; peak RSS is its "
        "`VmHWM`; listen overflows are the system's `TcpExtListenOverflows` during the run; times "
        "are from before `connect` at the client (\"after connect\": from the connection being ready, "
        "the server's part without the SYN queue and the client's own scheduling). The load tool (`cargo build --profile fast -p "
        "runway-e2e --bin load`) runs on the same two cores.",
        "",
        "| concurrency | turns/s | first frame p50 / p99 / max (ms) | first frame after connect p50 / p99 (ms) | whole turn p50 / p99 (ms) | server CPU per turn (ms) | server peak RSS (MiB) | listen overflows | errors (each run) | load tool CPU per turn (ms) | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *serve_rows(out),
        "",
    ]
    crit = criterion_rows(out)
    if crit:
        lines += [
            "### Core in process (criterion, profile `bench`)",
            "",
            "criterion's own estimate from one run of each bench (not a median of runs).",
            "",
            "`cargo bench -p runway-core --bench '*' -- --output-format bencher --warm-up-time 1 --measurement-time 3`",
            "",
            "| bench | time | spread | throughput |",
            "|---|---|---|---|",
            *crit,
            "",
        ]
    wasm_path = os.path.join(out, "wasm.json")
    if os.path.exists(wasm_path) and os.path.getsize(wasm_path) > 0:
        w = json.load(open(wasm_path))
        lines += [
            "### The core on wasm32 (the Worker's own CPU per turn)",
            "",
            f"`scripts/wasm-turn-cost.sh 2000 20 {runs}`: runway-wasm-bench built like the Worker "
            "(profile `release`, opt-level z, wasm-bindgen, wasm-opt -O), the demo agent (the model "
            "agent for the model turn) and the in-memory store, whole turns to the end of the "
            f"stream, under Node {w['node']}.",
            "",
            "| turn | CPU per turn (median) | SSE bytes per turn |",
            "|---|---|---|",
            f"| plain (`Hello`, fresh thread; {w['plain']['turns_per_run']} turns per run) | **{w['plain']['cpu_us_per_turn_median']:,.1f} µs** | {w['plain']['sse_bytes_per_turn']:,} |",
            f"| 1 MiB answer (`/long 1048576`; {w['long_1mib']['turns_per_run']} turns per run) | **{w['long_1mib']['cpu_us_per_turn_median'] / 1000:,.2f} ms** | {w['long_1mib']['sse_bytes_per_turn']:,} |",
        ]
        model = w.get("model_tool_call_500_tokens")
        if model:
            lines.append(
                f"| model turn (the model agent: a tool call, its result, a 500-token streamed answer, usage recorded; scripted model and tool in process; {model['turns_per_run']} turns per run) | **{model['cpu_us_per_turn_median'] / 1000:,.2f} ms** | {model['sse_bytes_per_turn']:,} |"
            )
        lines += [
            "",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def replace(doc_path, section_path):
    doc = open(doc_path).read()
    new = open(section_path).read().rstrip("\n")
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc = head + new + tail
    else:
        doc = doc.rstrip("\n") + "\n\n" + new + "\n"
    open(doc_path, "w").write(doc)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--replace":
        replace(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4:
        sys.stdout.write(section(sys.argv[1], sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
