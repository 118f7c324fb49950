"""Helpers for the adapters' end-to-end tests (tests only: no adapter package ships them): the
bridge as a real ``stomp-agent-bridge run`` process with a per-test configuration (as
tests/common/bridge.rs does it), and Wise Agents agents as the real ones behave on the wire
(stomp.py, STOMP 1.1, heart-beat 60000, ack:auto, YAML ``!wiseagents.WiseAgentMessage`` read
with PyYAML's full Loader), as tests/e2e/wa_agent.py. On the tests' path through
``pythonpath`` in adapters/pyproject.toml.

Environment: ``SAB_BRIDGE_BIN`` (default ``$CARGO_TARGET_DIR`` or ``<repo>/target``, then
``debug/stomp-agent-bridge``),
``SAB_TEST_STOMP_PORT`` / ``_LOGIN`` / ``_PASSCODE`` (default ActiveMQ on 61613, admin/admin)."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import stomp

from sab_stomp import LinkConfig

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Broker:
    port: int = int(os.environ.get("SAB_TEST_STOMP_PORT", "61613"))
    login: str = os.environ.get("SAB_TEST_STOMP_LOGIN", "admin")
    passcode: str = os.environ.get("SAB_TEST_STOMP_PASSCODE", "admin")
    request_prefix: str = "/queue/request/"
    response_prefix: str = "/queue/response/"
    #: which broker it is: "activemq", "rabbitmq" or "artemis" (for the few tests that must know).
    kind: str = "activemq"

    @classmethod
    def rabbitmq(cls) -> Broker:
        """RabbitMQ's STOMP plugin as scripts/brokers.sh starts it: no `/` in queue names."""
        return cls(
            port=int(os.environ.get("SAB_TEST_RABBITMQ_PORT", "61623")),
            login="guest",
            passcode="guest",
            request_prefix="/queue/request.",
            response_prefix="/queue/response.",
            kind="rabbitmq",
        )

    @classmethod
    def artemis(cls) -> Broker:
        """ActiveMQ Artemis as scripts/brokers.sh starts it (Wise Agents' own queue names)."""
        return cls(port=int(os.environ.get("SAB_TEST_ARTEMIS_PORT", "61633")), kind="artemis")

    def link(self, **overrides: Any) -> LinkConfig:
        cfg = LinkConfig(port=self.port, login=self.login, passcode=self.passcode, heartbeats=(2000, 2000))
        for k, v in overrides.items():
            setattr(cfg, k, v)
        return cfg


class Names:
    """Agent names and destinations no other test uses."""

    def __init__(self, broker: Broker | None = None) -> None:
        self.uid = f"{os.getpid()}x{uuid.uuid4().hex[:8]}"
        self.broker = broker or Broker()
        # The bridge's own name (`wiseagents.reply_agent`): its response queue is consumed by
        # this test's bridge alone, so that test runs side by side never take each other's answers.
        self.reply_agent = f"_bridge_{self.uid}"

    def agent(self, base: str) -> str:
        return f"{base}_{self.uid}"

    def dest(self, what: str) -> str:
        return f"/queue/sab.py.{self.uid}.{what}"

    def request(self, agent: str) -> str:
        return f"{self.broker.request_prefix}{agent}"

    def response(self, agent: str) -> str:
        return f"{self.broker.response_prefix}{agent}"

    def inbox(self, protocol: str) -> str:
        return self.dest(f"{protocol}.in.{{agent}}")

    def ingress(self, protocol: str) -> str:
        return self.dest(f"{protocol}.ingress")


