"""A proxied Civitas agent as a member of a Wise Agents system (issue 21): Wise Agents agents,
coordinators and their registry as upstream writes them (the model in wiseagents_model/, checked
against upstream's code), a real civitas 0.12 agency behind the bridge binary, ActiveMQ on
61613 and the Redis of scripts/redis.sh on 6379. The bridge is given the registry's Redis
([wiseagents.registry]) and a description for each proxied agent."""

from __future__ import annotations

import asyncio
import os
import queue
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
import yaml
from civitas import AgentProcess, Runtime, Supervisor
from civitas.messages import Message
from scripted_llm import EchoLLM, PhasedLLM
from wiseagents import (
    WiseAgentCollaborationType,
    WiseAgentMessage,
    WiseAgentMessageType,
    WiseAgentMetaData,
    WiseAgentRegistry,
)
from wiseagents.agents import (
    LLMOnlyWiseAgent,
    PassThroughClientAgent,
    PhasedCoordinatorWiseAgent,
    SequentialCoordinatorWiseAgent,
)
from wiseagents.transports import StompWiseAgentTransport

from civitas_stomp import bridge_components
from sab_testing import REPO, BridgeProcess, Broker, Names, config_toml, free_port

# The registry of Wise Agents' registry_config.yaml (Redis mode), as these tests set it up.
REDIS = {"use_redis": True, "redis_ssl": False, "redis_host": "127.0.0.1", "redis_port": 6379}
CIV_SCHEMA = '{ type = "object", properties = { city = { type = "string" } }, required = ["city"] }'
A = TypeVar("A")  # an agent of the system


class CivStep(AgentProcess):
    """A Civitas agent as its docs write one: handle() returns self.reply(...)."""

    async def handle(self, message: Message) -> Message | None:
        return self.reply({"message": f"{self.name}({message.payload.get('message')})"})


class System:
    """A Wise Agents system in one test: its registry config, a client context `CLI.<uuid4>`
    as Wise Agents' CLI creates it, agents that are stopped (and unregistered) at the end."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.uid = uuid.uuid4().hex[:8]
        self.agents: list[Any] = []
        self.answers: queue.Queue[WiseAgentMessage] = queue.Queue()
        WiseAgentRegistry.config = dict(REDIS)
        self.context = "CLI." + str(uuid.uuid4())
        WiseAgentRegistry.create_context(self.context)

    def name(self, base: str) -> str:
        return f"{base}{self.uid}"  # no `_`: it separates parent and sub-context names

    def transport(self, name: str) -> StompWiseAgentTransport:
        return StompWiseAgentTransport(host="127.0.0.1", port=self.broker.port, agent_name=name)

    def add(self, agent: A) -> A:
        self.agents.append(agent)
        return agent

    def llm_agent(self, base: str, description: str) -> LLMOnlyWiseAgent:
        name = self.name(base)
        return self.add(
            LLMOnlyWiseAgent(
                name=name,
                metadata=WiseAgentMetaData(description=description),
                llm=EchoLLM(),
                transport=self.transport(name),
            )
        )

    def client(self, base: str = "Client", destination: str = "WiseIntelligentAgent") -> PassThroughClientAgent:
        name = self.name(base)
        agent = self.add(
            PassThroughClientAgent(
                name=name,
                metadata=WiseAgentMetaData(description="the user"),
                transport=self.transport(name),
                destination_agent_name=destination,
            )
        )
        agent.set_response_delivery(self.answers.put)
        return agent

    def ask(self, client: PassThroughClientAgent, agent: str, text: str, secs: float = 45) -> WiseAgentMessage:
        client.send_request(WiseAgentMessage(message=text, sender=client.name, context_name=self.context), agent)
        try:
            return self.answers.get(timeout=secs)
        except queue.Empty:
            raise AssertionError(f"no answer from {agent} within {secs} s") from None

    def stop(self) -> None:
        for agent in self.agents:
            agent.stop_agent()
        WiseAgentRegistry.remove_context(self.context)


@pytest.fixture
def system(monkeypatch) -> Iterator[System]:
    broker = Broker()  # ActiveMQ: Wise Agents' transport hard-codes /queue/request/, which RabbitMQ refuses
    monkeypatch.setenv("STOMP_USER", broker.login)
    monkeypatch.setenv("STOMP_PASSWORD", broker.passcode)
    # sab_testing registers its own class for the !wiseagents.WiseAgentMessage tag on
    # yaml.Loader whenever another adapter's test uses it: give the tag back to the model.
    yaml.add_constructor(WiseAgentMessage.yaml_tag, WiseAgentMessage.from_yaml, Loader=yaml.Loader)
    s = System(broker)
    yield s
    s.stop()


def registry_toml(proxied: dict[str, str], tools: tuple[str, ...] = ()) -> tuple[list[tuple[str, str, str]], str]:
    """[[agents]] entries for proxied Civitas agents, and the [wiseagents.registry] table with
    each one's description (and, for those in `tools`, an agent tool with a schema)."""
    registry = '\n[wiseagents.registry]\nhost = "127.0.0.1"\nport = 6379\n'
    for name, description in proxied.items():
        registry += f'\n[[wiseagents.registry.agents]]\nname = "{name}"\ndescription = "{description}"\n'
        if name in tools:
            registry += f"tool = true\nparameters = {CIV_SCHEMA}\n"
    return [(name, "civitas", "") for name in proxied], registry


