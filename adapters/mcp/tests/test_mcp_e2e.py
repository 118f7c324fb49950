"""The bridge's MCP server (``[mcp]``: the society's agents as MCP tools at ``/mcp`` on the
``[http]`` listener) against the official MCP Python SDK's client (mcp 2.3.0): the real bridge
binary, Wise Agents agents as they behave on the wire (sab_testing.WiseAgent), a Civitas agent in
a real Civitas agency and an a2a-sdk agent, each behind the bridge, on ActiveMQ Classic, RabbitMQ
and Artemis.

What the bridge promises (the contract these tests check): ``tools/list`` lists the agents of
``mcp.tools`` (names, and the known agents its globs match), each with its description and an
input schema (``text``, an optional ``context``); ``tools/call`` publishes a QUERY to the
agent's request queue as an A2A task does; its answer is the result (text, and structured
content when it is a JSON object), each ACK a progress notification, CANNOT_ANSWER and the
reply timeout a tool error with why; an unknown tool is a protocol error; with ``token_file``
every request needs the bearer token; a reload changes the list.

Each test has agent names of its own (``Names``) and its own reply agent. Nothing waits by
sleeping: a test waits for a call's answer, an agent's next request, or a log line, each with a
timeout."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from civitas import AgentProcess, Runtime, Supervisor
from civitas.messages import Message
from mcp_types import CallToolResult, TextContent

from a2a_testing import WAIT, A2AAgentServer, Closing, EchoExecutor, a2a_agent
from civitas_stomp import bridge_components
from mcp_testing import McpBridge
from sab_testing import Broker, Names, WiseAgent, wa_dump

T = TypeVar("T")


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def text_of(result: CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent), result
    return content.text


def serve(closing: Closing, *args: Any, **kwargs: Any) -> McpBridge:
    """``McpBridge(*args, **kwargs)``, stopped after the test."""
    bridge = McpBridge(*args, **kwargs)
    return closing(bridge, bridge.stop)


def wise_agent(broker: Broker, name: str, closing: Closing, answer: Any = None) -> WiseAgent:
    agent = WiseAgent(broker, name, answer)
    return closing(agent, agent.close)


def test_the_agents_are_listed_and_a_call_is_answered_by_a_wise_agents_agent(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    names = Names(broker)
    assistant, weather, other = names.agent("Assistant"), names.agent("WeatherWise"), names.agent("Other")
    wise_agent(broker, assistant, closing, lambda m: f"answer to {m['_message']} in {m['_context_name']}")
    wise_agent(broker, weather, closing, lambda m: json.dumps({"city": m["_message"], "sky": "clear"}))
    tools = [assistant, weather.replace("WeatherWise", "Weather*")]
    bridge = serve(closing, broker, names, tmp_path, tools, native=[assistant, weather, other])

    async def scenario() -> None:
        async with bridge.client() as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(listed) == sorted([assistant, weather]), "the name, and the known agent the glob matches"
            schema = listed[assistant].input_schema
            assert schema["required"] == ["text"] and set(schema["properties"]) == {"text", "context"}, schema
            description = listed[assistant].description
            assert description is not None and assistant in description, description
            answered = await client.call_tool(assistant, {"text": "Rome in May?"})
            assert not answered.is_error and text_of(answered) == "answer to Rome in May? in default", answered
            structured = await client.call_tool(weather, {"text": "Rome"})
            assert structured.structured_content == {"city": "Rome", "sky": "clear"}, structured
            assert json.loads(text_of(structured)) == {"city": "Rome", "sky": "clear"}
        async with bridge.client(mode="legacy") as client:  # the 2025 versions' initialize handshake
            answered = await client.call_tool(assistant, {"text": "again"})
            assert text_of(answered) == "answer to again in default", answered

    run(scenario)
    assert bridge.metric("bridge_mcp_calls_total", end="answered") == 3
    assert bridge.metric("bridge_mcp_calls_waiting") == 0


def test_an_ack_is_progress_and_cannot_answer_is_a_tool_error_with_the_agents_words(
    broker: Broker, tmp_path: Path, closing: Closing
) -> None:
    names = Names(broker)
    slow = names.agent("Slow")
    agent = wise_agent(broker, slow, closing)
    bridge = serve(closing, broker, names, tmp_path, [slow], native=[slow])
    notified: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notified.append((progress, message))

    def answer(request: dict[str, Any], text: str, kind: str) -> None:
        reply = dict(request, _message=text, _message_type=kind, _sender=slow)
        agent.conn.send(f"{broker.response_prefix}{request['_sender']}", wa_dump(reply))

    async def scenario() -> None:
        async with bridge.client() as client:
            call = asyncio.create_task(client.call_tool(slow, {"text": "think"}, progress_callback=on_progress))
            request = await asyncio.to_thread(agent.next_request, WAIT)
            assert (request["_message"], request["_message_type"]) == ("think", "QUERY"), request
            answer(request, "working on it", "ACK")
            answer(request, "I cannot answer that", "CANNOT_ANSWER")
            failed = await call
            assert failed.is_error and text_of(failed) == "I cannot answer that", failed

    run(scenario)
    assert notified == [(1.0, "working on it")], notified
    assert bridge.metric("bridge_mcp_calls_total", end="failed") == 1


class WeatherAgent(AgentProcess):
    """A Civitas agent as Civitas's docs write one: handle() returns self.reply(...)."""

    async def handle(self, message: Message) -> Message | None:
        return self.reply({"message": f"Sunny in {message.payload.get('message')}"})


