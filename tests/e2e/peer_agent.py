"""Civitas, VOX and PenguiFlow agents as their frameworks make them behave, on STOMP, for the
conversation tests (tests/conversations.rs). Bodies are read and written with each
framework's own code where it can be had: Civitas's Message and serializers (civitas 0.12
modules in the venv), PenguiFlow's pydantic Message (penguiflow 3.11); VOX's model is
vox/messaging/models.py's fields as a frozen pydantic model (the package is not published).

  peer_agent.py civitas-ask NAME RECIPIENT N TEXT...
      N asks at once as Civitas's request() makes them: a new uuid7 correlation_id and
      reply_to = "_reply.<uuid7>" per ask; waits on NAME's own inbox (the bridge delivers an
      answer to a _reply.* address to the asker's inbox, as a Civitas transport matches
      replies by correlation_id) and prints {"destination": ..., "reply": to_dict()}.
  peer_agent.py civitas-serve NAME N MODE
      answers N messages with reply() semantics (type = payload.get("type", "reply"),
      recipient = reply_to or sender, correlation_id and trace copied). MODE: plain,
      typed (payload has a "type"), error ({"status": "error", ...}), silent (never answers),
      stream (stream_reply(): three civitas.stream.chunk frames, then civitas.stream.end).
  peer_agent.py vox-serve NAME UUID N
      for each command_request: message_acknowledged (auto-sent, reply_to = its message_id),
      then command_result.
  peer_agent.py penguiflow-serve NAME N KIND
      answers with message.model_copy(update={"payload": ...}); KIND: text, dict, budget.
  peer_agent.py observe FORMAT DEST N SECONDS SUFFIX
      a mirror observer: reads N copies on DEST (a wildcard topic) whose destination ends with
      SUFFIX (the agents of one test: every mirror on a broker copies all its traffic) with FORMAT's own parser
      (civitas, vox or penguiflow) and prints, for each, the fields an observer groups a
      conversation by, as that parser read them.
  peer_agent.py penguiflow-ask NAME RECIPIENT TEXT
      one PenguiFlow message (tenant, deadline_s, caller meta) to RECIPIENT; prints the answer.

Environment: STOMP_PORT, STOMP_USER, STOMP_PASSWORD, STOMP_VHOST, and the bridge's
destinations CIVITAS_INBOX (with {agent}), CIVITAS_INGRESS, VOX_INBOX, VOX_INGRESS,
PF_INBOX, PF_INGRESS."""

import json
import os
import queue
import sys
import time
import uuid
from datetime import datetime, timezone
from typing import Optional
from uuid import UUID

import stomp
from pydantic import BaseModel, ConfigDict

sys.path.insert(0, os.path.join(os.environ.get("SAB_VENV", ".venv"), "civitas-src"))
from civitas.messages import Message  # noqa: E402
from civitas.serializer import JsonSerializer  # noqa: E402
from penguiflow.types import FinalAnswer, Headers, Message as PenguiMessage  # noqa: E402

# How long a subscription waits for the broker's RECEIPT: an event, bounded only to end a test
# whose broker never answers, and sized for a busy machine (as RECEIPT_TIMEOUT in tests/common).
RECEIPT_TIMEOUT = 60


