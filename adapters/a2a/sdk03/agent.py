"""An A2A 0.3 agent as the agents that have not moved to 1.0 are written: the official a2a-sdk
0.3.7's server (``A2AStarletteApplication``, ``DefaultRequestHandler``, an in-memory task store)
with an echo executor, run in the a2a-sdk 0.3.7 virtualenv (``$SAB_VENV/a2a-0.3``) by
adapters/a2a/tests/test_a2a_v03_e2e.py.

    python agent.py NAME streaming|blocking

serves NAME's card (``protocolVersion`` 0.3, ``capabilities.streaming`` as asked) and its JSON-RPC
at ``http://127.0.0.1:<port>/``; it writes ``url <url>`` once it listens, then, for each JSON-RPC
call, ``call <method> <A2A-Version header or ->`` and, for each message its executor runs,
``received <text>``. The executor answers ``echo: <text>`` as an artifact and completes the task.
Not checked by mypy (adapters/pyproject.toml): written against a2a-sdk 0.3.7."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_task


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        print(f"received {text}", flush=True)
        task = context.current_task or new_task(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact([Part(root=TextPart(text=f"echo: {text}"))], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


class Calls:
    """An ASGI middleware that says each JSON-RPC call's method and A2A-Version header."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        headers = dict(scope["headers"])
        version = headers.get(b"a2a-version", b"-").decode()
        try:
            method = json.loads(body).get("method", "?")
        except ValueError:
            method = "?"
        print(f"call {method} {version}", flush=True)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def main() -> None:
    name, mode = sys.argv[1], sys.argv[2]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    card = AgentCard(
        name=name,
        description="An a2a-sdk 0.3.7 echo agent.",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=mode == "streaming"),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="says it back", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore())
    app = Calls(A2AStarletteApplication(agent_card=card, http_handler=handler).build())
    print(f"url {url}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
