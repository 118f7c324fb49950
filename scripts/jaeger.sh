#!/usr/bin/env bash
# Builds (once, from the Go module github.com/jaegertracing/jaeger, cmd/jaeger at v1.75.0, with
# the Go toolchain at /usr/local/go/bin/go or on PATH) and starts a private Jaeger, the trace
# backend of the tests: Jaeger v2, the OpenTelemetry Collector based `jaeger` binary, with
# in-memory storage, listening on 127.0.0.1 only:
#   OTLP/HTTP on ${SAB_JAEGER_OTLP_HTTP_PORT:-4318}, OTLP/gRPC on the port below it (4317);
#   the query API (/api/services, /api/traces?service=..., /api/traces/<id>) on
#   ${SAB_JAEGER_QUERY_PORT:-16686}, its gRPC form on the port below it (16685).
# Nothing else listens: no Jaeger/Zipkin receivers, no sampling, health or zpages extension, no
# metrics of its own (the embedded all-in-one configuration listens on sixteen); the script writes
# the configuration it runs (jaeger.yaml in the state folder). The UI's assets are not in a build
# from the module (a placeholder page is served); the API is all the tests read.
# State (binary cache, configuration, pid file, log) under $SAB_JAEGER_STATE, else
# /var/lib/stomp-agent-bridge/jaeger; the binary is cached as <state>/v1.75.0/jaeger, so that
# only the first start builds (some 4 minutes on 2 cores; its log is <state>/build.log).
# Usage: scripts/jaeger.sh start|stop|restart|status [--fresh]
# A `start` reuses a Jaeger that already answers. With --fresh (scripts/test.sh uses it), a Jaeger
# this script started is restarted, so that its in-memory store begins empty; one it did not
# start is reused as it is.
set -euo pipefail

version=v1.75.0
module=github.com/jaegertracing/jaeger
state=${SAB_JAEGER_STATE:-/var/lib/stomp-agent-bridge/jaeger}
bin=$state/$version/jaeger
conf=$state/jaeger.yaml
otlp_http_port=${SAB_JAEGER_OTLP_HTTP_PORT:-4318}
otlp_grpc_port=$((otlp_http_port - 1))
query_port=${SAB_JAEGER_QUERY_PORT:-16686}
query_grpc_port=$((query_port - 1))
# A start waits at most this long for the query API and the OTLP ports (a started Jaeger answered
# within 0.3 s here; the bound is for a busy machine).
start_timeout=120
log() { printf '[jaeger] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Closes every descriptor above stderr in the calling (sub)shell (as scripts/brokers.sh does): a
# Jaeger started under `flock some.lock scripts/jaeger.sh start`, or under this script's own
# lock, would otherwise hold the lock for as long as it runs.
close_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

query_answers() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$query_port/api/services" 2>/dev/null)" = 200 ]
}
# Up: the query API answers 200 and both OTLP ports are open. The collector starts its
# extensions (the query API among them) before its receivers, so an answering query API alone
# is not yet a Jaeger that takes spans.
answers() { query_answers && port_open "$otlp_http_port" && port_open "$otlp_grpc_port"; }

# The Jaeger this script started (from this state folder's configuration), whatever pid file.
our_pids() { pgrep -f -- "--config=$conf" || true; }

find_go() {
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go
  elif command -v go >/dev/null; then command -v go
  else return 1; fi
}

build() { # the binary, once; built into a temporary file and moved into place
  [ -x "$bin" ] && return 0
  local go
  go=$(find_go) || {
    log "Go is needed to build Jaeger $version and was found neither at /usr/local/go/bin/go nor on PATH:"
    log "install Go 1.24.6 or newer (https://go.dev/dl/, unpacked into /usr/local/go), then run this again"
    return 1
  }
  mkdir -p "$state/$version"
  rm -f "$state/$version"/.jaeger.* # what an interrupted build left (builds are under the lock)
  local work tmp status=0
  work=$(mktemp -d)
  tmp=$(mktemp "$state/$version/.jaeger.XXXXXX")
  log "building Jaeger $version with $("$go" version | cut -d' ' -f3) (minutes on 2 cores; log: $state/build.log)"
  local t0=$SECONDS
  # `go install $module/cmd/jaeger@$version` is refused (the module's go.mod has a replace
  # directive); a module of our own that requires it as a tool builds it. Every dependency
  # then resolves to the version Jaeger's go.mod names, but for the one replaced:
  # github.com/Shopify/sarama, a Kafka client, linked at v1.37.2 instead of v1.33.0 (an
  # in-memory Jaeger does not use Kafka). -trimpath and -s -w: no local paths, no symbol table
  # or DWARF (the linker has less to write, the compiler no more to do); -gcflags=all=-N -l:
  # nothing optimised or inlined, in Jaeger or its dependencies (a test backend that stores a
  # few hundred spans): 393 CPU seconds to build instead of 553, a binary of 94 MB; latestVersion is the variable upstream's Makefile sets, so that `jaeger version`
  # names the module's version.
  # (&&, not set -e: a subshell left of || runs without it.)
  (
    cd "$work" \
      && "$go" mod init sab-jaeger \
      && "$go" get -tool "$module/cmd/jaeger@$version" \
      && "$go" build -trimpath -gcflags="all=-N -l" \
      -ldflags="-s -w -X $module/internal/version.latestVersion=$version" \
      -o "$tmp" "$module/cmd/jaeger"
  ) >"$state/build.log" 2>&1 </dev/null || status=$?
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    rm -f "$tmp"
    log "building Jaeger $version failed (exit $status); the end of $state/build.log:"
    tail -n 30 "$state/build.log" >&2
    return 1
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$bin"
  log "built $bin in $((SECONDS - t0)) s ($(du -m "$bin" | cut -f1) MB)"
}

