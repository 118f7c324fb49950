"""An agent with role handlers: agent.on(event) registers, agent.emit(event, **kwargs) runs them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any
from uuid import UUID


class Agent:
    def __init__(self, name: str, uuid: UUID) -> None:
        self.name = name
        self.uuid = uuid
        self.orchestrator: Any = None
        self._handlers: dict[str, list[Callable[..., Any]]] = {}

    def on(self, event: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            self._handlers.setdefault(event, []).append(handler)
            return handler

        return register

    async def emit(self, event: str, **kwargs: Any) -> None:
        for handler in self._handlers.get(event, []):
            result = handler(**kwargs)
            if inspect.isawaitable(result):
                await result

    async def send(self, message: Any) -> None:
        """Hands a VOXMessage to the orchestrator, which routes it by target (model's choice)."""
        await self.orchestrator.route(message)
