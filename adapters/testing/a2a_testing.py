"""Helpers for the A2A interop tests (tests only), all on the official A2A Python SDK
(``a2a-sdk`` 1.3.0, A2A 1.0, as scripts/python-env.sh pins it):

- ``closing``: a fixture that closes what a test opened, last first;
- ``a2a_section(...)``: the bridge's ``[a2a]`` configuration, for ``config_toml(extra=...)``;
- ``A2ABridge``: the bridge binary serving Wise Agents agents over A2A on its HTTP listener,
  and an a2a-sdk client for one of them (``client(...)``);
- ``EventStream``: a streaming answer read in the background, one event at a time with a
  timeout (the test never sleeps to wait for the bridge);
- ``A2AAgentServer`` and the ``a2a_agent_server`` fixture: an A2A agent served by the SDK itself
  (an ``AgentExecutor`` behind ``DefaultRequestHandler``, on Starlette routes from
  ``create_agent_card_routes`` / ``create_jsonrpc_routes``, run by uvicorn), for the outbound
  direction: what the bridge calls; ``HttpGate`` in front of it records every POST and plays
  the faulty or guarded server (5xx, a body that is not JSON-RPC, a bearer token), and
  ``ScriptedExecutor`` / ``BlockingExecutor`` end a task every way A2A has, or hold it;
- ``AgentSubprocess``: such an agent in a process of its own (a2a_agent_process.py), to kill;
- ``a2a_agent(...)`` and ``OutboundBridge``: the bridge with A2A agents among its proxied agents
  (``protocol = "a2a"``), and its ``/metrics`` read and waited on."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest
import uvicorn
from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    Client,
    ClientCallContext,
    ClientCallInterceptor,
    ClientConfig,
    ClientFactory,
    InMemoryContextCredentialStore,
)
from a2a.helpers import get_artifact_text, get_message_text, new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from sab_testing import BridgeProcess, Broker, Names, config_toml, free_port

# How long a test waits for one event (a stream's next event, an agent's next request).
WAIT = 30.0
T = TypeVar("T")


class Closing(Protocol):
    """The ``closing`` fixture's type."""

    def __call__(self, thing: T, close: Callable[[], Any]) -> T: ...


@pytest.fixture
def closing() -> Iterator[Closing]:
    """``closing(thing, close)`` returns ``thing`` and calls ``close`` after the test (last
    registered, first closed)."""
    closers: list[Callable[[], Any]] = []

    def register(thing: T, close: Callable[[], Any]) -> T:
        closers.append(close)
        return thing

    yield register
    for close in reversed(closers):
        close()


def a2a_section(
    serve: Sequence[str],
    descriptions: dict[str, str] | None = None,
    token_file: Path | None = None,
    reply_timeout_ms: int | None = None,
    public_url: str | None = None,
) -> str:
    """The ``[a2a]`` table (and ``[a2a.descriptions]``) of the bridge's configuration."""
    text = "[a2a]\nserve = [" + ", ".join(f'"{s}"' for s in serve) + "]\n"
    if public_url is not None:
        text += f'public_url = "{public_url}"\n'
    if token_file is not None:
        text += f'token_file = "{token_file}"\n'
    if reply_timeout_ms is not None:
        text += f"reply_timeout_ms = {reply_timeout_ms}\n"
    if descriptions:
        text += "\n[a2a.descriptions]\n" + "".join(f'{k} = "{v}"\n' for k, v in descriptions.items())
    return text


