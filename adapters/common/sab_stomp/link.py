"""One STOMP connection to the broker the bridge uses (stomp.py, STOMP 1.2): it reconnects with
backoff and subscribes again, heart-beats, waits for the broker's RECEIPT on every send, and
leaves acknowledgement to the caller (client-individual), so a message is acknowledged only
once the framework has taken it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import itertools
import logging
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import stomp

log = logging.getLogger("sab_stomp")


class SendFailed(Exception):
    """The broker did not confirm a SEND (no RECEIPT in time, or the connection was lost)."""


@dataclass
class LinkConfig:
    """Where the broker is and how to talk to it. ``from_env`` reads ``SAB_STOMP_*``."""

    host: str = "127.0.0.1"
    port: int = 61613
    login: str | None = None
    passcode: str | None = None
    vhost: str = "/"
    heartbeats: tuple[int, int] = (10000, 10000)
    receipt_timeout: float = 10.0
    reconnect_max: float = 30.0
    prefetch: int = 32
    #: Where a message the framework refused goes, with the reason (the bridge's default
    #: ``delivery.dead_letter``); ``None``: NACK it instead (``requeue:false``).
    dead_letter: str | None = "/queue/bridge.dead"

    @classmethod
    def from_env(cls, **overrides: Any) -> LinkConfig:
        env = os.environ.get
        cfg = cls(
            host=env("SAB_STOMP_HOST", "127.0.0.1"),
            port=int(env("SAB_STOMP_PORT", "61613")),
            login=env("SAB_STOMP_LOGIN"),
            passcode=env("SAB_STOMP_PASSCODE"),
            vhost=env("SAB_STOMP_VHOST", "/"),
            dead_letter=env("SAB_STOMP_DEAD_LETTER", "/queue/bridge.dead") or None,
        )
        for k, v in overrides.items():
            setattr(cfg, k, v)
        return cfg


@dataclass(frozen=True, slots=True)
class MessageFrame:
    """A MESSAGE frame as the link hands it over: stomp.py's headers and body, and the
    connection it came on (``generation``), so that it is acknowledged only on that one."""

    headers: dict[str, str]
    body: bytes
    generation: int


#: The subscription whose message the current task is handling (see ``AsyncLink.unsubscribe``).
_handling: contextvars.ContextVar[str | None] = contextvars.ContextVar("sab_handling", default=None)

#: What :meth:`AsyncLink.subscribe` hands each message to; its return acknowledges it.
FrameHandler = Callable[[MessageFrame], Awaitable[None]]


@dataclass
class _Sub:
    id: str
    destination: str
    on_message: Callable[[MessageFrame], None]
    headers: dict[str, str] = field(default_factory=dict)


class Link(stomp.ConnectionListener):
    """A connection that stays up. Callbacks run on stomp.py's receiver thread: keep them short
    (hand the frame over) and call :meth:`ack` or :meth:`nack` when the work is done."""

    def __init__(self, config: LinkConfig, name: str = "sab") -> None:
        self.config = config
        self.name = name
        self._subs: dict[str, _Sub] = {}
        self._receipts: dict[str, threading.Event] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._stopping = False
        self._conn: stomp.Connection12 | None = None
        self._generation = 0
        self.reconnects = 0

    # -- connection -----------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        """Connects (retrying until ``timeout``) and subscribes what was subscribed."""
        self._stopping = False
        self._connect_until(time.monotonic() + timeout)

    def _connect_until(self, deadline: float | None) -> None:
        delay = 0.2
        while not self._stopping:
            try:
                self._connect_once()
                return
            except Exception as exc:  # any failure means: try again
                if deadline is not None and time.monotonic() > deadline:
                    raise ConnectionError(f"{self.name}: cannot connect to the broker: {exc}") from exc
                log.warning("%s: connecting failed (%s); retrying in %.1f s", self.name, exc, delay)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, self.config.reconnect_max)

    def _connect_once(self) -> None:
        c = self.config
        conn = stomp.Connection12(  # STOMP 1.2: ACK/NACK by the message's `ack` header
            [(c.host, c.port)],
            heartbeats=c.heartbeats,
            vhost=c.vhost,
            auto_decode=False,
            reconnect_attempts_max=1,
        )
        conn.set_listener("link", self)
        conn.connect(c.login, c.passcode, wait=True)
        with self._lock:
            self._conn = conn
            self._generation += 1
            subs = list(self._subs.values())
        for sub in subs:
            self._subscribe_on(conn, sub)
        self._connected.set()

    def _subscribe_on(self, conn: stomp.Connection12, sub: _Sub) -> None:
        headers = {"activemq.prefetchSize": str(self.config.prefetch), "prefetch-count": str(self.config.prefetch)}
        headers.update(sub.headers)
        receipt = self._new_receipt()
        conn.subscribe(sub.destination, id=sub.id, ack="client-individual", headers=headers, receipt=receipt)
        self._await_receipt(receipt)

    def stop(self) -> None:
        """Disconnects; no reconnection after this."""
        self._stopping = True
        self._connected.clear()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:  # noqa: BLE001 — already gone
                pass

    def on_disconnected(self) -> None:
        self._connected.clear()
        with self._lock:
            self._conn = None
            waiting = list(self._receipts.values())
        for event in waiting:
            event.set()  # the waiter sees its receipt missing and fails
        if self._stopping:
            return
        self.reconnects += 1
        log.warning("%s: broker connection lost; reconnecting", self.name)
        threading.Thread(target=self._connect_until, args=(None,), daemon=True).start()

    def on_heartbeat_timeout(self) -> None:
        log.warning("%s: broker heart-beats stopped", self.name)

    def on_error(self, frame: stomp.utils.Frame) -> None:
        log.error("%s: broker ERROR: %s %s", self.name, frame.headers.get("message"), _text(frame.body)[:200])

    def on_receipt(self, frame: stomp.utils.Frame) -> None:
        with self._lock:
            event = self._receipts.get(frame.headers.get("receipt-id", ""))
        if event is not None:
            event.set()

    def on_message(self, frame: stomp.utils.Frame) -> None:
        sub = self._subs.get(frame.headers.get("subscription", ""))
        if sub is None:
            return
        message = MessageFrame(headers=frame.headers, body=frame.body, generation=self._generation)
        try:
            sub.on_message(message)
        except Exception:  # never let a callback kill the receiver thread
            log.exception("%s: handing over a message from %s failed", self.name, sub.destination)

    # -- operations ----------------------------------------------------------------------
    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    def subscribe(
        self, destination: str, on_message: Callable[[MessageFrame], None], headers: dict[str, str] | None = None
    ) -> str:
        """Consumes ``destination`` with client-individual acknowledgement, now and after
        every reconnection; returns the subscription id."""
        sub = _Sub(
            id=f"{self.name}-{next(self._ids)}", destination=destination, on_message=on_message, headers=headers or {}
        )
        with self._lock:
            self._subs[sub.id] = sub
            conn = self._conn
        if conn is not None:
            self._subscribe_on(conn, sub)
        return sub.id

    def unsubscribe(self, sub_id: str) -> None:
        with self._lock:
            sub = self._subs.pop(sub_id, None)
            conn = self._conn
        if sub is not None and conn is not None:
            try:
                conn.unsubscribe(id=sub_id)
            except Exception:  # noqa: BLE001 — the connection went: nothing to undo
                pass

    def ack(self, frame: MessageFrame) -> None:
        """Acknowledges a message (on the connection it came from: after a reconnection the
        broker redelivers it instead, which is the at-least-once promise)."""
        self._settle(frame, "ack")

    def nack(self, frame: MessageFrame) -> None:
        """Refuses a message without requeueing it (``requeue:false``, which RabbitMQ reads;
        ActiveMQ moves a NACKed message to its DLQ)."""
        self._settle(frame, "nack", requeue="false")

    def _settle(self, frame: MessageFrame, how: str, **headers: str) -> None:
        conn = self._conn
        ack_id = frame.headers.get("ack") or frame.headers.get("message-id")
        if conn is None or ack_id is None or frame.generation != self._generation:
            return  # it came on a connection since lost: the broker redelivers it
        try:
            getattr(conn, how)(ack_id, **headers)
        except Exception as exc:  # noqa: BLE001 — lost connection: the broker redelivers
            log.warning("%s: %s failed (%s); the broker will redeliver", self.name, how, exc)

    def send(
        self,
        destination: str,
        body: bytes | str,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> None:
        """SENDs ``body`` (persistent) and waits for the broker's RECEIPT; raises SendFailed."""
        if not self._connected.wait(self.config.receipt_timeout):
            raise SendFailed(f"not connected to the broker (sending to {destination})")
        conn = self._conn
        if conn is None:
            raise SendFailed(f"not connected to the broker (sending to {destination})")
        receipt = self._new_receipt()
        all_headers = {"persistent": "true", **(headers or {})}
        try:
            conn.send(destination, body, content_type=content_type, headers=all_headers, receipt=receipt)
        except Exception as exc:
            self._drop_receipt(receipt)
            raise SendFailed(f"sending to {destination}: {exc}") from exc
        self._await_receipt(receipt)

    def _new_receipt(self) -> str:
        receipt = f"{self.name}-r{next(self._ids)}"
        with self._lock:
            self._receipts[receipt] = threading.Event()
        return receipt

    def _drop_receipt(self, receipt: str) -> None:
        with self._lock:
            self._receipts.pop(receipt, None)

    def _await_receipt(self, receipt: str) -> None:
        with self._lock:
            event = self._receipts[receipt]
        got = event.wait(self.config.receipt_timeout)
        with self._lock:
            self._receipts.pop(receipt, None)
            connected = self._conn is not None
        if not got or not connected:
            raise SendFailed(f"no RECEIPT from the broker for {receipt}")


