#!/usr/bin/env bash
# The README's five-minute walkthrough, end to end: ActiveMQ, the bridge with
# config/bridge.toml, a Civitas agent (examples/civitas_weather_agent.py), and a Wise Agents
# agent (examples/ask_weather.py) that asks it and prints the answer; then the same through the
# adapters, to a Civitas agency, a PenguiFlow flow and a VOX agent (examples/*). scripts/test.sh
# runs it, so it cannot rot. BRIDGE_BIN picks the binary (default: a debug build).
#   scripts/walkthrough.sh [artemis]: the same on ActiveMQ Artemis with config/artemis.toml
#   (mirror mode included), as `scripts/run.sh --artemis` runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
broker=${1:-activemq}
config=config/bridge.toml
if [ "$broker" = artemis ]; then
  config=config/artemis.toml
  export STOMP_PORT=${SAB_ARTEMIS_PORT:-61633} SAB_STOMP_PORT=${SAB_ARTEMIS_PORT:-61633}
  export BRIDGE__BROKER__URL=stomp://127.0.0.1:$STOMP_PORT
fi
scripts/brokers.sh start "$broker"
scripts/python-env.sh
if [ -z "${BRIDGE_BIN:-}" ]; then
  cargo build --locked --quiet
  BRIDGE_BIN=target/debug/stomp-agent-bridge
fi
log=$(mktemp)
"$BRIDGE_BIN" run --config "$config" --log-format text 2>"$log" &
bridge=$!
trap 'kill $bridge 2>/dev/null || true; rm -f "$log"' EXIT

ready() { # GET /readyz answers 200
  exec 3<>/dev/tcp/127.0.0.1/9464 || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  head -n 1 <&3 | grep -q ' 200 '
}
for _ in $(seq 1 150); do ready 2>/dev/null && break; sleep 0.2; done
ready || { echo "the bridge did not become ready:"; cat "$log"; exit 1; }
echo "[walkthrough] bridge ready ($broker, $config)"

.venv/bin/python examples/civitas_weather_agent.py --count 1000 &
agent=$!
.venv/bin/python examples/ask_weather.py "What is the weather in Paris?"
kill $agent 2>/dev/null || true

# The same question to agents written as each framework writes them, on the adapters
# (docs/CIVITAS.md, docs/PENGUIFLOW.md, docs/VOX.md).
for pair in civitas_agency.py:WeatherAgent penguiflow_planner.py:Planner vox_ops.py:Ops; do
  script=${pair%%:*} name=${pair##*:}
  out=$(mktemp)
  .venv/bin/python "examples/$script" --seconds 60 >"$out" 2>&1 &
  agent=$!
  for _ in $(seq 1 100); do grep -q listening "$out" && break; sleep 0.2; done
  grep -q listening "$out" || { echo "examples/$script did not start:"; cat "$out"; exit 1; }
  .venv/bin/python examples/ask_weather.py --to "$name" "What is the plan?" | tail -n 1
  kill $agent 2>/dev/null || true
  wait $agent 2>/dev/null || true
  rm -f "$out"
done
# What the bridge counted (a delivered message is a debug log line, a counter always).
exec 3<>/dev/tcp/127.0.0.1/9464
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep '^bridge_messages_total' <&3 | sed 's/^/[bridge] /'
exec 3<&-
kill -TERM $bridge
wait $bridge
echo "[walkthrough] done ($broker)"