def bridge_toml(proxied: dict[str, str], tools: tuple[str, ...] = (), names: Names | None = None) -> str:
    agents, registry = registry_toml(proxied, tools)
    return config_toml(Broker(), names or Names(), agents, free_port()) + registry


@contextmanager
def bridged_civitas(
    tmp_path, proxied: dict[str, str], tools: tuple[str, ...] = (), children: list[AgentProcess] | None = None
) -> Iterator[BridgeProcess]:
    """The bridge binary with the registry configured, and a Civitas agency running CivStep
    for every name in `proxied` (or `children`), in a thread, until the block ends."""
    broker, names = Broker(), Names()
    bridge = BridgeProcess(bridge_toml(proxied, tools, names), tmp_path)
    started, stop = threading.Event(), None

    async def agency() -> None:
        nonlocal stop
        stop = asyncio.Event()
        runtime = Runtime(
            supervisor=Supervisor("root", children=children or [CivStep(n) for n in proxied]),
            components=bridge_components(
                inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        started.set()
        try:
            await stop.wait()
        finally:
            await runtime.stop()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(agency(),), daemon=True)
    thread.start()
    try:
        assert started.wait(30), "the Civitas agency did not start"
        yield bridge
    finally:
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        bridge.stop()


def test_a_sequence_native_proxied_native_passes_the_civitas_answer_on_and_ends_at_the_client(system, tmp_path):
    civ = system.name("CivStep")
    with bridged_civitas(tmp_path, {civ: f"Transforms text for sequence {system.uid}"}):
        first, last = system.llm_agent("First", "first step"), system.llm_agent("Last", "last step")
        coordinator = system.add(
            SequentialCoordinatorWiseAgent(
                name=system.name("Seq"),
                metadata=WiseAgentMetaData(description="runs a sequence"),
                transport=system.transport(system.name("Seq")),
                agents=[first.name, civ, last.name],
            )
        )
        client = system.client()
        answer = system.ask(client, coordinator.name, "q")
    assert answer.message == f"{last.name}({civ}({first.name}(q)))"
    assert answer.sender == last.name, "the last member answers route_response_to itself"
    assert answer.context_name.startswith(f"{system.context}_{coordinator.name}."), answer.context_name


def test_a_phased_collaboration_with_a_proxied_member_has_its_answer_in_the_final_answer(system, tmp_path):
    civ = system.name("CivPhase")
    with bridged_civitas(tmp_path, {civ: f"Knows the weather civ{system.uid}"}):
        alpha = system.llm_agent("Alpha", f"Knows facts alpha{system.uid}")
        beta = system.llm_agent("Beta", f"Writes summaries beta{system.uid}")
        llm = PhasedLLM([[f"alpha{system.uid}", f"civ{system.uid}"], [f"beta{system.uid}"]])
        coordinator = system.add(
            PhasedCoordinatorWiseAgent(
                name=system.name("Phased"),
                metadata=WiseAgentMetaData(description="coordinates in phases"),
                transport=system.transport(system.name("Phased")),
                llm=llm,
            )
        )
        client = system.client()
        answer = system.ask(client, coordinator.name, "weather?")
    parts = answer.message.split(" | ")
    assert sorted(parts[:2]) == sorted([f"{alpha.name}(weather?)", f"{civ}(weather?)"]), answer.message
    assert parts[2] == f"{beta.name}(weather?)", answer.message
    assert answer.sender == coordinator.name and answer.message_type is None


def test_a_coordinator_selects_the_proxied_agent_from_the_registry_by_its_configured_description(system, tmp_path):
    civ = system.name("CivPick")
    description = f"Forecasts rain pick{system.uid}"
    with bridged_civitas(tmp_path, {civ: description}, tools=(civ,)):
        metadata = WiseAgentRegistry.get_agent_metadata(civ)
        tool = WiseAgentRegistry.get_tool(civ)
        llm = PhasedLLM([[f"pick{system.uid}"]])
        coordinator = system.add(
            PhasedCoordinatorWiseAgent(
                name=system.name("Picker"),
                metadata=WiseAgentMetaData(description="picks"),
                transport=system.transport(system.name("Picker")),
                llm=llm,
            )
        )
        answer = system.ask(system.client(), coordinator.name, "rain?")
    assert metadata is not None and metadata.description == description
    assert llm.selected == [civ] and civ in llm.offered
    assert answer.message == f"{civ}(rain?)"
    assert tool is not None and tool.is_agent_tool
    assert tool.get_tool_OpenAI_format() == {
        "type": "function",
        "function": {
            "name": civ,
            "description": description,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }


def test_the_bridge_removes_its_agents_from_the_registry_on_a_clean_stop(system, tmp_path):
    civ = system.name("CivGone")
    with bridged_civitas(tmp_path, {civ: "leaves"}) as bridge:
        registered = WiseAgentRegistry.get_agent_metadata(civ)
    assert bridge.proc.returncode == 0
    assert registered is not None and registered.description == "leaves"
    assert WiseAgentRegistry.get_agent_metadata(civ) is None, "stop_agent() removes the agents entry"


def test_a_pass_through_client_agent_reaches_a_proxied_agent_with_its_request_nested_in_message(system, tmp_path):
    civ = system.name("CivNested")
    with bridged_civitas(tmp_path, {civ: "answers relayed questions"}):
        relay = system.client("Relay", destination=civ)  # forwards the whole request as _message
        client = system.client()
        client.send_request(
            WiseAgentMessage(message="nested?", sender=client.name, context_name=system.context), relay.name
        )
        answer = system.answers.get(timeout=45)
    assert answer.message == f"{civ}(nested?)"
    assert answer.sender == civ and answer.context_name == system.context


def bridge_binary() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", str(REPO / "target"))
    return os.environ.get("SAB_BRIDGE_BIN", f"{target}/debug/stomp-agent-bridge")


def test_a_proxied_name_a_wise_agents_agent_already_registered_stops_the_bridge_at_start(system, tmp_path):
    taken = system.llm_agent("Taken", "a native agent that got there first")
    config = tmp_path / "bridge.toml"
    config.write_text(bridge_toml({taken.name: "the same name, proxied"}))
    run = subprocess.run(
        [bridge_binary(), "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode != 0, "the bridge started although the name is taken"
    assert taken.name in run.stderr, run.stderr[-2000:]
    metadata = WiseAgentRegistry.get_agent_metadata(taken.name)
    assert metadata is not None and metadata.description == "a native agent that got there first"


def test_the_entries_a_killed_bridge_left_behind_are_taken_over_by_its_restart(system, tmp_path):
    civ = system.name("CivAgain")
    toml = bridge_toml({civ: "survives a crash"})
    first = BridgeProcess(toml, tmp_path)
    first.proc.kill()  # no clean stop: the entry stays in `agents`
    first.proc.wait(15)
    left = WiseAgentRegistry.get_agent_metadata(civ)
    second = BridgeProcess(toml, tmp_path)
    try:
        taken_over = WiseAgentRegistry.get_agent_metadata(civ)
    finally:
        second.stop()
    assert left is not None and left.description == "survives a crash"
    assert taken_over is not None and taken_over.description == "survives a crash"
    assert WiseAgentRegistry.get_agent_metadata(civ) is None


class RecordingAgent(LLMOnlyWiseAgent):
    """A native agent that notes, for each request, whether its context was in the registry
    when it arrived, and any error its handling raised (upstream crashes on an unknown one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.seen: list[tuple[str, bool]] = []
        self.errors: list[BaseException] = []
        super().__init__(*args, **kwargs)

    def handle_request(self, request: WiseAgentMessage) -> bool:
        self.seen.append((request.context_name, WiseAgentRegistry.does_context_exist(request.context_name)))
        try:
            return super().handle_request(request)
        except BaseException as error:
            self.errors.append(error)
            raise


class Asker(AgentProcess):
    """Asks a Wise Agents agent by name in a context no Wise Agents process created."""

    target = ""
    context = ""

    async def handle(self, message: Message) -> Message | None:
        try:
            answer = await self.ask(self.target, {"message": "dune", "context_name": self.context}, timeout=30)
            return self.reply({"message": answer.payload.get("message"), "status": answer.payload.get("status")})
        except Exception as error:  # noqa: BLE001 - an error answer is an acceptable outcome
            return self.reply({"message": f"{type(error).__name__}: {error}", "status": "raised"})


def test_a_civitas_ask_in_a_context_the_registry_lacks_never_reaches_a_native_agent_in_an_unknown_context(
    system, tmp_path
):
    asker = system.name("Asker")
    name = system.name("Librarian")
    librarian = system.add(
        RecordingAgent(
            name=name, metadata=WiseAgentMetaData(description="books"), llm=EchoLLM(), transport=system.transport(name)
        )
    )
    Asker.target, Asker.context = name, f"Books{system.uid}"
    broker, names = Broker(), Names()
    bridge = BridgeProcess(bridge_toml({asker: "asks the librarian"}, names=names), tmp_path)

    async def scenario() -> Message:
        runtime = Runtime(
            supervisor=Supervisor("root", children=[Asker(asker)]),
            components=bridge_components(
                inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        try:
            return await runtime.ask(asker, {"go": True}, timeout=60)
        finally:
            await runtime.stop()

    try:
        outcome = asyncio.run(asyncio.wait_for(scenario(), 90)).payload
    finally:
        bridge.stop()
    assert librarian.errors == [], librarian.errors
    assert all(known for _, known in librarian.seen), librarian.seen
    if librarian.seen:  # the bridge created (or chose) a registered context: the native answered
        assert outcome["message"] == f"{name}(dune)", outcome
    else:  # the bridge answered the asker with an error in its own format
        assert outcome["status"] in ("error", "raised"), outcome


class RestartingAgent(LLMOnlyWiseAgent):
    """As the FinalWiseAgent of upstream's tests/wiseagents/agents/test_sequential_coordinator.py:
    on its first request in a context it adds a query and asks for the sequence to restart."""

    def process_request(self, request: WiseAgentMessage, conversation_history: list) -> str | None:
        ctx = WiseAgentRegistry.get_context(request.context_name)
        assert ctx is not None
        if not ctx.get_queries():
            ctx.add_query("again")
            ctx.set_restart_sequence(True)
        return super().process_request(request, conversation_history)


def test_a_sequence_ending_with_a_proxied_agent_restarts_when_the_context_says_so(system, tmp_path):
    civ = system.name("CivLast")
    with bridged_civitas(tmp_path, {civ: "ends a sequence"}):
        name = system.name("Restarter")
        first = system.add(
            RestartingAgent(
                name=name,
                metadata=WiseAgentMetaData(description="restarts once"),
                llm=EchoLLM(),
                transport=system.transport(name),
            )
        )
        coordinator = system.add(
            SequentialCoordinatorWiseAgent(
                name=system.name("Seq"),
                metadata=WiseAgentMetaData(description="runs a sequence"),
                transport=system.transport(system.name("Seq")),
                agents=[first.name, civ],
            )
        )
        answer = system.ask(system.client(), coordinator.name, "q")
        context = WiseAgentRegistry.get_context(answer.context_name)
        assert context is not None
        restart_left = context.get_restart_sequence()
    assert answer.message == f"{civ}({first.name}(again))", "the second round starts from the first query"
    assert answer.sender == civ and restart_left is False


def test_in_a_chat_context_the_proxied_answer_is_appended_to_the_chat_completion_and_acknowledged(system, tmp_path):
    civ = system.name("CivChat")
    chat = WiseAgentRegistry.create_context(f"Chat.{uuid.uuid4()}")  # as AssistantAgent.start_agent does
    chat.set_collaboration_type(WiseAgentCollaborationType.CHAT)
    chat.append_chat_completion({"role": "user", "content": "hello"})
    try:
        with bridged_civitas(tmp_path, {civ: "chats"}):
            client = system.client()
            client.send_request(WiseAgentMessage(message="hello", sender=client.name, context_name=chat.name), civ)
            answer = system.answers.get(timeout=45)
        history = chat.llm_chat_completion
    finally:
        WiseAgentRegistry.remove_context(chat.name)
    assert (answer.message_type, answer.message, answer.sender) == (WiseAgentMessageType.ACK, f"{civ}(hello)", civ)
    assert history == [{"role": "user", "content": "hello"}, {"role": "assistant", "content": f"{civ}(hello)"}]