def uuid7():
    """A UUIDv7, lowercase and hyphenated, as Civitas makes its ids. Civitas's own generator is
    private; this is civitas_stomp/ids.py's (which cannot be imported beside the bare civitas
    modules loaded above)."""
    millis = (time.time_ns() // 1_000_000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a, rand_b = (rand >> 62) & 0xFFF, rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=(millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b))


def span_id():
    """A span id as Civitas makes one: 16 hex characters."""
    return os.urandom(8).hex()


class VOXMessage(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)
    message_id: UUID
    message_source: str
    emitted_at: str
    source: UUID
    target: UUID
    type: str
    details: dict = {}
    reply_to: Optional[UUID] = None


class Collector(stomp.ConnectionListener):
    def __init__(self):
        self.frames = queue.Queue()
        self.receipts = queue.Queue()

    def on_message(self, frame):
        self.frames.put(frame)

    def on_receipt(self, frame):
        self.receipts.put(frame.headers.get("receipt-id"))


def connect():
    collector = Collector()
    conn = stomp.Connection(
        [("127.0.0.1", int(os.environ["STOMP_PORT"]))], heartbeats=(0, 0), vhost=os.environ.get("STOMP_VHOST", "/")
    )
    conn.set_listener("", collector)
    conn.connect(os.environ["STOMP_USER"], os.environ["STOMP_PASSWORD"], wait=True)
    return conn, collector


def subscribe(conn, collector, dest, sid):
    # Waits for the receipt: the subscription is in place before anyone is told we listen.
    conn.subscribe(dest, id=sid, ack="auto", headers={"receipt": f"sub-{sid}"})
    assert collector.receipts.get(timeout=RECEIPT_TIMEOUT) == f"sub-{sid}"


def ready(what):
    print(json.dumps({"subscribed": what}), flush=True)


def out(obj):
    print(json.dumps(obj), flush=True)


def civitas_send(conn, message, dest):
    conn.send(
        os.environ["CIVITAS_INGRESS"] if dest is None else dest,
        JsonSerializer().serialize(message),
        headers={"content-type": "application/json", "persistent": "true"},
    )


def civitas_ask(name, recipient, n, texts):
    conn, collector = connect()
    asks = []
    subscribe(conn, collector, os.environ["CIVITAS_INBOX"].replace("{agent}", name), "1")
    for i in range(n):
        reply_to = f"_reply.{uuid7()}"
        payload = {"message": texts[i % len(texts)]}
        if os.environ.get("CIVITAS_CONTEXT"):
            payload["context_name"] = os.environ["CIVITAS_CONTEXT"]
        msg = Message(
            type="message",
            sender=name,
            recipient=recipient,
            payload=payload,
            correlation_id=uuid7(),
            reply_to=reply_to,
            trace_id=uuid.uuid4().hex,
            span_id=span_id(),
        )
        asks.append(msg)
    ready(name)
    out(
        {
            "asks": [
                {"correlation_id": m.correlation_id, "reply_to": m.reply_to, "text": m.payload["message"]} for m in asks
            ]
        }
    )
    for msg in asks:
        civitas_send(conn, msg, None)
    for _ in range(n):
        frame = collector.frames.get(timeout=30)
        reply = JsonSerializer().deserialize(frame.body if isinstance(frame.body, bytes) else frame.body.encode())
        out({"destination": frame.headers["destination"], "reply": reply.to_dict()})
    conn.disconnect()


def civitas_serve(name, n, mode):
    conn, collector = connect()
    subscribe(conn, collector, os.environ["CIVITAS_INBOX"].replace("{agent}", name), "1")
    ready(name)
    for _ in range(n):
        frame = collector.frames.get(timeout=30)
        body = frame.body if isinstance(frame.body, bytes) else frame.body.encode()
        original = JsonSerializer().deserialize(body)
        out({"received": original.to_dict()})
        if mode == "silent":
            continue
        if mode == "stream":
            # stream_reply(): civitas.stream.chunk frames with seq 0.., then civitas.stream.end
            # (AgentProcess._emit_stream), all with the ask's correlation_id.
            tokens = ["sunny", ", ", "21 C"]
            for seq, kind, payload in [(i, "civitas.stream.chunk", {"token": t}) for i, t in enumerate(tokens)] + [
                (len(tokens), "civitas.stream.end", {})
            ]:
                frame_msg = Message(
                    type=kind,
                    sender=name,
                    recipient=original.reply_to or original.sender,
                    payload=payload,
                    correlation_id=original.correlation_id,
                    seq=seq,
                    trace_id=original.trace_id,
                    span_id=span_id(),
                    parent_span_id=original.span_id,
                )
                civitas_send(conn, frame_msg, None)
            continue
        text = original.payload.get("message")
        payload = {
            "plain": {"message": f"answer: {text}"},
            "typed": {"type": "weather_report", "message": f"answer: {text}"},
            "error": {"status": "error", "error": f"cannot do {text}"},
        }[mode]
        # AgentProcess.reply_to(original, payload), as reply() builds it.
        reply = Message(
            type=payload.get("type", "reply"),
            sender=name,
            recipient=original.reply_to or original.sender,
            payload=payload,
            correlation_id=original.correlation_id,
            trace_id=original.trace_id,
            span_id=span_id(),
            parent_span_id=original.span_id,
        )
        civitas_send(conn, reply, None)
    conn.disconnect()


def now_iso():
    return datetime.now(timezone.utc).isoformat()


def vox_serve(name, me, n):
    conn, collector = connect()
    subscribe(conn, collector, os.environ["VOX_INBOX"].replace("{agent}", name), "1")
    ready(name)
    for _ in range(n):
        frame = collector.frames.get(timeout=30)
        request = VOXMessage.model_validate_json(frame.body)
        out({"received": json.loads(request.model_dump_json())})

        def send(kind, details):
            msg = VOXMessage(
                message_id=uuid.uuid4(),
                message_source="vox-agent",
                emitted_at=now_iso(),
                source=UUID(me),
                target=request.source,
                type=kind,
                details=details,
                reply_to=request.message_id,
            )
            conn.send(
                os.environ["VOX_INGRESS"],
                msg.model_dump_json(),
                headers={"content-type": "application/json", "persistent": "true"},
            )

        send("message_acknowledged", {})  # MSG_ACKNOWLEDGED, auto-sent on receipt
        send("command_result", {"message": f"done: {request.details.get('message')}"})
    conn.disconnect()


def penguiflow_serve(name, n, kind):
    conn, collector = connect()
    subscribe(conn, collector, os.environ["PF_INBOX"].replace("{agent}", name), "1")
    ready(name)
    for _ in range(n):
        frame = collector.frames.get(timeout=30)
        message = PenguiMessage.model_validate_json(frame.body)
        out({"received": json.loads(message.model_dump_json())})
        payload = {
            "text": f"answer: {message.payload}",
            "dict": {"plan": ["fly", "walk"], "for": message.payload},
            "budget": FinalAnswer(text="Hop budget exhausted"),
        }[kind]
        reply = message.model_copy(update={"payload": payload})
        conn.send(
            os.environ["PF_INGRESS"],
            reply.model_dump_json(),
            headers={"content-type": "application/json", "persistent": "true"},
        )
    conn.disconnect()


def penguiflow_ask(name, recipient, text):
    conn, collector = connect()
    subscribe(conn, collector, os.environ["PF_INBOX"].replace("{agent}", name), "1")
    ready(name)
    ask = PenguiMessage(
        payload=text,
        headers=Headers(tenant="acme", topic="travel", priority=2),
        deadline_s=time.time() + 600,
        meta={"message_id": str(uuid.uuid4()), "sender": name, "recipient": recipient, "session": "s-42"},
    )
    conn.send(
        os.environ["PF_INGRESS"],
        ask.model_dump_json(),
        headers={"content-type": "application/json", "persistent": "true"},
    )
    frame = collector.frames.get(timeout=30)
    answer = PenguiMessage.model_validate_json(frame.body)
    out({"asked": json.loads(ask.model_dump_json()), "answer": json.loads(answer.model_dump_json())})
    conn.disconnect()


def observed(kind, body):
    """What an observer reads from a mirror copy, through the framework's own parser."""
    raw = body if isinstance(body, bytes) else body.encode()
    if kind == "civitas":
        m = JsonSerializer().deserialize(raw)
        p = m.payload
        return {
            "sender": m.sender,
            "recipient": m.recipient,
            "message": p.get("message"),
            "type": m.type,
            "correlation_id": m.correlation_id,
            "trace_id": m.trace_id,
            **{k: p.get(k) for k in ROUTING},
        }
    if kind == "vox":
        m = VOXMessage.model_validate_json(raw)
        d = m.details
        return {
            "sender": d.get("sender"),
            "recipient": d.get("recipient"),
            "message": d.get("message"),
            "type": m.type,
            "source": str(m.source),
            "target": str(m.target),
            **{k: d.get(k) for k in ROUTING},
        }
    m = PenguiMessage.model_validate_json(raw)
    text = m.payload["text"] if isinstance(m.payload, dict) and "text" in m.payload else m.payload
    if isinstance(m.payload, dict) and "text" in m.payload:
        FinalAnswer.model_validate(m.payload)
    return {
        "sender": m.meta.get("sender"),
        "recipient": m.meta.get("recipient"),
        "message": text,
        "trace_id": m.trace_id,
        **{k: m.meta.get(k) for k in ROUTING},
    }


ROUTING = ["tool_id", "route_response_to", "context_name", "conversation"]


def observe(kind, dest, n, seconds, suffix):
    conn, collector = connect()
    subscribe(conn, collector, dest, "1")
    ready(dest)
    deadline = time.time() + seconds
    for _ in range(n):
        frame = collector.frames.get(timeout=max(0.1, deadline - time.time()))
        while not frame.headers["destination"].endswith(suffix):
            frame = collector.frames.get(timeout=max(0.1, deadline - time.time()))
        seen = observed(kind, frame.body)
        out(
            dict(
                seen,
                destination=frame.headers["destination"],
                header_conversation=frame.headers.get("bridge-conversation"),
            )
        )
    conn.disconnect()


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "civitas-ask":
        civitas_ask(args[0], args[1], int(args[2]), args[3:] or ["q"])
    elif mode == "civitas-serve":
        civitas_serve(args[0], int(args[1]), args[2])
    elif mode == "vox-serve":
        vox_serve(args[0], args[1], int(args[2]))
    elif mode == "penguiflow-serve":
        penguiflow_serve(args[0], int(args[1]), args[2])
    elif mode == "observe":
        observe(args[0], args[1], int(args[2]), float(args[3]), args[4])
    elif mode == "penguiflow-ask":
        penguiflow_ask(args[0], args[1], args[2])
    else:
        sys.exit(f"unknown mode {mode}")
