"""Helpers for the A2A interop tests (tests only), all on the official A2A Python SDK
(``a2a-sdk`` 1.3.0, A2A 1.0, as scripts/python-env.sh pins it):

- ``a2a_section(...)``: the bridge's ``[a2a]`` configuration, for ``config_toml(extra=...)``;
- ``A2ABridge``: the bridge binary serving Wise Agents agents over A2A on its HTTP listener,
  and an a2a-sdk client for one of them (``client(...)``);
- ``EventStream``: a streaming answer read in the background, one event at a time with a
  timeout (the test never sleeps to wait for the bridge);
- ``A2AAgentServer`` and the ``a2a_agent_server`` fixture: an A2A agent served by the SDK itself
  (an ``AgentExecutor`` behind ``DefaultRequestHandler``, on Starlette routes from
  ``create_agent_card_routes`` / ``create_jsonrpc_routes``, run by uvicorn), for the outbound
  direction: what the bridge will call."""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

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
from a2a.helpers import get_artifact_text, get_message_text, new_task, new_text_part
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

from sab_testing import BridgeProcess, Broker, Names, config_toml, free_port

# How long a test waits for one event (a stream's next event, an agent's next request).
WAIT = 30.0


def a2a_section(serve: Sequence[str], descriptions: dict[str, str] | None = None, token_file: Path | None = None,
                reply_timeout_ms: int | None = None) -> str:
    """The ``[a2a]`` table (and ``[a2a.descriptions]``) of the bridge's configuration."""
    text = "[a2a]\nserve = [" + ", ".join(f'"{s}"' for s in serve) + "]\n"
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

    def __init__(self, broker: Broker, names: Names, tmp: Path, serve: Sequence[str],
                 descriptions: dict[str, str] | None = None, token: str | None = None,
                 reply_timeout_ms: int | None = None, contexts: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.reply_agent = names.agent("_bridge")
        token_file = None
        if token is not None:
            token_file = tmp / "a2a-token"
            token_file.write_text(token + "\n")
        extra = a2a_section(serve, descriptions, token_file, reply_timeout_ms)
        # The served agents that are names, not globs, are native agents known by name too.
        known = [s for s in serve if not any(c in s for c in "*?[")]
        toml = config_toml(broker, names, [], self.port, wiseagents=known, contexts=contexts,
                           reply_agent=self.reply_agent, extra=extra)
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

    async def client(self, http: httpx.AsyncClient, agent: str, streaming: bool = True,
                     interceptors: list[ClientCallInterceptor] | None = None) -> Client:
        """An a2a-sdk client of ``agent`` made as the SDK's users make one: ``ClientFactory``,
        the card resolved from the agent's URL (``create_from_url``), JSON-RPC as the card says."""
        factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
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
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), context_id=context_id,
                   parts=list(parts) if parts is not None else [new_text_part(text)])


def send_request(text: str, context_id: str | None = None, parts: Sequence[Part] | None = None,
                 **configuration: Any) -> SendMessageRequest:
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
    read it from outside the server's event loop)."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.received: queue.Queue[Message] = queue.Queue()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        self.received.put(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(context.task_id, context.context_id,
                                                     TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await updater.add_artifact([new_text_part(self.answer(context.get_user_input()))], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class A2AAgentServer:
    """``executor`` served over A2A 1.0 JSON-RPC at ``url`` (its card at
    ``url/.well-known/agent-card.json``) by uvicorn in a thread of its own. The listening
    socket is bound and listening before the thread starts, so the server is reachable as soon
    as this returns (connections wait in the backlog until uvicorn accepts them)."""

    def __init__(self, name: str, executor: AgentExecutor, description: str = "an a2a-sdk agent",
                 streaming: bool = True) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/a2a/{name}"
        self.card = AgentCard(
            name=name, description=description, version="1.0.0",
            supported_interfaces=[AgentInterface(url=self.url, protocol_binding="JSONRPC", protocol_version="1.0")],
            capabilities=AgentCapabilities(streaming=streaming),
            default_input_modes=["text/plain"], default_output_modes=["text/plain"],
            skills=[AgentSkill(id="echo", name="echo", description=description, tags=["test"])],
        )
        handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=self.card)
        prefix = f"/a2a/{name}"
        app = Starlette(routes=[
            *create_agent_card_routes(self.card, card_url=f"{prefix}/.well-known/agent-card.json"),
            *create_jsonrpc_routes(handler, rpc_url=prefix),
        ])
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
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