class A2ABridge:
    """The bridge binary with an ``[a2a]`` section, on a fresh HTTP port; its Wise Agents reply
    agent is ``reply_agent`` (one per test: bridges of other test runs on the same broker must
    not take this one's answers, as tests/common/bridge.rs does it)."""

    def __init__(
        self,
        broker: Broker,
        names: Names,
        tmp: Path,
        serve: Sequence[str],
        descriptions: dict[str, str] | None = None,
        token: str | None = None,
        reply_timeout_ms: int | None = None,
        contexts: Sequence[str] = (),
        https: tuple[Path, Path] | None = None,
        extra: str = "",
    ) -> None:
        self.port = free_port()
        # With HTTPS the certificate names localhost (tests/tls), so the URLs do too.
        self.base = f"https://localhost:{self.port}" if https else f"http://127.0.0.1:{self.port}"
        self.reply_agent = names.agent("_bridge")
        token_file = None
        if token is not None:
            token_file = tmp / "a2a-token"
            token_file.write_text(token + "\n")
        extra = a2a_section(serve, descriptions, token_file, reply_timeout_ms, self.base if https else None) + extra
        # The served agents that are names, not globs, are native agents known by name too.
        known = [s for s in serve if not any(c in s for c in "*?[")]
        toml = config_toml(
            broker,
            names,
            [],
            self.port,
            wiseagents=known,
            contexts=contexts,
            reply_agent=self.reply_agent,
            extra=extra,
            https=https,
        )
        self.process = BridgeProcess(toml, tmp)

    def agent_url(self, agent: str) -> str:
        return f"{self.base}/a2a/{agent}"

    def card_url(self, agent: str) -> str:
        return f"{self.agent_url(agent)}/.well-known/agent-card.json"

    def stop(self) -> int:
        return self.process.stop()

    async def card(self, http: httpx.AsyncClient, agent: str) -> AgentCard:
        """The agent's card, resolved by the SDK's ``A2ACardResolver`` from the agent's URL (its
        ``/.well-known/agent-card.json``)."""
        return await A2ACardResolver(http, self.agent_url(agent)).get_agent_card()

    async def client(
        self,
        http: httpx.AsyncClient,
        agent: str,
        streaming: bool = True,
        interceptors: list[ClientCallInterceptor] | None = None,
        binding: str = "JSONRPC",
    ) -> Client:
        """An a2a-sdk client of ``agent`` made as the SDK's users make one: ``ClientFactory``,
        the card resolved from the agent's URL (``create_from_url``), on the card's interface of
        ``binding`` ("JSONRPC" or "HTTP+JSON")."""
        config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding])
        factory = ClientFactory(config)
        return await factory.create_from_url(self.agent_url(agent), interceptors=interceptors)


async def bearer_auth(card: AgentCard, token: str) -> tuple[AuthInterceptor, ClientCallContext]:
    """The SDK's own way to send a bearer token: an ``AuthInterceptor`` over a credential store
    holding ``token`` for every scheme the card's security requirements name, and the call
    context (its session) under which the store keeps it."""
    store = InMemoryContextCredentialStore()
    for requirement in card.security_requirements:
        for scheme in requirement.schemes:
            await store.set_credentials(SESSION, scheme, token)
    return AuthInterceptor(store), ClientCallContext(state={"sessionId": SESSION})


# The session under which the credential store keeps the bridge's token.
SESSION = "sab-a2a-tests"


def user_message(text: str, context_id: str | None = None, parts: Sequence[Part] | None = None) -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        context_id=context_id,
        parts=list(parts) if parts is not None else [new_text_part(text)],
    )


def send_request(
    text: str, context_id: str | None = None, parts: Sequence[Part] | None = None, **configuration: Any
) -> SendMessageRequest:
    request = SendMessageRequest(message=user_message(text, context_id, parts))
    for key, value in configuration.items():
        setattr(request.configuration, key, value)
    return request


def artifact_texts(task: Task) -> list[str]:
    return [get_artifact_text(a) for a in task.artifacts]


def status_text(task: Task) -> str:
    return get_message_text(task.status.message)


def state_name(state: TaskState) -> str:
    return TaskState.Name(state)