def test_a_civitas_agent_and_an_a2a_agent_behind_the_bridge_are_tools_too(
    broker: Broker, tmp_path: Path, closing: Closing, a2a_agent_server: tuple[A2AAgentServer, EchoExecutor]
) -> None:
    names = Names(broker)
    server, _ = a2a_agent_server
    civitas, remote = names.agent("CivWeather"), names.agent("Remote")
    agents = [(civitas, "civitas", 'encoding = "json"'), a2a_agent(remote, server.url)]
    # Civitas keeps a name with a leading `_` (the default reply agent's) inside its process: its
    # answer must be to a name it routes (docs/MCP.md).
    reply_agent = names.agent("McpBridge")
    bridge = serve(closing, broker, names, tmp_path, [civitas, remote], agents=agents, reply_agent=reply_agent)

    async def scenario() -> None:
        runtime = Runtime(
            supervisor=Supervisor("root", children=[WeatherAgent(civitas)]),
            components=bridge_components(
                encoding="json", inbox=names.inbox("civitas"), ingress=names.ingress("civitas"), link=broker.link()
            ),
        )
        await runtime.start()
        try:
            async with bridge.client() as client:
                assert sorted(t.name for t in (await client.list_tools()).tools) == sorted([civitas, remote])
                sunny = await client.call_tool(civitas, {"text": "Paris"})
                assert text_of(sunny) == "Sunny in Paris", sunny
                echoed = await client.call_tool(remote, {"text": "hello"})
                assert text_of(echoed) == "echo: hello", echoed
        finally:
            await runtime.stop()

    run(scenario)


def test_an_agent_that_never_answers_is_a_tool_error_after_the_timeout_and_nothing_waits(
    tmp_path: Path, closing: Closing
) -> None:
    broker = Broker()
    names = Names(broker)
    silent = names.agent("Silent")
    agent = wise_agent(broker, silent, closing)
    bridge = serve(closing, broker, names, tmp_path, [silent], native=[silent], reply_timeout_ms=1500)

    async def scenario() -> CallToolResult:
        async with bridge.client() as client:
            return await client.call_tool(silent, {"text": "hello?"})

    result = run(scenario)
    assert agent.next_request(WAIT)["_message"] == "hello?", "the agent was asked"
    assert result.is_error and "no answer from" in text_of(result) and "1500 ms" in text_of(result), result
    assert bridge.metric("bridge_mcp_calls_waiting") == 0
    assert bridge.metric("bridge_mcp_calls_total", end="failed") == 1


