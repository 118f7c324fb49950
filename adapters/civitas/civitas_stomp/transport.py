"""StompTransport: Civitas's Transport protocol over STOMP, through stomp-agent-bridge.

Each local agent consumes its inbox (``/queue/civitas.{agent}`` by default, the bridge's
``protocols.civitas.inbox``); a message for a name that is not local goes to the bridge's
Civitas ingress (``protocols.civitas.ingress``), which routes it by ``recipient``. Traffic
between agents of the same agency, and Civitas's own ``_agency.*`` / ``_reply.*`` traffic,
stays in the process (the bridge refuses reserved types)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgpack

from sab_stomp import AsyncLink, FrameHandler, LinkConfig, MessageFrame

from .ids import uuid7

log = logging.getLogger("civitas_stomp")

Handler = Callable[[bytes], Awaitable[None]]

JSON, MSGPACK = "application/json", "application/msgpack"


class StompTransport:
    """A Civitas transport whose wire is a STOMP broker and whose peers are behind the bridge.

    Parameters:
        serializer: the agency's serializer (Civitas's JsonSerializer or MsgpackSerializer).
        inbox: where the bridge delivers to a local agent; ``{agent}`` is its name.
        ingress: where this agency sends to agents behind the bridge.
        link: the broker (``LinkConfig.from_env()`` when not given: ``SAB_STOMP_*``).
    """

    def __init__(
        self,
        serializer: Any,
        inbox: str = "/queue/civitas.{agent}",
        ingress: str = "/queue/bridge.civitas",
        link: LinkConfig | None = None,
        **link_options: Any,
    ) -> None:
        self._serializer = serializer
        self._inbox = inbox
        self._ingress = ingress
        self._link = AsyncLink(link or LinkConfig.from_env(**link_options), name="civitas")
        self._handlers: dict[str, Handler] = {}
        self._stomp_subs: dict[str, str] = {}
        self._reply_queues: dict[str, asyncio.Queue[bytes]] = {}
        self._pending_by_correlation: dict[str, str] = {}
        self._started = False

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        await self._link.start()
        self._started = True

    async def stop(self) -> None:
        self._started = False
        await self._link.stop()
        self._handlers.clear()
        self._stomp_subs.clear()
        self._reply_queues.clear()
        self._pending_by_correlation.clear()

    async def wait_ready(self) -> None:
        """Subscriptions are confirmed by the broker's RECEIPT when subscribe() returns."""

    async def wait_subscribed(self, address: str, timeout: float = 2.0) -> None:
        """Nothing to wait for: subscribe() already had the broker's RECEIPT."""

    def set_serializer(self, serializer: Any) -> None:
        self._serializer = serializer

    # -- addresses -------------------------------------------------------------------------
    async def subscribe(self, address: str, handler: Handler) -> None:
        """A local address. Agent names also consume their inbox on the broker; Civitas's
        internal addresses (``_agency.*``, ``_runtime``) stay in the process."""
        self._handlers[address] = handler
        if address.startswith("_") or address in self._stomp_subs:
            return
        destination = self._inbox.replace("{agent}", address)
        self._stomp_subs[address] = await self._link.subscribe(destination, self._inbound(address))

    async def unsubscribe(self, address: str) -> None:
        self._handlers.pop(address, None)
        sub = self._stomp_subs.pop(address, None)
        if sub is not None:
            await self._link.unsubscribe(sub)

    def has_reply_address(self, address: str) -> bool:
        return address in self._reply_queues

    def _inbound(self, address: str) -> FrameHandler:
        async def on_frame(frame: MessageFrame) -> None:
            data = self._as_ours(frame.body, frame.headers.get("content-type"))
            reply_address = self._reply_address_of(data)
            if reply_address is not None:
                await self._reply_queues[reply_address].put(data)
                return
            handler = self._handlers.get(address)
            if handler is None:
                raise RuntimeError(f"no local agent {address!r} for a message from the bridge")
            # Returns once the message is in the agent's mailbox: then it is acknowledged.
            await handler(data)

        return on_frame

    def _reply_address_of(self, data: bytes) -> str | None:
        """The pending ask() a reply from the bridge answers: the bridge gives a reply the
        asker's own ``correlation_id`` back (its ``recipient`` is the asker's name)."""
        if not self._pending_by_correlation:
            return None
        try:
            message = self._serializer.deserialize(data)
        except Exception:  # noqa: BLE001 — the agent's handler reports it
            return None
        if message.type == "message":
            return None
        address = self._pending_by_correlation.get(message.correlation_id or "")
        return address if address in self._reply_queues else None

    # -- sending ---------------------------------------------------------------------------
    async def publish(self, address: str, data: bytes) -> None:
        if address in self._reply_queues:
            await self._reply_queues[address].put(data)
            return
        handler = self._handlers.get(address)
        if handler is not None:
            await handler(data)
            return
        if address.startswith("_"):
            log.debug("no local subscriber for %s; dropped (Civitas-internal)", address)
            return
        await self._link.send(self._ingress, data, content_type=self._content_type())

    async def request(self, address: str, data: bytes, timeout: float | None) -> bytes:
        """ask(): a temporary reply address, injected as ``reply_to``; a local answer comes
        to it directly, an answer from the bridge by the request's ``correlation_id``."""
        reply_address = f"_reply.{uuid7()}"
        queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=1)
        self._reply_queues[reply_address] = queue
        message = self._serializer.deserialize(data)
        message.reply_to = reply_address
        correlation = message.correlation_id
        if correlation:
            self._pending_by_correlation[correlation] = reply_address
        reply_sub = None
        try:
            data = self._serializer.serialize(message)
            handler = self._handlers.get(address)
            if handler is not None:
                await handler(data)
            else:
                reply_sub = await self._subscribe_reply_inbox(message.sender, reply_address)
                await self._link.send(self._ingress, data, content_type=self._content_type())
            async with asyncio.timeout(timeout):
                return await queue.get()
        finally:
            if reply_sub is not None:
                await self._link.unsubscribe(reply_sub)
            self._reply_queues.pop(reply_address, None)
            if correlation:
                self._pending_by_correlation.pop(correlation, None)

    async def _subscribe_reply_inbox(self, sender: str, reply_address: str) -> str | None:
        """An asker without an inbox on the broker (``Runtime.ask()`` asks as ``_runtime``) is
        answered by the bridge at the inbox of its reply address, ``{agent}`` = ``_reply.*``:
        consumed for the duration of the ask (subscribed, with the broker's RECEIPT, before the
        ask is sent). An agent's own inbox already receives its answers."""
        if sender in self._stomp_subs:
            return None
        destination = self._inbox.replace("{agent}", reply_address)

        async def on_frame(frame: MessageFrame) -> None:
            queue = self._reply_queues.get(reply_address)
            if queue is None or queue.full():
                log.warning("a second or late answer at %s: dropped", destination)
                return
            queue.put_nowait(self._as_ours(frame.body, frame.headers.get("content-type")))

        return await self._link.subscribe(destination, on_frame)

    # -- encodings -------------------------------------------------------------------------
    def _content_type(self) -> str:
        return MSGPACK if type(self._serializer).__name__.startswith("Msgpack") else JSON

    def _as_ours(self, body: bytes | str, content_type: str | None) -> bytes:
        """The bridge writes each agent in its configured encoding; the agency reads its
        serializer's: a body in the other one is converted (same dict either way)."""
        raw = body.encode() if isinstance(body, str) else bytes(body)
        theirs = _encoding_of(raw, content_type)
        ours = self._content_type()
        if theirs == ours or theirs is None:
            return raw
        value = json.loads(raw) if theirs == JSON else msgpack.unpackb(raw, raw=False)
        return msgpack.packb(value, use_bin_type=True) if ours == MSGPACK else json.dumps(value).encode()


