"""The bridge's inbound A2A 1.0 service (``[a2a]``: native Wise Agents agents served as A2A
agents on the ``[http]`` listener) against the official A2A Python SDK's client (a2a-sdk 1.3.0):
the real bridge binary, Wise Agents agents as they behave on the wire (sab_testing.WiseAgent:
stomp.py, YAML ``!wiseagents.WiseAgentMessage``), on ActiveMQ Classic, RabbitMQ and Artemis.

What the bridge promises (the contract these tests check): ``GET /a2a`` lists the served
agents; ``GET /a2a/<Agent>/.well-known/agent-card.json`` is the agent's A2A 1.0 card;
``POST /a2a/<Agent>`` is A2A 1.0 JSON-RPC, and the paths below it A2A 1.0 HTTP+JSON (both in the
card, JSON-RPC first; one task store behind both). SendMessage publishes a QUERY to the agent's request
queue (``_message`` the text, ``_sender`` the bridge's reply agent, ``_context_name`` "default"
unless the A2A contextId names a context in ``wiseagents.contexts``, ``_tool_id`` a token the
answer echoes); a RESPONSE completes the task with its text as an artifact, an ACK makes it
WORKING, CANNOT_ANSWER or no answer within ``reply_timeout_ms`` fails it; CancelTask cancels it
(a late answer changes nothing); file parts are refused (REJECTED with why, or -32005 for a
media type the card does not accept); with ``token_file`` every JSON-RPC
call needs the bearer token.

Each test has agent names of its own (``Names``) and its own reply agent, so that tests on a
shared broker never meet. Nothing waits by sleeping: a test waits for a stream's next event, an
agent's next request, or a call's answer, each with a timeout."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from a2a.client import Client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    InvalidRequestError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from a2a_testing import (
    WAIT,
    A2ABridge,
    EventStream,
    artifact_texts,
    bearer_auth,
    describe,
    is_state,
    send_request,
    state_name,
    status_text,
)
from sab_testing import REPO, Names, WiseAgent, wa_dump

COMPLETED = TaskState.TASK_STATE_COMPLETED
WORKING = TaskState.TASK_STATE_WORKING
FAILED = TaskState.TASK_STATE_FAILED
CANCELED = TaskState.TASK_STATE_CANCELED
# The card's two A2A 1.0 interfaces, as the SDK names them (``ClientConfig.supported_protocol_bindings``).
BINDINGS = ["JSONRPC", "HTTP+JSON"]
OTHER = {"JSONRPC": "HTTP+JSON", "HTTP+JSON": "JSONRPC"}


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


async def next_request(agent: WiseAgent) -> dict[str, Any]:
    """The agent's next request, waited for off the event loop (stomp.py delivers on a thread)."""
    return await asyncio.to_thread(agent.next_request, WAIT)


async def opened(stream: EventStream, agent: WiseAgent, bridge: A2ABridge, text: str) -> tuple[str, dict[str, Any]]:
    """The task a streaming send opened (its first event is the task) and the Wise Agents
    request its agent received for it (a QUERY with ``text``)."""
    first = await stream.next()
    assert first is not None and first.HasField("task"), stream.history()
    request = await next_request(agent)
    assert_query(request, bridge, text)
    return first.task.id, request


def reply(agent: WiseAgent, request: dict[str, Any], text: str, message_type: str = "RESPONSE") -> None:
    """Answers ``request`` as a Wise Agents agent does: to the response queue of its
    ``_sender``, echoing ``_tool_id``, ``_context_name`` and ``_route_response_to``."""
    answer = dict(request, _message=text, _message_type=message_type, _sender=agent.name)
    agent.conn.send(f"{agent.broker.response_prefix}{request['_sender']}", wa_dump(answer))


async def send_once(client: Client, text: str, **kwargs: Any) -> Task:
    """A non-streaming SendMessage (the client made with streaming=False): its one answer, a Task."""
    return await send_whole(client, send_request(text, **kwargs))


