"""The A2A tasks in Redis (``[a2a.store]``, docs/A2A.md "Where tasks are kept"), shared by two
bridges as behind a load balancer (each its own listener, one Wise Agents reply agent), against
the official A2A Python SDK's client (a2a-sdk 1.3.0) and the suite's Redis (Debian's
redis-server, ``SAB_REDIS_PORT``), on ActiveMQ Classic, RabbitMQ and Artemis.

What the bridges promise: a task started on one is read (``GetTask``), listed and followed
(``SubscribeToTask``) on the other; its answer completes it whichever bridge takes it, also when
the bridge that started it was killed (``kill -9``) or restarted; both bridges restarted one after
the other under 100 open streaming tasks, every task completes and none is ``TASK_NOT_FOUND``;
Redis paused for 10 s meanwhile delays the answers and loses none.

Nothing waits by sleeping: a test waits for a stream's next event, an agent's next request, a
bridge's log line, or a call's answer, each with a timeout."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from a2a.types import GetTaskRequest, ListTasksRequest, SubscribeToTaskRequest, TaskState

from a2a_testing import (
    WAIT,
    A2ABridge,
    Closing,
    EventStream,
    artifact_texts,
    is_state,
    metric_value,
    send_request,
    state_name,
)
from sab_testing import Broker, Names, WiseAgent, wa_dump

SUBMITTED = TaskState.TASK_STATE_SUBMITTED
COMPLETED = TaskState.TASK_STATE_COMPLETED
REDIS_PORT = int(os.environ.get("SAB_REDIS_PORT", "6379"))
# Enough connections for every stream of the restart test on one client.
LIMITS = httpx.Limits(max_connections=400, max_keepalive_connections=400)


def run(scenario: Callable[[], Awaitable[None]], secs: float = 4 * WAIT) -> None:
    asyncio.run(asyncio.wait_for(scenario(), secs))


def store_section(names: Names) -> str:
    """``[a2a.store]`` on the suite's Redis, with a prefix of this test's own."""
    return f'\n[a2a.store]\nport = {REDIS_PORT}\nprefix = "sab-py:{names.uid}:"\n'


class Group:
    """A Wise Agents agent answered by the test (``agent``, named ``slow``) and the bridges that
    serve it with their tasks in one Redis: started, killed and restarted as a test needs, each
    on a listener of its own."""

    def __init__(self, broker: Broker, tmp: Path, closing: Closing) -> None:
        self.broker, self.names, self.tmp, self.closing = broker, Names(broker), tmp, closing
        self.slow = self.names.agent("Slow")
        self.agent = WiseAgent(broker, self.slow)
        closing(self.agent, self.agent.close)
        self.started = 0

    def start(self) -> A2ABridge:
        self.started += 1
        tmp = self.tmp / f"bridge{self.started}"
        tmp.mkdir()
        bridge = A2ABridge(self.broker, self.names, tmp, [self.slow], extra=store_section(self.names))
        return self.closing(bridge, bridge.stop)


def reply(agent: WiseAgent, request: dict[str, Any], text: str) -> None:
    """Answers ``request`` as a Wise Agents agent does (RESPONSE to its ``_sender``'s queue)."""
    answer = dict(request, _message=text, _message_type="RESPONSE", _sender=agent.name)
    agent.conn.send(f"{agent.broker.response_prefix}{request['_sender']}", wa_dump(answer))


async def requests_of(agent: WiseAgent, n: int) -> list[dict[str, Any]]:
    return [await asyncio.to_thread(agent.next_request, WAIT) for _ in range(n)]


def pause_redis(ms: int) -> None:
    """``CLIENT PAUSE ms ALL``: Redis answers no client for ``ms``."""
    with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=5) as s:
        s.sendall(f"*4\r\n$6\r\nCLIENT\r\n$5\r\nPAUSE\r\n${len(str(ms))}\r\n{ms}\r\n$3\r\nALL\r\n".encode())
        assert s.recv(64).startswith(b"+OK"), "Redis did not pause"


async def counted(http: httpx.AsyncClient, bridge: A2ABridge, name: str, **labels: str) -> float:
    text = (await http.get(f"{bridge.base}/metrics")).text
    return metric_value(text, name, **labels) or 0.0


async def adopted(http: httpx.AsyncClient, bridge: A2ABridge) -> float:
    return await counted(http, bridge, "bridge_a2a_answers_adopted_total")