def _encoding_of(raw: bytes, content_type: str | None) -> str | None:
    if content_type:
        if "msgpack" in content_type:
            return MSGPACK
        if "json" in content_type:
            return JSON
    if raw[:1] in (b"{", b" ", b"\n", b"\r", b"\t"):
        return JSON
    if raw[:1] and (0x80 <= raw[0] <= 0x8F or raw[0] in (0xDE, 0xDF)):
        return MSGPACK
    return None


def bridge_components(
    remote: Iterable[str] = ("*",),
    encoding: str = "json",
    inbox: str = "/queue/civitas.{agent}",
    ingress: str = "/queue/bridge.civitas",
    link: LinkConfig | None = None,
    **link_options: Any,
) -> Any:
    """A Civitas ``ComponentSet`` for ``Runtime(supervisor=..., components=...)``: Civitas's
    serializer (``encoding`` ``json`` or ``msgpack``, as the bridge's ``encoding`` for these
    agents), this transport, and a registry in which ``remote`` names route to the bridge."""
    from civitas.components import ComponentSet
    from civitas.observability.tracer import Tracer
    from civitas.plugins.state import InMemoryStateStore
    from civitas.serializer import JsonSerializer, MsgpackSerializer

    from .registry import BridgeRegistry

    serializer = MsgpackSerializer() if encoding == "msgpack" else JsonSerializer()
    transport = StompTransport(serializer, inbox=inbox, ingress=ingress, link=link, **link_options)
    return ComponentSet(
        transport=transport,
        registry=BridgeRegistry(remote),
        serializer=serializer,
        tracer=Tracer(),
        store=InMemoryStateStore(),
    )
