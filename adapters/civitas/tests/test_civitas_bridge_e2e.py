"""Civitas agents in a real agency (AgentProcess with handle(), a Supervisor, the Runtime) on
StompTransport, through a running stomp-agent-bridge, to Wise Agents agents and back."""

from __future__ import annotations

import asyncio

import pytest
from civitas import AgentProcess, Runtime, Supervisor
from civitas.messages import Message

from civitas_stomp import bridge_components
from sab_testing import Names, WiseAgent, start_bridge


class WeatherAgent(AgentProcess):
    """As Civitas's docs write an agent: handle() returns self.reply(...)."""

    async def handle(self, message: Message) -> Message | None:
        return self.reply({"message": f"Sunny in {message.payload.get('message')}"})


class Researcher(AgentProcess):
    """Asks an agent that lives behind the bridge, with Civitas's own ask()."""

    librarian = ""

    async def handle(self, message: Message) -> Message | None:
        answer = await self.ask(
            self.librarian, {"message": message.payload["topic"], "context_name": "Books"}, timeout=30
        )
        await self.send(self.librarian, {"message": "thanks", "context_name": "Books"})  # fire-and-forget
        return self.reply({"message": answer.payload["message"], "from": answer.sender})


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def ask_in_a_runtime(broker, names, agent: AgentProcess, to: str, payload: dict, timeout: float):
    """Runs a Civitas agency whose one agent is ``agent``, on the bridge's transport, and
    returns what ``Runtime.ask(to, payload)`` answers."""

    async def scenario():
        runtime = Runtime(
            supervisor=Supervisor("root", children=[agent]),
            components=bridge_components(
                inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        try:
            return await runtime.ask(to, payload, timeout=timeout)
        finally:
            await runtime.stop()

    return run(scenario())


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
def test_a_wise_agents_agent_asks_a_civitas_agent_and_gets_the_reply_routed(broker, tmp_path, encoding):
    names = Names(broker)
    weather, caller = names.agent("Weather"), names.agent("LLMAgent")
    bridge = start_bridge(broker, names, [(weather, "civitas", f'encoding = "{encoding}"')], tmp_path)
    wa = WiseAgent(broker, caller)

    async def scenario():
        runtime = Runtime(
            supervisor=Supervisor("root", children=[WeatherAgent(weather)]),
            components=bridge_components(
                encoding=encoding, inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        try:
            wa.send(weather, "Paris", _tool_id="call_7", _context_name="Weather", _route_response_to="User")
            return await asyncio.to_thread(wa.next_response, 30)
        finally:
            await runtime.stop()

    try:
        reply = run(scenario())
    finally:
        wa.close()
        bridge.stop()
    assert reply["_message"] == "Sunny in Paris"
    assert reply["_message_type"] == "RESPONSE"
    assert reply["_sender"] == weather
    assert (reply["_tool_id"], reply["_context_name"], reply["_route_response_to"]) == ("call_7", "Weather", "User")


def test_a_civitas_agent_asks_a_wise_agents_agent_with_ask_and_send_and_gets_its_answer(broker, tmp_path):
    names = Names(broker)
    researcher, librarian = names.agent("Researcher"), names.agent("Librarian")
    bridge = start_bridge(
        broker, names, [(researcher, "civitas", "")], tmp_path, wiseagents=[librarian], contexts=["Books"]
    )
    wa = WiseAgent(broker, librarian, answer=lambda req: f"found: {req['_message']}")
    Researcher.librarian = librarian

    try:
        answer = ask_in_a_runtime(broker, names, Researcher(researcher), researcher, {"topic": "dune"}, 60)
        seen = wa.next_request(5)
        sent = wa.next_request(10)
    finally:
        wa.close()
        bridge.stop()
    assert answer.payload == {"message": "found: dune", "from": librarian}
    assert (seen["_sender"], seen["_message"], seen["_context_name"]) == (researcher, "dune", "Books")
    assert (sent["_sender"], sent["_message"]) == (researcher, "thanks"), "send() reaches it too"


def test_a_name_behind_the_bridge_is_routable_and_internal_names_are_not():
    from civitas_stomp import BridgeRegistry

    registry = BridgeRegistry(["Wise*"])
    routed = registry.lookup("WiseLibrarian")
    assert routed is not None and routed.address == "WiseLibrarian"
    assert registry.lookup("Other") is None
    assert registry.lookup("_reply.x") is None and BridgeRegistry(["*"]).lookup("_runtime") is None


def test_a_runtime_ask_of_a_wise_agents_agent_gets_its_answer_though_the_runtime_has_no_inbox(broker, tmp_path):
    """Runtime.ask() asks as ``_runtime`` (civitas runtime.py ~1176), which has no inbox: the
    bridge answers at the inbox of the ask's ``_reply.*`` address, which the adapter consumes
    while the ask waits."""
    names = Names(broker)
    helper, librarian = names.agent("Helper"), names.agent("Librarian")
    bridge = start_bridge(
        broker, names, [(helper, "civitas", "")], tmp_path, wiseagents=[librarian], contexts=["Books"]
    )
    wa = WiseAgent(broker, librarian, answer=lambda req: f"found: {req['_message']}")

    try:
        answer = ask_in_a_runtime(
            broker, names, WeatherAgent(helper), librarian, {"message": "dune", "context_name": "Books"}, 30
        )
        seen = wa.next_request(5)
    finally:
        wa.close()
        bridge.stop()
    assert answer.payload["message"] == "found: dune"
    assert answer.sender == librarian
    assert seen["_message"] == "dune" and seen["_sender"] != "_runtime", seen


class ContextResearcher(AgentProcess):
    """Asks in a context of its own and reports the context its answer came back in."""

    librarian = ""

    async def handle(self, message: Message) -> Message | None:
        answer = await self.ask(self.librarian, {"message": "dune", "context_name": "Books"}, timeout=30)
        return self.reply({"message": answer.payload["message"], "context": answer.payload.get("context_name")})


def test_a_civitas_ask_in_a_context_wise_agents_does_not_know_is_answered_in_the_askers_context(broker, tmp_path):
    """Books is not a Wise Agents context here: the Wise Agents agent gets the default one, and
    the answer to Civitas names Books again, not the default."""
    names = Names(broker)
    researcher, librarian = names.agent("Researcher"), names.agent("Librarian")
    bridge = start_bridge(broker, names, [(researcher, "civitas", "")], tmp_path, wiseagents=[librarian])
    wa = WiseAgent(broker, librarian, answer=lambda req: f"found: {req['_message']}")
    ContextResearcher.librarian = librarian

    try:
        answer = ask_in_a_runtime(broker, names, ContextResearcher(researcher), researcher, {"topic": "dune"}, 60)
        seen = wa.next_request(5)
    finally:
        wa.close()
        bridge.stop()
    assert seen["_context_name"] == "default"
    assert answer.payload == {"message": "found: dune", "context": "Books"}
