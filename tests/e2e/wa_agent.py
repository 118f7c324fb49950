"""A Wise Agents agent as the real one behaves on the wire, for the end-to-end tests:
stomp.py 8.1.2, STOMP 1.1, heart-beat 60000, subscriptions with ack:auto, SENDs with only a
destination (stomp.py adds content-length), YAML bodies read with PyYAML's full yaml.Loader.

  wa_agent.py send DEST FILE...        send each file's bytes as one message
  wa_agent.py send-many DEST N [--persistent]   send N generated requests ("msg <i>")
  wa_agent.py receive DEST N SECONDS   print the six fields of N messages as JSON lines
  wa_agent.py serve AGENT N SECONDS    answer N requests on /queue/request/AGENT like a tool
                                       agent: RESPONSE to /queue/response/<_sender>, echoing
                                       _tool_id, _context_name and _route_response_to
  wa_agent.py plain AGENT N SECONDS    answer N requests as a plain Wise Agents agent does
                                       (core.py handle_response, default path): a new
                                       WiseAgentMessage(message, sender, context_name) to
                                       /queue/response/<_sender>, nothing echoed, in order
  wa_agent.py converse ASKER HELPER N SECONDS   two native agents talk, N conversations one
                                       after another: ASKER asks HELPER; HELPER calls a tool on
                                       ASKER (_tool_id, _route_response_to = ASKER), ASKER answers
                                       it, HELPER sends its final answer to ASKER. Prints every
                                       frame each agent received (headers and body) as JSON
  wa_agent.py coordinate AGENT TARGET CONTEXT SECONDS   a phased coordinator: sends one request
                                       in CONTEXT and, like coordinator_wise_agents.py's
                                       process_response, fails unless the answer is ACK

Broker from STOMP_HOST, STOMP_PORT, STOMP_USER, STOMP_PASSWORD, and the queue prefixes from
WA_REQUEST_PREFIX, WA_RESPONSE_PREFIX."""

import json
import os
import queue
import sys
import time

import stomp
import yaml

# How long a subscription waits for the broker's RECEIPT: an event, bounded only to end a test
# whose broker never answers, and sized for a busy machine (as RECEIPT_TIMEOUT in tests/common).
RECEIPT_TIMEOUT = 60


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"
    yaml_loader = yaml.Loader


KEYS = ["_context_name", "_message", "_message_type", "_route_response_to", "_sender", "_tool_id"]


def connect(listener=None):
    host, port = os.environ.get("STOMP_HOST", "127.0.0.1"), int(os.environ.get("STOMP_PORT", "61613"))
    conn = stomp.Connection([(host, port)], heartbeats=(60000, 60000), vhost=os.environ.get("STOMP_VHOST", host))
    if listener:
        conn.set_listener("", listener)
    conn.connect(os.environ.get("STOMP_USER", "admin"), os.environ.get("STOMP_PASSWORD", "admin"), wait=True)
    return conn


class Collector(stomp.ConnectionListener):
    def __init__(self):
        self.frames = queue.Queue()

    def on_message(self, frame):
        self.frames.put(frame)


def dump(fields):
    message = WiseAgentMessage()
    message.__dict__.update(fields)
    return yaml.dump(message)


def send(dest, files):
    conn = connect()
    for path in files:
        conn.send(dest, open(path, "rb").read())
    conn.disconnect()


def send_many(dest, n, persistent):
    conn = connect()
    headers = {"persistent": "true"} if persistent else {}
    for i in range(n):
        body = dump(
            {
                "_message": f"msg {i}",
                "_sender": "Producer",
                "_message_type": "QUERY",
                "_context_name": "default",
                "_tool_id": None,
                "_route_response_to": None,
            }
        )
        conn.send(dest, body, headers=headers)
    conn.disconnect()


def read(frame):
    message = yaml.load(frame.body, Loader=yaml.Loader)
    assert isinstance(message, WiseAgentMessage), type(message)
    return {k: message.__dict__[k] for k in KEYS}


def receive(dest, n, seconds):
    collector = Collector()
    conn = connect(collector)
    conn.subscribe(dest, id="1", ack="auto")
    print(json.dumps({"subscribed": dest}), flush=True)
    deadline = time.time() + seconds
    for _ in range(n):
        frame = collector.frames.get(timeout=max(0.1, deadline - time.time()))
        print(json.dumps(read(frame)), flush=True)
    conn.disconnect()


def serve(agent, n, seconds):
    collector = Collector()
    conn = connect(collector)
    conn.subscribe(os.environ.get("WA_REQUEST_PREFIX", "/queue/request/") + agent, id="1", ack="auto")
    print(json.dumps({"subscribed": agent}), flush=True)
    deadline = time.time() + seconds
    for _ in range(n):
        request = read(collector.frames.get(timeout=max(0.1, deadline - time.time())))
        print(json.dumps(request), flush=True)
        reply = dict(request, _message="answer: " + request["_message"], _message_type="RESPONSE", _sender=agent)
        conn.send(os.environ.get("WA_RESPONSE_PREFIX", "/queue/response/") + request["_sender"], dump(reply))
    conn.disconnect()


