"""BridgeInbox: the agent's inbox on the broker as the source of a PenguiFlow flow."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from penguiflow.bus import BusEnvelope
from penguiflow.types import Headers, Message

from sab_stomp import MessageFrame

from .bus import BridgeBus

log = logging.getLogger("penguiflow_stomp")


class BridgeInbox:
    """Feeds ``flow`` from the inbox of the agent ``agent``.

    Each message is validated as ``penguiflow.types.Message`` and handed to ``flow.emit``; it
    is acknowledged when ``emit`` returned (the flow's first queue took it), dead-lettered
    with the reason when it is not a valid Message. Answers to this agent's own :meth:`ask` are not fed to the
    flow: they complete the ask. Results the flow leaves in the Rookery are fetched and dropped
    (the bus has already sent them to the bridge), unless ``on_result`` takes them.

    A trace whose ``FinalAnswer`` reached the Rookery is ended (its cancellation event set, as
    ``PenguiFlow.cancel`` does): PenguiFlow 3.x runs a node that returned a Message carrying a
    ``FinalAnswer`` again and again (``_execute_with_reliability`` continues its retry loop
    after routing the answer to the Rookery), each run another answer; set, the next run
    stops before it starts. The event goes when the trace's last message is finalized, so a
    later ask in the same trace runs."""

    def __init__(
        self,
        flow: Any,
        agent: str,
        bus: BridgeBus,
        inbox: str = "/queue/penguiflow.{agent}",
        tenant: str = "default",
        on_result: Any = None,
    ) -> None:
        self.flow = flow
        self.agent = agent
        self.bus = bus
        self.inbox = inbox.replace("{agent}", agent)
        self.tenant = tenant
        self.on_result = on_result
        self._pending: dict[str, asyncio.Future[Message]] = {}
        self._drain: asyncio.Task[None] | None = None
        self._sub: str | None = None
        bus.answered = self._answered

    async def start(self) -> None:
        """Connects (if the bus's link is not up yet) and starts consuming the inbox."""
        if self.bus.link.link.wait_connected(0) is False:
            await self.bus.link.start()
        self._drain = asyncio.create_task(self._drain_rookery())
        self._sub = await self.bus.link.subscribe(self.inbox, self._on_frame)

    async def stop(self) -> None:
        if self._sub is not None:
            await self.bus.link.unsubscribe(self._sub)
        if self._drain is not None:
            self._drain.cancel()
        await self.bus.link.stop()

    async def _on_frame(self, frame: MessageFrame) -> None:
        message = Message.model_validate_json(frame.body)
        correlation = message.meta.get("correlation_id")
        waiting = self._pending.pop(correlation, None) if isinstance(correlation, str) else None
        if waiting is not None:
            if not waiting.done():
                waiting.set_result(message)
            return
        await self.flow.emit(message)

    def _answered(self, trace_id: str) -> None:
        # Only while the flow still counts the trace: an event made for a trace already
        # finalized (a publish PenguiFlow scheduled apart) would never be dropped, and would
        # cancel the next ask in that trace. (`_trace_counts` is PenguiFlow's own bookkeeping.)
        live = getattr(self.flow, "_trace_counts", None)
        if isinstance(live, dict) and trace_id not in live:
            return
        self.flow.ensure_trace_event(trace_id).set()

    async def _drain_rookery(self) -> None:
        while True:
            result = await self.flow.fetch()
            if self.on_result is not None:
                await self.on_result(result)

    async def ask(
        self,
        recipient: str,
        payload: Any,
        *,
        parent: Message | None = None,
        context: str | None = None,
        timeout: float | None = 30.0,
    ) -> Message:
        """Asks ``recipient`` (an agent behind the bridge) and returns its answer, a Message
        whose payload is a ``FinalAnswer`` (or text). ``parent`` gives headers and trace."""
        correlation = uuid.uuid4().hex
        meta = {
            "sender": self.agent,
            "recipient": recipient,
            "reply_to": self.agent,
            "correlation_id": correlation,
            "message_type": "QUERY",
        }
        if context is not None:
            meta["context_name"] = context
        if parent is not None:
            message = Message(payload=payload, headers=parent.headers, meta=meta, trace_id=parent.trace_id)
        else:
            message = Message(payload=payload, headers=Headers(tenant=self.tenant, topic=context), meta=meta)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = future
        try:
            await self.bus.send(
                BusEnvelope(
                    edge=f"{self.agent}->{recipient}",
                    source=self.agent,
                    target=recipient,
                    trace_id=message.trace_id,
                    payload=message,
                    headers=message.headers.model_dump(),
                    meta=dict(message.meta),
                )
            )
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(correlation, None)
