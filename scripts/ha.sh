#!/usr/bin/env bash
# The brokers' own high-availability pairs for tests/failover_brokers.rs, private to it (their
# own ports and state folders, never the shared brokers of scripts/brokers.sh):
#   activemq: ActiveMQ Classic master/slave on one shared KahaDB directory
#     (config/ha/activemq-shared-kahadb.xml): broker a on $SAB_HA_ACTIVEMQ_PORT (61700) is
#     started first and takes the store's lock; broker b on the next port waits on the lock,
#     port closed, and takes over when a dies.
#   artemis: ActiveMQ Artemis live/backup on a shared store (config/ha/artemis-shared-store.xml):
#     a, the live broker (primary, failover-on-shutdown), on $SAB_HA_ARTEMIS_PORT (61710); b,
#     the backup (allow-failback), on the next port (their cluster link on these ports + 10), its acceptor closed until a dies; a started
#     again takes its store back (failback).
#   rabbitmq: two independent RabbitMQ nodes (no cluster: see docs/FAILOVER.md), each with the
#     STOMP plugin: a on $SAB_HA_RABBITMQ_PORT (61740, AMQP 5780), b on the next port (AMQP 5781);
#     each has its own queues, so what waits in a dead node waits until it returns.
#   rabbitmq-cluster: three RabbitMQ nodes joined into one cluster (a quorum queue keeps going
#     while a majority of its three replicas live: one node may die): a on
#     $SAB_HA_RABBITMQ_CLUSTER_PORT (61750, AMQP 5750, distribution 25750), b and c on the next
#     ports. The virtual host `quorum` is made with `--default-queue-type quorum`: every durable
#     queue a STOMP client declares there (a SEND or SUBSCRIBE to /queue/...) is a quorum queue,
#     replicated on the three nodes, whatever the client (docs/FAILOVER.md says why not a header).
# Usage: scripts/ha.sh start BROKER          both brokers (the cluster's three nodes), empty
#                                            store; returns once a answers (the cluster: once
#                                            all three answer as one cluster)
#        scripts/ha.sh kill BROKER a|b|c     kill -9 that broker's JVM or Erlang VM (the failover under test)
#        scripts/ha.sh start1 BROKER a|b|c   start that one broker again (the failback; a
#                                            cluster node rejoins its cluster)
#        scripts/ha.sh stop BROKER           all stopped, the state folder removed
#        scripts/ha.sh logs BROKER           the last lines of its logs (a failed test's)
# Needs root (ActiveMQ runs as user activemq, from Debian's package; Artemis from the
# distribution scripts/brokers.sh fetched; scripts/brokers.sh installs both).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
ha_root=${SAB_HA_STATE:-/var/lib/stomp-agent-bridge}
broker_state=${SAB_BROKER_STATE:-/var/lib/stomp-agent-bridge/brokers}
art_version=${SAB_ARTEMIS_VERSION:-2.37.0}
amq_port=${SAB_HA_ACTIVEMQ_PORT:-61700}
art_port=${SAB_HA_ARTEMIS_PORT:-61710}
rmq_port=${SAB_HA_RABBITMQ_PORT:-61740}
log() { printf '[ha] %s\n' "$*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

close_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

wait_port() { # port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    port_open "$1" && return 0
    sleep 0.1
  done
  return 1
}

amq_port_of() { case $1 in a) echo "$amq_port" ;; b) echo $((amq_port + 1)) ;; *) log "no broker $1"; exit 2 ;; esac; }
activemq_pids() { pgrep -f "xbean:file:$state/$1/conf/activemq.xml" || true; }