def test_calls_beyond_max_calls_are_refused_with_why_and_nothing_is_asked(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    silent = names.agent("Silent")
    agent = wise_agent(broker, silent, closing)
    bridge = serve(closing, broker, names, tmp_path, [silent], native=[silent], reply_timeout_ms=3000, max_calls=2)

    async def scenario() -> list[CallToolResult]:
        async with bridge.client() as client:
            held = [asyncio.create_task(client.call_tool(silent, {"text": f"held {i}"})) for i in range(2)]
            for _ in held:  # both calls wait on the agent before the third is made
                await asyncio.to_thread(agent.next_request, WAIT)
            refused = await client.call_tool(silent, {"text": "one too many"})
            return [refused, *await asyncio.gather(*held)]

    refused, *timed_out = run(scenario)
    assert refused.is_error and "max_calls" in text_of(refused), refused
    assert all(r.is_error and "no answer" in text_of(r) for r in timed_out), timed_out
    assert agent.requests.empty(), "the refused call asked nothing"
    assert bridge.metric("bridge_mcp_calls_total", end="refused") == 1


def test_a_request_without_the_right_bearer_token_is_refused_and_nothing_is_asked(
    tmp_path: Path, closing: Closing
) -> None:
    broker = Broker()
    names = Names(broker)
    guarded = names.agent("Guarded")
    agent = wise_agent(broker, guarded, closing, lambda m: "secret answer")
    bridge = serve(closing, broker, names, tmp_path, [guarded], native=[guarded], token="s3cret")

    async def refused(token: str | None) -> None:
        with pytest.raises(Exception, match="unhandled errors"):
            async with bridge.client(token=token) as client:
                await client.call_tool(guarded, {"text": "let me in"})

    async def scenario() -> str:
        await refused(None)
        await refused("wrong")
        answer = httpx.post(bridge.url, json={}, headers={"Authorization": "Bearer wrong"}, timeout=WAIT)
        challenge = answer.headers["www-authenticate"]
        assert answer.status_code == 401 and challenge == 'Bearer error="invalid_token"', answer
        async with bridge.client(token="s3cret") as client:
            return text_of(await client.call_tool(guarded, {"text": "let me in"}))

    assert run(scenario) == "secret answer"
    assert agent.requests.qsize() == 1, "only the call with the token was asked"
    unauthorized = bridge.metric("bridge_mcp_unauthorized_total")
    assert unauthorized is not None and unauthorized >= 3


def test_fifty_concurrent_calls_each_get_their_own_answer(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    echo = names.agent("Echo")
    wise_agent(broker, echo, closing, lambda m: f"echo: {m['_message']}")
    bridge = serve(closing, broker, names, tmp_path, [echo], native=[echo])

    async def scenario() -> list[str]:
        async with bridge.client() as client:
            calls = [client.call_tool(echo, {"text": f"question {i}"}) for i in range(50)]
            return [text_of(r) for r in await asyncio.gather(*calls)]

    assert run(scenario) == [f"echo: question {i}" for i in range(50)]
    assert bridge.metric("bridge_mcp_calls_total", end="answered") == 50


def test_a_reload_that_adds_an_agent_adds_its_tool(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    first, second = names.agent("First"), names.agent("Second")
    wise_agent(broker, second, closing, lambda m: "from the second")
    bridge = serve(closing, broker, names, tmp_path, [first], native=[first])

    async def listed() -> list[str]:
        async with bridge.client() as client:
            return sorted(t.name for t in (await client.list_tools(cache_mode="bypass")).tools)

    async def call_second() -> str:
        async with bridge.client() as client:
            return text_of(await client.call_tool(second, {"text": "hi"}))

    assert run(listed) == [first]
    line = bridge.reload([first, second], native=[first, second])
    assert "applied" in line and "mcp.tools" in line, line
    assert run(listed) == sorted([first, second])
    assert run(call_second) == "from the second"


def test_bad_input_gets_a_clear_error_and_the_bridge_stays_ready(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    echo = names.agent("Echo")
    agent = wise_agent(broker, echo, closing, lambda m: "echo")
    bridge = serve(closing, broker, names, tmp_path, [echo], native=[echo], max_body_bytes=4096)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def post(body: str | bytes, **extra: str) -> httpx.Response:
        return httpx.post(bridge.url, content=body, headers={**headers, **extra}, timeout=WAIT)

    def rpc(method: str, params: dict[str, Any], **extra: str) -> dict[str, Any]:
        answer = post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), **extra)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    malformed = post("{not json")
    assert malformed.status_code in (400, 415) and "deserialize" in malformed.text, malformed.text
    assert post(b"x" * 8192).status_code == 413, "a body over mcp.max_body_bytes"
    old = "2025-03-26"
    unknown_method = rpc("tools/frobnicate", {}, **{"mcp-protocol-version": old})
    assert unknown_method["error"]["code"] == -32601, unknown_method
    call = {"name": "NoSuchAgent", "arguments": {"text": "x"}}
    unknown_tool = rpc("tools/call", call, **{"mcp-protocol-version": old})
    assert unknown_tool["error"]["code"] == -32602 and "unknown tool" in unknown_tool["error"]["message"]
    bad_arguments = rpc("tools/call", {"name": echo, "arguments": {"txt": "x"}}, **{"mcp-protocol-version": old})
    assert bad_arguments["result"]["isError"] is True, bad_arguments
    assert "unknown argument" in bad_arguments["result"]["content"][0]["text"], bad_arguments
    version = {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    negotiated = rpc("initialize", version)["result"]["protocolVersion"]
    assert negotiated != "1999-01-01", "an unknown version is answered with one the server speaks"
    assert httpx.post(bridge.url, content="{}", headers={**headers, "host": "evil.example"}).status_code == 403
    assert agent.requests.qsize() == 0, "no bad request reached the agent"
    assert bridge.ready()


# The MCP Python SDK (mcp 2.3.0) has no client of the tasks extension: these requests are
# written as MCP 2026-07-28 has them (SEP-2575's per-request `_meta`, SEP-2243's headers,
# SEP-2663's capability).
TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


def task_rpc(bridge: McpBridge, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request of a client of the tasks extension; its result."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    # SEP-2243's headers: the method, and the tool or task it names.
    name = str(params.get("name") or params.get("taskId") or "")
    named = {"mcp-name": name} if name else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": TASKS_META}}
    answer = httpx.post(bridge.url, json=body, headers={**headers, **named}, timeout=WAIT)
    assert answer.status_code == 200, answer.text
    got: dict[str, Any] = answer.json()
    assert "error" not in got, got
    result: dict[str, Any] = got["result"]
    return result


def until_ended(bridge: McpBridge, task_id: str) -> dict[str, Any]:
    """``tasks/get`` as the client polls it, every ``pollIntervalMs``, until the task ends."""
    deadline = time.monotonic() + WAIT
    while True:
        task = task_rpc(bridge, "tasks/get", {"taskId": task_id})
        if task["status"] not in ("working", "input_required"):
            return task
        assert time.monotonic() < deadline, f"task {task_id} still {task['status']} after {WAIT} s"
        time.sleep(task.get("pollIntervalMs", 1000) / 1000)  # the client's poll, as the server asks


def test_a_client_of_the_tasks_extension_gets_a_task_it_polls_and_can_cancel(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    echo, silent = names.agent("Echo"), names.agent("Silent")
    wise_agent(broker, echo, closing, lambda m: f"echo: {m['_message']}")
    quiet = wise_agent(broker, silent, closing)
    bridge = serve(closing, broker, names, tmp_path, [echo, silent], native=[echo, silent])

    created = task_rpc(bridge, "tools/call", {"name": echo, "arguments": {"text": "as a task"}})
    assert created["status"] == "working" and created["taskId"], created
    ended = until_ended(bridge, created["taskId"])
    assert ended["status"] == "completed", ended
    assert ended["result"]["content"][0]["text"] == "echo: as a task", ended

    # One that is never answered: canceled, it ends cancelled and nothing waits for it.
    created = task_rpc(bridge, "tools/call", {"name": silent, "arguments": {"text": "never answered"}})
    assert quiet.next_request(WAIT)["_message"] == "never answered"
    task_rpc(bridge, "tasks/cancel", {"taskId": created["taskId"]})
    assert until_ended(bridge, created["taskId"])["status"] == "cancelled"
    assert bridge.metric("bridge_mcp_calls_waiting") == 0
    assert bridge.metric("bridge_mcp_calls_total", end="answered") == 1
    assert bridge.metric("bridge_mcp_calls_total", end="failed") == 1


def test_no_more_than_max_calls_tasks_are_kept_ended_ones_included(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    echo = names.agent("Echo")
    agent = wise_agent(broker, echo, closing, lambda m: f"echo: {m['_message']}")
    bridge = serve(closing, broker, names, tmp_path, [echo], native=[echo], max_calls=1)
    created = task_rpc(bridge, "tools/call", {"name": echo, "arguments": {"text": "first"}})
    assert until_ended(bridge, created["taskId"])["status"] == "completed"
    refused = task_rpc(bridge, "tools/call", {"name": echo, "arguments": {"text": "second"}})
    assert refused["isError"] is True and "keeps mcp.max_calls tasks" in refused["content"][0]["text"], refused
    assert agent.next_request(WAIT)["_message"] == "first"
    assert agent.requests.empty(), "the refused call asked nothing"
