"""A reference bridge of the kind a user would write with stomp.py, for loadgen to measure the
Rust bridge against (docs/PERFORMANCE.md): not part of the product.

It does what the bridge does for Wise Agents -> Civitas, with the same guarantee: consume each
proxied agent's request and response queues and the Civitas ingress with client-individual
acks and a prefetch of 256 per subscription, read the Wise Agents YAML with PyYAML, write a
Civitas message as JSON, SEND it with a receipt, and ACK the source once the receipt came
(confirm, then ack). Civitas -> Wise Agents is not translated (loadgen does not measure it
against this script).

  ref_bridge.py --agents A,B,... --request-prefix /queue/request/ --response-prefix ...
                --inbox /queue/x.{agent} --ingress /queue/y [--prefetch 256]

Broker from STOMP_HOST, STOMP_PORT, STOMP_USER, STOMP_PASSWORD, STOMP_VHOST. Prints "ready"
once subscribed; runs until SIGTERM."""

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid

import stomp
import yaml


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader, on libyaml when PyYAML was built with it (a user after speed
    would use it; the pure-Python loader costs about 0.6 ms a message), reading the Wise
    Agents tag as a plain mapping."""


Loader.add_constructor("!wiseagents.WiseAgentMessage", lambda loader, node: loader.construct_mapping(node))


def civitas(fields, agent):
    """The Civitas message (`to_dict()` as JSON) for a Wise Agents request to `agent`."""
    return json.dumps(
        {
            "schema_version": 1,
            "id": str(uuid.uuid4()),
            "type": "message",
            "sender": fields.get("_sender") or "",
            "recipient": agent,
            "correlation_id": fields.get("_tool_id"),
            "reply_to": fields.get("_sender"),
            "payload": {
                "message": fields.get("_message"),
                "context_name": fields.get("_context_name"),
                "route_response_to": fields.get("_route_response_to"),
            },
            "timestamp": time.time(),
            "trace_id": "",
            "span_id": "",
            "parent_span_id": None,
            "attempt": 0,
            "priority": 0,
            "ttl": None,
            "seq": None,
        }
    )


class Bridge(stomp.ConnectionListener):
    def __init__(self, args):
        self.args = args
        self.agents = {}
        for agent in args.agents.split(","):
            for prefix in (args.request_prefix, args.response_prefix):
                self.agents[prefix + agent] = agent
                # ActiveMQ's path-separator plugin names /queue/request/A /queue/request.A.
                self.agents[prefix.rstrip("/") + "." + agent] = agent
        self.conn = None
        self.lock = threading.Lock()
        self.waiting = {}  # receipt id -> the source's ack id
        self.next_receipt = 0

    def on_message(self, frame):
        headers = frame.headers
        ack_id = headers.get("ack") or headers["message-id"]
        agent = self.agents.get(headers.get("destination", ""))
        try:
            if agent is None:
                raise ValueError("not a proxied agent's queue")
            fields = yaml.load(frame.body, Loader=Loader)
            body, destination = civitas(fields, agent), self.args.inbox.replace("{agent}", agent)
        except Exception:  # what cannot be read goes to the dead-letter queue
            body, destination = frame.body, self.args.dead_letter
        with self.lock:
            self.next_receipt += 1
            receipt = f"r-{self.next_receipt}"
            self.waiting[receipt] = ack_id
        self.conn.send(destination, body, headers={"persistent": "true", "receipt": receipt})

    def on_receipt(self, frame):
        with self.lock:
            ack_id = self.waiting.pop(frame.headers.get("receipt-id"), None)
        if ack_id is not None:
            self.conn.ack(ack_id)

    def on_error(self, frame):
        print(f"ERROR: {frame.headers} {frame.body}", file=sys.stderr, flush=True)

    def start(self):
        host, port = os.environ.get("STOMP_HOST", "127.0.0.1"), int(os.environ.get("STOMP_PORT", "61613"))
        self.conn = stomp.Connection12(
            [(host, port)], heartbeats=(10000, 10000), vhost=os.environ.get("STOMP_VHOST", "/")
        )
        self.conn.set_listener("", self)
        self.conn.connect(os.environ.get("STOMP_USER", "admin"), os.environ.get("STOMP_PASSWORD", "admin"), wait=True)
        prefetch = str(self.args.prefetch)
        # Artemis reads the prefetch as a window in bytes (one message at a time): its own
        # window, 2 KiB a message as the bridge gives it (src/bridge/run.rs).
        window = str(self.args.prefetch * 2048)
        queues = [
            p + a for a in self.args.agents.split(",") for p in (self.args.request_prefix, self.args.response_prefix)
        ]
        destinations = queues + [self.args.ingress]
        for i, destination in enumerate(destinations):
            self.conn.subscribe(
                destination,
                id=str(i),
                ack="client-individual",
                headers={"activemq.prefetchSize": prefetch, "prefetch-count": prefetch, "consumer-window-size": window},
            )
        print("ready", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", required=True)
    parser.add_argument("--request-prefix", default="/queue/request/")
    parser.add_argument("--response-prefix", default="/queue/response/")
    parser.add_argument("--inbox", required=True)
    parser.add_argument("--ingress", required=True)
    parser.add_argument("--dead-letter", default="/queue/ref_bridge.dead")
    parser.add_argument("--prefetch", type=int, default=256)
    bridge = Bridge(parser.parse_args())
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    bridge.start()
    stop.wait()
    bridge.conn.disconnect()


if __name__ == "__main__":
    main()
