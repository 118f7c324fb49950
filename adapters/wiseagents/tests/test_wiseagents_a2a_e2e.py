"""A proxied A2A agent as a member of a Wise Agents system: the bridge's outbound A2A
(``[[agents]] protocol = "a2a"``, ``url`` the agent's, its card at
``<url>/.well-known/agent-card.json``) with an agent served by the official a2a-sdk (1.3.0,
a2a_testing.A2AAgentServer), in place of the Civitas agency of test_wiseagents_registry_e2e.py:
Wise Agents agents, coordinators and their registry as upstream writes them (the model in
wiseagents_model/, or upstream's own code with WISEAGENTS_UPSTREAM: conftest.py), the bridge
binary with ``[wiseagents.registry]`` on the Redis of scripts/redis.sh (6379).

What the bridge promises here: the A2A agent is registered in the registry with its card's
description followed by "Skills: name (description); ..." unless
``[[wiseagents.registry.agents]]`` describes it; a request to it is one A2A SendMessage, and
its answer is routed as any proxied agent's (the registry stage's collaborations: phased,
sequential).

On ActiveMQ Classic and Artemis; not on RabbitMQ, whose STOMP plugin refuses the queue names
Wise Agents' transport hard-codes (``/queue/request/<Agent>``). Each test has names of its own
(its agents, its bridge's reply agent: ``Names``); nothing sleeps: a test waits for the
client's answer or the A2A agent's next message, each with a timeout."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from a2a.helpers import get_message_text
from a2a.types import AgentCard
from scripted_llm import PhasedLLM
from test_wiseagents_registry_e2e import REDIS, System
from wiseagents import WiseAgentMessage, WiseAgentMetaData, WiseAgentRegistry
from wiseagents.agents import PhasedCoordinatorWiseAgent, SequentialCoordinatorWiseAgent

from a2a_testing import WAIT, A2AAgentServer, EchoExecutor, OutboundBridge, a2a_agent
from sab_testing import Broker, Names

# Wise Agents' STOMP transport names its queues /queue/request/<Agent>: RabbitMQ refuses them.
BROKERS = {"activemq": Broker, "artemis": Broker.artemis}


@pytest.fixture(params=list(BROKERS))
def system(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[System]:
    """test_wiseagents_registry_e2e's ``system``, on each broker that takes Wise Agents' queues."""
    broker = BROKERS[request.param]()
    monkeypatch.setenv("STOMP_USER", broker.login)
    monkeypatch.setenv("STOMP_PASSWORD", broker.passcode)
    # sab_testing registers its own class for the tag on yaml.Loader: give it back to the model.
    yaml.add_constructor(WiseAgentMessage.yaml_tag, WiseAgentMessage.from_yaml, Loader=yaml.Loader)
    s = System(broker)
    yield s
    s.stop()


class A2AAgent:
    """An a2a-sdk agent that answers ``<name>(<text>)`` as the model's EchoLLM agents do; what
    it was asked is in ``executor.received``."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.executor = EchoExecutor(lambda text: f"{name}({text})")
        self.server = A2AAgentServer(name, self.executor, description=description)

    def next_text(self, secs: float = WAIT) -> str:
        try:
            return get_message_text(self.executor.received.get(timeout=secs))
        except queue.Empty:
            raise AssertionError(f"{self.name} was sent no A2A message within {secs} s") from None


def registry_table(described: dict[str, str]) -> str:
    """``[wiseagents.registry]`` on the tests' Redis, with a configured description for the
    agents in ``described`` only."""
    table = f'[wiseagents.registry]\nhost = "{REDIS["redis_host"]}"\nport = {REDIS["redis_port"]}\n'
    for name, description in described.items():
        table += f'\n[[wiseagents.registry.agents]]\nname = "{name}"\ndescription = "{description}"\n'
    return table


@contextmanager
def bridged_a2a(
    system: System, tmp_path: Path, base: str, card_description: str, described: dict[str, str] | None = None
) -> Iterator[A2AAgent]:
    """An a2a-sdk agent named ``system.name(base)``, whose card says ``card_description``, as a
    proxied agent of the bridge binary (registry configured, its own reply agent), until the
    block ends: the bridge stops first (and unregisters it), then the agent's server."""
    agent = A2AAgent(system.name(base), card_description)
    try:
        names = Names(system.broker)
        bridge = OutboundBridge(
            system.broker,
            names,
            tmp_path,
            [a2a_agent(agent.name, agent.server.url)],
            extra=registry_table(described or {}),
        )
        try:
            yield agent
        finally:
            bridge.stop()
    finally:
        agent.server.stop()


def card_entry(card: AgentCard) -> str:
    """What the registry says of an A2A agent the configuration does not describe: its card's
    description, then "Skills: name (description); ..." (A2AAgentServer's card has one skill,
    ``echo``, described as the card is)."""
    skills = "; ".join(f"{s.name} ({s.description})" for s in card.skills)
    return f"{card.description} Skills: {skills}."


def test_a_coordinator_selects_the_a2a_agent_by_its_cards_description_and_gets_its_answer(
    system: System, tmp_path: Path
) -> None:
    described = f"Forecasts rain from an A2A card pick{system.uid}"
    with bridged_a2a(system, tmp_path, "A2APick", described) as agent:
        metadata = WiseAgentRegistry.get_agent_metadata(agent.name)
        lines = WiseAgentRegistry.get_agent_names_and_descriptions()
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
        asked = agent.next_text()
    entry = card_entry(agent.server.card)
    assert metadata is not None and metadata.description == entry
    assert f"Agent Name: {agent.name} Agent Description: {entry}" in lines
    assert llm.selected == [agent.name] and agent.name in llm.offered
    assert asked == "rain?"
    assert answer.message == f"{agent.name}(rain?)", answer.message
    assert answer.sender == coordinator.name and answer.message_type is None


def test_a_configured_description_of_the_a2a_agent_wins_over_its_card(system: System, tmp_path: Path) -> None:
    name = system.name("A2ASaid")
    with bridged_a2a(system, tmp_path, "A2ASaid", "what the card says", {name: "what the operator says"}):
        metadata = WiseAgentRegistry.get_agent_metadata(name)
    assert metadata is not None and metadata.description == "what the operator says"
    assert WiseAgentRegistry.get_agent_metadata(name) is None, "the clean stop unregisters it"


def test_a_sequence_native_a2a_native_passes_the_a2a_answer_on_and_ends_at_the_client(
    system: System, tmp_path: Path
) -> None:
    with bridged_a2a(system, tmp_path, "A2AStep", f"Transforms text for sequence {system.uid}") as agent:
        first, last = system.llm_agent("First", "first step"), system.llm_agent("Last", "last step")
        coordinator = system.add(
            SequentialCoordinatorWiseAgent(
                name=system.name("Seq"),
                metadata=WiseAgentMetaData(description="runs a sequence"),
                transport=system.transport(system.name("Seq")),
                agents=[first.name, agent.name, last.name],
            )
        )
        client = system.client()
        answer = system.ask(client, coordinator.name, "q")
        asked = agent.next_text()
        context = WiseAgentRegistry.get_context(answer.context_name)
        assert context is not None
        route = context.get_route_response_to()
    assert asked == f"{first.name}(q)", "the first member's answer is the A2A agent's request"
    assert route == client.name, "the coordinator's asker is the sequence's route_response_to"
    assert answer.message == f"{last.name}({agent.name}({first.name}(q)))"
    assert answer.sender == last.name, "the last member answers route_response_to itself"
    assert answer.context_name.startswith(f"{system.context}_{coordinator.name}."), answer.context_name
