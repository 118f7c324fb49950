"""A2A 0.3 both ways through the bridge, with the official a2a-sdk 0.3.7 (the version Solace
Agent Mesh pins), run as processes from its own virtualenv: its client
(adapters/a2a/sdk03/client.py) asking Wise Agents agents (sab_testing.WiseAgent) that the bridge
serves, and its server (adapters/a2a/sdk03/agent.py) as a proxied agent that Wise Agents agents
ask; the real bridge binary on ActiveMQ Classic, RabbitMQ and Artemis.

What the bridge promises a 0.3 client (docs/A2A.md, "A2A 0.3"): the card it resolves names the
0.3 JSON-RPC interface (``url``, ``preferredTransport``, ``protocolVersion``) beside 1.0's;
``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel`` and ``tasks/resubscribe``
without ``A2A-Version`` are served in 0.3's shapes (``kind``, lower-case states, ``final``) by the
same tasks and stage as 1.0's: the Wise Agents agent gets the same QUERY, its RESPONSE completes
the task, a cancel cancels it. An agent whose card says only 0.3 is called in 0.3
(``message/stream`` when it streams, else ``message/send``; no ``A2A-Version``) and its answer
is the asker's RESPONSE. Nothing waits by sleeping: the test reads the client's steps as
it prints them, each within the suite's bound."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from a2a_testing import WAIT, A2ABridge, AgentSubprocess, OutboundBridge, a2a_agent
from sab_testing import REPO, Names, WiseAgent, wa_dump

# The virtualenv scripts/python-env.sh makes beside the tests' own, with a2a-sdk 0.3.7.
PYTHON_03 = Path(sys.executable).parent.parent / "a2a-0.3" / "bin" / "python"
CLIENT = REPO / "adapters" / "a2a" / "sdk03" / "client.py"
AGENT = REPO / "adapters" / "a2a" / "sdk03" / "agent.py"


class Client03:
    """The 0.3 client running one scenario; its steps read as it prints them."""

    def __init__(self, kind: str, url: str, text: str) -> None:
        self.process = subprocess.Popen(
            [str(PYTHON_03), str(CLIENT), kind, url, text],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.steps: Queue[dict[str, Any] | None] = Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen: list[dict[str, Any]] = []

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.steps.put(json.loads(line))
        self.steps.put(None)

    def next(self) -> dict[str, Any]:
        try:
            step = self.steps.get(timeout=WAIT)
        except Empty:
            raise AssertionError(f"the 0.3 client said nothing in {WAIT} s after {self.seen}") from None
        if step is None:
            self.process.wait(WAIT)
            assert self.process.stderr is not None
            raise AssertionError(f"the 0.3 client ended after {self.seen}: {self.process.stderr.read()}")
        self.seen.append(step)
        return step

    def until(self, step: str) -> list[dict[str, Any]]:
        """The steps up to and including the next ``step``."""
        steps = [self.next()]
        while steps[-1]["step"] != step:
            steps.append(self.next())
        return steps

    def go_on(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(WAIT)


def start(broker, tmp_path, closing, answer) -> tuple[A2ABridge, WiseAgent, str]:
    names = Names(broker)
    echo = names.agent("Echo")
    agent = WiseAgent(broker, echo, answer)
    closing(agent, agent.close)
    bridge = A2ABridge(broker, names, tmp_path, [echo])
    closing(bridge, bridge.stop)
    return bridge, agent, echo


def run(closing, kind: str, url: str, text: str) -> Client03:
    client = Client03(kind, url, text)
    closing(client, client.close)
    return client


def reply(agent: WiseAgent, request: dict[str, Any], text: str) -> None:
    answer = dict(request, _message=text, _message_type="RESPONSE", _sender=agent.name)
    agent.conn.send(f"{agent.broker.response_prefix}{request['_sender']}", wa_dump(answer))


def texts(task: dict[str, Any]) -> list[str]:
    return [p["text"] for a in task.get("artifacts", []) for p in a["parts"] if p.get("kind") == "text"]


def test_a_0_3_client_reads_the_card_and_its_send_is_answered_by_the_wise_agent(broker, tmp_path, closing):
    bridge, agent, echo = start(broker, tmp_path, closing, lambda m: f"echo: {m['_message']}")
    client = run(closing, "send", bridge.agent_url(echo), "hello 0.3")
    card = client.next()["card"]
    assert (card["url"], card["preferredTransport"], card["protocolVersion"]) == (
        bridge.agent_url(echo),
        "JSONRPC",
        "0.3",
    ), card
    [sent, read, _] = client.until("done")
    task = sent["task"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed", sent
    assert texts(task) == ["echo: hello 0.3"], task
    request = agent.next_request(WAIT)
    assert (request["_message"], request["_message_type"], request["_sender"]) == (
        "hello 0.3",
        "QUERY",
        bridge.reply_agent,
    )
    assert read["task"]["id"] == task["id"] and read["task"]["status"]["state"] == "completed", read


def test_a_0_3_stream_has_0_3_s_events_and_its_last_is_final(broker, tmp_path, closing):
    bridge, _, echo = start(broker, tmp_path, closing, lambda m: f"echo: {m['_message']}")
    client = run(closing, "stream", bridge.agent_url(echo), "streamed")
    steps = client.until("done")[1:]
    events = [s for s in steps if s["step"] == "event"]
    updates = [e["update"] for e in events if e["update"]]
    kinds = [u["kind"] for u in updates]
    assert "artifact-update" in kinds and kinds[-1] == "status-update", steps
    assert updates[-1]["final"] is True and updates[-1]["status"]["state"] == "completed", steps
    assert all(u["final"] is False for u in updates[:-1] if u["kind"] == "status-update"), steps
    assert texts(events[-1]["task"]) == ["echo: streamed"], steps
    assert steps[-2]["step"] == "read" and steps[-2]["task"]["status"]["state"] == "completed", steps


def test_a_0_3_cancel_cancels_the_task_the_agent_was_asked(broker, tmp_path, closing):
    bridge, agent, echo = start(broker, tmp_path, closing, None)
    client = run(closing, "cancel", bridge.agent_url(echo), "never answered")
    steps = client.until("done")[1:]
    first = steps[0]["task"]
    assert first["status"]["state"] in ("submitted", "working"), steps
    assert agent.next_request(WAIT)["_message"] == "never answered"
    canceled = next(s for s in steps if s["step"] == "canceled")["task"]
    assert (canceled["id"], canceled["status"]["state"]) == (first["id"], "canceled"), steps
    assert steps[-2]["task"]["status"]["state"] == "canceled", steps


def test_a_0_3_client_resubscribes_to_a_task_it_left_and_sees_it_end(broker, tmp_path, closing):
    bridge, agent, echo = start(broker, tmp_path, closing, None)
    client = run(closing, "resubscribe", bridge.agent_url(echo), "answered later")
    client.next()  # the card
    left = client.next()
    assert left["step"] == "event" and left["task"]["status"]["state"] in ("submitted", "working"), left
    request = agent.next_request(WAIT)
    back = client.next()
    assert back["step"] == "resubscribed" and back["task"]["id"] == left["task"]["id"], back
    reply(agent, request, "here it is")
    client.go_on()
    steps = client.until("done")
    last = [s for s in steps if s["step"] == "resubscribed"][-1]
    assert last["update"]["kind"] == "status-update" and last["update"]["final"] is True, steps
    assert texts(last["task"]) == ["here it is"], steps


@pytest.mark.parametrize("mode", ["streaming", "blocking"])
def test_a_wise_agent_asks_an_a2a_0_3_agent_which_is_called_in_0_3(broker, tmp_path, closing, mode):
    names = Names(broker)
    asker = WiseAgent(broker, names.agent("Asker"))
    closing(asker, asker.close)
    # The a2a-sdk 0.3.7 echo agent in a process of its own.
    agent = AgentSubprocess(names.agent("Old"), [str(PYTHON_03), str(AGENT), names.agent("Old"), mode])
    closing(agent, agent.kill)
    bridge = OutboundBridge(broker, names, tmp_path, [a2a_agent(names.agent("Old"), agent.url)])
    closing(bridge, bridge.stop)

    asker.send(names.agent("Old"), "hello from 1.0's society", _context_name="default", _route_response_to=asker.name)
    want = "message/stream" if mode == "streaming" else "message/send"
    assert agent.wait_line("call ") == f"call {want} -", "called in 0.3, without A2A-Version"
    assert agent.wait_line("received ") == "received hello from 1.0's society"
    answer = asker.next_response(WAIT)
    assert (answer["_message_type"], answer["_message"]) == ("RESPONSE", "echo: hello from 1.0's society"), answer
    assert answer["_sender"] == names.agent("Old"), answer
