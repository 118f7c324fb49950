#!/usr/bin/env bash
# Runs the bridge against a real broker: builds it (release), and unless BRIDGE__BROKER__URL
# names another broker, installs and starts a local one first (scripts/brokers.sh): ActiveMQ
# Classic with config/bridge.toml, or with --artemis ActiveMQ Artemis (STOMP on
# 127.0.0.1:61633, from the broker.xml docker-compose.yml mounts) with config/artemis.toml.
# Any key can be overridden with BRIDGE__<SECTION>__<KEY> environment variables.
#   scripts/run.sh [--artemis] [CONFIG]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
broker=activemq
if [ "${1:-}" = --artemis ]; then broker=artemis; shift; fi
default_config=config/bridge.toml
[ "$broker" = artemis ] && default_config=config/artemis.toml
config=${1:-$default_config}
if [ -z "${BRIDGE__BROKER__URL:-}" ]; then
  scripts/brokers.sh start "$broker"
  # config/artemis.toml names the compose service (artemis:61613); the local one listens here.
  if [ "$broker" = artemis ]; then export BRIDGE__BROKER__URL=stomp://127.0.0.1:${SAB_ARTEMIS_PORT:-61633}; fi
fi
cargo build --release --locked --quiet
exec target/release/stomp-agent-bridge run --config "$config"
