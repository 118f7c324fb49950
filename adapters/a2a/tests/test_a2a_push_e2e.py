"""Push notifications of the bridge's A2A service (``[a2a.push]``, docs/A2A.md "Push
notifications"), against the official A2A Python SDK's client (a2a-sdk 1.3.0) and a webhook
written with Starlette (served by uvicorn), whose bodies are read with the SDK's own
``StreamResponse`` (protobuf's JSON parser): on ActiveMQ Classic, RabbitMQ and Artemis.

What the bridge promises: the card says ``pushNotifications: true``; a webhook set in the
``SendMessage`` (or with ``CreateTaskPushNotificationConfig``) is posted the whole task each
time its state or its artifacts change, with the client's token in ``A2A-Notification-Token``
and its credentials in ``Authorization``; a webhook that fails is called again, and the newest
state is what it gets; webhooks are set, read, listed and deleted on both bindings; a webhook on
a loopback or private address is refused unless ``a2a.push.allow_private``."""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import Parse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from a2a_testing import WAIT, A2ABridge, Closing, artifact_texts, user_message
from sab_testing import Broker, Names, WiseAgent, wa_dump

SUBMITTED = TaskState.TASK_STATE_SUBMITTED
WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED


class Webhook:
    """A client's webhook, as a Starlette app run by uvicorn in a thread: each POST's headers and
    body (parsed as the SDK's ``StreamResponse``) are put in ``calls``; the first ``failures``
    POSTs are answered 503, the others 200."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: queue.Queue[tuple[dict[str, str], StreamResponse]] = queue.Queue()
        self.failures = failures

        async def hook(request: Request) -> Response:
            event = Parse(await request.body(), StreamResponse())
            self.calls.put((dict(request.headers), event))
            if self.failures > 0:
                self.failures -= 1
                return Response(status_code=503)
            return Response(status_code=200)

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        app = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    async def next(self) -> tuple[dict[str, str], StreamResponse]:
        return await asyncio.to_thread(self.calls.get, True, WAIT)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


def push_section(allow_private: bool) -> str:
    return f"[a2a.push]\nallow_private = {str(allow_private).lower()}\nbackoff_ms = 50\nmax_backoff_ms = 200\n"


def run(scenario: Any) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def start(
    broker: Broker, tmp_path: Path, closing: Closing, allow_private: bool = True
) -> tuple[A2ABridge, WiseAgent, str]:
    """A Wise Agents agent the test answers by hand, and the bridge serving it with push."""
    names = Names(broker)
    slow = names.agent("Slow")
    agent = WiseAgent(broker, slow, None)
    closing(agent, agent.close)
    bridge = A2ABridge(broker, names, tmp_path, [slow], extra=push_section(allow_private))
    closing(bridge, bridge.stop)
    return bridge, agent, slow


def reply(agent: WiseAgent, request: dict[str, Any], text: str, message_type: str) -> None:
    answer = dict(request, _message=text, _message_type=message_type, _sender=agent.name)
    agent.conn.send(f"{agent.broker.response_prefix}{request['_sender']}", wa_dump(answer))


def webhook_config(url: str, id: str = "") -> TaskPushNotificationConfig:
    auth = AuthenticationInfo(scheme="Bearer", credentials="webhook-secret")
    return TaskPushNotificationConfig(id=id, url=url, token="client-token", authentication=auth)


def test_a_webhook_set_in_the_message_gets_each_state_and_the_answer(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    hook = Webhook(failures=1)
    closing(hook, hook.stop)
    bridge, agent, slow = start(broker, tmp_path, closing)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            card = await bridge.card(http, slow)
            assert card.capabilities.push_notifications, card
            client = await bridge.client(http, slow, streaming=False)
            request = SendMessageRequest(message=user_message("push me"))
            request.configuration.return_immediately = True
            request.configuration.task_push_notification_config.CopyFrom(webhook_config(hook.url))
            [sent] = [event async for event in client.send_message(request)]
            task_id = sent.task.id
            asked = await asyncio.to_thread(agent.next_request, WAIT)

            calls: list[StreamResponse] = []

            async def until(state: TaskState) -> None:
                while not calls or calls[-1].task.status.state != state:
                    headers, event = await hook.next()
                    assert headers["a2a-notification-token"] == "client-token", headers
                    assert headers["authorization"] == "Bearer webhook-secret", headers
                    assert event.task.id == task_id, event
                    calls.append(event)

            # The task's states in order (SUBMITTED as the bridge sent the question, WORKING on
            # the ACK), the one the first call got (answered 503) once more, then the answer.
            reply(agent, asked, "working on it", "ACK")
            await until(WORKING)
            reply(agent, asked, "the answer", "RESPONSE")
            await until(COMPLETED)
            states = [event.task.status.state for event in calls]
            assert states == sorted(states) and set(states) <= {SUBMITTED, WORKING, COMPLETED}, states
            assert artifact_texts(calls[-1].task) == ["the answer"], calls[-1]

            # The worker counts a call once its answer is read, after the webhook saw it: the
            # metrics are waited on (each call but the 503 delivered, that one retried once).
            delivered = f'bridge_a2a_push_total{{result="delivered"}} {len(calls) - 1}\n'
            metrics = ""
            for _ in range(int(WAIT / 0.05)):
                metrics = (await http.get(f"{bridge.base}/metrics")).text
                if delivered in metrics:
                    break
                await asyncio.sleep(0.05)  # polling the bridge's metrics, not waiting for time to pass
            assert delivered in metrics, (states, metrics)
            assert "bridge_a2a_push_retries_total 1\n" in metrics, metrics

    run(scenario)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_webhooks_are_set_read_listed_and_deleted(
    broker: Broker, tmp_path: Path, closing: Closing, binding: str
) -> None:
    hook = Webhook()
    closing(hook, hook.stop)
    bridge, agent, slow = start(broker, tmp_path, closing)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, slow, streaming=False, binding=binding)
            request = SendMessageRequest(message=user_message("hooked later"))
            request.configuration.return_immediately = True
            [sent] = [event async for event in client.send_message(request)]
            task_id = sent.task.id
            asked = await asyncio.to_thread(agent.next_request, WAIT)

            config = webhook_config(hook.url, id="mine")
            config.task_id = task_id
            made = await client.create_task_push_notification_config(config)
            assert (made.id, made.url, made.task_id) == ("mine", hook.url, task_id), made
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="mine")
            )
            assert got.token == "client-token", got
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert [c.id for c in listed.configs] == ["mine"], listed

            reply(agent, asked, "done", "RESPONSE")
            _, event = await hook.next()
            assert event.task.id == task_id and event.task.status.state == COMPLETED, event

            delete = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="mine")
            await client.delete_task_push_notification_config(delete)
            await client.delete_task_push_notification_config(delete)  # deleting again is no error
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert list(listed.configs) == [], listed

    run(scenario)


def test_a_webhook_on_a_private_address_is_refused_unless_allowed(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    bridge, _agent, slow = start(broker, tmp_path, closing, allow_private=False)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, slow, streaming=False)
            request = SendMessageRequest(message=user_message("to my neighbour"))
            request.configuration.return_immediately = True
            request.configuration.task_push_notification_config.CopyFrom(webhook_config("http://127.0.0.1:9/x"))
            with pytest.raises(A2AError) as refused:
                [_ async for _ in client.send_message(request)]
            assert "a2a.push.allow_private" in str(refused.value), refused.value

    run(scenario)