write_config() {
  cat >"$conf.tmp" <<YAML
# Written by scripts/jaeger.sh at every start: edit the script, not this file.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      # No batch processor: a span is in the store as soon as it is received.
      exporters: [jaeger_storage_exporter]
  telemetry:
    logs:
      level: info
    metrics:
      level: none
    traces:
      level: none

extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    # Jaeger's own spans would be traces of the service "jaeger" in the store the tests read.
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:$query_port
    grpc:
      endpoint: 127.0.0.1:$query_grpc_port

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$otlp_grpc_port
      http:
        endpoint: 127.0.0.1:$otlp_http_port

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
YAML
  mv -f "$conf.tmp" "$conf"
}

stop_ours() {
  local pids i
  pids=$(our_pids)
  [ -z "$pids" ] && return 0
  kill $pids 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    [ -z "$(our_pids)" ] && break
    sleep 0.1
  done
  pids=$(our_pids)
  if [ -n "$pids" ]; then
    log "Jaeger did not stop within 30 s of SIGTERM: killed"
    kill -9 $pids 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$state/jaeger.pid"
  log "Jaeger stopped"
}

start() {
  mkdir -p "$state"
  # One start or stop at a time (two test runs starting together would both launch one).
  exec 9>"$state/jaeger.lock"
  flock 9
  if [ -n "$(our_pids)" ]; then
    if [ "$fresh" = 1 ]; then
      log "restarting Jaeger (--fresh: its in-memory store begins empty)"
      stop_ours
    elif answers; then
      log "Jaeger already answers (query API on $query_port)"
      return 0
    else
      log "the Jaeger this script started does not answer: restarting it"
      stop_ours
    fi
  elif answers; then
    log "a Jaeger this script did not start answers on $query_port: reused as it is${fresh:+ (not emptied)}"
    return 0
  fi
  for p in "$otlp_grpc_port" "$otlp_http_port" "$query_grpc_port" "$query_port"; do
    if port_open "$p"; then log "port $p is taken by something that is not this Jaeger"; return 1; fi
  done
  build
  write_config
  [ -f "$state/jaeger.log" ] && mv -f "$state/jaeger.log" "$state/jaeger.log.1"
  log "starting Jaeger $version: OTLP on 127.0.0.1:$otlp_grpc_port (gRPC) and :$otlp_http_port (HTTP), query API on :$query_port (log: $state/jaeger.log)"
  # Detached (a session of its own, every descriptor redirected or closed): a caller that reads
  # our output, or holds a lock, does not wait for it.
  (close_fds && cd "$state" && exec setsid "$bin" "--config=$conf") >"$state/jaeger.log" 2>&1 </dev/null &
  local pid=$! i
  for ((i = 0; i < start_timeout * 4; i++)); do
    answers && break
    # (The subshell execs setsid, which execs Jaeger: the same pid, unless setsid had to fork.)
    if ! kill -0 "$pid" 2>/dev/null && [ -z "$(our_pids)" ]; then
      log "Jaeger exited before it answered; the end of $state/jaeger.log:"
      tail -n 40 "$state/jaeger.log" >&2
      return 1
    fi
    sleep 0.25
  done
  if ! answers; then
    log "Jaeger did not answer 200 on http://127.0.0.1:$query_port/api/services with OTLP ports $otlp_grpc_port and $otlp_http_port open within $start_timeout s; the end of $state/jaeger.log:"
    tail -n 40 "$state/jaeger.log" >&2
    kill "$pid" 2>/dev/null || true
    stop_ours
    return 1
  fi
  our_pids >"$state/jaeger.pid"
  log "Jaeger is up (pid $(tr '\n' ' ' <"$state/jaeger.pid" | sed 's/ $//'))"
}

stop() {
  mkdir -p "$state"
  exec 9>"$state/jaeger.lock"
  flock 9
  if [ -n "$(our_pids)" ]; then
    stop_ours
  elif query_answers; then
    log "a Jaeger this script did not start answers on $query_port: left running"
  else
    rm -f "$state/jaeger.pid"
    log "Jaeger is not running"
  fi
}

action=${1:-}
fresh=
if [ "${2:-}" = --fresh ]; then fresh=1; fi
case "$action" in
  start) start ;;
  stop) stop ;;
  restart) stop; exec 9>&-; start ;;
  status)
    if answers; then
      echo "jaeger: up, OTLP on 127.0.0.1:$otlp_grpc_port (gRPC) and :$otlp_http_port (HTTP), query API on :$query_port"
    else
      echo "jaeger: down"
    fi ;;
  *) echo "usage: $0 start|stop|restart|status [--fresh]" >&2; exit 2 ;;
esac
