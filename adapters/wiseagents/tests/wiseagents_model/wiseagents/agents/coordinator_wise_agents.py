"""agents/coordinator_wise_agents.py: the sequential coordinators (upstream 12-146) and the
phased coordinator (149-366). The prompts' wording is paraphrased (the LLM in the tests is a
deterministic stand-in); what they carry is upstream's: the query, one line per registered
agent from WiseAgentRegistry.get_agent_names_and_descriptions(), the phase names."""

from __future__ import annotations

import logging
import uuid
from typing import Any, List, Optional

from wiseagents.core import (
    WiseAgent,
    WiseAgentCollaborationType,
    WiseAgentContext,
    WiseAgentMetaData,
    WiseAgentRegistry,
)
from wiseagents.wise_agent_messaging import WiseAgentMessage, WiseAgentMessageType, WiseAgentTransport

CONFIDENCE_SCORE_THRESHOLD = 85
MAX_ITERATIONS_FOR_COORDINATOR = 5
CANNOT_ANSWER = "I don't know the answer to the query."


def _sub_context(coordinator: WiseAgent, request: WiseAgentMessage) -> WiseAgentContext:
    """`<request context>_<coordinator>.<uuid4>` (core.py 1180); the parent must exist."""
    return WiseAgentRegistry.create_sub_context(request.context_name, f"{coordinator.name}.{uuid.uuid4()}")


class SequentialCoordinatorWiseAgent(WiseAgent):
    yaml_tag = "!wiseagents.agents.SequentialCoordinatorWiseAgent"
    collaboration = WiseAgentCollaborationType.SEQUENTIAL

    def __init__(
        self, name: str, metadata: WiseAgentMetaData, transport: WiseAgentTransport, agents: List[str]
    ) -> None:
        self._name = name
        self._agents = agents
        super().__init__(name=name, metadata=metadata, transport=transport, llm=None)

    agents = property(lambda self: self._agents)

    def prepare(self, ctx: WiseAgentContext, request: WiseAgentMessage) -> None:
        ctx.set_collaboration_type(self.collaboration)
        ctx.set_agents_sequence(self._agents)
        ctx.set_route_response_to(request.sender)

    def handle_request(self, request: WiseAgentMessage) -> None:
        """Starts the sequence; the members pass it on and the last answers the asker."""
        ctx = _sub_context(self, request)
        self.prepare(ctx, request)
        self.send_request(
            WiseAgentMessage(message=request.message, sender=self.name, context_name=ctx.name), self._agents[0]
        )

    def process_response(self, response: WiseAgentMessage) -> bool:
        if response.message:
            raise ValueError(f"Unexpected response message: {response.message}")  # upstream 63-64
        return True

    def process_event(self, event: Any) -> bool:
        return True

    def process_error(self, error: Any) -> bool:
        logging.error(error)
        return True


class SequentialMemoryCoordinatorWiseAgent(SequentialCoordinatorWiseAgent):
    yaml_tag = "!wiseagents.agents.SequentialMemoryCoordinatorWiseAgent"
    collaboration = WiseAgentCollaborationType.SEQUENTIAL_MEMORY

    def prepare(self, ctx: WiseAgentContext, request: WiseAgentMessage) -> None:
        ctx.set_collaboration_type(self.collaboration)
        if self.metadata.system_message:
            ctx.append_chat_completion(messages={"role": "system", "content": self.metadata.system_message})
        ctx.set_agents_sequence(self._agents)
        ctx.set_route_response_to(request.sender)
        ctx.add_query(request.message)


