"""The orchestrator: inbound messages are sanitized (SecurityError when refused) and fanned out
to the agent as agent.emit("inbound_message", source=..., **payload); agents' messages are
routed by target UUID to a local agent, else to the outbound routes (the model's choice)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .agent import Agent
from .security import SecurityError

REFUSED_MARKERS = ("ignore previous instructions", "<script")


class Orchestrator:
    def __init__(self) -> None:
        self.agents: dict[Any, Agent] = {}
        self._outbound: list[Callable[[Any], Any]] = []

    def register(self, agent: Agent) -> Agent:
        agent.orchestrator = self
        self.agents[agent.uuid] = agent
        return agent

    def add_outbound(self, route: Callable[[Any], Any]) -> None:
        self._outbound.append(route)

    def sanitize(self, payload: dict[str, Any]) -> dict[str, Any]:
        message = payload.get("message")
        text = str(getattr(message, "details", {}).get("message", "")).lower()
        if any(marker in text for marker in REFUSED_MARKERS):
            raise SecurityError("payload refused by the inbound guardrail")
        return payload

    async def dispatch_inbound_message(self, source: str, payload: dict[str, Any]) -> None:
        payload = self.sanitize(payload)
        agent = self.agents.get(payload["message"].target)
        if agent is None:
            raise LookupError(f"no agent {payload['message'].target}")
        await agent.emit("inbound_message", source=source, **payload)

    async def route(self, message: Any) -> None:
        agent = self.agents.get(message.target)
        if agent is not None:
            await agent.emit("inbound_message", source="internal", message=message)
            return
        for route in self._outbound:
            result = route(message)
            if inspect.isawaitable(result):
                await result