async def send_whole(client: Client, request: SendMessageRequest) -> Task:
    """``request`` sent by a non-streaming client: its one answer, a Task."""
    answers = [event async for event in client.send_message(request)]
    assert len(answers) == 1 and answers[0].HasField("task"), [describe(a) for a in answers]
    return answers[0].task


def assert_state(task: Task, state: TaskState) -> None:
    assert task.status.state == state, (
        f"task {task.id} is {state_name(task.status.state)} ({status_text(task)!r}), not {state_name(state)}; "
        f"artifacts {artifact_texts(task)}"
    )


def assert_query(request: dict[str, Any], bridge: A2ABridge, text: str, context: str = "default") -> None:
    assert request["_message"] == text, request
    assert request["_message_type"] == "QUERY", request
    assert request["_sender"] == bridge.reply_agent, request
    assert request["_context_name"] == context, request
    assert isinstance(request["_tool_id"], str) and request["_tool_id"], request


def start(
    broker, names: Names, tmp_path, closing, agents: list[tuple[str, Any]], **a2a: Any
) -> tuple[A2ABridge, list[WiseAgent]]:
    """The Wise Agents ``agents`` ((name, answer) each, answer None for one the test answers
    by hand) subscribed first, then the bridge serving them over A2A."""
    wise = []
    for name, answer in agents:
        agent = WiseAgent(broker, name, answer)
        wise.append(closing(agent, agent.close))
    bridge = A2ABridge(broker, names, tmp_path, [name for name, _ in agents], **a2a)
    closing(bridge, bridge.stop)
    return bridge, wise


# -- the card and the listing ---------------------------------------------------------------
def test_card_and_listing(broker, tmp_path, closing):
    names = Names(broker)
    echo, other = names.agent("Echo"), names.agent("Other")
    globbed = names.agent("Globbed")
    bridge, _ = start(
        broker, names, tmp_path, closing, [(echo, None), (other, None)], descriptions={echo: "Echoes what it is told"}
    )
    input_modes: list[str] = []

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            card = await bridge.card(http, echo)
            assert card.name == echo
            assert card.description == "Echoes what it is told"
            assert card.version, card
            assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
                (bridge.agent_url(echo), "JSONRPC", "1.0"),
                (bridge.agent_url(echo), "HTTP+JSON", "1.0"),
                (bridge.agent_url(echo), "JSONRPC", "0.3"),
            ], card
            assert card.capabilities.streaming, card
            assert list(card.default_output_modes) == ["text/plain"], card
            assert len(card.skills) >= 1, card
            assert not card.security_schemes, f"no token_file, yet the card asks for credentials: {card}"
            input_modes.extend(card.default_input_modes)
            # An agent without a description has one all the same.
            assert (await bridge.card(http, other)).description

            listing = await http.get(f"{bridge.base}/a2a")
            assert listing.status_code == 200, listing.text
            agents = listing.json()["agents"]
            assert sorted(a["name"] for a in agents) == sorted([echo, other]), agents
            for entry in agents:
                url = httpx.URL(f"{bridge.base}/a2a/").join(entry["card"])
                assert str(url) == bridge.card_url(entry["name"]), entry
                got = await http.get(url)
                assert got.status_code == 200 and got.json()["name"] == entry["name"], got.text

            unknown = await http.get(bridge.card_url(names.agent("Nobody")))
            assert unknown.status_code == 404, unknown.text

    run(scenario)

    # A glob serves every agent whose name it matches.
    glob_bridge = A2ABridge(broker, names, tmp_path, [f"{globbed}*"])
    closing(glob_bridge, glob_bridge.stop)

    async def glob_scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            card = await glob_bridge.card(http, f"{globbed}A")
            assert card.name == f"{globbed}A"
            assert {i.url for i in card.supported_interfaces} == {glob_bridge.agent_url(f"{globbed}A")}
            miss = await http.get(glob_bridge.card_url(names.agent("Elsewhere")))
            assert miss.status_code == 404, miss.text

    run(glob_scenario)
    # Text, and JSON data (carried as its text in `_message`, docs/A2A.md).
    assert input_modes == ["text/plain", "application/json"], f"the card's defaultInputModes: {input_modes}"


