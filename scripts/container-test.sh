#!/usr/bin/env bash
# The container image and the compose stack, built and run here with podman (scripts/container.sh;
# scripts/test.sh runs this, so that they cannot rot). Root; installs what it needs.
# - The image: built from the Dockerfile, BUILD=host path (the release binary built here, on the
#   local distroless-equivalent base); at most 32 MB (docs/CONTAINERS.md); user 65532; no shell in it; `validate`
#   answers; its HEALTHCHECK command fails while no bridge listens.
# - The stack of docker-compose.yml, unchanged, under podman-compose with the local Artemis
#   and Redis images, on ports of its own (127.0.0.1: STOMP 61643, all protocols 61646, console
#   8171, Redis 6389, bridge 9474), Artemis's password random and the bridge's config a copy of
#   config/artemis.toml with passcode_file = the compose secret, mounted read-only: the bridge
#   runs as 65532 on a read-only root file system, HEALTHCHECK healthy, the registry in Redis;
#   the README's ask (examples/ask_weather.py on the host asks the Civitas agent) answered through
#   the containerised bridge and Artemis; `stop` (SIGTERM) while requests are in flight: the
#   bridge exits 0 within the grace period, every request either translated or still queued,
#   none lost, repeated or dead-lettered; started again, the time to ready.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
c=scripts/container.sh
started=$SECONDS
say() { printf '[container-test] %s\n' "$*"; }
fail() { printf '[container-test] FAILED: %s\n' "$*" >&2; exit 1; }
podman() { "$c" podman "$@"; }

export COMPOSE_PROJECT_NAME=sab-container-test PUBLISH_ADDRESS=127.0.0.1
export ARTEMIS_STOMP_PORT=${SAB_CONTAINER_STOMP_PORT:-61643} ARTEMIS_PORT=${SAB_CONTAINER_ALL_PORT:-61646}
export ARTEMIS_CONSOLE_PORT=${SAB_CONTAINER_CONSOLE_PORT:-8171} REDIS_PORT=${SAB_CONTAINER_REDIS_PORT:-6389}
export BRIDGE_HTTP_PORT=${SAB_CONTAINER_HTTP_PORT:-9474}
# Artemis blocks producers once the disk is fuller than max-disk-usage (90%), counted over the
# whole shared disk (scripts/brokers/artemis.properties): here, only when it is full.
export ARTEMIS_JAVA_ARGS_APPEND=-Dbrokerconfig.maxDiskUsage=100
bridge_ctr=${COMPOSE_PROJECT_NAME}_bridge_1
redis_ctr=${COMPOSE_PROJECT_NAME}_redis_1
artemis_ctr=${COMPOSE_PROJECT_NAME}_artemis_1
image=localhost/stomp-agent-bridge:local

# What the machine needs, then the local base images (cached) and the bridge's image.
t=$SECONDS
"$c" install
scripts/python-env.sh
"$c" bases
say "base images ready in $((SECONDS - t)) s"
t=$SECONDS
"$c" build
say "image built in $((SECONDS - t)) s (Dockerfile BUILD=host)"

# The image alone.
size=$(podman image inspect --format '{{.Size}}' "$image")
say "image $image: $size bytes ($((size / 1000000)) MB)"
[ "$size" -le 32000000 ] || fail "the image is over 32 MB"
user=$(podman image inspect --format '{{.Config.User}}' "$image")
[ "$user" = 65532:65532 ] || fail "the image's user is '$user', not 65532:65532"
grep -q 'stomp-agent-bridge","health"' <<<"$(podman image inspect --format '{{json .Config.Healthcheck}}' "$image")" \
  || fail "the image has no HEALTHCHECK running stomp-agent-bridge health"
if podman run --rm --no-healthcheck --entrypoint /bin/sh "$image" -c true >/dev/null 2>&1; then
  fail "the image has a shell"