activemq_one() { # a|b: starts that broker in the background on the shared store
  local name=$1 port dir=$state/$1
  port=$(amq_port_of "$name")
  mkdir -p "$dir/conf" "$dir/data" "$dir/tmp" "$state/shared"
  sed -e "s|@NAME@|sab-ha-$name|g" -e "s|@DATA@|$dir/data|g" -e "s|@SHARED@|$state/shared|g" -e "s|@PORT@|$port|g" \
    "$root/config/ha/activemq-shared-kahadb.xml" >"$dir/conf/activemq.xml"
  printf 'log4j.rootLogger=INFO, console\nlog4j.logger.org.springframework=WARN\nlog4j.logger.org.apache.xbean=WARN\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%%d{ISO8601} %%-5p %%c{1} | %%m%%n\n' \
    >"$dir/conf/log4j.properties"
  chown -R activemq:activemq "$state"
  log "starting ActiveMQ $name on $port (log: $dir/activemq.log)"
  (close_fds && cd "$dir" && exec setsid runuser -u activemq -- env ACTIVEMQ_BASE="$dir" ACTIVEMQ_CONF="$dir/conf" \
    ACTIVEMQ_DATA="$dir/data" ACTIVEMQ_TMP="$dir/tmp" ACTIVEMQ_PIDFILE="$dir/tmp/activemq.pid" \
    /usr/bin/activemq console "xbean:file:$dir/conf/activemq.xml") >>"$dir/activemq.log" 2>&1 </dev/null &
}

activemq_stop() {
  local name pids
  for name in a b; do
    pids=$(activemq_pids "$name")
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  rm -rf "${state:?}"
  log "ActiveMQ master/slave stopped, $state removed"
}

activemq_start() {
  command -v activemq >/dev/null || "$here/brokers.sh" start activemq >/dev/null
  activemq_stop
  activemq_one a
  wait_port "$amq_port" 90 || { tail -n 40 "$state/a/activemq.log" >&2; exit 1; }
  activemq_one b
  log "ActiveMQ a is the master on $amq_port; b waits on the store's lock"
}

art_port_of() { case $1 in a) echo "$art_port" ;; b) echo $((art_port + 1)) ;; *) log "no broker $1"; exit 2 ;; esac; }
artemis_pids() { pgrep -f -- "-Dartemis.instance=$state/$1 " || true; }

artemis_instance() { # a|b: the instance, its broker.xml from the template
  local name=$1 inst=$state/$1 policy peer
  local dist=$broker_state/artemis/apache-artemis-$art_version
  [ -x "$dist/bin/artemis" ] || "$here/brokers.sh" start artemis >/dev/null
  "$dist/bin/artemis" create "$inst" --silent --force --user admin --password admin --role amq \
    --require-login --no-web --no-autotune --nio --java-memory 512M >/dev/null
  case $name in a) peer=b ;; b) peer=a ;; esac
  case $name in
    a) policy='<primary><failover-on-shutdown>true</failover-on-shutdown></primary>' ;;
    b) policy='<backup><allow-failback>true</allow-failback><failover-on-shutdown>true</failover-on-shutdown></backup>' ;;
  esac
  sed -e "s|@NAME@|sab-ha-$name|g" -e "s|@SHARED@|$state/shared|g" -e "s|@PORT@|$(art_port_of "$name")|g" \
    -e "s|@CORE_PORT@|$(( $(art_port_of "$name") + 10 ))|g" -e "s|@PEER_CORE_PORT@|$(( $(art_port_of "$peer") + 10 ))|g" \
    -e "s|@HA_POLICY@|$policy|g" "$root/config/ha/artemis-shared-store.xml" >"$inst/etc/broker.xml"
}

artemis_one() { # a|b: starts that broker in the background on the shared store
  local inst=$state/$1
  [ -f "$inst/etc/broker.xml" ] || artemis_instance "$1"
  log "starting Artemis $1 on $(art_port_of "$1") (log: $inst/log/console.log)"
  (close_fds && cd "$inst" && exec setsid bin/artemis run) >>"$inst/log/console.log" 2>&1 </dev/null &
}

artemis_stop() {
  local name pids
  for name in a b; do
    pids=$(artemis_pids "$name")
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  rm -rf "${state:?}"
  log "Artemis live/backup stopped, $state removed"
}