def plain(agent, n, seconds):
    collector = Collector()
    conn = connect(collector)
    conn.subscribe(os.environ.get("WA_REQUEST_PREFIX", "/queue/request/") + agent, id="1", ack="auto")
    print(json.dumps({"subscribed": agent}), flush=True)
    deadline = time.time() + seconds
    for _ in range(n):
        request = read(collector.frames.get(timeout=max(0.1, deadline - time.time())))
        print(json.dumps(request), flush=True)
        # WiseAgentMessage(message=response_str, sender=self.name, context_name=context.name)
        reply = {k: None for k in KEYS}
        reply.update(_message="answer: " + request["_message"], _sender=agent, _context_name=request["_context_name"])
        conn.send(os.environ.get("WA_RESPONSE_PREFIX", "/queue/response/") + request["_sender"], dump(reply))
    conn.disconnect()


class ConversingAgent(stomp.ConnectionListener):
    """One side of `converse`: records every frame, and answers as its role says."""

    def __init__(self, name, role, finished):
        self.name, self.role, self.finished = name, role, finished
        self.received, self.calls, self.receipts = [], 0, queue.Queue()
        self.conn = connect(self)
        for sid, prefix in (("1", request_prefix()), ("2", response_prefix())):
            self.conn.subscribe(prefix + name, id=sid, ack="auto", headers={"receipt": f"sub-{sid}"})
        for _ in range(2):  # both subscriptions in place before anyone is told we listen
            self.receipts.get(timeout=RECEIPT_TIMEOUT)

    def on_receipt(self, frame):
        self.receipts.put(frame.headers.get("receipt-id"))

    def send(self, prefix, to, **fields):
        message = {k: None for k in KEYS}
        message.update(fields, _sender=self.name)
        self.conn.send(prefix + to, dump(message))

    def on_message(self, frame):
        self.received.append({"headers": dict(frame.headers), "body": frame.body})
        msg = read(frame)
        is_request = frame.headers["destination"] == request_prefix() + self.name
        ctx = msg["_context_name"]
        if self.role == "helper" and is_request:  # a question: call a tool on the asker
            self.calls += 1
            self.send(
                request_prefix(),
                msg["_sender"],
                _message=json.dumps({"about": msg["_message"]}),
                _message_type="QUERY",
                _tool_id=f"call_{self.calls}",
                _route_response_to=msg["_route_response_to"] or msg["_sender"],
                _context_name=ctx,
            )
        elif self.role == "helper":  # the tool's answer: the final answer goes to _route_response_to
            self.send(
                response_prefix(),
                msg["_route_response_to"],
                _message="final: " + msg["_message"],
                _message_type="RESPONSE",
                _context_name=ctx,
                _route_response_to=msg["_route_response_to"],
            )
        elif is_request:  # the asker as a tool agent: echo _tool_id, _route_response_to, _context_name
            self.send(
                response_prefix(),
                msg["_sender"],
                _message="tool result for " + msg["_message"],
                _message_type="RESPONSE",
                _tool_id=msg["_tool_id"],
                _route_response_to=msg["_route_response_to"],
                _context_name=ctx,
            )
        else:
            self.finished.put(msg)


def request_prefix():
    return os.environ.get("WA_REQUEST_PREFIX", "/queue/request/")


def response_prefix():
    return os.environ.get("WA_RESPONSE_PREFIX", "/queue/response/")


def converse(asker_name, helper_name, n, seconds):
    finished = queue.Queue()
    asker = ConversingAgent(asker_name, "asker", finished)
    helper = ConversingAgent(helper_name, "helper", finished)
    print(json.dumps({"subscribed": [asker_name, helper_name]}), flush=True)
    for i in range(n):
        asker.send(
            request_prefix(), helper_name, _message=f"question {i}", _message_type="QUERY", _context_name="default"
        )
        finished.get(timeout=seconds)
    print(json.dumps({"received": {asker_name: asker.received, helper_name: helper.received}}), flush=True)
    asker.conn.disconnect()
    helper.conn.disconnect()


def coordinate(agent, target, context, seconds):
    collector = Collector()
    conn = connect(collector)
    conn.subscribe(os.environ.get("WA_RESPONSE_PREFIX", "/queue/response/") + agent, id="1", ack="auto")
    print(json.dumps({"subscribed": agent}), flush=True)
    request = {k: None for k in KEYS}
    request.update(_message="what is the weather?", _sender=agent, _context_name=context)
    conn.send(os.environ.get("WA_REQUEST_PREFIX", "/queue/request/") + target, dump(request))
    response = read(collector.frames.get(timeout=seconds))
    print(json.dumps(response), flush=True)
    conn.disconnect()
    if response["_message_type"] != "ACK":
        raise ValueError(f"Unexpected response message_type: {response['_message_type']}")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "send":
        send(args[0], args[1:])
    elif mode == "send-many":
        send_many(args[0], int(args[1]), "--persistent" in args)
    elif mode == "receive":
        receive(args[0], int(args[1]), float(args[2]))
    elif mode == "serve":
        serve(args[0], int(args[1]), float(args[2]))
    elif mode == "plain":
        plain(args[0], int(args[1]), float(args[2]))
    elif mode == "converse":
        converse(args[0], args[1], int(args[2]), float(args[3]))
    elif mode == "coordinate":
        coordinate(args[0], args[1], args[2], float(args[3]))
    else:
        sys.exit(f"unknown mode {mode}")