# -- SendMessage, GetTask -------------------------------------------------------------------
@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_is_answered_by_the_wise_agent(broker, tmp_path, closing, binding):
    names = Names(broker)
    echo = names.agent("Echo")
    books = names.agent("Books")
    bridge, [agent] = start(
        broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")], contexts=[books]
    )

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, echo, streaming=False, binding=binding)
            task = await send_once(client, "hello")
            assert_state(task, COMPLETED)
            assert artifact_texts(task) == ["echo: hello"], task
            assert_query(agent.next_request(), bridge, "hello")

            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.id == task.id
            assert_state(again, COMPLETED)
            assert artifact_texts(again) == ["echo: hello"], again
            # One task store behind both bindings: the other one reads the same task.
            other = await bridge.client(http, echo, streaming=False, binding=OTHER[binding])
            assert artifact_texts(await other.get_task(GetTaskRequest(id=task.id))) == ["echo: hello"]

            # An A2A contextId that names a known Wise Agents context is the message's context;
            # any other one is not (contexts are never invented): the default.
            in_books = await send_once(client, "in books", context_id=books)
            assert_state(in_books, COMPLETED)
            assert_query(agent.next_request(), bridge, "in books", context=books)
            elsewhere = await send_once(client, "elsewhere", context_id=names.agent("Unknown"))
            assert_state(elsewhere, COMPLETED)
            assert_query(agent.next_request(), bridge, "elsewhere")

    run(scenario)


# -- HTTPS on the listener --------------------------------------------------------------------
def test_the_sdk_client_asks_over_https_and_plain_http_gets_nothing(broker, tmp_path, closing):
    """``http.cert_file``/``key_file`` (tests/tls: a server certificate for localhost): the card
    names the https URL, the SDK's client verifies the certificate against the CA and asks."""
    names = Names(broker)
    echo = names.agent("Echo")
    tls = REPO / "tests" / "tls"
    bridge, [agent] = start(
        broker,
        names,
        tmp_path,
        closing,
        [(echo, lambda m: f"echo: {m['_message']}")],
        https=(tls / "server.pem", tls / "server.key"),
    )

    async def scenario() -> None:
        trust = ssl.create_default_context(cafile=str(tls / "ca.pem"))
        async with httpx.AsyncClient(timeout=WAIT, verify=trust) as http:
            card = await bridge.card(http, echo)
            assert card.supported_interfaces[0].url == f"https://localhost:{bridge.port}/a2a/{echo}", card
            client = await bridge.client(http, echo, streaming=True)
            events = [event async for event in client.send_message(send_request("over tls"))]
            last = events[-1]
            assert last.HasField("status_update") and last.status_update.status.state == COMPLETED, [
                describe(e) for e in events
            ]
            assert_query(agent.next_request(), bridge, "over tls")
        async with httpx.AsyncClient(timeout=WAIT) as plain:
            with pytest.raises(httpx.HTTPError):
                await plain.get(f"http://127.0.0.1:{bridge.port}/healthz")

    run(scenario)


