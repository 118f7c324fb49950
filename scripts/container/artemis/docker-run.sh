#!/bin/bash
# The entry point of the Artemis image (scripts/container/artemis/Containerfile), with the
# behaviour of apache/activemq-artemis's: create the instance in the working folder on the
# first start (login required unless ANONYMOUS_LOGIN=true; EXTRA_ARGS passed to
# `artemis create`), copy etc-override/* over etc/, then exec `bin/artemis "$@"`. The
# acceptors' system properties of config/artemis/etc-override/broker.xml can be set through
# JAVA_ARGS_APPEND, which bin/artemis adds to the JVM's arguments.
set -euo pipefail
if [ "${ANONYMOUS_LOGIN,,}" = true ]; then login=--allow-anonymous; else login=--require-login; fi
if [ ! -f ./etc/broker.xml ]; then
  # EXTRA_ARGS is a list of words, as in the upstream image.
  # shellcheck disable=SC2086
  /opt/activemq-artemis/bin/artemis create --user "$ARTEMIS_USER" --password "$ARTEMIS_PASSWORD" \
    --silent "$login" ${EXTRA_ARGS:-} .
  if [ -d ./etc-override ]; then
    for file in ./etc-override/*; do
      [ -f "$file" ] || continue
      echo "copying ${file##*/} to etc/"
      cp "$file" ./etc/
    done
  fi
else
  echo "the broker instance exists: not created again"
fi
exec ./bin/artemis "$@"