artemis_start() {
  artemis_stop
  mkdir -p "$state/shared"
  artemis_instance a &
  artemis_instance b &
  wait
  artemis_one a
  wait_port "$art_port" 90 || { tail -n 40 "$state/a/log/console.log" >&2; exit 1; }
  artemis_one b
  log "Artemis a is live on $art_port; b is its backup"
}

rmq_port_of() { case $1 in a) echo "$rmq_port" ;; b) echo $((rmq_port + 1)) ;; *) log "no broker $1"; exit 2 ;; esac; }
# The node's name is not on its command line: its pid file says which process it is.
rabbitmq_pids() { local f=$state/$1/pid; [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f" || true; }

rabbitmq_one() { # a|b: starts that node, detached, on its own folders and ports
  local name=$1 dir=$state/$1 port offset
  port=$(rmq_port_of "$name")
  offset=$((port - rmq_port))
  mkdir -p "$dir/mnesia" "$dir/log"
  printf 'listeners.tcp.1 = 127.0.0.1:%s\nstomp.listeners.tcp.1 = 127.0.0.1:%s\nloopback_users.guest = true\n' \
    $((5780 + offset)) "$port" >"$dir/rabbitmq.conf"
  printf '[rabbitmq_stomp].\n' >"$dir/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$state"
  log "starting RabbitMQ node sab-ha-$name@localhost, STOMP on $port (log: $dir/log)"
  (close_fds; exec env RABBITMQ_NODENAME="sab-ha-$name@localhost" RABBITMQ_NODE_PORT=$((5780 + offset)) \
    RABBITMQ_DIST_PORT=$((25780 + offset)) RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_PID_FILE="$dir/pid" rabbitmq-server -detached) >/dev/null 2>&1 </dev/null || true
}

rabbitmq_stop() {
  local name pids
  for name in a b; do
    pids=$(rabbitmq_pids "$name")
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  rm -rf "${state:?}"
  log "RabbitMQ nodes stopped, $state removed"
}

rabbitmq_start() {
  command -v rabbitmq-server >/dev/null || "$here/brokers.sh" start rabbitmq >/dev/null
  rabbitmq_stop
  rabbitmq_one a
  rabbitmq_one b
  wait_port "$rmq_port" 120 || { tail -n 40 "$state/a/log/"*.log >&2; exit 1; }
  wait_port $((rmq_port + 1)) 120 || { tail -n 40 "$state/b/log/"*.log >&2; exit 1; }
  log "RabbitMQ nodes a on $rmq_port and b on $((rmq_port + 1))"
}

rmqc_port=${SAB_HA_RABBITMQ_CLUSTER_PORT:-61750}
rmqc_vhost=quorum
rmqc_offset() { case $1 in a) echo 0 ;; b) echo 1 ;; c) echo 2 ;; *) log "no node $1"; exit 2 ;; esac; }
rmqc_node() { echo "sab-hac-$1@localhost"; }
rmqc_ctl() { # node rabbitmqctl-arguments...: as the nodes' user (their cookie), on that node only
  local node=$1
  shift
  rabbitmqctl -q -n "$(rmqc_node "$node")" "$@"
}
rabbitmq_cluster_pids() { local f=$state/$1/pid; [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f" || true; }

rabbitmq_cluster_one() { # a|b|c: starts that node, detached (a node that was in the cluster rejoins it)
  local name=$1 dir=$state/$1 offset
  offset=$(rmqc_offset "$name")
  mkdir -p "$dir/mnesia" "$dir/log"
  printf 'listeners.tcp.1 = 127.0.0.1:%s\nstomp.listeners.tcp.1 = 127.0.0.1:%s\nloopback_users.guest = true\n' \
    $((5750 + offset)) $((rmqc_port + offset)) >"$dir/rabbitmq.conf"
  printf '[rabbitmq_stomp].\n' >"$dir/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$state"
  log "starting RabbitMQ node $(rmqc_node "$name"), STOMP on $((rmqc_port + offset)) (log: $dir/log)"
  (close_fds; exec env RABBITMQ_NODENAME="$(rmqc_node "$name")" RABBITMQ_NODE_PORT=$((5750 + offset)) \
    RABBITMQ_DIST_PORT=$((25750 + offset)) RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_PID_FILE="$dir/pid" rabbitmq-server -detached) >/dev/null 2>&1 </dev/null || true
}

rabbitmq_cluster_stop() {
  local name pids
  for name in a b c; do
    pids=$(rabbitmq_cluster_pids "$name")
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  rm -rf "${state:?}"
  log "RabbitMQ cluster stopped, $state removed"
}

rmqc_up() { # node: waits until it has booted (RabbitMQ and its plugins), or fails showing its log
  # `wait` waits for the pid file, then the node, then its boot (`await_startup` fails at once
  # on a node that has not registered yet).
  rmqc_ctl "$1" wait "$state/$1/pid" --timeout 180 >/dev/null 2>&1 && return 0
  tail -n 40 "$state/$1/log/"*.log >&2
  log "RabbitMQ node $1 did not start"
  exit 1
}

rmqc_three() { # node: fails unless that node sees the three running as one cluster
  local members
  members=$(rmqc_ctl "$1" eval 'length(rabbit_nodes:all_running()).')
  [ "$members" = 3 ] || { log "node $1 sees $members running nodes in its cluster, not 3"; exit 1; }
}

rabbitmq_cluster_start() {
  command -v rabbitmq-server >/dev/null || "$here/brokers.sh" start rabbitmq >/dev/null
  rabbitmq_cluster_stop
  local name
  for name in a b c; do rabbitmq_cluster_one "$name"; done
  for name in a b c; do rmqc_up "$name"; done
  for name in b c; do
    rmqc_ctl "$name" stop_app
    rmqc_ctl "$name" join_cluster "$(rmqc_node a)"
    rmqc_ctl "$name" start_app
    rmqc_up "$name"
  done
  rmqc_three a
  rmqc_ctl a add_vhost "$rmqc_vhost" --default-queue-type quorum
  rmqc_ctl a set_permissions -p "$rmqc_vhost" guest '.*' '.*' '.*'
  for name in a b c; do wait_port $((rmqc_port + $(rmqc_offset "$name"))) 60 || { log "no STOMP on node $name"; exit 1; }; done
  log "RabbitMQ cluster of a, b, c, STOMP on $rmqc_port-$((rmqc_port + 2)); vhost $rmqc_vhost: quorum queues"
}

cmd=${1:-}
broker=${2:-}
usage="usage: $0 start|kill|start1|stop|logs activemq|artemis|rabbitmq|rabbitmq-cluster [a|b|c]"
case $broker in
  activemq | artemis | rabbitmq | rabbitmq-cluster) state=$ha_root/ha-$broker fn=${broker//-/_} ;;
  *) log "$usage"; exit 2 ;;
esac
case $cmd in
  start) "${fn}_start" ;;
  kill)
    pids=$("${fn}_pids" "${3:?a, b or c}")
    [ -n "$pids" ] || { log "$broker $3 is not running"; exit 1; }
    kill -9 $pids
    log "killed $broker $3 (kill -9 $pids)"
    ;;
  start1)
    "${fn}_one" "${3:?a, b or c}"
    # A cluster's node returns as a member: booted and seeing the three nodes running.
    if [ "$broker" = rabbitmq-cluster ]; then rmqc_up "$3" && rmqc_three "$3"; fi
    ;;
  stop) "${fn}_stop" ;;
  logs) # the last lines of every log in the state folder (a failed test shows them)
    find "$state" -name '*.log' -type f 2>/dev/null | while read -r f; do
      printf '==> %s <==\n' "$f" >&2
      tail -n 40 "$f" >&2
    done
    ;;
  *) log "$usage"; exit 2 ;;
esac
