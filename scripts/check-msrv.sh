#!/usr/bin/env bash
# The MSRV (Cargo.toml's rust-version), checked as far as one toolchain can: it must be at
# least every locked dependency's own rust-version (dev-dependencies included: the tests and
# benchmarks are part of what this repository builds), and this machine's rustc must be at
# least the MSRV. Older toolchains cannot be installed here, so the code itself is not built
# with the MSRV: features newer than it would only be caught by the first older rustc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

metadata=$(mktemp)
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --locked --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" >"$metadata"
rustc_version=$(rustc --version | awk '{print $2}')
python3 - "$metadata" "$rustc_version" <<'PY'
import json, sys

def version(text):
    # "1.88" and "1.88.0" are the same version: compared as three numbers.
    parts = [int(part) for part in text.split("-")[0].split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

meta = json.load(open(sys.argv[1]))
root = next(p for p in meta["packages"] if p["id"] == meta["resolve"]["root"])
msrv = root.get("rust_version")
if not msrv:
    sys.exit("check-msrv: Cargo.toml has no rust-version")
needs = max(
    ((version(p["rust_version"]), f'{p["name"]} {p["version"]}') for p in meta["packages"]
     if p.get("rust_version") and p["id"] != root["id"]),
    default=((0,), "nothing"),
)
problems = []
if needs[0] > version(msrv):
    problems.append(f"rust-version {msrv} is below what {needs[1]} declares ({'.'.join(map(str, needs[0]))})")
if version(sys.argv[2]) < version(msrv):
    problems.append(f"rustc {sys.argv[2]} is older than rust-version {msrv}")
if problems:
    sys.exit("check-msrv: " + "; ".join(problems))
print(f"check-msrv: rust-version {msrv} covers every locked dependency (highest: {needs[1]}); rustc {sys.argv[2]}")
PY