def test_a_task_started_on_a_bridge_killed_with_kill_9_is_read_followed_and_answered_on_another(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    group = Group(broker, tmp_path, closing)
    slow, agent = group.slow, group.agent
    a, b = group.start(), group.start()

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            on_a = await a.client(http, slow, streaming=True)
            stream = EventStream(on_a.send_message(send_request("what is six times seven?")))
            first = await stream.next()
            assert first is not None and first.HasField("task"), stream.history()
            task_id = first.task.id
            [request] = await requests_of(agent, 1)
            a.process.kill()

            on_b = await b.client(http, slow, streaming=True)
            got = await on_b.get_task(GetTaskRequest(id=task_id))
            assert got.status.state == SUBMITTED, state_name(got.status.state)
            listed = await on_b.list_tasks(ListTasksRequest())
            assert task_id in [t.id for t in listed.tasks], listed
            following = EventStream(on_b.subscribe(SubscribeToTaskRequest(id=task_id)))
            current = await following.next()
            assert current is not None and current.HasField("task"), following.history()
            assert current.task.status.state == SUBMITTED, following.history()

            # A is gone: B takes the answer from the shared reply queue and writes it into the task.
            reply(agent, request, "42")
            done = await following.until(is_state(COMPLETED))
            assert artifact_texts(done.task) == ["42"], following.history()
            assert await following.rest() == [], following.history()
            got = await on_b.get_task(GetTaskRequest(id=task_id))
            assert (got.status.state, artifact_texts(got)) == (COMPLETED, ["42"]), got
            assert await adopted(http, b) == 1.0

    run(scenario)


def test_the_answer_taken_by_the_other_bridge_ends_the_stream_of_the_one_that_runs_the_task(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    group = Group(broker, tmp_path, closing)
    slow, agent = group.slow, group.agent
    a, b = group.start(), group.start()

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT, limits=LIMITS) as http:
            on_a = await a.client(http, slow, streaming=True)
            streams = [EventStream(on_a.send_message(send_request(f"question {i}"))) for i in range(20)]
            for stream in streams:
                first = await stream.next()
                assert first is not None and first.HasField("task"), stream.history()
            for request in await requests_of(agent, len(streams)):
                reply(agent, request, "answer to " + request["_message"])
            # Both bridges take answers from the one reply queue: each stream on A ends completed,
            # whichever bridge took its answer.
            for i, stream in enumerate(streams):
                done = await stream.until(is_state(COMPLETED))
                texts = artifact_texts(done.task) if done.HasField("task") else None
                assert texts in (None, [f"answer to question {i}"]), stream.history()
            # A wrote the answers it took into its own tasks; B adopted every one it took.
            handed = [
                await counted(http, bridge, "bridge_messages_total", route="wiseagents->a2a") for bridge in (a, b)
            ]
            assert sum(handed) == len(streams), handed
            assert (await adopted(http, a), await adopted(http, b)) == (0.0, handed[1]), handed
            for stream in streams:
                got = await on_a.get_task(GetTaskRequest(id=stream.seen[0].task.id))
                assert got.status.state == COMPLETED and len(artifact_texts(got)) == 1, got

    run(scenario)


def test_both_bridges_restarted_one_after_the_other_under_100_streaming_tasks_every_task_completes(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    restarts(broker, tmp_path, closing, redis_paused=False)


def test_the_same_with_redis_paused_for_10_s_before_the_answers_delays_them_and_loses_none(
    tmp_path: Path, closing: Closing
) -> None:
    # On ActiveMQ only: what the pause holds is the store's, the same on every broker.
    restarts(Broker(), tmp_path, closing, redis_paused=True)


def restarts(broker: Broker, tmp_path: Path, closing: Closing, redis_paused: bool) -> None:
    """100 streaming tasks, half on each bridge; A restarted (its clients follow their tasks on
    B meanwhile), then B (every client follows its task on the new A); then the answers, with
    Redis paused for 10 s first when ``redis_paused``: every task completes on its stream and
    reads COMPLETED on the new B, and the two new bridges adopted every answer."""
    group = Group(broker, tmp_path, closing)
    slow, agent = group.slow, group.agent
    a, b = group.start(), group.start()

    async def follow_on(bridge: A2ABridge, http: httpx.AsyncClient, ids: list[str]) -> list[EventStream]:
        client = await bridge.client(http, slow, streaming=True)
        streams = [EventStream(client.subscribe(SubscribeToTaskRequest(id=i))) for i in ids]
        for stream in streams:
            current = await stream.next()
            assert current is not None and current.HasField("task"), stream.history()
        return streams

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=3 * WAIT, limits=LIMITS) as http:
            on_a, on_b = await a.client(http, slow), await b.client(http, slow)
            opened = [EventStream(c.send_message(send_request(f"q{i}"))) for i in range(50) for c in (on_a, on_b)]
            ids = []
            for stream in opened:
                first = await stream.next()
                assert first is not None and first.HasField("task"), stream.history()
                ids.append(first.task.id)
            requests = await requests_of(agent, len(ids))
            on_a_ids = ids[0::2]

            # A restarted: its streams cut, its clients follow their tasks on B meanwhile.
            assert a.stop() == 0
            on_b_meanwhile = await follow_on(b, http, on_a_ids)
            a2 = group.start()
            # Then B: every stream on it cut, every client follows its task on the new A.
            assert b.stop() == 0
            for stream in on_b_meanwhile:
                await stream.close()
            followed = await follow_on(a2, http, ids)
            b2 = group.start()

            if redis_paused:
                pause_redis(10_000)
            for request in requests:
                reply(agent, request, "answer to " + request["_message"])
            for stream in followed:
                done = await stream.until(is_state(COMPLETED), secs=3 * WAIT)
                assert len(artifact_texts(done.task)) == 1, stream.history()
            on_b2 = await b2.client(http, slow)
            for task_id in ids:
                got = await on_b2.get_task(GetTaskRequest(id=task_id))
                assert got.status.state == COMPLETED, (task_id, state_name(got.status.state))
            taken = await adopted(http, a2) + await adopted(http, b2)
            assert taken == len(ids), taken

    run(scenario, secs=8 * WAIT)