def config_toml(
    broker: Broker,
    names: Names,
    agents: list[tuple[str, str, str]],
    http_port: int,
    wiseagents: Sequence[str] = (),
    contexts: Sequence[str] = (),
    reply_agent: str | None = None,
    extra: str = "",
    https: tuple[Path, Path] | None = None,
) -> str:
    """A bridge configuration; ``agents`` are (name, protocol, extra TOML lines); ``contexts``
    are the Wise Agents contexts other frameworks may name (``wiseagents.contexts``: the
    bridge writes no other, docs/MAPPING.md); ``reply_agent`` is ``wiseagents.reply_agent``
    (the test's own, ``names.reply_agent``, when None); ``extra`` is TOML appended at the end, after
    the ``[[agents]]`` tables (whole tables, such as ``[a2a]``); ``https`` is the listener's
    (certificate, key): HTTPS only."""
    native = ", ".join(f'"{a}"' for a in wiseagents)
    known = ", ".join(f'"{c}"' for c in contexts)
    reply = names.reply_agent if reply_agent is None else reply_agent
    https_keys = "" if https is None else f'cert_file = "{https[0]}"\nkey_file = "{https[1]}"\n'
    text = f"""[broker]
url = "stomp://127.0.0.1:{broker.port}"
login = "{broker.login}"
passcode = "{broker.passcode}"
vhost = "/"
heartbeat_ms = [2000, 2000]
reconnect_max_ms = 1000

[wiseagents]
request_prefix = "{broker.request_prefix}"
response_prefix = "{broker.response_prefix}"
default_context = "default"
reply_agent = "{reply}"
agents = [{native}]
contexts = [{known}]

[protocols.civitas]
inbox = "{names.inbox("civitas")}"
ingress = "{names.ingress("civitas")}"

[protocols.vox]
inbox = "{names.inbox("vox")}"
ingress = "{names.ingress("vox")}"
namespace = "0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10"

[protocols.penguiflow]
inbox = "{names.inbox("penguiflow")}"
ingress = "{names.ingress("penguiflow")}"
tenant = "acme"

[delivery]
dead_letter = "{names.dest("dead")}"
in_flight = 16
shutdown_timeout_ms = 5000
receipt_timeout_ms = 5000

[http]
listen = "127.0.0.1:{http_port}"
{https_keys}
[log]
format = "json"
"""
    for name, protocol, lines in agents:
        text += f'\n[[agents]]\nname = "{name}"\nprotocol = "{protocol}"\n{lines}\n'
    if extra:
        text += "\n" + extra
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class BridgeProcess:
    """``stomp-agent-bridge run --config FILE``; started once it logged "bridge ready"."""

    def __init__(self, toml: str, tmp: Path) -> None:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        binary = Path(os.environ.get("SAB_BRIDGE_BIN", target / "debug/stomp-agent-bridge"))
        assert binary.exists(), f"no bridge binary at {binary}: cargo build first"
        config = tmp / "bridge.toml"
        config.write_text(toml)
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [str(binary), "run", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_log("bridge ready", 30)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if os.environ.get("SAB_E2E_LOGS"):
                print("bridge:", line, end="", flush=True)
            self.lines.put(line)

    def wait_log(self, needle: str, secs: float) -> str:
        deadline = time.monotonic() + secs
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the bridge did not log {needle!r} within {secs} s") from None
            self.log.append(line)
            if needle in line:
                return line

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(15)

    def kill(self) -> int:
        """``kill -9``: no clean stop; what it took from the broker and did not acknowledge is
        the broker's again (redelivered to the next consumer)."""
        self.proc.kill()
        return self.proc.wait(15)


def start_bridge(
    broker: Broker,
    names: Names,
    agents: list[tuple[str, str, str]],
    tmp: Path,
    wiseagents: Sequence[str] = (),
    contexts: Sequence[str] = (),
) -> BridgeProcess:
    return BridgeProcess(config_toml(broker, names, agents, free_port(), wiseagents, contexts), tmp)


class QueueReader(stomp.ConnectionListener):
    """The frames sent to ``destination`` (a dead-letter queue, say) as they arrive: stomp.py,
    ack:auto, subscribed (its RECEIPT awaited) before this returns; ``next(secs)`` is the next
    frame's body and headers."""

    def __init__(self, broker: Broker, destination: str) -> None:
        self.destination = destination
        self.frames: queue.Queue[tuple[str, dict[str, str]]] = queue.Queue()
        self._subscribed = threading.Event()
        self.conn = stomp.Connection([("127.0.0.1", broker.port)], heartbeats=(60000, 60000), vhost="/")
        self.conn.set_listener("", self)
        self.conn.connect(broker.login, broker.passcode, wait=True)
        self.conn.subscribe(destination, id="reader", ack="auto", receipt="sub-reader")
        assert self._subscribed.wait(10), f"no RECEIPT for SUBSCRIBE {destination}"

    def on_receipt(self, frame: Any) -> None:
        if frame.headers.get("receipt-id") == "sub-reader":
            self._subscribed.set()

    def on_message(self, frame: Any) -> None:
        self.frames.put((frame.body, dict(frame.headers)))

    def next(self, secs: float = 30) -> tuple[str, dict[str, str]]:
        try:
            return self.frames.get(timeout=secs)
        except queue.Empty:
            raise AssertionError(f"nothing on {self.destination} within {secs} s") from None

    def close(self) -> None:
        try:
            self.conn.disconnect()
        except Exception:  # noqa: BLE001
            pass


# -- Wise Agents agents -------------------------------------------------------------------
KEYS = ["_context_name", "_message", "_message_type", "_route_response_to", "_sender", "_tool_id"]


def _yaml() -> Any:
    import yaml

    class WiseAgentMessage(yaml.YAMLObject):
        yaml_tag = "!wiseagents.WiseAgentMessage"
        yaml_loader = yaml.Loader

    return yaml, WiseAgentMessage


def wa_dump(fields: dict[str, Any]) -> str:
    yaml, cls = _yaml()
    message = cls()
    message.__dict__.update({k: fields.get(k) for k in KEYS})
    text: str = yaml.dump(message)
    return text


def wa_load(body: bytes | str) -> dict[str, Any]:
    yaml, _ = _yaml()  # defining the class registers its tag on yaml.Loader
    message = yaml.load(body, Loader=yaml.Loader)
    assert type(message).__name__ == "WiseAgentMessage", type(message)
    return {k: message.__dict__[k] for k in KEYS}  # a missing key is a KeyError, as in Wise Agents


class WiseAgent(stomp.ConnectionListener):
    """A Wise Agents agent named ``name``: it answers requests on its request queue with
    ``answer(request) -> text`` (RESPONSE to ``/queue/response/<_sender>`` echoing _tool_id,
    _context_name, _route_response_to), and can ask another agent and wait for the answer."""

    def __init__(self, broker: Broker, name: str, answer: Any = None) -> None:
        self.name = name
        self.answer = answer
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: queue.Queue[dict[str, Any]] = queue.Queue()
        self.conn = stomp.Connection([("127.0.0.1", broker.port)], heartbeats=(60000, 60000), vhost="/")
        self.conn.set_listener("", self)
        self.conn.connect(broker.login, broker.passcode, wait=True)
        self.broker = broker
        self._subscribe(f"{broker.request_prefix}{name}", "req")
        self._subscribe(f"{broker.response_prefix}{name}", "resp")

    def _subscribe(self, destination: str, sub_id: str) -> None:
        done = threading.Event()
        self._receipt = ("sub-" + sub_id, done)
        self.conn.subscribe(destination, id=sub_id, ack="auto", receipt="sub-" + sub_id)
        assert done.wait(10), f"no RECEIPT for SUBSCRIBE {destination}"

    def on_receipt(self, frame: Any) -> None:
        rid, event = self._receipt
        if frame.headers.get("receipt-id") == rid:
            event.set()

    def on_message(self, frame: Any) -> None:
        message = wa_load(frame.body)
        if frame.headers.get("subscription") == "resp":
            self.responses.put(message)
            return
        self.requests.put(message)
        if self.answer is not None:
            reply = dict(message, _message=self.answer(message), _message_type="RESPONSE", _sender=self.name)
            self.conn.send(f"{self.broker.response_prefix}{message['_sender']}", wa_dump(reply))

    def send(self, to: str, text: str, **fields: Any) -> None:
        body = {"_message": text, "_sender": self.name, "_message_type": "QUERY", **fields}
        self.conn.send(f"{self.broker.request_prefix}{to}", wa_dump(body))

    def next_response(self, secs: float = 30) -> dict[str, Any]:
        return self.responses.get(timeout=secs)

    def next_request(self, secs: float = 30) -> dict[str, Any]:
        return self.requests.get(timeout=secs)

    def close(self) -> None:
        try:
            self.conn.disconnect()
        except Exception:  # noqa: BLE001
            pass
