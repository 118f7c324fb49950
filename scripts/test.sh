#!/usr/bin/env bash
# The whole test suite, as CI runs it: starts the real brokers (ActiveMQ Classic and RabbitMQ
# from Debian's packages, ActiveMQ Artemis from Maven Central, installed if needed; a broker it
# starts begins with empty data, one already running is reused), Redis and Jaeger (the trace
# backend, built from its Go module once and cached; restarted empty), sets up the Python
# virtualenv of the interop tests, lints (rustfmt, clippy; ruff and mypy on the Python), runs
# every test with cargo-nextest, the adapters' pytest suites, the load tool's smoke, the
# walkthroughs, the container test and the soaks.
#
# Compiled once: one `cargo build` of the whole workspace, every target, with clippy as the
# compiler of the workspace's own crates (its lints fail the build); nextest, the adapters'
# tests, the load tool and the walkthroughs run what that build made. The only other cargo build
# is the release binary, which the soaks and the image run.
# Side by side: while that build compiles, the brokers, Redis, the browser and the virtualenv
# are set up (awaited before the lints) and Jaeger is built (awaited before pytest, the only
# tests that use it); once it is built, the release binary is built (awaited before the soaks)
# and the image's base images are made while nextest and pytest run.
# Each stage beside the others writes its log to a file, shown when it is joined; a failed stage
# fails the run. The soaks and the container test, which measure what a busy machine would
# disturb, run last, one after the other. Every stage's start and end is logged with the seconds
# since the start.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

started=$SECONDS
say() { printf '[test.sh %4d s] %s\n' "$((SECONDS - started))" "$*" >&2; }
# What the machine must have, installed where it can be; what cannot be had is said loudly
# (a SKIPPED line on stderr) and the run goes on without it, except for what every test needs.
skipped=()
skip() { printf '\n[test.sh] SKIPPED: %s\n\n' "$*" >&2; skipped+=("$*"); }

# Stages beside the foreground: `beside NAME CMD...` starts one, `rejoin NAME` waits for it,
# shows its log and fails the run if it failed.
logs=$(mktemp -d)
declare -A pids
beside() {
  local name=$1
  shift
  say "$name: started beside the rest (log shown when it ends)"
  # A process group of its own (job control on for this one job), so that a failed run can
  # stop the stage with everything it started.
  set -m
  ("$@") >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
  set +m
}
rejoin() {
  local name=$1 status=0
  wait "${pids[$name]}" || status=$?
  sed "s/^/[$name] /" "$logs/$name.log" >&2
  if [ "$status" -ne 0 ]; then
    say "$name: FAILED (exit $status)"
    exit "$status"
  fi
  say "$name: done"
}
# A stage left running when the run fails is stopped with it, and whatever it started.
trap 'for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done' EXIT

for tool in rustfmt clippy; do
  cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$tool" >&2 || true
done
command -v python3 >/dev/null || { echo "[test.sh] python3 (3.11+) is needed for the interop tests" >&2; exit 1; }
services() {
  scripts/brokers.sh start --fresh
  # The Wise Agents registry's Redis (tests/wise_registry.rs, adapters/wiseagents): Debian's
  # redis-server on 127.0.0.1:${SAB_REDIS_PORT:-6379}.
  scripts/redis.sh start --fresh
  # The browser the conversations page is tested in: Debian's headless chromium.
  scripts/browser.sh >/dev/null
  scripts/python-env.sh
  # The second MCP client (adapters/mcp/tests/test_mcp_inspector.py): the MCP Inspector's CLI
  # from the npm registry, in the virtualenv's directory.
  scripts/mcp-inspector.sh >/dev/null
}
# The tests that need Jaeger, Chromium or the MCP Inspector fail without them here, rather than skip.
export SAB_SUITE=1
beside services services
# The trace backend (adapters/testing/jaeger_testing.py): Jaeger v1.75.0 with in-memory storage,
# OTLP on 127.0.0.1:4317/4318, its query API on 16686; built with Go the first time (some 10 minutes
# on a busy 2-core machine). Only the adapters' tests use it: it is awaited before pytest, so that
# its build runs beside the Rust build and nextest, not before them.
beside jaeger scripts/jaeger.sh start --fresh
scripts/check-msrv.sh
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --all -- --check; else skip "rustfmt is not installed: formatting not checked"; fi

# The one build. clippy-driver as the workspace's compiler wrapper is what `cargo clippy` runs,
# with `cargo build` in place of its `cargo check`: the dependencies are compiled once, for real,
# not once more for a check. CLIPPY_ARGS carries `-D warnings` as `cargo clippy -- -D warnings`
# hands it to the driver. nextest's build of the tests runs with the same variables, so that it
# finds everything built (without them cargo would build the workspace's crates again).
linted=()
if cargo clippy --version >/dev/null 2>&1; then
  linted=(RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__)
