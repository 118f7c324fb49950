#!/usr/bin/env bash
# Installs (from Debian's packages, idempotently, as root) and starts a private Redis for the
# Wise Agents registry tests: 127.0.0.1:${SAB_REDIS_PORT:-6379}, no password, no persistence
# (`--save ""`, no AOF), state (pid file, log) under $SAB_REDIS_STATE, else
# $SAB_BROKER_STATE/redis, else /var/lib/stomp-agent-bridge/redis.
# Usage: scripts/redis.sh start|stop|restart|status [--fresh]
# A `start` reuses a Redis that already answers on the port and never wipes it: other runs may
# be using it, and every test names its agents and contexts uniquely. With --fresh, a Redis
# this call starts begins empty (it always does, having no persistence; the flag is accepted
# so that scripts/test.sh can call it as it calls scripts/brokers.sh).
set -euo pipefail

port=${SAB_REDIS_PORT:-6379}
if [ -n "${SAB_REDIS_STATE:-}" ]; then state=$SAB_REDIS_STATE
elif [ -n "${SAB_BROKER_STATE:-}" ]; then state=$SAB_BROKER_STATE/redis
else state=/var/lib/stomp-agent-bridge/redis; fi
log() { printf '[redis] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # open|closed seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if port_open "$port"; then [ "$1" = open ] && return 0; else [ "$1" = closed ] && return 0; fi
    sleep 0.1
  done
  return 1
}

install() {
  dpkg -s redis-server >/dev/null 2>&1 && return 0
  log "installing redis-server from Debian's packages"
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial || true)" ]; then
    apt-get update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
}

start() {
  if port_open "$port"; then log "Redis already answers on $port"; return 0; fi
  install
  mkdir -p "$state"
  [ "$fresh" = 1 ] && rm -f "$state"/*.rdb "$state"/*.aof
  log "starting Redis on 127.0.0.1:$port (log: $state/redis.log)"
  # --daemonize forks and the parent returns; every descriptor redirected so that a caller
  # reading our output (or holding /work/brokers.lock) does not wait for the server.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --protected-mode yes \
    --save "" --appendonly no --dir "$state" --pidfile "$state/redis.pid" \
    --logfile "$state/redis.log" >/dev/null 2>&1 </dev/null
  wait_port open 30 || { log "Redis did not open port $port within 30 s"; tail -n 20 "$state/redis.log" >&2 || true; return 1; }
  log "Redis is up"
}

stop() {
  if [ -f "$state/redis.pid" ] && kill "$(cat "$state/redis.pid")" 2>/dev/null; then
    wait_port closed 30 || { log "Redis still answers on $port"; return 1; }
  elif port_open "$port"; then
    log "a Redis this script did not start answers on $port: left running"
    return 0
  fi
  rm -f "$state/redis.pid"
  log "Redis stopped"
}

action=${1:-}
fresh=0
if [ "${2:-}" = --fresh ]; then fresh=1; fi
case "$action" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) if port_open "$port"; then echo "redis: up on 127.0.0.1:$port"; else echo "redis: down"; fi ;;
  *) echo "usage: $0 start|stop|restart|status [--fresh]" >&2; exit 2 ;;
esac
