"""BridgeBus: PenguiFlow's MessageBus protocol, publishing to the bridge's PenguiFlow ingress."""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from penguiflow.bus import BusEnvelope
from penguiflow.types import FinalAnswer, Message
from pydantic import BaseModel

from sab_stomp import AsyncLink

log = logging.getLogger("penguiflow_stomp")


def envelope_json(envelope: BusEnvelope) -> bytes:
    """A BusEnvelope as JSON; a pydantic payload (a ``Message``) as pydantic writes it."""
    payload = envelope.payload
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json")
    return json.dumps(
        {
            "edge": envelope.edge,
            "source": envelope.source,
            "target": envelope.target,
            "trace_id": envelope.trace_id,
            "payload": payload,
            "headers": dict(envelope.headers) if envelope.headers is not None else None,
            "meta": dict(envelope.meta) if envelope.meta is not None else None,
        },
        default=_jsonable,
    ).encode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return str(value)


class BridgeBus:
    """Publishes the envelopes whose ``edge`` matches one of ``edges`` (globs over
    ``"<source>-><target>"``; default: everything that reaches the Rookery) to ``ingress``,
    waiting for the broker's RECEIPT. Edges inside the flow stay inside it.

    A message without a route (no ``meta.reply_to`` / ``meta.recipient``, or a bare payload
    that is not a ``Message``) is not published: the bridge could only dead-letter it."""

    def __init__(self, link: AsyncLink, ingress: str, edges: Iterable[str] = ("*->Rookery",)) -> None:
        self.link = link
        self.ingress = ingress
        self.edges = tuple(edges)
        self.published = 0
        # Told the trace of each FinalAnswer that reaches the Rookery (BridgeInbox ends it).
        self.answered: Callable[[str], None] | None = None

    def wanted(self, envelope: BusEnvelope) -> bool:
        if not any(fnmatch.fnmatchcase(envelope.edge, p) for p in self.edges):
            return False
        message = envelope.payload
        if not isinstance(message, Message):
            log.warning(
                "edge %s carries a bare %s, not a Message: not published", envelope.edge, type(message).__name__
            )
            return False
        return bool(message.meta.get("reply_to") or message.meta.get("recipient"))

    async def publish(self, envelope: BusEnvelope) -> None:
        try:
            if self.wanted(envelope):
                await self.send(envelope)
        finally:
            # Published or not (no route, another edge, the broker down), a FinalAnswer in the
            # Rookery ends its trace: PenguiFlow would run its node again (BridgeInbox).
            message = envelope.payload
            final = isinstance(message, Message) and isinstance(message.payload, FinalAnswer)
            if final and envelope.edge.endswith("->Rookery") and self.answered is not None:
                self.answered(message.trace_id)

    async def send(self, envelope: BusEnvelope) -> None:
        """Publishes ``envelope`` unconditionally (``BridgeInbox.ask`` uses it)."""
        await self.link.send(self.ingress, envelope_json(envelope), content_type="application/json")
        self.published += 1
