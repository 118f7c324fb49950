"""VoxBridge: the inbound adapter (inbox → orchestrator) and the outbound route (→ ingress)."""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from vox.messaging import MSG_COMMAND_ERROR, MSG_COMMAND_REQUEST, VOXMessage

from sab_stomp import AsyncLink, LinkConfig, MessageFrame

log = logging.getLogger("vox_stomp")


def uuid_of(name: str, namespace: uuid.UUID | str) -> uuid.UUID:
    """An agent's UUID as the bridge derives it: UUIDv5 of the name under the namespace
    (``protocols.vox.namespace``), for agents configured without a ``uuid``."""
    ns = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(namespace)
    return uuid.uuid5(ns, name)


def is_security_error(exc: BaseException) -> bool:
    """VOX's guardrail error, matched by name so the adapter needs no VOX-internal import."""
    return any(cls.__name__ == "SecurityError" for cls in type(exc).__mro__)


class VoxBridge:
    """Joins ``orchestrator``'s ``agents`` (names; or name → UUID) to the bridge.

    Parameters:
        inbox / ingress: the bridge's ``protocols.vox.inbox`` / ``.ingress``.
        namespace: the bridge's ``protocols.vox.namespace`` (agents' and peers' UUIDs).
        interface: the ``source`` given to ``dispatch_inbound_message``.
        message_source: ``message_source`` of the messages the adapter itself writes.
    """

    def __init__(
        self,
        orchestrator: Any,
        agents: Iterable[str] | Mapping[str, uuid.UUID],
        namespace: uuid.UUID | str,
        link: LinkConfig | None = None,
        inbox: str = "/queue/vox.{agent}",
        ingress: str = "/queue/bridge.vox",
        interface: str = "stomp-bridge",
        message_source: str = "vox",
    ) -> None:
        self.orchestrator = orchestrator
        self.namespace = namespace
        self.agents = dict(agents) if isinstance(agents, Mapping) else {a: uuid_of(a, namespace) for a in agents}
        self.link = AsyncLink(link or LinkConfig.from_env(), name="vox")
        self.inbox, self.ingress = inbox, ingress
        self.interface, self.message_source = interface, message_source
        self.refused = 0

    def uuid_of(self, name: str) -> uuid.UUID:
        """The UUID the bridge gives ``name`` (a Wise Agents agent listed in its
        ``wiseagents.agents``, or a proxied agent without its own ``uuid``)."""
        return self.agents.get(name) or uuid_of(name, self.namespace)

    async def start(self) -> None:
        await self.link.start()
        for name in self.agents:
            await self.link.subscribe(self.inbox.replace("{agent}", name), self._on_frame)

    async def stop(self) -> None:
        await self.link.stop()

    async def _on_frame(self, frame: MessageFrame) -> None:
        # Not a VOXMessage: raises, so the link dead-letters it with the reason; it never
        # reaches the orchestrator.
        message = VOXMessage.model_validate_json(frame.body)
        try:
            dispatched = self.orchestrator.dispatch_inbound_message(source=self.interface, payload={"message": message})
            if inspect.isawaitable(dispatched):
                await dispatched
        except Exception as exc:  # answered below, or re-raised
            if not is_security_error(exc):
                raise
            self.refused += 1
            log.warning("VOX guardrail refused message %s: %s", message.message_id, exc)
            if message.type == MSG_COMMAND_REQUEST:
                await self.send(self.error_reply(message, f"refused by the guardrail: {exc}"))
        # Returning acknowledges: the orchestrator took the message (or refused it, answered).

    def error_reply(self, request: VOXMessage, reason: str) -> VOXMessage:
        return VOXMessage(
            message_id=uuid.uuid4(),
            message_source=self.message_source,
            emitted_at=datetime.now(UTC).isoformat(),
            source=request.target,
            target=request.source,
            type=MSG_COMMAND_ERROR,
            details={"message": reason, "error": "security"},
            reply_to=request.message_id,
        )

    async def send(self, message: VOXMessage) -> None:
        """The outbound route: a message for an agent behind the bridge, to the ingress
        (JSON as pydantic writes it), confirmed by the broker."""
        await self.link.send(self.ingress, message.model_dump_json(), content_type="application/json")
