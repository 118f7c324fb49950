"""The a2a-sdk agent server of adapters/testing (the far end of the bridge's outbound A2A
direction, still to come) is a real A2A 1.0 agent: the SDK's own client resolves its card,
sends to it (streaming and not) and reads the task back. No broker, no bridge."""

from __future__ import annotations

import asyncio

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_message_text
from a2a.types import GetTaskRequest, TaskState

from a2a_testing import WAIT, EventStream, artifact_texts, is_state, send_request


def test_sdk_client_talks_to_the_sdk_server(a2a_agent_server):
    server, executor = a2a_agent_server

    async def scenario():
        async with httpx.AsyncClient(timeout=WAIT) as http:
            factory = ClientFactory(ClientConfig(streaming=False, httpx_client=http))
            client = await factory.create_from_url(server.url)
            [answer] = [event async for event in client.send_message(send_request("hello"))]
            task = answer.task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
            assert artifact_texts(task) == ["echo: hello"]
            assert get_message_text(executor.received.get(timeout=WAIT)) == "hello"
            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == TaskState.TASK_STATE_COMPLETED and artifact_texts(again) == ["echo: hello"]

            streaming = await ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create_from_url(server.url)
            stream = EventStream(streaming.send_message(send_request("streamed")))
            first = await stream.next()
            assert first is not None and first.HasField("task"), stream.history()
            await stream.until(is_state(TaskState.TASK_STATE_COMPLETED))
            assert await stream.rest() == [], stream.history()
            assert any(e.HasField("artifact_update") for e in stream.seen), stream.history()

    asyncio.run(scenario())