def describe(event: StreamResponse) -> str:
    """One line per event, for assertion messages."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task({state_name(event.task.status.state)}, artifacts={artifact_texts(event.task)})"
    if kind == "status_update":
        status = event.status_update.status
        return f"status({state_name(status.state)}, {get_message_text(status.message)!r})"
    if kind == "artifact_update":
        return f"artifact({get_artifact_text(event.artifact_update.artifact)!r})"
    if kind == "message":
        return f"message({get_message_text(event.message)!r})"
    return f"unknown({event})"


class EventStream:
    """The events of ``send_message`` / ``subscribe`` pumped into a queue by a task of their own,
    so that a test takes them one by one with a timeout, and interleaves other calls."""

    END: None = None

    def __init__(self, stream: AsyncIterator[StreamResponse]) -> None:
        self.events: asyncio.Queue[StreamResponse | BaseException | None] = asyncio.Queue()
        self.seen: list[StreamResponse] = []
        self.task = asyncio.create_task(self._pump(stream))

    async def _pump(self, stream: AsyncIterator[StreamResponse]) -> None:
        try:
            async for event in stream:
                await self.events.put(event)
        except Exception as e:  # noqa: BLE001 - handed to the test, which raises it
            await self.events.put(e)
        finally:
            await self.events.put(self.END)

    async def next(self, secs: float = WAIT) -> StreamResponse | None:
        """The next event, None at the stream's end; raises what the stream raised."""
        try:
            item = await asyncio.wait_for(self.events.get(), secs)
        except TimeoutError:
            raise AssertionError(f"no stream event within {secs} s; seen: {self.history()}") from None
        if isinstance(item, BaseException):
            raise item
        if item is not None:
            self.seen.append(item)
        return item

    async def until(self, done: Callable[[StreamResponse], bool], secs: float = WAIT) -> StreamResponse:
        """Events up to the first for which ``done`` holds (which it returns)."""
        while True:
            event = await self.next(secs)
            if event is None:
                raise AssertionError(f"the stream ended first; seen: {self.history()}")
            if done(event):
                return event

    async def rest(self, secs: float = WAIT) -> list[StreamResponse]:
        """The events up to the stream's end."""
        events = []
        while (event := await self.next(secs)) is not None:
            events.append(event)
        return events

    def history(self) -> list[str]:
        return [describe(e) for e in self.seen]

    async def close(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass


def is_state(state: TaskState) -> Callable[[StreamResponse], bool]:
    def check(event: StreamResponse) -> bool:
        kind = event.WhichOneof("payload")
        if kind == "status_update":
            return bool(event.status_update.status.state == state)
        if kind == "task":
            return bool(event.task.status.state == state)
        return False

    return check


# -- an A2A agent served by the SDK (the outbound direction's far end) ----------------------
class EchoExecutor(AgentExecutor):
    """An agent as the SDK's examples write one: it makes the task, works, adds an artifact with
    ``answer(text)``, completes. What it was asked goes to ``received`` (thread-safe: the tests
    read it from outside the server's event loop); subclasses change what it does with it
    (``work``)."""

    def __init__(self, answer: Callable[[str], str] = lambda text: f"echo: {text}") -> None:
        self.answer = answer
        self.received: queue.Queue[Message] = queue.Queue()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        self.received.put(context.message)
        await self.work(context, event_queue)

    async def work(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await self.open_task(context, event_queue)
        await updater.add_artifact([new_text_part(self.answer(context.get_user_input()))], name="answer")
        await updater.complete()

    @staticmethod
    async def open_task(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
        """The task of ``context`` made (SUBMITTED) when it is new, then WORKING; its updater."""
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        return updater

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class ScriptedExecutor(EchoExecutor):
    """The first word of the text it is asked says how its task ends (the rest, ``x``, is in
    what it says), so that one agent shows every ending:

    - ``fail x``: FAILED, status message ``failed: x``; ``reject x``: REJECTED, ``rejected: x``;
      ``cancel x``: CANCELED, ``canceled: x``;
    - ``input x``: INPUT_REQUIRED, ``which language for x?``; ``auth x``: AUTH_REQUIRED,
      ``sign in to translate x``;
    - ``artifacts x``: COMPLETED with two artifacts, ``one: x`` and ``two: x``;
    - ``status x``: COMPLETED with no artifact, status message ``done: x``;
    - ``message x``: no task at all, a Message answer ``message: x``;
    - anything else: ``echo: <text>`` as an artifact, COMPLETED."""

    async def work(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        word, _, rest = text.partition(" ")
        if word == "message":
            await event_queue.enqueue_event(new_text_message(f"message: {rest}", context_id=context.context_id))
            return
        updater = await self.open_task(context, event_queue)

        def say(what: str) -> Message:
            return updater.new_agent_message([new_text_part(what)])

        if word == "fail":
            await updater.failed(say(f"failed: {rest}"))
        elif word == "reject":
            await updater.reject(say(f"rejected: {rest}"))
        elif word == "cancel":
            await updater.cancel(say(f"canceled: {rest}"))
        elif word == "input":
            await updater.requires_input(say(f"which language for {rest}?"))
        elif word == "auth":
            await updater.requires_auth(say(f"sign in to translate {rest}"))
        elif word == "artifacts":
            await updater.add_artifact([new_text_part(f"one: {rest}")], name="one")
            await updater.add_artifact([new_text_part(f"two: {rest}")], name="two")
            await updater.complete()
        elif word == "status":
            await updater.complete(say(f"done: {rest}"))
        else:
            await updater.add_artifact([new_text_part(self.answer(text))], name="answer")
            await updater.complete()


class BlockingExecutor(EchoExecutor):
    """An echo agent that, once it received a message (in ``received``: how a test knows the
    call is under way), holds its answer until ``release`` is set (by the test, from any
    thread); once released, every call is answered at once. It never holds longer than
    ``hold_secs``, so that a failed test cannot leave a server that never stops."""

    def __init__(
        self, answer: Callable[[str], str] = lambda text: f"echo: {text}", hold_secs: float = 4 * WAIT
    ) -> None:
        super().__init__(answer)
        self.release = threading.Event()
        self.hold_secs = hold_secs

    async def work(self, context: RequestContext, event_queue: EventQueue) -> None:
        await asyncio.to_thread(self.release.wait, self.hold_secs)
        await super().work(context, event_queue)


@dataclass
class Post:
    """A POST the agent's HTTP server was sent: its headers (names lower-cased), its JSON body
    (None when it is not JSON) and the status ``HttpGate`` answered itself (0: let through)."""

    headers: dict[str, str]
    body: Any
    refused_with: int

    @property
    def method(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None

    @property
    def message_id(self) -> str | None:
        """The A2A message's ``messageId`` in a ``SendMessage``'s params."""
        try:
            message_id: str = self.body["params"]["message"]["messageId"]
        except (KeyError, TypeError):
            return None
        return message_id


class HttpGate:
    """Raw ASGI middleware in front of an agent's app that records every POST (``posts``,
    thread-safe) and can stand in for a faulty or guarded server: it answers ``fail_status``
    (500) to the first ``fail_first`` POSTs; with ``token``, 401 (``WWW-Authenticate: Bearer``)
    to a POST without ``Authorization: Bearer <token>``; with ``garbage``, 200 with a body that
    is not JSON-RPC to every POST it lets through; with ``cut_streams``, the first that many
    ``SendStreamingMessage`` streams are cut (the connection dropped) after their first event,
    as a network that fails mid-stream. GETs (the card) always pass."""

    GARBAGE = b"<html><body>Service moved</body></html>"

    def __init__(
        self,
        fail_first: int = 0,
        fail_status: int = 500,
        token: str | None = None,
        garbage: bool = False,
        cut_streams: int = 0,
    ) -> None:
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.token = token
        self.garbage = garbage
        self.cut_streams = cut_streams
        self.app: ASGIApp | None = None
        self._lock = threading.Lock()
        self._posts: list[Post] = []

    def wrap(self, app: ASGIApp) -> HttpGate:
        self.app = app
        return self

    @property
    def posts(self) -> list[Post]:
        with self._lock:
            return list(self._posts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None, "HttpGate.wrap(app) first"
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body") or event["type"] != "http.request":
                break
        raw = b"".join(chunks)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            failing = sum(1 for p in self._posts if p.refused_with == self.fail_status)
            status = 0
            if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
                status = 401
            elif failing < self.fail_first:
                status = self.fail_status
            self._posts.append(Post(headers, body, status))
        if status == 401:
            await self._answer(
                send, 401, b'{"error": "unauthorized"}', "application/json", [(b"www-authenticate", b"Bearer")]
            )
        elif status:
            await self._answer(send, status, b"Internal Server Error", "text/plain")
        elif self.garbage:
            await self._answer(send, 200, self.GARBAGE, "text/html")
        else:
            replayed = False

            async def replay() -> ASGIMessage:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": raw, "more_body": False}
                return await receive()

            await self.app(scope, replay, self._cut(send) if self._cuts(body) else send)

    def _cuts(self, body: Any) -> bool:
        """Whether the stream this POST opens is one to cut (counted as it is decided)."""
        if not isinstance(body, dict) or body.get("method") != "SendStreamingMessage":
            return False
        with self._lock:
            if self.cut_streams <= 0:
                return False
            self.cut_streams -= 1
            return True

    @staticmethod
    def _cut(send: Send) -> Send:
        """``send`` that lets the response's start and first body chunk through, then drops the
        connection (the server sees an error and closes it mid-stream)."""
        chunks = 0

        async def cutting(message: ASGIMessage) -> None:
            nonlocal chunks
            if message["type"] == "http.response.body":
                chunks += 1
                if chunks > 1:
                    raise ConnectionResetError("HttpGate cut the stream")
            await send(message)

        return cutting

    @staticmethod
    async def _answer(
        send: Send, status: int, body: bytes, content_type: str, headers: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type.encode()),
                    (b"content-length", str(len(body)).encode()),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class A2AAgentServer:
    """``executor`` served over A2A 1.0 JSON-RPC at ``url`` (its card at
    ``url/.well-known/agent-card.json``) by uvicorn in a thread of its own, behind ``gate``
    (``HttpGate``: every POST recorded in ``gate.posts``, and faults on demand). The listening
    socket is bound and listening before the thread starts, so the server is reachable as soon
    as this returns (connections wait in the backlog until uvicorn accepts them)."""

    def __init__(
        self,
        name: str,
        executor: AgentExecutor,
        description: str = "an a2a-sdk agent",
        streaming: bool = True,
        gate: HttpGate | None = None,
    ) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/a2a/{name}"
        self.card = AgentCard(
            name=name,
            description=description,
            version="1.0.0",
            supported_interfaces=[AgentInterface(url=self.url, protocol_binding="JSONRPC", protocol_version="1.0")],
            capabilities=AgentCapabilities(streaming=streaming),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[AgentSkill(id="echo", name="echo", description=description, tags=["test"])],
        )
        handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=self.card)
        prefix = f"/a2a/{name}"
        app = Starlette(
            routes=[
                *create_agent_card_routes(self.card, card_url=f"{prefix}/.well-known/agent-card.json"),
                *create_jsonrpc_routes(handler, rpc_url=prefix),
            ]
        )
        # Every POST goes through a gate: a recorder when the test gives none.
        self.gate = (gate or HttpGate()).wrap(app)
        # A held call (BlockingExecutor) does not hold the stop for long.
        self.server = uvicorn.Server(
            uvicorn.Config(self.gate, log_level="warning", lifespan="off", timeout_graceful_shutdown=5)
        )
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


@pytest.fixture
def a2a_agent_server() -> Iterator[tuple[A2AAgentServer, EchoExecutor]]:
    """An a2a-sdk echo agent (``echo: <text>``) on a fresh port, stopped after the test."""
    executor = EchoExecutor(lambda text: f"echo: {text}")
    server = A2AAgentServer(f"SdkEcho_{uuid.uuid4().hex[:8]}", executor)
    try:
        yield server, executor
    finally:
        server.stop()


# -- the outbound direction: A2A agents as the bridge's proxied agents ------------------------
def a2a_agent(
    name: str,
    url: str,
    token_file: Path | None = None,
    max_calls: int | None = None,
    max_attempts: int | None = None,
    reply_timeout_ms: int | None = None,
) -> tuple[str, str, str]:
    """An ``[[agents]]`` entry (for ``config_toml``'s ``agents``) for the A2A agent at ``url``
    (its card at ``url/.well-known/agent-card.json``), named ``name`` in the Wise Agents society."""
    lines = [f'url = "{url}"']
    if token_file is not None:
        lines.append(f'token_file = "{token_file}"')
    for key, value in (
        ("max_calls", max_calls),
        ("max_attempts", max_attempts),
        ("reply_timeout_ms", reply_timeout_ms),
    ):
        if value is not None:
            lines.append(f"{key} = {value}")
    return name, "a2a", "\n".join(lines)


_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_value(text: str, name: str, **labels: str) -> float | None:
    """The sum of the samples of ``name`` whose labels include ``labels`` in a Prometheus text
    exposition; None when there is none (a labelled counter is not shown before it counts)."""
    found = None
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match.group(1) != name:
            continue
        have = dict(_LABEL.findall(match.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            found = (found or 0.0) + float(match.group(3))
    return found


class OutboundBridge:
    """The bridge binary with ``agents`` (``a2a_agent(...)`` entries among them) on a fresh
    HTTP port, its reply agent the test's own (``names.reply_agent``); ``kill()`` and
    ``restart()`` (the same configuration, the same port) for the crash tests."""

    def __init__(
        self,
        broker: Broker,
        names: Names,
        tmp: Path,
        agents: list[tuple[str, str, str]],
        wiseagents: Sequence[str] = (),
        contexts: Sequence[str] = (),
        extra: str = "",
    ) -> None:
        self.port = free_port()
        self.tmp = tmp
        self.toml = config_toml(broker, names, agents, self.port, wiseagents=wiseagents, contexts=contexts, extra=extra)
        self.process = BridgeProcess(self.toml, tmp)

    def stop(self) -> None:
        if self.process.proc.poll() is None:
            self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def restart(self) -> None:
        assert self.process.proc.poll() is not None, "restart() after stop() or kill()"
        self.process = BridgeProcess(self.toml, self.tmp)

    def log_lines(self) -> list[str]:
        """What the bridge logged so far (for assertion messages)."""
        while True:
            try:
                self.process.log.append(self.process.lines.get_nowait())
            except queue.Empty:
                return list(self.process.log)

    def metrics(self) -> str:
        got = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert got.status_code == 200, got.text
        return got.text

    def metric(self, name: str, **labels: str) -> float | None:
        return metric_value(self.metrics(), name, **labels)

    def wait_metric(self, name: str, check: Callable[[float], bool], secs: float = WAIT, **labels: str) -> float:
        """Polls ``/metrics`` until the value of ``name`` (0 while absent) passes ``check``;
        its value. On a timeout, the assertion shows every sample of the name."""
        deadline = time.monotonic() + secs
        while True:
            text = self.metrics()
            value = metric_value(text, name, **labels) or 0.0
            if check(value):
                return value
            if time.monotonic() > deadline:
                lines = [line for line in text.splitlines() if line.startswith(name)]
                raise AssertionError(f"{name}{labels} is {value} after {secs} s; samples: {lines}")
            time.sleep(0.05)  # polling the bridge's metrics, not waiting for time to pass

    def a2a_metrics(self, agent: str) -> dict[str, float | None]:
        """The agent's A2A call metrics, for assertion messages and reports."""
        text = self.metrics()
        return {
            "in_flight": metric_value(text, "bridge_a2a_calls_in_flight", agent=agent),
            "answered": metric_value(text, "bridge_a2a_calls_total", agent=agent, result="answered"),
            "failed": metric_value(text, "bridge_a2a_calls_total", agent=agent, result="failed"),
            "retries": metric_value(text, "bridge_a2a_call_retries_total", agent=agent),
        }


class AgentSubprocess:
    """An a2a-sdk agent in a process of its own (a2a_agent_process.py): a ``BlockingExecutor``
    that is never released, which writes ``received <text>`` on its standard output for each
    message, so that a test knows a call is under way, and kills it (``kill()``: SIGKILL). Or
    another agent that writes ``url <url>`` first: ``command``, its command line."""

    def __init__(self, name: str, command: Sequence[str] | None = None) -> None:
        script = Path(__file__).with_name("a2a_agent_process.py")
        self.lines: queue.Queue[str] = queue.Queue()
        self.proc = subprocess.Popen(
            list(command or [sys.executable, str(script), name]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.wait_line("url ").removeprefix("url ")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, prefix: str, secs: float = WAIT) -> str:
        deadline = time.monotonic() + secs
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the agent process wrote no {prefix!r} line within {secs} s") from None
            if line.startswith(prefix):
                return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(15)
