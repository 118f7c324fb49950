#!/usr/bin/env bash
# The whole test suite, as CI runs it: starts the real brokers (installing them from Debian's
# packages if needed), sets up the Python virtualenv of the interop tests, then lints and runs
# every test with cargo-nextest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/brokers.sh start
scripts/python-env.sh
command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo nextest run --locked --lib --bins --tests "$@"
# The README's walkthrough, so that it cannot rot.
scripts/walkthrough.sh
