#!/usr/bin/env bash
# Runs the bridge against a real broker: builds it (release), and unless BRIDGE__BROKER__URL
# names another broker, installs and starts ActiveMQ Classic from Debian's packages first
# (scripts/brokers.sh). The config defaults to config/bridge.toml; any key can be overridden
# with BRIDGE__<SECTION>__<KEY> environment variables.
#   scripts/run.sh [CONFIG]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
config=${1:-config/bridge.toml}
if [ -z "${BRIDGE__BROKER__URL:-}" ]; then
  scripts/brokers.sh start activemq
fi
cargo build --release --locked --quiet
exec target/release/stomp-agent-bridge run --config "$config"
