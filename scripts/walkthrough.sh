#!/usr/bin/env bash
# The README's five-minute walkthrough, end to end: ActiveMQ, the bridge with
# config/bridge.toml, a Civitas agent (examples/civitas_weather_agent.py), and a Wise Agents
# agent (examples/ask_weather.py) that asks it and prints the answer. scripts/test.sh runs it,
# so it cannot rot. BRIDGE_BIN picks the binary (default: a debug build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/brokers.sh start activemq
scripts/python-env.sh
if [ -z "${BRIDGE_BIN:-}" ]; then
  cargo build --locked --quiet
  BRIDGE_BIN=target/debug/stomp-agent-bridge
fi
log=$(mktemp)
"$BRIDGE_BIN" run --config config/bridge.toml --log-format text 2>"$log" &
bridge=$!
trap 'kill $bridge 2>/dev/null || true; rm -f "$log"' EXIT

ready() { # GET /readyz answers 200
  exec 3<>/dev/tcp/127.0.0.1/9464 || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  head -n 1 <&3 | grep -q ' 200 '
}
for _ in $(seq 1 150); do ready 2>/dev/null && break; sleep 0.2; done
ready || { echo "the bridge did not become ready:"; cat "$log"; exit 1; }
echo "[walkthrough] bridge ready"

.venv/bin/python examples/civitas_weather_agent.py --count 1000 &
agent=$!
.venv/bin/python examples/ask_weather.py "What is the weather in Paris?"
kill $agent 2>/dev/null || true
kill -TERM $bridge
wait $bridge
grep -E 'message delivered' "$log" | sed 's/^/[bridge] /'
echo "[walkthrough] done"