# -- SendStreamingMessage, SubscribeToTask --------------------------------------------------
def test_streaming_send_message(broker, tmp_path, closing):
    names = Names(broker)
    echo = names.agent("Echo")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")])

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, echo, streaming=True)
            stream = EventStream(client.send_message(send_request("streamed")))
            events = await stream.rest()
            seen = [describe(e) for e in events]
            assert events and events[0].HasField("task"), seen
            artifacts = [i for i, e in enumerate(events) if e.HasField("artifact_update")]
            assert artifacts, f"no artifact update: {seen}"
            assert [describe(events[i]) for i in artifacts] == ["artifact('echo: streamed')"], seen
            last = events[-1]
            assert last.HasField("status_update") and last.status_update.status.state == COMPLETED, seen
            assert artifacts[-1] < len(events) - 1, f"the artifact must come before the final status: {seen}"
            assert not any(is_state(s)(e) for e in events for s in (FAILED, CANCELED)), seen
            assert_query(agent.next_request(), bridge, "streamed")

            done = await client.get_task(GetTaskRequest(id=events[0].task.id))
            assert_state(done, COMPLETED)
            assert artifact_texts(done) == ["echo: streamed"], done

    run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_ack_makes_the_task_working_then_response_completes_it(broker, tmp_path, closing, binding):
    names = Names(broker)
    slow = names.agent("Slow")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(slow, None)])

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, slow, streaming=True, binding=binding)
            stream = EventStream(client.send_message(send_request("think hard")))
            task_id, request = await opened(stream, agent, bridge, "think hard")

            # ACK: the agent is at it (Wise Agents' ACK carries an answer so far); the task is
            # WORKING, and nothing ends it while no RESPONSE came.
            reply(agent, request, "thinking...", "ACK")
            working = await stream.until(
                lambda e: e.HasField("status_update") and e.status_update.status.state == WORKING
            )
            assert working.status_update.task_id == task_id, stream.history()
            assert not any(is_state(s)(e) for e in stream.seen for s in (COMPLETED, FAILED, CANCELED)), stream.history()

            # A second client subscribes to the running task (SubscribeToTask) and sees it end too.
            # Its first event (the task as it stands) is awaited before the answer is sent, so the
            # subscription is sure to be made while the task still runs.
            subscription = EventStream(client.subscribe(SubscribeToTaskRequest(id=task_id)))
            current = await subscription.next()
            assert current is not None and current.HasField("task"), subscription.history()
            assert current.task.id == task_id
            assert_state(current.task, WORKING)
            got = await client.get_task(GetTaskRequest(id=task_id))
            assert_state(got, WORKING)

            reply(agent, request, "the answer is 42")
            await stream.until(is_state(COMPLETED))
            assert await stream.rest() == [], stream.history()
            updates = [get for get in stream.seen if get.HasField("artifact_update")]
            assert [describe(u) for u in updates][-1:] == ["artifact('the answer is 42')"], stream.history()
            await subscription.until(is_state(COMPLETED))
            assert await subscription.rest() == [], subscription.history()

            done = await client.get_task(GetTaskRequest(id=task_id))
            assert_state(done, COMPLETED)
            assert artifact_texts(done) == ["the answer is 42"], done

    run(scenario)


# -- failures ------------------------------------------------------------------------------
def test_cannot_answer_fails_the_task(broker, tmp_path, closing):
    names = Names(broker)
    shy = names.agent("Shy")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(shy, None)])

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, shy, streaming=False)
            sent = asyncio.create_task(send_once(client, "what is the meaning of life?"))
            request = await next_request(agent)
            assert_query(request, bridge, "what is the meaning of life?")
            reply(agent, request, "I cannot answer that", "CANNOT_ANSWER")
            task = await sent
            assert_state(task, FAILED)
            assert "I cannot answer that" in status_text(task), task
            assert artifact_texts(task) == [], task
            assert_state(await client.get_task(GetTaskRequest(id=task.id)), FAILED)

    run(scenario)


