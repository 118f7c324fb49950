"""Conversations as traces, end to end (docs/OBSERVABILITY.md): a real bridge exporting OTLP to
a real Jaeger (scripts/jaeger.sh), Wise Agents agents as they behave on the wire, a Civitas
agent in a real Civitas runtime; the traces read back from Jaeger's query API, and the
bridge's own /conversations page rendered by a real headless Chromium."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest
from civitas import AgentProcess, Runtime, Supervisor
from civitas.messages import Message

import jaeger_testing
from civitas_stomp import bridge_components
from sab_testing import BridgeProcess, Broker, Names, QueueReader, WiseAgent, config_toml, free_port

# Skipped where Jaeger is not running, except in the whole suite (scripts/test.sh starts it).
pytestmark = pytest.mark.skipif(
    not jaeger_testing.available() and not os.environ.get("SAB_SUITE"),
    reason="Jaeger is not running (scripts/jaeger.sh start)",
)

TRACEPARENT = "00-{}-{}-01"


class Weather(AgentProcess):
    """A Civitas agent as its docs write one; it keeps the trace fields each message brought."""

    seen: ClassVar[list[tuple[str, str, str | None]]] = []

    async def handle(self, message: Message) -> Message | None:
        Weather.seen.append((message.trace_id, message.span_id, message.parent_span_id))
        return self.reply({"message": f"Sunny in {message.payload.get('message')}"})


def bridge(
    broker: Broker, names: Names, tmp: Path, agents: list[tuple[str, str, str]]
) -> tuple[BridgeProcess, int, str]:
    service = f"sab-test-{uuid.uuid4().hex[:8]}"
    port = free_port()
    traces = f'[traces]\nendpoint = "{jaeger_testing.OTLP_ENDPOINT}"\nservice_name = "{service}"\n'
    toml = config_toml(broker, names, agents, port, extra=traces)
    return BridgeProcess(toml, tmp), port, service


def ask_civitas(broker: Broker, names: Names, wa: WiseAgent, agent: str, text: str) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        runtime = Runtime(
            supervisor=Supervisor("root", children=[Weather(agent)]),
            components=bridge_components(
                inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        try:
            wa.send(agent, text, _context_name="Weather", _route_response_to=wa.name)
            return await asyncio.to_thread(wa.next_response, 60)
        finally:
            await runtime.stop()

    return asyncio.run(asyncio.wait_for(scenario(), 120))


def one(spans: dict[str, list[dict[str, Any]]], name: str) -> dict[str, Any]:
    found = spans.get(name, [])
    assert len(found) == 1, f"{name}: {len(found)} spans; names: {sorted(spans)}"
    return found[0]


def test_a_wise_agents_ask_of_a_civitas_agent_and_its_answer_are_one_trace(tmp_path: Path) -> None:
    broker = Broker()
    names = Names(broker)
    weather, caller = names.agent("Weather"), names.agent("Caller")
    proc, _, service = bridge(broker, names, tmp_path, [(weather, "civitas", "")])
    wa = WiseAgent(broker, caller)
    Weather.seen = []
    try:
        answer = ask_civitas(broker, names, wa, weather, "Paris")
    finally:
        wa.close()
    assert answer["_message"] == "Sunny in Paris"
    ((trace_id, span_id, _parent),) = Weather.seen
    assert len(trace_id) == 32 and len(span_id) == 16, "Civitas gets both ids, so that it continues the trace"

    def whole(trace: dict[str, Any]) -> bool:
        return len(trace.get("spans", [])) >= 5

    try:
        trace = jaeger_testing.wait_trace(trace_id, whole, timeout=60)
    finally:
        proc.stop()
    spans = jaeger_testing.spans_by_name(trace)
    ask = one(spans, f"process {broker.request_prefix}{weather}")
    invoke = one(spans, f"invoke_agent {weather}")
    sent = one(spans, f"send {names.inbox('civitas').replace('{agent}', weather)}")
    answered = one(spans, f"process {names.ingress('civitas')}")
    back = one(spans, f"send {broker.response_prefix}{caller}")
    assert jaeger_testing.parent_of(trace, ask) is None, "a Wise Agents ask carries no context: a new trace"
    assert jaeger_testing.parent_of(trace, invoke) == ask
    assert jaeger_testing.parent_of(trace, sent) == invoke
    assert sent["spanID"] == span_id, "the Civitas message carries the bridge's send span"
    assert jaeger_testing.parent_of(trace, answered) == invoke, "the answer joins its ask's trace"
    assert jaeger_testing.parent_of(trace, back) == answered
    assert jaeger_testing.tag(invoke, "gen_ai.operation.name") == "invoke_agent"
    assert jaeger_testing.tag(invoke, "gen_ai.provider.name") == "civitas"
    assert jaeger_testing.tag(invoke, "gen_ai.conversation.id") == "Weather"
    assert jaeger_testing.tag(ask, "messaging.system") == "activemq"
    assert jaeger_testing.tag(ask, "messaging.operation.type") == "process"
    assert jaeger_testing.service_of(trace, ask) == service


def test_a_dead_letter_continues_the_trace_its_traceparent_names_with_an_error_span(tmp_path: Path) -> None:
    broker = Broker()
    names = Names(broker)
    weather = names.agent("Weather")
    proc, port, _ = bridge(broker, names, tmp_path, [(weather, "civitas", "")])
    dead = QueueReader(broker, names.dest("dead"))
    trace_id, parent = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    try:
        dead.conn.send(
            f"{broker.request_prefix}{weather}",
            "!!python/object:nope {",
            headers={"traceparent": TRACEPARENT.format(trace_id, parent)},
        )
        _, headers = dead.next(60)
        kind = headers["bridge-error-kind"]
        assert kind == "hostile", "a YAML tag of Python's own is refused"
        trace = jaeger_testing.wait_trace(trace_id, lambda t: len(t.get("spans", [])) >= 1, timeout=60)
        page = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/conversations.json", timeout=10))
    finally:
        dead.close()
        proc.stop()
    (span,) = jaeger_testing.spans_by_name(trace)[f"process {broker.request_prefix}{weather}"]
    assert jaeger_testing.tag(span, "error.type") == kind
    assert jaeger_testing.tag(span, "otel.status_code") == "ERROR"
    assert span["references"][0]["spanID"] == parent, "the context that arrived is continued"
    (conversation,) = [c for c in page["conversations"] if c["trace_id"] == trace_id]
    assert [e["kind"] for e in conversation["events"]] == ["dead_letter"]
    assert conversation["events"][0]["detail"].startswith("hostile: ")


def test_a_hostile_traceparent_is_ignored_and_a_new_trace_started(tmp_path: Path) -> None:
    broker = Broker()
    names = Names(broker)
    weather, caller = names.agent("Weather"), names.agent("Caller")
    proc, _, _ = bridge(broker, names, tmp_path, [(weather, "civitas", "")])
    reader = QueueReader(broker, names.inbox("civitas").replace("{agent}", weather))
    zeros = TRACEPARENT.format("0" * 32, "0" * 16)
    try:
        for hostile in [
            zeros,
            "ff-" + "a" * 32 + "-" + "b" * 16 + "-01",
            "00-" + "A" * 32 + "-" + "b" * 16 + "-01",
            "x" * 5000,
        ]:
            body = "!wiseagents.WiseAgentMessage\n_message: hi\n_sender: " + caller + "\n_message_type: QUERY\n"
            reader.conn.send(f"{broker.request_prefix}{weather}", body, headers={"traceparent": hostile})
            sent, headers = reader.next(60)
            carried = json.loads(sent)["trace_id"]
            assert len(carried) == 32 and carried not in hostile.lower(), hostile[:80]
            assert headers["traceparent"].split("-")[1] == carried
    finally:
        reader.close()
        proc.stop()


def test_the_conversations_page_draws_a_conversation_across_two_frameworks_in_a_browser(tmp_path: Path) -> None:
    import browser_testing

    chromium = browser_testing.chromium()
    if chromium is None and not os.environ.get("SAB_SUITE"):
        pytest.skip("chromium is not installed (scripts/browser.sh)")
    broker = Broker()
    names = Names(broker)
    weather, caller = names.agent("Weather"), names.agent("Caller")
    proc, port, _ = bridge(broker, names, tmp_path, [(weather, "civitas", "")])
    wa = WiseAgent(broker, caller)
    dead = QueueReader(broker, names.dest("dead"))
    Weather.seen = []
    try:
        assert ask_civitas(broker, names, wa, weather, "Oslo")["_message"] == "Sunny in Oslo"
        dead.conn.send(f"{broker.request_prefix}{weather}", "not: [yaml")
        dead.next(60)
        url = f"http://127.0.0.1:{port}/conversations"
        dom = browser_testing.rendered_dom(url, wait_for=".dead-letter")
        browser_testing.screenshot(url, tmp_path / "page.png")
    finally:
        wa.close()
        dead.close()
        proc.stop()
    ((trace_id, _, _),) = Weather.seen
    doc = browser_testing.parse(dom)
    cards = doc.sections()
    ours = [c for c in cards if c.trace_id == trace_id]
    assert len(ours) == 1, f"the conversation of {trace_id} on the page: {[c.trace_id for c in cards]}"
    assert ours[0].participants == [(caller, "wiseagents"), (weather, "civitas")]
    assert ours[0].events == [("ask", caller, weather), ("answer", weather, caller)]
    assert any(e[0] == "dead_letter" for c in cards for e in c.events), "the dead letter is marked"
