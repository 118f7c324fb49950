#!/usr/bin/env bash
# The whole test suite, as CI runs it: starts the real brokers (ActiveMQ Classic and RabbitMQ
# from Debian's packages, ActiveMQ Artemis from Maven Central, installed if needed; a broker it
# starts begins with empty data, one already running is reused), sets up the Python virtualenv
# of the interop tests, then lints (rustfmt, clippy; ruff and mypy on the adapters) and runs every
# test with cargo-nextest, then the adapters' pytest suites.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What the machine must have, installed where it can be; what cannot be had is said loudly
# (a SKIPPED line on stderr) and the run goes on without it, except for what every test needs.
skipped=()
skip() { printf '\n[test.sh] SKIPPED: %s\n\n' "$*" >&2; skipped+=("$*"); }
for tool in rustfmt clippy; do
  cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$tool" >&2 || true
done
command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked
command -v python3 >/dev/null || { echo "[test.sh] python3 (3.11+) is needed for the interop tests" >&2; exit 1; }
scripts/check-msrv.sh
scripts/brokers.sh start --fresh
# The Wise Agents registry's Redis (tests/wise_registry.rs, adapters/wiseagents): scripts/redis.sh
# (Debian's redis-server on 127.0.0.1:${SAB_REDIS_PORT:-6379}).
scripts/redis.sh start --fresh
scripts/python-env.sh
# The adapters' Python (adapters/pyproject.toml): ruff's lints, and mypy, strict on the packages
# and the tests' helpers, and over the tests; the versions are scripts/python-env.sh's pins. A
# finding fails the run.
"${SAB_VENV:-.venv}/bin/ruff" check adapters
"${SAB_VENV:-.venv}/bin/mypy" --config-file adapters/pyproject.toml
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --all -- --check; else skip "rustfmt is not installed: formatting not checked"; fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --workspace --all-targets --locked -- -D warnings
else
  skip "clippy is not installed: lints not checked"
fi
cargo nextest run --locked --workspace --lib --bins --tests "$@"
# The framework adapters (adapters/): pytest, end to end through the bridge binary built above
# against ActiveMQ Classic, RabbitMQ and Artemis. A failure fails the run; so does collecting no test (pytest's exit 5).
cargo build --locked --bin stomp-agent-bridge
status=0
"${SAB_VENV:-.venv}/bin/python" -m pytest adapters -q -p no:cacheprovider || status=$?
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no adapter test" >&2; fi
if [ "$status" -ne 0 ]; then exit "$status"; fi
# A short smoke of the load tool (docs/PERFORMANCE.md) on the three brokers: it must run through;
# its figures are not judged here (speed is measured in benchmarks, not tests).
cargo build --locked -p bridge-tools --bin loadgen
for broker in activemq rabbitmq artemis; do
  target/debug/loadgen --broker "$broker" --messages 300 --backlog 600 | tail -n 1
done
# The README's walkthrough, so that it cannot rot; and the same on Artemis with
# config/artemis.toml (what `scripts/run.sh --artemis` runs).
scripts/walkthrough.sh
scripts/walkthrough.sh artemis
# The container image and the compose stack (Dockerfile, docker-compose.yml), built and run with
# podman (the base images cached in /var/lib/stomp-agent-bridge/container; the image's release
# build is the longest part): docs/CONTAINERS.md.
scripts/container-test.sh
# The soak's five-minute form (docs/HARDENING.md; the hour is `scripts/soak.sh 60`): a private
# ActiveMQ restarted twice, the bridge killed twice; it fails if a message is unaccounted for,
# a well-formed one is dead-lettered, or the bridge's descriptors grow.
SOAK_PROFILE=dev scripts/soak.sh 5 --restart-every 100 --kills 2
# Its short form on a private Artemis (61663): two minutes, a restart, a kill -9.
SOAK_BROKER=artemis SOAK_PROFILE=dev scripts/soak.sh 2 --restart-every 50 --kills 1
if [ "${#skipped[@]}" -gt 0 ]; then
  printf '[test.sh] SKIPPED in this run:\n' >&2
  printf '[test.sh]   %s\n' "${skipped[@]}" >&2
fi