class PhasedCoordinatorWiseAgent(WiseAgent):
    yaml_tag = "!wiseagents.agents.PhasedCoordinatorWiseAgent"

    def __init__(
        self,
        name: str,
        metadata: WiseAgentMetaData,
        transport: WiseAgentTransport,
        llm: Any,
        phases: Optional[List[str]] = None,
        max_iterations: int = MAX_ITERATIONS_FOR_COORDINATOR,
        confidence_score_threshold: int = CONFIDENCE_SCORE_THRESHOLD,
    ) -> None:
        self._name = name
        self._phases = phases if phases is not None else ["Data Collection", "Data Analysis"]
        self._max_iterations = max_iterations
        self._confidence_score_threshold = confidence_score_threshold
        super().__init__(name=name, metadata=metadata, transport=transport, llm=llm)

    phases = property(lambda self: self._phases)
    max_iterations = property(lambda self: self._max_iterations)
    confidence_score_threshold = property(lambda self: self._confidence_score_threshold)

    def _ask_llm(self, ctx: WiseAgentContext, prompt: str) -> Any:
        """Appends the prompt, asks the LLM with the whole chat completion, appends its
        message (an openai ChatCompletionMessage object, as upstream 237/248)."""
        ctx.append_chat_completion(messages={"role": "user", "content": prompt})
        message = self.llm.process_chat_completion(ctx.llm_chat_completion, tools=[]).choices[0].message
        ctx.append_chat_completion(messages=message)
        return message

    def handle_request(self, request: WiseAgentMessage) -> None:
        ctx = _sub_context(self, request)
        ctx.set_collaboration_type(WiseAgentCollaborationType.PHASED)
        ctx.set_route_response_to(request.sender)
        if self.metadata.system_message or self.llm.system_message:
            ctx.append_chat_completion(
                messages={"role": "system", "content": self.metadata.system_message or self.llm.system_message}
            )
        self._ask_llm(
            ctx,
            "Which of the agents below could be required to answer the query? Answer with their "
            "names separated by spaces and nothing else.\n Query: "
            + request.message
            + "\n"
            + "Available agents:\n"
            + "\n".join(WiseAgentRegistry.get_agent_names_and_descriptions())
            + "\n",
        )
        answer = self._ask_llm(
            ctx,
            "Assign each required agent to one of these phases:\n"
            + ", ".join(self.phases)
            + "\nAgents within a phase run in parallel. One line per phase, agent names "
            "separated by spaces, nothing else.\n",
        )
        phases = [line.split() for line in answer.content.splitlines()]
        ctx.set_agent_phase_assignments(phases)
        ctx.set_current_phase(0)
        ctx.add_query(request.message)
        for agent in phases[0]:
            self.send_request(WiseAgentMessage(message=request.message, sender=self.name, context_name=ctx.name), agent)

    def process_response(self, response: WiseAgentMessage) -> bool:
        """Members answer with ACK after appending to the context (upstream 259-331)."""
        ctx = WiseAgentRegistry.get_context(response.context_name)
        if response.message_type != WiseAgentMessageType.ACK:
            raise ValueError(
                f"Unexpected response message_type: {response.message_type} with message: {response.message}"
            )
        ctx.remove_required_agent_for_current_phase(response.sender)
        if len(ctx.get_required_agents_for_current_phase()) != 0:
            return True
        next_phase = ctx.get_agents_for_next_phase()
        if next_phase is not None:
            for agent in next_phase:
                self.send_request(
                    WiseAgentMessage(
                        message=ctx.get_current_query(), sender=self.name, context_name=response.context_name
                    ),
                    agent,
                )
            return True
        self._finish(ctx, response)
        return True

    def _finish(self, ctx: WiseAgentContext, response: WiseAgentMessage) -> None:
        prompt = (
            "What is the final answer for the original query? "
            "The answer, then on the next line a confidence score from 0 to 100."
        )
        ctx.append_chat_completion(messages={"role": "user", "content": prompt})
        answer = self.llm.process_chat_completion(ctx.llm_chat_completion, tools=[]).choices[0].message
        lines = answer.content.splitlines()
        final_answer = "\n".join(lines[:-1])
        score = int(lines[-1]) if lines[-1].strip().isnumeric() else 0
        if score >= self.confidence_score_threshold:
            self.send_response(
                WiseAgentMessage(message=final_answer, sender=self.name, context_name=response.context_name),
                ctx.get_route_response_to(),
            )
        elif len(ctx.get_queries()) == self.max_iterations:
            self.send_response(
                WiseAgentMessage(
                    message=CANNOT_ANSWER,
                    message_type=WiseAgentMessageType.CANNOT_ANSWER,
                    sender=self.name,
                    context_name=response.context_name,
                ),
                ctx.get_route_response_to(),
            )
        elif len(ctx.get_queries()) < self.max_iterations:
            rephrased = self._ask_llm(
                ctx,
                "The final answer was not good enough. The original query was: "
                + ctx.get_queries()[0]
                + "\nRephrase it; answer with the query only.\n",
            ).content
            ctx.set_current_phase(0)
            ctx.add_query(rephrased)
            for agent in ctx.get_required_agents_for_current_phase():
                self.send_request(
                    WiseAgentMessage(message=rephrased, sender=self.name, context_name=response.context_name), agent
                )

    def process_event(self, event: Any) -> bool:
        return True

    def process_error(self, error: Any) -> bool:
        logging.error(error)
        return True
