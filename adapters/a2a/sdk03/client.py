"""An A2A 0.3 client as the agents that have not moved to 1.0 are written: the official a2a-sdk
0.3.7 (the version Solace Agent Mesh pins), run in a virtualenv of its own (``$SAB_VENV/a2a-0.3``,
made by scripts/python-env.sh), since the tests' own virtualenv holds a2a-sdk 1.3.0. The tests
in adapters/a2a/tests/test_a2a_v03_e2e.py run it as a process and read what it prints: a JSON
object per line, each a step (``{"step": ..., ...}``), the SDK's pydantic models dumped as they
came. It reads a line on its standard input where a step says ``"waits": true``.

    python client.py send URL TEXT         a non-streaming send: its events, the task read back
    python client.py stream URL TEXT       a streaming send: every event, the task read back
    python client.py cancel URL TEXT       a send that returns at once (polling), then tasks/cancel
    python client.py resubscribe URL TEXT  a streaming send left after its first event, then
                                           tasks/resubscribe (waits after its first event)

URL is the agent's base URL (its card at URL/.well-known/agent-card.json). Not checked by mypy
(adapters/pyproject.toml): it is written against a2a-sdk 0.3.7, which mypy's virtualenv lacks."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, create_text_message_object
from a2a.types import TaskIdParams, TaskQueryParams


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def say(step: str, **what: Any) -> None:
    print(json.dumps({"step": step, **what}), flush=True)


def event(got: Any) -> dict[str, Any]:
    if isinstance(got, tuple):
        task, update = got
        return {"task": dump(task), "update": dump(update) if update else None}
    return {"message": dump(got)}


async def scenario(kind: str, url: str, text: str) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        say("card", card=dump(card))
        streaming = kind in ("stream", "resubscribe")
        config = ClientConfig(httpx_client=http, streaming=streaming, polling=kind == "cancel")
        client = ClientFactory(config).create(card)
        task_id = None
        async for got in client.send_message(create_text_message_object(content=text)):
            say("event", **event(got))
            task_id = task_id or (got[0].id if isinstance(got, tuple) else None)
            if kind == "resubscribe":
                break
        if kind == "cancel" and task_id:
            say("canceled", task=dump(await client.cancel_task(TaskIdParams(id=task_id))))
        if kind == "resubscribe" and task_id:
            waited = False
            async for got in client.resubscribe(TaskIdParams(id=task_id)):
                say("resubscribed", waits=not waited, **event(got))
                if not waited:
                    waited = bool(await asyncio.to_thread(sys.stdin.readline))
        if task_id:
            say("read", task=dump(await client.get_task(TaskQueryParams(id=task_id))))
        say("done")


if __name__ == "__main__":
    asyncio.run(scenario(*sys.argv[1:4]))