fi
podman run --rm --no-healthcheck --read-only "$image" validate --config /etc/stomp-agent-bridge/bridge.toml
if podman run --rm --no-healthcheck --network none "$image" health --config /etc/stomp-agent-bridge/bridge.toml; then
  fail "the health command answered 0 with no bridge running"
fi
say "image: non-root (65532), no shell, validate answers, health fails with no bridge"

# The stack.
work=$(mktemp -d)
cleanup() {
  "$c" compose down -v -t 20 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$c" compose down -v >/dev/null 2>&1 || true # a stack left by an interrupted run
password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$password" >"$work/passcode"
sed 's|^passcode = .*|passcode_file = "/run/secrets/broker_passcode"   # the compose secret|' \
  config/artemis.toml >"$work/bridge.toml"
grep -q '^passcode_file' "$work/bridge.toml" || fail "config/artemis.toml has no passcode line to replace"
chmod 755 "$work" && chmod 644 "$work/passcode" "$work/bridge.toml" # read by the bridge's user 65532
export ARTEMIS_PASSWORD=$password BROKER_PASSCODE_FILE=$work/passcode BRIDGE_CONFIG=$work/bridge.toml
export STOMP_PORT=$ARTEMIS_STOMP_PORT STOMP_USER=admin STOMP_PASSWORD=$password

ready() { # GET /readyz on the bridge's published port answers 200
  local answer
  answer=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "GET /readyz HTTP/1.0\r\n\r\n" >&3 && head -n 1 <&3' \
    _ "$BRIDGE_HTTP_PORT" 2>/dev/null) || return 1
  [[ $answer == *" 200 "* ]]
}
wait_ready() { # seconds: until /readyz answers 200
  local deadline=$((SECONDS + $1))
  until ready; do
    [ "$SECONDS" -lt "$deadline" ] || { "$c" compose logs --tail 40 bridge >&2 || true; fail "the bridge was not ready within $1 s"; }
    sleep 0.2
  done
}

t=$SECONDS
"$c" compose up -d 2>&1 | grep -v -e 'systemd' -e syslog -e '^[0-9a-f]\{64\}$' || true
wait_ready 180
say "stack up (Artemis, Redis, bridge) and the bridge ready in $((SECONDS - t)) s"
"$c" compose ps 2>/dev/null | grep -v syslog || true

podman healthcheck run "$artemis_ctr" >/dev/null 2>&1 || fail "Artemis's compose healthcheck failed"
# The image's etc-override: config/artemis/etc-override/broker.xml copied over the instance's.
grep -q 'copying broker.xml to etc/' <<<"$(podman logs "$artemis_ctr" 2>&1)" || fail "Artemis did not take etc-override/broker.xml"
podman healthcheck run "$redis_ctr" >/dev/null 2>&1 || fail "Redis's compose healthcheck failed"

# The bridge's container: user, read-only root, the config and the secret mounted read-only, health.
pid=$(podman inspect --format '{{.State.Pid}}' "$bridge_ctr")
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" = 65532 ] || fail "the bridge runs as uid $uid"
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$bridge_ctr")" = true ] || fail "the root file system is writable"
mounts=$(podman inspect --format '{{range .Mounts}}{{.Destination}}:{{.RW}} {{end}}' "$bridge_ctr")
[[ " $mounts " == *" /etc/stomp-agent-bridge/bridge.toml:false "* ]] || fail "the config is not mounted read-only: $mounts"
[[ " $mounts " == *" /run/secrets/broker_passcode:"* ]] || fail "the secret is not mounted: $mounts"
podman healthcheck run "$bridge_ctr" 2>/dev/null || fail "the HEALTHCHECK command failed"
health=$(podman inspect --format '{{.State.Health.Status}}' "$bridge_ctr")
[ "$health" = healthy ] || fail "health status '$health'"
say "bridge: uid $uid, read-only root, config and secret read-only, HEALTHCHECK $health"
grep -qx WeatherAgent <<<"$(podman exec "$redis_ctr" redis-cli hkeys agents)" \
  || fail "WeatherAgent is not in the registry's agents hash"