class AsyncLink:
    """The link seen from asyncio: one async handler per subscription. A message is
    acknowledged when its handler returned; when the handler raised, it goes to the dead-letter
    destination with the reason (then acknowledged), or is NACKed without one; when the handler
    failed to send (``SendFailed``: the connection is in trouble) it is left unacknowledged,
    and the broker redelivers it on the next connection."""

    def __init__(self, config: LinkConfig, name: str = "sab") -> None:
        self.link = Link(config, name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.dead_lettered = 0
        # Messages handed to a handler and not yet settled, per subscription id, and the
        # unsubscribes woken at each settlement (see ``unsubscribe``).
        self._unsettled: dict[str, int] = {}
        self._unsettled_lock = threading.Lock()
        self._drained: dict[str, asyncio.Event] = {}

    async def start(self, timeout: float = 30.0) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.link.start, timeout)

    async def stop(self) -> None:
        await asyncio.to_thread(self.link.stop)

    async def subscribe(self, destination: str, handler: FrameHandler, headers: dict[str, str] | None = None) -> str:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        link = self.link

        def on_message(frame: MessageFrame) -> None:
            # Counted before the handler runs, so that an unsubscribe waits for its ACK. (A frame
            # the link hands over while an unsubscribe is already past its count is not waited
            # for: that window is the time between stomp.py's read and this line.)
            sub_id = frame.headers.get("subscription", "")
            with self._unsettled_lock:
                self._unsettled[sub_id] = self._unsettled.get(sub_id, 0) + 1
            try:
                future = asyncio.run_coroutine_threadsafe(self._guarded(handler, frame, destination), loop)
            except RuntimeError:  # the loop is closed: not handled, not acknowledged, redelivered
                self._settled_one(sub_id, loop)
                raise

            def settle(done: concurrent.futures.Future[None]) -> None:
                try:
                    if done.cancelled():
                        return  # shutting down: not acknowledged, so redelivered
                    error = done.exception()
                    if error is None:
                        link.ack(frame)
                    elif isinstance(error, SendFailed):
                        log.warning("%s: %s; the message stays unacknowledged", link.name, error)
                    else:
                        link.nack(frame)
                finally:
                    self._settled_one(sub_id, loop)

            future.add_done_callback(settle)

        return await asyncio.to_thread(self.link.subscribe, destination, on_message, headers)

    async def _guarded(self, handler: FrameHandler, frame: MessageFrame, source: str) -> None:
        _handling.set(frame.headers.get("subscription"))
        try:
            await handler(frame)
        except SendFailed:
            raise
        except Exception as exc:
            dead_letter = self.link.config.dead_letter
            log.error("%s: the framework refused a message from %s: %r", self.link.name, source, exc)
            if dead_letter is None:
                raise
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:1024]
            headers = {"bridge-error": reason, "bridge-error-kind": "adapter", "bridge-source": source}
            content_type = frame.headers.get("content-type")
            await self.send(dead_letter, frame.body, headers, content_type)
            self.dead_lettered += 1

    def _settled_one(self, sub_id: str, loop: asyncio.AbstractEventLoop) -> None:
        with self._unsettled_lock:
            left = self._unsettled.get(sub_id, 1) - 1
            if left > 0:
                self._unsettled[sub_id] = left
            else:
                self._unsettled.pop(sub_id, None)
        event = self._drained.get(sub_id)
        if event is not None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    async def unsubscribe(self, sub_id: str) -> None:
        """UNSUBSCRIBEs once the messages the subscription handed over are settled (within the
        receipt timeout): an ACK that reaches the broker after the UNSUBSCRIBE is an ERROR on
        Artemis and RabbitMQ, which closes the connection. An ask's reply inbox is unsubscribed as
        soon as its answer is read, while that answer's ACK is still to be sent. A handler that
        unsubscribes its own subscription waits for the others' messages, not its own (whose ACK
        then follows). Cancelled while it waits, it unsubscribes at once."""
        own = 1 if _handling.get() == sub_id else 0
        changed = asyncio.Event()
        self._drained[sub_id] = changed
        deadline = asyncio.get_running_loop().time() + self.link.config.receipt_timeout
        try:
            while True:
                changed.clear()
                with self._unsettled_lock:
                    if self._unsettled.get(sub_id, 0) <= own:
                        break
                left = deadline - asyncio.get_running_loop().time()
                try:
                    await asyncio.wait_for(changed.wait(), max(left, 0))
                except TimeoutError:
                    log.warning("%s: unsubscribing %s with messages still being handled", self.link.name, sub_id)
                    break
        except asyncio.CancelledError:
            self.link.unsubscribe(sub_id)  # a short write: never leave the subscription behind
            raise
        finally:
            self._drained.pop(sub_id, None)
        await asyncio.to_thread(self.link.unsubscribe, sub_id)

    async def send(
        self,
        destination: str,
        body: bytes | str,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> None:
        await asyncio.to_thread(self.link.send, destination, body, headers, content_type)


def _text(body: Any) -> str:
    return body.decode("utf-8", "replace") if isinstance(body, bytes | bytearray) else str(body or "")
