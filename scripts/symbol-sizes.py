#!/usr/bin/env python3
"""Where a binary's bytes are: its symbols' sizes (llvm-nm) summed per crate, and the largest.

    scripts/symbol-sizes.py BINARY [--top N] [--crate NAME]

BINARY must keep its symbol table: for the Lambda `bootstrap`, build it as the deploy tools do
but unstripped (`cargo lambda build --release --arm64 --disable-optimizations`: the workspace's
release profile sets everything else cargo-lambda would; BENCHMARKS.md, "AWS Lambda"). Each
symbol counts for the crate its demangled path starts with (`<aws_sdk_dynamodb::X as
core::fmt::Debug>::fmt` is aws_sdk_dynamodb's); a generic function of the standard library
counts for the crate of its first type argument outside std (`core::ptr::drop_in_place<
hyper::…>` is hyper's), as cargo-bloat's "std" would hide it. Symbols that are not Rust (ring's
C and assembly, libc's) count by prefix. Sizes are of code and data before compression: the
gzip share of each crate is about the same fraction of the package's gzip size.
"""

import argparse
import collections
import re
import shutil
import subprocess
import sys

STD = {"core", "alloc", "std", "compiler_builtins", "hashbrown", "std_detect", "panic_unwind"}
# The first segment of each path in a demangled name: at its start, or after `<`, a space, `&`,
# `(`, `,`, `*` or `[`.
PATH_START = re.compile(r"(?:^|[<\s&(,*\[])([A-Za-z_][A-Za-z0-9_]*)::")
# What llvm-nm leaves of Rust's legacy mangling inside a name.
ESCAPES = {
    "$LT$": "<", "$GT$": ">", "$u20$": " ", "$C$": ",", "$RF$": "&", "$BP$": "*",
    "$u7b$": "{", "$u7d$": "}", "$LP$": "(", "$RP$": ")", "$u27$": "'", "$u5b$": "[",
    "$u5d$": "]", "$u7e$": "~", "$u3b$": ";", "$u2b$": "+", "$u22$": '"', "$SP$": "@",
}


def readable(name: str) -> str:
    for k, v in ESCAPES.items():
        name = name.replace(k, v)
    name = name.replace("..", "::")
    return name[1:] if name.startswith("_<") else name


def owner(name: str) -> str:
    if name.startswith("ring_core_") or name.startswith("ring_"):
        return "ring (C/asm)"
    crates = [m.group(1) for m in PATH_START.finditer(name)]
    if not crates:
        return "(not Rust: libc, C, data)"
    outside = [c for c in crates if c not in STD]
    return outside[0] if outside else "std (core, alloc)"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--crate", help="list the largest symbols of this crate only")
    args = parser.parse_args()
    nm = shutil.which("llvm-nm") or "nm"
    out = subprocess.run(
        [nm, "--print-size", "--size-sort", "--demangle", args.binary],
        check=True, capture_output=True, text=True,
    ).stdout
    per_crate = collections.Counter()
    symbols = []
    for line in out.splitlines():
        m = re.match(r"^[0-9a-fA-F]+ ([0-9a-fA-F]+) (\S) (.*)$", line)
        if not m:
            continue
        size, kind, name = int(m.group(1), 16), m.group(2), m.group(3)
        # Demangled legacy names end with a hash (`::h0123…`); drop it.
        name = readable(re.sub(r"::h[0-9a-f]{16}$", "", name))
        crate = owner(name)
        per_crate[crate] += size
        symbols.append((size, kind, crate, name))
    total = sum(per_crate.values())
    if args.crate:
        picked = [s for s in symbols if s[2] == args.crate]
        print(f"{args.crate}: {per_crate[args.crate]:,} bytes in {len(picked)} symbols")
        for size, kind, _, name in sorted(picked, reverse=True)[: args.top]:
            print(f"{size:>9,}  {kind}  {name[:150]}")
        return 0
    print(f"symbols: {total:,} bytes in {len(symbols)} symbols")
    print(f"{'bytes':>11}  {'share':>6}  crate")
    for crate, size in per_crate.most_common(args.top):
        print(f"{size:>11,}  {100 * size / total:5.1f}%  {crate}")
    print(f"\nlargest {args.top} symbols:")
    for size, kind, crate, name in sorted(symbols, reverse=True)[: args.top]:
        print(f"{size:>9,}  {kind}  [{crate}] {name[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