def test_no_answer_in_time_fails_the_task(broker, tmp_path, closing):
    names = Names(broker)
    mute = names.agent("Mute")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(mute, None)], reply_timeout_ms=1500)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, mute, streaming=True)
            stream = EventStream(client.send_message(send_request("anyone there?")))
            assert_query(await next_request(agent), bridge, "anyone there?")
            await stream.until(is_state(FAILED))
            assert await stream.rest() == [], stream.history()
            task_id = stream.seen[0].task.id if stream.seen[0].HasField("task") else ""
            assert task_id, stream.history()
            assert_state(await client.get_task(GetTaskRequest(id=task_id)), FAILED)

    run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel_task_and_the_late_answer_is_dropped(broker, tmp_path, closing, binding):
    names = Names(broker)
    slow = names.agent("Slow")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(slow, None)])

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, slow, streaming=True, binding=binding)
            stream = EventStream(client.send_message(send_request("take your time")))
            task_id, late = await opened(stream, agent, bridge, "take your time")

            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.id == task_id
            assert_state(canceled, CANCELED)
            await stream.until(is_state(CANCELED))
            assert await stream.rest() == [], stream.history()

            # The answer comes after all. The bridge reads its reply queue in order, so once a
            # later ask through the same queue is answered, the late answer has been read.
            reply(agent, late, "too late")
            plain = await bridge.client(http, slow, streaming=False, binding=binding)
            sent = asyncio.create_task(send_once(plain, "next one"))
            request = await next_request(agent)
            assert_query(request, bridge, "next one")
            assert request["_tool_id"] != late["_tool_id"], (request, late)
            reply(agent, request, "in time")
            after = await sent
            assert_state(after, COMPLETED)
            assert artifact_texts(after) == ["in time"], after

            still = await client.get_task(GetTaskRequest(id=task_id))
            assert_state(still, CANCELED)
            assert artifact_texts(still) == [], still

    run(scenario)


def test_file_parts_are_refused(broker, tmp_path, closing):
    names = Names(broker)
    echo = names.agent("Echo")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")])
    # Files of every shape: a URL and raw bytes, with a media type the card does not accept,
    # with none, and with text/plain (which it does); alone, and after a text part.
    files = {
        "url pdf": Part(url="https://example.com/report.pdf", filename="report.pdf", media_type="application/pdf"),
        "raw pdf": Part(raw=b"%PDF-1.7", filename="report.pdf", media_type="application/pdf"),
        "url": Part(url="https://example.com/report"),
        "raw": Part(raw=b"some bytes"),
        "url text/plain": Part(url="https://example.com/notes.txt", media_type="text/plain"),
        "raw text/plain": Part(raw=b"notes", filename="notes.txt", media_type="text/plain"),
    }

    async def outcome(client: Client, parts: list[Part]) -> str:
        try:
            task = await send_once(client, "", parts=parts)
        except A2AError as e:
            return f"error {type(e).__name__}: {e}"
        return f"task {state_name(task.status.state)} ({status_text(task)!r})"

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, echo, streaming=False)
            outcomes = {}
            for label, part in files.items():
                outcomes[label] = await outcome(client, [part])
                outcomes[f"text + {label}"] = await outcome(client, [Part(text="and a file:"), part])
            # Nothing of them reached the agent: its first request is the next plain text.
            task = await send_once(client, "only text")
            assert_state(task, COMPLETED)
            assert_query(agent.next_request(), bridge, "only text")
            # A media type the card does not accept is the SDK's -32005; any other file makes a
            # task REJECTED with why (docs/A2A.md, "The mapping").
            for label, said in outcomes.items():
                if "pdf" in label:
                    assert said.startswith("error"), f"{label}: {said}"
                else:
                    assert said.startswith("task TASK_STATE_REJECTED"), f"{label}: {said}"
                    assert "cannot be carried in a Wise Agents message" in said, f"{label}: {said}"

    run(scenario)