else
  skip "clippy is not installed: lints not checked"
fi
# Without incremental compilation when there is no incremental cache yet (a fresh machine, as
# CI's): a first build that writes one does more for nothing (241 CPU seconds for the
# workspace's own crates instead of 291). A cache there is kept and used.
if [ ! -d "${CARGO_TARGET_DIR:-target}/debug/incremental" ]; then export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}; fi
say "building the workspace (every target, debug, linted)"
env "${linted[@]}" cargo build --locked --workspace --all-targets
say "built"
# The release binary (the soaks', the image's), beside everything up to the soaks. Started
# beside the debug build instead, on a fresh 2-core machine with two busy loops beside the run,
# it slowed that build by 400 s, which nextest and all after it waited for, and saved less.
beside release cargo build --release --locked --bin stomp-agent-bridge

rejoin services
# The Python (ruff.toml, adapters/pyproject.toml): ruff's formatting of every tracked Python file,
# ruff's lints and mypy (strict on the packages and the tests' helpers, and over the tests) on the
# adapters; the versions are scripts/python-env.sh's pins. A finding fails the run.
"${SAB_VENV:-.venv}/bin/ruff" format --check adapters examples scripts tests tools
"${SAB_VENV:-.venv}/bin/ruff" check adapters
"${SAB_VENV:-.venv}/bin/mypy" --config-file adapters/pyproject.toml

# Beside the tests: the image's base images (Debian's packages and Maven Central, cached in
# /var/lib/stomp-agent-bridge/container).
beside images scripts/container.sh bases

say "nextest"
# cargo-nextest is the virtualenv's (scripts/python-env.sh), the version pinned there.
venv_bin=$(cd "${SAB_VENV:-.venv}/bin" && pwd)
PATH="$venv_bin:$PATH" env "${linted[@]}" cargo nextest run --locked --workspace --lib --bins --tests "$@"
# The framework adapters (adapters/): pytest, end to end through the bridge binary built above
# against ActiveMQ Classic, RabbitMQ and Artemis. A failure fails the run; so does collecting no
# test (pytest's exit 5).
rejoin jaeger
say "pytest"
status=0
"${SAB_VENV:-.venv}/bin/python" -m pytest adapters -q -p no:cacheprovider || status=$?
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no adapter test" >&2; fi
if [ "$status" -ne 0 ]; then exit "$status"; fi
# A short smoke of the load tool (docs/PERFORMANCE.md) on the three brokers: it must run through;
# its figures are not judged here (speed is measured in benchmarks, not tests).
say "loadgen smoke"
for broker in activemq rabbitmq artemis; do
  target/debug/loadgen --broker "$broker" --messages 300 --backlog 600 | tail -n 1
done
# The README's walkthrough, so that it cannot rot; and the same on Artemis with
# config/artemis.toml (what `scripts/run.sh --artemis` runs).
say "walkthroughs"
BRIDGE_BIN=target/debug/stomp-agent-bridge scripts/walkthrough.sh
BRIDGE_BIN=target/debug/stomp-agent-bridge scripts/walkthrough.sh artemis
rejoin release
# The soak's five-minute form (docs/HARDENING.md; the hour is `scripts/soak.sh 60`) with the
# release binary: a private ActiveMQ (61653) restarted twice, the bridge killed twice; it fails if
# a message is unaccounted for, a well-formed one is dead-lettered, or the bridge's descriptors or
# live heap grow. Then its short form on a private Artemis (61663): two minutes, a restart, a
# kill -9. (A debug bridge beside the rest of the run fell behind its 100 msg/s on a busy
# machine, and its backlog read as a growing heap.)
say "soaks"
export SOAK_BIN_DIR=target/debug SOAK_BRIDGE_BIN=target/release/stomp-agent-bridge
scripts/soak.sh 5 --restart-every 100 --kills 2
SOAK_BROKER=artemis scripts/soak.sh 2 --restart-every 50 --kills 1
rejoin images
# The container image and the compose stack (Dockerfile, docker-compose.yml), built from that
# release binary and run with podman on ports of their own (docs/CONTAINERS.md).
say "container test"
scripts/container-test.sh
trap - EXIT
if [ "${#skipped[@]}" -gt 0 ]; then
  printf '[test.sh] SKIPPED in this run:\n' >&2
  printf '[test.sh]   %s\n' "${skipped[@]}" >&2
fi
say "passed"
