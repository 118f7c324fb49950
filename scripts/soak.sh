#!/usr/bin/env bash
# The soak (docs/HARDENING.md): the bridge under mixed traffic for MINUTES (default 60) on a
# private ActiveMQ that is restarted every five minutes, with the bridge killed (SIGKILL) twice;
# every message is accounted for at the end, and the bridge's RSS and descriptors are sampled.
#   scripts/soak.sh [MINUTES] [soak arguments, e.g. --rate 100 --restart-every 300 --kills 2]
# The private broker (state /var/lib/stomp-agent-bridge/soak, STOMP on 61653, clear of Artemis on 61633) starts with empty
# data and is stopped at the end; the brokers of scripts/brokers.sh are not touched.
# SOAK_PROFILE=dev uses the debug build (CI's five-minute form); the default is release.
# SOAK_BIN_DIR=DIR runs the soak and bridge binaries already built in DIR instead of building
# them here, and SOAK_BRIDGE_BIN=PATH another bridge binary (scripts/test.sh: the soak tool of its
# one debug build against the release binary it built for the image).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

minutes=${1:-60}
shift || true
profile=${SOAK_PROFILE:-release}
# SOAK_BROKER=artemis soaks on a private Artemis instead (state .../soak-artemis, STOMP on 61663
# and the three ports after it).
broker=${SOAK_BROKER:-activemq}
case "$broker" in
  activemq)
    export SAB_BROKER_STATE=${SAB_SOAK_STATE:-/var/lib/stomp-agent-bridge/soak}
    export SAB_ACTIVEMQ_PORT=${SAB_SOAK_PORT:-61653} ;;
  artemis)
    export SAB_BROKER_STATE=${SAB_SOAK_STATE:-/var/lib/stomp-agent-bridge/soak-artemis}
    export SAB_ARTEMIS_PORT=${SAB_SOAK_PORT:-61663} ;;
  *) echo "soak.sh: SOAK_BROKER is activemq or artemis" >&2; exit 2 ;;
esac

dir=${SOAK_BIN_DIR:-}
if [ -z "$dir" ]; then
  cargo build --locked --profile "$profile" -p bridge-tools --bin soak
  cargo build --locked --profile "$profile" -p stomp-agent-bridge --bin stomp-agent-bridge
  dir=target/$([ "$profile" = dev ] && echo debug || echo "$profile")
fi
trap 'scripts/brokers.sh stop "$broker"' EXIT
scripts/brokers.sh start --fresh "$broker"
"$dir/soak" --minutes "$minutes" --bridge "${SOAK_BRIDGE_BIN:-$dir/stomp-agent-bridge}" --broker "$broker" "$@"