say "registry: the proxied agents are registered in the stack's Redis"

# The README's walkthrough ask, from the host, through the containerised Artemis and bridge.
: >"$work/agent.log"
.venv/bin/python examples/civitas_weather_agent.py --count 1 >"$work/agent.log" 2>&1 &
agent=$!
for _ in $(seq 1 100); do grep -q listening "$work/agent.log" && break; sleep 0.1; done
grep -q listening "$work/agent.log" || { cat "$work/agent.log" >&2; fail "the Civitas agent did not start"; }
.venv/bin/python examples/ask_weather.py "What is the weather in Paris?" >"$work/ask.log" 2>&1 \
  || { cat "$work/ask.log" "$work/agent.log" >&2; fail "the ask was not answered"; }
wait "$agent" || { cat "$work/agent.log" >&2; fail "the Civitas agent did not answer"; }
grep 'WeatherAgent says' "$work/ask.log"

# stop while requests are in flight: SIGTERM once a quarter of them are sent, exit 0 within the
# grace period, then every request accounted for.
run=$RANDOM$RANDOM
n=20000
: >"$work/send.log"
.venv/bin/python scripts/container/stop_check.py send "$n" "$run" >"$work/send.log" 2>&1 &
sender=$!
for _ in $(seq 1 300); do grep -q ' sent$' "$work/send.log" && break; sleep 0.1; done
grep -q ' sent$' "$work/send.log" || { cat "$work/send.log" >&2; fail "the sender did not start"; }
t=$SECONDS
"$c" compose stop bridge >/dev/null 2>&1
took=$((SECONDS - t))
wait "$sender" || { cat "$work/send.log" >&2; fail "the sender failed"; }
cat "$work/send.log"
code=$(podman inspect --format '{{.State.ExitCode}}' "$bridge_ctr")
# (Captured first: with pipefail, `podman logs | grep -q` fails when grep stops reading early.)
bridge_log=$(podman logs "$bridge_ctr" 2>&1)
grep -e 'SIGTERM' -e 'shutting down' -e 'were settled' -e 'shutdown timeout' <<<"$bridge_log" | sed 's/^/[bridge] /'
# Exit 0, not 137: the bridge exited by itself, before the grace period's SIGKILL.
[ "$code" = 0 ] || fail "the bridge exited $code on stop"
if grep -q 'shutdown timeout' <<<"$bridge_log"; then fail "messages were left unsettled at the stop"; fi
# From the SIGTERM (its log line) to the process's end, against the 15 s grace period; the
# podman-compose call around it takes seconds of its own on a busy machine.
term_at=$(sed -n 's/.*"timestamp":"\([^"]*\)","level":"INFO","message":"SIGTERM: shutting down".*/\1/p' <<<"$bridge_log" | tail -n 1)
ended_at=$(podman inspect --format '{{.State.FinishedAt.Format "2006-01-02T15:04:05.000000Z07:00"}}' "$bridge_ctr")
[ -n "$term_at" ] || fail "the bridge did not log the SIGTERM"
exit_s=$(awk -v a="$(date -d "$term_at" +%s.%N)" -v b="$(date -d "$ended_at" +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
awk -v s="$exit_s" 'BEGIN { exit !(s >= 0 && s < 15) }' || fail "the bridge took $exit_s s from SIGTERM to its exit"
say "stop: SIGTERM, the bridge exited 0 $exit_s s after it (podman-compose stop: $took s)"
.venv/bin/python scripts/container/stop_check.py account "$n" "$run" || fail "messages lost, repeated or dead-lettered"

# Started again, Artemis already up: the bridge's start-up time to ready.
t=$(date +%s.%N)
"$c" compose start bridge >/dev/null 2>&1
wait_ready 60
say "bridge started again: ready in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

"$c" compose down -v -t 20 >/dev/null 2>&1
trap 'rm -rf "$work"' EXIT
say "passed in $((SECONDS - started)) s"
