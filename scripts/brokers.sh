#!/usr/bin/env bash
# Installs, configures and starts the real brokers that the tests and local runs use, from
# Debian's packages, idempotently, as root:
#   ActiveMQ Classic: STOMP on 127.0.0.1:61613, STOMP+SSL on 127.0.0.1:61614, STOMP+SSL that
#     requires a client certificate (needClientAuth) on 127.0.0.1:61615 (login admin/admin)
#   RabbitMQ + rabbitmq_stomp: STOMP on 127.0.0.1:61623 (login guest/guest, vhost /)
#   ActiveMQ Artemis 2.37.0 (Maven Central's binary distribution, fetched with mvn, cached in the
#     state folder): STOMP on 127.0.0.1:61633, STOMP+SSL on 61634, STOMP+SSL with needClientAuth
#     on 61635, all protocols on 61636 (login admin/admin); its broker.xml is the very
#     config/artemis/etc-override/broker.xml that docker-compose.yml mounts, and
#     scripts/brokers/artemis.properties adds the tests' TLS acceptors and address settings
# Usage: scripts/brokers.sh start|stop|restart|status [--fresh] [activemq|rabbitmq|artemis]...
# A second `start` reuses brokers that already answer.  With --fresh (scripts/test.sh uses it), a
# broker that this call starts begins with empty data: the queues earlier test runs left behind
# (thousands, each with a random name) would otherwise make every later start slower, until
# RabbitMQ no longer opens its port within the wait.  A broker that already runs is never wiped,
# and neither is anything when --fresh is not given (scripts/run.sh keeps the broker's messages).  The CA that signed ActiveMQ's TLS
# certificate is written to $SAB_BROKER_STATE/tls/ca.pem for the TLS tests.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=${SAB_BROKER_STATE:-/var/lib/stomp-agent-bridge/brokers}
# A second, private ActiveMQ (the soak restarts its own every five minutes): another state folder
# and SAB_ACTIVEMQ_PORT, the STOMP port; the two TLS connectors take the next two ports.
amq_port=${SAB_ACTIVEMQ_PORT:-61613}
amq_ssl_port=$((amq_port + 1))
amq_client_auth_port=$((amq_port + 2))
keystore_password=sab-test-keystore
# Artemis: SAB_ARTEMIS_PORT is the STOMP port; TLS, TLS with client auth and all protocols take
# the next three.
art_version=${SAB_ARTEMIS_VERSION:-2.37.0}
art_port=${SAB_ARTEMIS_PORT:-61633}
art_ssl_port=$((art_port + 1))
art_client_auth_port=$((art_port + 2))
art_all_port=$((art_port + 3))
log() { printf '[brokers] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Closes every descriptor above stderr in the calling (sub)shell. A broker started from
# `flock /work/brokers.lock scripts/brokers.sh restart` would otherwise inherit the lock's
# descriptor and hold the lock for as long as it runs, and every later flock would wait forever.
close_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

wait_port() { # port seconds what
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    port_open "$1" && return 0
    sleep 0.1
  done
  log "$3 did not open port $1 within $2 s"
  return 1
}

# A STOMP CONNECT that is answered CONNECTED: an open port is not yet a broker that logs
# clients in (Artemis, just after a restart, refused "Unable to validate user" for a few
# seconds, and a test's CONNECT waited out its 10 s).
stomp_connects() { # port login passcode
  local answer
  answer=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "CONNECT\naccept-version:1.2\nhost:/\nlogin:%s\npasscode:%s\n\n\0" "$2" "$3" >&3
    head -c 9 <&3' _ "$1" "$2" "$3" 2>/dev/null) || return 1
  [ "$answer" = CONNECTED ]
}

wait_stomp() { # port login passcode seconds what
  local i
  for ((i = 0; i < $4 * 4; i++)); do
    stomp_connects "$1" "$2" "$3" && return 0
    sleep 0.25
  done
  log "$5 did not accept a STOMP CONNECT on $1 within $4 s"
  return 1
}

wait_port_closed() { # port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    port_open "$1" || return 0
    sleep 0.1
  done
  return 1
}

# shellcheck source=scripts/apt.sh
. "$here/apt.sh"

make_tls() { # a CA, a server certificate for 127.0.0.1/localhost, a client certificate, once
  local dir=$state/tls
  mkdir -p "$dir"
  if [ ! -f "$dir/broker.p12" ]; then
    log "generating a test CA and ActiveMQ's TLS keystore in $dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=stomp-agent-bridge-test-ca \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
      -keyout "$dir/broker.key" -out "$dir/broker.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$dir/san.ext"
    openssl x509 -req -in "$dir/broker.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 3650 -extfile "$dir/san.ext" -out "$dir/broker.pem" 2>/dev/null
    openssl pkcs12 -export -in "$dir/broker.pem" -inkey "$dir/broker.key" -certfile "$dir/ca.pem" \
      -name broker -passout "pass:$keystore_password" -out "$dir/broker.p12"
  fi
  # The connector with needClientAuth trusts this CA, and the bridge presents client.pem.
  if [ ! -f "$dir/truststore.p12" ]; then
    log "generating a client certificate and ActiveMQ's truststore in $dir"
    openssl req -newkey rsa:2048 -nodes -subj /CN=stomp-agent-bridge-test-client \
      -keyout "$dir/client.key" -out "$dir/client.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$dir/client.ext"
    openssl x509 -req -in "$dir/client.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 3650 -extfile "$dir/client.ext" -out "$dir/client.pem" 2>/dev/null
    keytool -importcert -noprompt -alias ca -file "$dir/ca.pem" -storetype pkcs12 \
      -keystore "$dir/truststore.p12" -storepass "$keystore_password" >/dev/null 2>&1
  fi
  chmod 644 "$dir"/*.pem "$dir"/*.p12 "$dir/client.key"
}

activemq_start() {
  if port_open "$amq_port" && port_open "$amq_client_auth_port"; then log "ActiveMQ already answers on $amq_port"; return 0; fi
  if port_open "$amq_port"; then
    log "an ActiveMQ with an older configuration answers on $amq_port (no port $amq_client_auth_port): scripts/brokers.sh restart activemq"
    return 1
  fi
  # XStream and Jettison let STOMP clients read advisories as JSON (transformation:
  # jms-advisory-json), which the bridge's discovery of agents named by a glob uses.
  apt_install activemq openssl libxstream-java libjettison-java
  make_tls
  local dir=$state/activemq
  mkdir -p "$dir/conf" "$dir/data" "$dir/tmp"
  sed -e "s|@STATE@|$dir|g" -e "s|@TLS@|$state/tls|g" -e "s|@KEYSTORE_PASSWORD@|$keystore_password|g" \
    -e "s|@PORT@|$amq_port|g" -e "s|@SSL_PORT@|$amq_ssl_port|g" -e "s|@CLIENT_AUTH_PORT@|$amq_client_auth_port|g" \
    "$here/brokers/activemq.xml" >"$dir/conf/activemq.xml"
  # Debian's ActiveMQ logs through log4j 1.2, which reads log4j.properties from the conf
  # folder (the log4j2.properties it ships goes unread): the broker's own warnings (flow
  # control, store limits, refused frames) then reach activemq.log. The previous run's log is
  # kept as activemq.log.1.
  cat >"$dir/conf/log4j.properties" <<'LOG4J'
log4j.rootLogger=INFO, console
log4j.logger.org.apache.activemq.spring=WARN
log4j.logger.org.springframework=WARN
log4j.logger.org.apache.xbean=WARN
log4j.logger.org.eclipse.jetty=WARN
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p %c{1} | %m%n
LOG4J
  [ -f "$dir/activemq.log" ] && mv -f "$dir/activemq.log" "$dir/activemq.log.1"
  if [ "$fresh" = 1 ]; then log "ActiveMQ starts with empty data (--fresh)"; rm -rf "${dir:?}/data"/*; fi
  chown -R activemq:activemq "$dir"
  log "starting ActiveMQ Classic (log: $dir/activemq.log)"
  # Every descriptor redirected: a caller that reads our output must not wait for the broker.
  # Our own pid file: the script's default (/run/activemq.pid) is shared with any other
  # ActiveMQ on the machine, and one still listed there makes `console` refuse to start.
  (close_fds && cd "$dir" && exec setsid runuser -u activemq -- env ACTIVEMQ_BASE="$dir" ACTIVEMQ_CONF="$dir/conf" \
    ACTIVEMQ_DATA="$dir/data" ACTIVEMQ_TMP="$dir/tmp" ACTIVEMQ_PIDFILE="$dir/tmp/activemq.pid" \
    ACTIVEMQ_USER_CLASSPATH=/usr/share/java/xstream.jar:/usr/share/java/jettison.jar:/usr/share/java/xpp3.jar \
    /usr/bin/activemq console "xbean:file:$dir/conf/activemq.xml") >"$dir/activemq.log" 2>&1 </dev/null &
  wait_port "$amq_port" 90 ActiveMQ && wait_port "$amq_ssl_port" 30 ActiveMQ && wait_port "$amq_client_auth_port" 30 ActiveMQ \
    && wait_stomp "$amq_port" admin admin 60 ActiveMQ || { tail -n 40 "$dir/activemq.log" >&2; return 1; }
  log "ActiveMQ is up"
}

activemq_stop() {
  local pids
  pids=$(pgrep -f "xbean:file:$state/activemq/conf/activemq.xml" || true)
  [ -n "$pids" ] && kill $pids 2>/dev/null || true
  wait_port_closed "$amq_port" 60 || { pids=$(pgrep -f "xbean:file:$state/activemq" || true); [ -n "$pids" ] && kill -9 $pids || true; }
  wait_port_closed "$amq_port" 10
  # The port closes before the JVM has exited; a start in between would find it running.
  local i
  for ((i = 0; i < 300; i++)); do
    pgrep -f "xbean:file:$state/activemq/conf/activemq.xml" >/dev/null || break
    sleep 0.1
  done
  pids=$(pgrep -f "xbean:file:$state/activemq/conf/activemq.xml" || true)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  log "ActiveMQ stopped"
}

rabbitmq_start() {
  if port_open 61623; then log "RabbitMQ already answers on 61623"; return 0; fi
  apt_install rabbitmq-server
  mkdir -p /etc/rabbitmq
  cmp -s "$here/brokers/rabbitmq.conf" /etc/rabbitmq/rabbitmq.conf || cp "$here/brokers/rabbitmq.conf" /etc/rabbitmq/rabbitmq.conf
  rabbitmq-plugins enable --offline rabbitmq_stomp >/dev/null
  if [ "$fresh" = 1 ]; then
    log "RabbitMQ starts with empty data (--fresh)"
    rm -rf /var/lib/rabbitmq/mnesia/*
  fi
  log "starting RabbitMQ"
  # Each durable queue holds file handles while the node recovers it, and a test run leaves
  # thousands: with 1,024 handles a restart recovering 1,856 queues took over 120 s on a busy
  # machine. Debian's rabbitmq-server wrapper starts the node through `su`, which sets the soft
  # limit of open files to 1,024 whatever this shell's is; started here as the rabbitmq user, it
  # gets the hard limit.
  (close_fds; cd /var/lib/rabbitmq && exec su rabbitmq -s /bin/sh -c \
    'ulimit -n "$(ulimit -Hn)"; exec /usr/lib/rabbitmq/bin/rabbitmq-server -detached') \
    >/dev/null 2>&1 </dev/null || true
  wait_port 61623 120 RabbitMQ && wait_stomp 61623 guest guest 60 RabbitMQ \
    || { tail -n 40 /var/log/rabbitmq/*.log >&2 || true; return 1; }
  log "RabbitMQ is up"
}

rabbitmq_stop() {
  rabbitmqctl stop >/dev/null 2>&1 || true
  wait_port_closed 61623 60
  log "RabbitMQ stopped"
}

artemis_install() { # the binary distribution, from Maven Central with Maven's own client, once
  local dir=$state/artemis
  [ -x "$dir/apache-artemis-$art_version/bin/artemis" ] && return 0
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  mkdir -p "$dir/dist"
  local tarball=$dir/dist/apache-artemis-$art_version-bin.tar.gz
  if [ ! -s "$tarball" ]; then
    log "fetching ActiveMQ Artemis $art_version from Maven Central into $dir/dist"
    mvn -q dependency:copy "-Dartifact=org.apache.activemq:apache-artemis:$art_version:tar.gz:bin" \
      "-DoutputDirectory=$dir/dist" >&2
  fi
  tar -xzf "$tarball" -C "$dir"
}

artemis_instance() { # the instance, created once; its broker.xml and test properties every start
  local dir=$state/artemis inst=$state/artemis/instance
  if [ ! -f "$inst/etc/artemis.profile" ]; then
    log "creating the Artemis instance $inst"
    # 512 MB of heap (the default is 2 GB); no web console, no journal auto-tuning (each
    # costs seconds at start).
    "$dir/apache-artemis-$art_version/bin/artemis" create "$inst" --silent --force --user admin \
      --password admin --role amq --require-login --no-web --no-autotune --nio --java-memory 512M >/dev/null
    # The ports of broker.xml's acceptors (0.0.0.0:61613 and :61616 in docker-compose.yml).
    printf '\nJAVA_ARGS="$JAVA_ARGS -Dsab.host=127.0.0.1 -Dsab.stomp.port=%s -Dsab.port=%s"\n' \
      "$art_port" "$art_all_port" >>"$inst/etc/artemis.profile"
  fi
  cp "$here/../config/artemis/etc-override/broker.xml" "$inst/etc/broker.xml"
  sed -e "s|@TLS@|$state/tls|g" -e "s|@KEYSTORE_PASSWORD@|$keystore_password|g" \
    -e "s|@SSL_PORT@|$art_ssl_port|g" -e "s|@CLIENT_AUTH_PORT@|$art_client_auth_port|g" -e "s|@ALL_PORT@|$art_all_port|g" \
    "$here/brokers/artemis.properties" >"$inst/etc/sab-test.properties"
}

artemis_pids() { pgrep -f -- "-Dartemis.instance=$state/artemis/instance " || true; }

artemis_start() {
  if port_open "$art_port" && port_open "$art_client_auth_port"; then log "Artemis already answers on $art_port"; return 0; fi
  if port_open "$art_port"; then
    log "an Artemis with an older configuration answers on $art_port (no port $art_client_auth_port): scripts/brokers.sh restart artemis"
    return 1
  fi
  make_tls
  artemis_install
  artemis_instance
  local inst=$state/artemis/instance
  if [ "$fresh" = 1 ]; then log "Artemis starts with empty data (--fresh)"; rm -rf "${inst:?}/data"/*; fi
  [ -f "$inst/log/console.log" ] && mv -f "$inst/log/console.log" "$inst/log/console.log.1"
  log "starting ActiveMQ Artemis (log: $inst/log/console.log)"
  (close_fds && cd "$inst" && exec setsid bin/artemis run --properties "$inst/etc/sab-test.properties") \
    >"$inst/log/console.log" 2>&1 </dev/null &
  wait_port "$art_port" 90 Artemis && wait_port "$art_ssl_port" 10 Artemis \
    && wait_port "$art_client_auth_port" 10 Artemis && wait_stomp "$art_port" admin admin 60 Artemis \
    || { tail -n 40 "$inst/log/console.log" >&2; return 1; }
  log "Artemis is up"
}

artemis_stop() {
  local pids i
  pids=$(artemis_pids)
  [ -n "$pids" ] && kill $pids 2>/dev/null || true
  # SIGTERM stops it cleanly (journal closed); the port closes before the JVM has exited.
  for ((i = 0; i < 300; i++)); do
    [ -z "$(artemis_pids)" ] && break
    sleep 0.1
  done
  pids=$(artemis_pids)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  wait_port_closed "$art_port" 10
  log "Artemis stopped"
}

status() {
  local name=$1 port=$2
  if port_open "$port"; then echo "$name: up on 127.0.0.1:$port"; else echo "$name: down"; fi
}

action=${1:-}
shift || true
fresh=0
if [ "${1:-}" = --fresh ]; then fresh=1; shift; fi
brokers=("$@")
[ ${#brokers[@]} -eq 0 ] && brokers=(activemq rabbitmq artemis)
for b in "${brokers[@]}"; do
  case "$b" in activemq | rabbitmq | artemis) ;; *) log "unknown broker '$b' (activemq, rabbitmq or artemis)"; exit 2 ;; esac
done
case "$action" in
  start) for b in "${brokers[@]}"; do "${b}_start"; done ;;
  stop) for b in "${brokers[@]}"; do "${b}_stop"; done ;;
  restart) for b in "${brokers[@]}"; do "${b}_stop"; "${b}_start"; done ;;
  status)
    for b in "${brokers[@]}"; do
      case "$b" in
        activemq) status activemq "$amq_port" ;; rabbitmq) status rabbitmq 61623 ;; artemis) status artemis "$art_port" ;;
      esac
    done ;;
  *) echo "usage: $0 start|stop|restart|status [--fresh] [activemq|rabbitmq|artemis]..." >&2; exit 2 ;;
esac
