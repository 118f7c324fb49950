"""PenguiFlow flows (nodes, create(), flow.run()) with BridgeBus as their message_bus and
BridgeInbox as their source, through a running stomp-agent-bridge, to Wise Agents agents
and back."""

from __future__ import annotations

import asyncio
import json

from penguiflow import Node, create
from penguiflow.bus import BusEnvelope
from penguiflow.types import FinalAnswer, Headers, Message

from penguiflow_stomp import BridgeBus, BridgeInbox, envelope_json
from sab_stomp import AsyncLink
from sab_testing import Names, WiseAgent, start_bridge


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


async def serve(flow, agent, broker, names, bus=None):
    """The flow joined to the bridge: its bus publishes to the ingress, its inbox feeds it."""
    bus = bus or BridgeBus(AsyncLink(broker.link(), name="penguiflow"), names.ingress("penguiflow"))
    inbox = BridgeInbox(flow, agent, bus, inbox=names.inbox("penguiflow"), tenant="acme")
    return bus, inbox


def wise_agents_asks(broker, tmp_path, make_flow):
    names = Names(broker)
    planner, caller = names.agent("Planner"), names.agent("LLMAgent")
    bridge = start_bridge(broker, names, [(planner, "penguiflow", "")], tmp_path)
    wa = WiseAgent(broker, caller)

    async def scenario():
        bus = BridgeBus(AsyncLink(broker.link(), name="penguiflow"), names.ingress("penguiflow"))
        flow = make_flow(bus)
        flow.run()
        _, inbox = await serve(flow, planner, broker, names, bus)
        await inbox.start()
        try:
            wa.send(planner, "3 days in Rome", _tool_id="call_9", _context_name="Trips", _route_response_to="User")
            return await asyncio.to_thread(wa.next_response, 30)
        finally:
            await inbox.stop()
            await flow.stop()

    try:
        return run(scenario()), planner
    finally:
        wa.close()
        bridge.stop()


def test_a_wise_agents_agent_asks_a_penguiflow_flow_and_its_final_answer_comes_back_routed(broker, tmp_path):
    runs: list[str] = []

    async def plan(msg: Message, ctx) -> Message:
        # As PenguiFlow's docs write a node: the answer is a model_copy of the request.
        runs.append(msg.trace_id)
        return msg.model_copy(update={"payload": FinalAnswer(text=f"Plan: {msg.payload}")})

    def make_flow(bus):
        return create(Node(plan, name="plan").to(), message_bus=bus)

    reply, planner = wise_agents_asks(broker, tmp_path, make_flow)
    assert reply["_message"] == "Plan: 3 days in Rome"
    assert reply["_message_type"] == "RESPONSE" and reply["_sender"] == planner
    assert (reply["_tool_id"], reply["_context_name"], reply["_route_response_to"]) == ("call_9", "Trips", "User")
    # PenguiFlow runs a node that returned a FinalAnswer again and again unless its trace ends
    # (BridgeInbox ends it once the answer is published); the flow has stopped by now.
    assert len(runs) == 1, f"the node ran {len(runs)} times for one ask"


def test_a_streamed_answer_comes_back_as_one_response(broker, tmp_path):
    async def plan(msg: Message, ctx) -> None:
        for i, part in enumerate(["Day 1 Colosseum. ", "Day 2 Vatican. ", "Day 3 Trastevere."]):
            await ctx.emit_chunk(parent=msg, text=part, done=i == 2)

    def make_flow(bus):
        return create(Node(plan, name="plan").to(), message_bus=bus)

    reply, _ = wise_agents_asks(broker, tmp_path, make_flow)
    assert reply["_message"] == "Day 1 Colosseum. Day 2 Vatican. Day 3 Trastevere."
    assert (reply["_message_type"], reply["_tool_id"]) == ("RESPONSE", "call_9")


def test_a_penguiflow_node_asks_a_wise_agents_agent_and_uses_its_answer(broker, tmp_path):
    names = Names(broker)
    researcher, librarian = names.agent("Researcher"), names.agent("Librarian")
    bridge = start_bridge(
        broker, names, [(researcher, "penguiflow", "")], tmp_path, wiseagents=[librarian], contexts=["Books"]
    )
    wa = WiseAgent(broker, librarian, answer=lambda req: f"found: {req['_message']}")
    runs: list[str] = []

    async def scenario():
        bus = BridgeBus(AsyncLink(broker.link(), name="penguiflow"), names.ingress("penguiflow"))
        results: asyncio.Queue = asyncio.Queue()
        holder: dict[str, BridgeInbox] = {}

        async def research(msg: Message, ctx) -> Message:
            runs.append(msg.trace_id)
            answer = await holder["inbox"].ask(librarian, msg.payload, parent=msg, context="Books")
            return msg.model_copy(update={"payload": FinalAnswer(text=answer.payload["text"])})

        flow = create(Node(research, name="research").to(), message_bus=bus)
        flow.run()
        inbox = BridgeInbox(
            flow, researcher, bus, inbox=names.inbox("penguiflow"), tenant="acme", on_result=results.put
        )
        holder["inbox"] = inbox
        await inbox.start()
        try:
            await flow.emit(Message(payload="dune", headers=Headers(tenant="acme")))
            return await asyncio.wait_for(results.get(), 30)
        finally:
            await inbox.stop()
            await flow.stop()

    try:
        result = run(scenario())
        seen = wa.next_request(5)
    finally:
        wa.close()
        bridge.stop()
    assert result.payload == FinalAnswer(text="found: dune")
    assert (seen["_sender"], seen["_message"], seen["_context_name"]) == (researcher, "dune", "Books")
    # Its FinalAnswer goes to no one (no route): the trace still ends, the Librarian asked once.
    assert len(runs) == 1, f"the node ran {len(runs)} times"


def test_only_envelopes_leaving_the_flow_with_a_route_are_published():
    bus = BridgeBus(link=None, ingress="/queue/x")  # type: ignore[arg-type]  # wanted() never sends
    routed = Message(payload="x", headers=Headers(tenant="t"), meta={"reply_to": "User"})
    unrouted = Message(payload="x", headers=Headers(tenant="t"))

    def env(edge, m):
        return BusEnvelope(edge=edge, source=None, target=None, trace_id=None, payload=m, headers=None, meta=None)

    assert bus.wanted(env("plan->Rookery", routed))
    assert not bus.wanted(env("OpenSea->plan", routed))
    assert not bus.wanted(env("plan->Rookery", unrouted))
    assert not bus.wanted(env("plan->Rookery", "bare text"))
    body = json.loads(envelope_json(env("plan->Rookery", routed)))
    assert body["edge"] == "plan->Rookery" and body["payload"]["headers"]["tenant"] == "t"
