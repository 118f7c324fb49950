#!/usr/bin/env bash
# Mirror mode on RabbitMQ: turns the firehose on (or off) for one virtual host.
#   config/mirror/rabbitmq-firehose.sh on|off [VHOST]        (default vhost: /)
#
# Wise Agents publishes to the default exchange, which cannot be bound to another exchange, so
# the firehose (amq.rabbitmq.trace) is the one way to see its messages without consuming them.
# The bridge (`[mirror] tap = "rabbitmq-firehose"`) binds only `deliver.request.#` and
# `deliver.response.#` (its request/response prefixes without /queue/): each message on a Wise
# Agents queue, as it is delivered to its agent, with the queue's name in the routing key. (The
# `publish.` events name no queue over STOMP: the plugin drops the routing_keys array header.)
# Its queue is capped (`x-max-length`, `[mirror] max_backlog`, oldest dropped first).
#
# Cost: while tracing is on, the broker builds a trace message for every publish and every
# delivery in the vhost, matched or not (docs/OPERATING.md has the measured cost). Turn it on
# for the vhost of the Wise Agents agents only; `rabbitmqctl trace_on` lasts until the node
# restarts, so run this after each start (or from your service manager).
set -euo pipefail
case "${1:-}" in
  on) rabbitmqctl trace_on -p "${2:-/}" ;;
  off) rabbitmqctl trace_off -p "${2:-/}" ;;
  *) echo "usage: $0 on|off [VHOST]" >&2; exit 2 ;;
esac
