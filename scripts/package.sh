#!/usr/bin/env bash
# Packages every crate of the workspace as `cargo publish` would (`cargo package --workspace`:
# the path dependencies between them resolved through a local registry), then checks what
# `--no-verify` leaves unchecked: every file a packaged source embeds (`include_str!`,
# `include_bytes!`, `include!`, `#[path = ...]`; unit-test modules, `tests.rs`, aside) is
# inside its package. Verifying by building
# each package would rebuild every dependency (over 10 minutes on 2 cores); embedded files
# outside the package are the one way a crate that builds here fails to build from its package.
#
#   scripts/package.sh
#
# Uses $CARGO_TARGET_DIR if set (the .crate files go to its package/ directory).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
# A previous run's .crate files must not hide a crate that no longer packages.
rm -f "$target"/package/*.crate
# Tests and benches stay in the repository: cargo's notes that it leaves them out are dropped.
cargo package --workspace --no-verify --locked 2>&1 \
  | { grep -v "^warning: ignoring \(test\|benchmark\) " || true; } >&2
python3 - "$target/package" <<'PY'
import pathlib, posixpath, re, sys, tarfile

embeds = re.compile(r'(?:include_str|include_bytes|include)!\(\s*"([^"]+)"\s*\)|#\[path\s*=\s*"([^"]+)"\]')
crates = sorted(pathlib.Path(sys.argv[1]).glob("*.crate"))
if not crates:
    sys.exit("package: no .crate file was written")
problems = []
for crate in crates:
    with tarfile.open(crate) as tar:
        names = {m.name for m in tar.getmembers()}
        for member in tar.getmembers():
            # Unit-test modules (`tests.rs`, `#[cfg(test)]`) may share fixtures with the
            # repository's own tests: a packaged crate builds without them.
            if not member.name.endswith(".rs") or posixpath.basename(member.name) == "tests.rs":
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            # Doctest-only embeds (`#[cfg(doctest)]`) are checked too: `cargo test --doc` on
            # the package needs them as well.
            for m in embeds.finditer(text):
                rel = m.group(1) or m.group(2)
                # Both resolve against the directory of the file that names them (a `#[path]` on
                # a module outside an inline `mod` block does too).
                base = posixpath.dirname(member.name)
                path = posixpath.normpath(posixpath.join(base, rel))
                if path not in names:
                    problems.append(f"{crate.name}: {member.name} embeds {rel!r}, not in the package")
    print(f"package: {crate.name} ({crate.stat().st_size // 1024} KiB, {len(names)} files)")
if problems:
    sys.exit("\n".join(problems))
print(f"package: {len(crates)} crates packaged, every embedded file inside its package")
PY