# -- the bearer token ----------------------------------------------------------------------
def test_token_is_required_on_json_rpc_calls(broker, tmp_path, closing):
    names = Names(broker)
    echo = names.agent("Echo")
    token = f"sab-token-{names.uid}"
    bridge, [agent] = start(broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")], token=token)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            # The card is public, and says which scheme the calls need.
            card = await bridge.card(http, echo)
            bearer = [
                name
                for name, scheme in card.security_schemes.items()
                if scheme.HasField("http_auth_security_scheme")
                and scheme.http_auth_security_scheme.scheme.lower() == "bearer"
            ]
            assert bearer, f"no bearer scheme on the card: {card}"
            required = {name for requirement in card.security_requirements for name in requirement.schemes}
            assert set(bearer) & required, f"the card's security requirements do not name its bearer scheme: {card}"

            body = {
                "jsonrpc": "2.0",
                "id": "1",
                "method": "SendMessage",
                "params": MessageToDict(send_request("without a token")),
            }
            for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": token}):
                refused = await http.post(bridge.agent_url(echo), json=body, headers={"A2A-Version": "1.0", **headers})
                assert refused.status_code == 401, (headers, refused.status_code, refused.text)

            # The SDK's AuthInterceptor sends the token the card asks for.
            interceptor, context = await bearer_auth(card, token)
            client = await bridge.client(http, echo, streaming=False, interceptors=[interceptor])
            answers = [e async for e in client.send_message(send_request("with the token"), context=context)]
            assert len(answers) == 1 and answers[0].HasField("task"), answers
            task = answers[0].task
            assert_state(task, COMPLETED)
            assert artifact_texts(task) == ["echo: with the token"], task
            # Nothing of the refused calls reached the agent's queue: its first request is this one.
            assert_query(agent.next_request(), bridge, "with the token")
            assert_state(await client.get_task(GetTaskRequest(id=task.id), context=context), COMPLETED)
            # GetTask without the token is refused as well.
            unauthenticated = await bridge.client(http, echo, streaming=False)
            with pytest.raises(A2AError, match="401"):
                await unauthenticated.get_task(GetTaskRequest(id=task.id))

    run(scenario)


# -- conformance: what the A2A TCK found (issue 37, point 5) ------------------------------------
async def rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC call as the TCK makes it (a plain POST, ``A2A-Version: 1.0``): the answer's
    body, whose HTTP status must be 200 (JSON-RPC errors are in the body)."""
    body = {"jsonrpc": "2.0", "id": "tck-1", "method": method, "params": params}
    answer = await http.post(url, json=body, headers={"A2A-Version": "1.0"})
    assert answer.status_code == 200, (url, answer.status_code, answer.text)
    got: dict[str, Any] = answer.json()
    return got


def test_a_message_without_what_a2a_requires_is_invalid_params_and_nothing_is_asked(broker, tmp_path, closing):
    names = Names(broker)
    echo = names.agent("Echo")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")])
    text = {"text": "no role, no id"}
    lacking: list[tuple[str, dict[str, Any], str]] = [
        ("SendMessage", {}, "params.message is required"),
        ("SendMessage", {"message": {"parts": [text]}}, "messageId (a non-empty string), role"),
        ("SendStreamingMessage", {"message": {"parts": [text]}}, "messageId (a non-empty string), role"),
        ("SendMessage", {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": []}}, "parts (at least one)"),
        ("SendMessage", {"message": {"messageId": "m2", "role": "ROLE_UNSPECIFIED", "parts": [text]}}, "role"),
    ]

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            for method, params, said in lacking:
                answer = await rpc(http, bridge.agent_url(echo), method, params)
                error = answer.get("error") or {}
                assert error.get("code") == -32602, (method, params, answer)
                assert said in error.get("message", ""), (method, params, answer)
                assert answer.get("id") == "tck-1" and "result" not in answer, answer
                # The same request on HTTP+JSON: 400 INVALID_ARGUMENT, in that binding's shape.
                path = "message:stream" if method == "SendStreamingMessage" else "message:send"
                rest = await http.post(f"{bridge.agent_url(echo)}/{path}", json=params, headers={"A2A-Version": "1.0"})
                assert rest.status_code == 400, (path, params, rest.text)
                assert rest.headers["content-type"] == "application/json", rest.headers
                refused = rest.json()["error"]
                assert refused["status"] == "INVALID_ARGUMENT" and said.removeprefix("params.") in refused["message"]
            # Without A2A-Version an HTTP+JSON request is 0.3's, which is not served.
            old = await http.post(f"{bridge.agent_url(echo)}/message:send", json=lacking[1][1])
            assert old.status_code == 400 and old.json()["error"]["status"] == "FAILED_PRECONDITION", old.text
            # None of them reached the agent's queue: its first request is this one.
            client = await bridge.client(http, echo, streaming=False)
            task = await send_once(client, "a whole message")
            assert_state(task, COMPLETED)
            assert_query(await next_request(agent), bridge, "a whole message")

    run(scenario)


def test_the_endpoint_takes_a_trailing_slash_and_the_card_is_cacheable(broker, tmp_path, closing):
    names = Names(broker)
    echo = names.agent("Echo")
    bridge, [agent] = start(broker, names, tmp_path, closing, [(echo, lambda m: f"echo: {m['_message']}")])

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            # The TCK posts to the card's URL with a `/` added.
            message = MessageToDict(send_request("with a slash").message)
            answer = await rpc(http, bridge.agent_url(echo) + "/", "SendMessage", {"message": message})
            task = answer.get("result", {}).get("task", {})
            assert task.get("status", {}).get("state") == "TASK_STATE_COMPLETED", answer
            assert [p.get("text") for a in task.get("artifacts", []) for p in a["parts"]] == ["echo: with a slash"]
            assert_query(await next_request(agent), bridge, "with a slash")

            card = await http.get(bridge.card_url(echo))
            assert card.status_code == 200, card.text
            assert card.headers.get("cache-control") == "public, max-age=60", card.headers
            tag = card.headers.get("etag", "")
            assert tag.startswith('"') and tag.endswith('"') and len(tag) > 2, card.headers
            held = await http.get(bridge.card_url(echo), headers={"If-None-Match": tag})
            assert held.status_code == 304 and held.content == b"", (held.status_code, held.text)
            assert held.headers.get("etag") == tag, held.headers
            other = await http.get(bridge.card_url(echo), headers={"If-None-Match": '"not-this-card"'})
            assert other.status_code == 200 and other.json()["name"] == echo, other.text

    run(scenario)


def test_a_message_naming_a_running_task_is_refused_on_every_agent(broker, tmp_path, closing):
    """docs/A2A.md: the SDK refuses a second execution of a running task (-32600), whichever
    agent's path the message came on; nothing is asked and the task goes on. A finished task is
    -32004, an unknown one -32001."""
    names = Names(broker)
    slow, other = names.agent("Slow"), names.agent("Other")
    bridge, [agent, other_agent] = start(broker, names, tmp_path, closing, [(slow, None), (other, None)])

    def naming(task_id: str, text: str) -> SendMessageRequest:
        request = send_request(text)
        request.message.task_id = task_id
        return request

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            client = await bridge.client(http, slow, streaming=True)
            stream = EventStream(client.send_message(send_request("the first question")))
            task_id, request = await opened(stream, agent, bridge, "the first question")

            for asked in (slow, other):
                plain = await bridge.client(http, asked, streaming=False)
                with pytest.raises(InvalidRequestError, match="already in progress"):
                    await send_whole(plain, naming(task_id, f"more, to {asked}"))
            # The task goes on, untouched, and ends with its one answer.
            running = await client.get_task(GetTaskRequest(id=task_id))
            assert running.status.state not in (COMPLETED, FAILED, CANCELED), running
            assert len(running.history) == 1, running
            reply(agent, request, "the one answer")
            await stream.until(is_state(COMPLETED))

            finished = await bridge.client(http, slow, streaming=False)
            with pytest.raises(UnsupportedOperationError, match="terminal state"):
                await send_whole(finished, naming(task_id, "and now?"))
            with pytest.raises(TaskNotFoundError):
                await send_whole(finished, naming(f"no-such-task-{names.uid}", "anyone?"))

            # None of the refused messages was asked: each agent's next request is the next one
            # sent to it.
            for asked, wise in ((slow, agent), (other, other_agent)):
                plain = await bridge.client(http, asked, streaming=False)
                sent = asyncio.create_task(send_once(plain, f"next, to {asked}"))
                next_one = await next_request(wise)
                assert_query(next_one, bridge, f"next, to {asked}")
                reply(wise, next_one, "ok")
                assert_state(await sent, COMPLETED)

    run(scenario)
