"""JWT bearer tokens on the bridge's MCP server (``[mcp.jwt]``, docs/MCP.md "Security"), against
the official MCP Python SDK's client (mcp 2.3.0) and tokens minted with PyJWT from a key of the
test's own in a JWK set file.

What the bridge promises: with ``[mcp.jwt]`` (as ``[a2a.jwt]`` has it), a token signed by a key
of the set, of the configured issuer and audience, not expired, passes beside ``token_file``'s;
any other is 401 with ``WWW-Authenticate: Bearer error="invalid_token"`` and why, and no token
at all 401 ``Bearer``; ``tools/list`` lists only the tools ``mcp.jwt.allow`` lets the token call,
and a call of another is refused with why and asks nothing; a task (MCP's tasks extension) is
read and canceled only by a token of the same subject; no token is ever written to the log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp_types import TextContent

from a2a_testing import WAIT, Closing
from jwt_testing import AUDIENCE, ISSUER, mint, public_jwk
from mcp_testing import McpBridge
from sab_testing import Broker, Names, WiseAgent

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def rpc(bridge: McpBridge, token: str | None, method: str, params: dict[str, Any]) -> httpx.Response:
    """One JSON-RPC request of the current protocol (stateless: no ``initialize``)."""
    auth = {"authorization": f"Bearer {token}"} if token else {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return httpx.post(bridge.url, content=body, headers={**HEADERS, **auth}, timeout=WAIT)


def task_rpc(bridge: McpBridge, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request of MCP 2026-07-28 from a client of the tasks extension (test_mcp_e2e.py says
    how it is written); its JSON-RPC answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }
    name = str(params.get("name") or params.get("taskId"))
    headers = {
        **HEADERS,
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": name,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    answer = httpx.post(bridge.url, json=body, headers=headers, timeout=WAIT)
    assert answer.status_code == 200, answer.text
    got: dict[str, Any] = answer.json()
    return got


def test_jwt_bearer_tokens_choose_the_tools_a_client_lists_and_calls(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    guarded, open_ = names.agent("Guarded"), names.agent("Open")
    agents = [WiseAgent(broker, name, lambda m: f"echo: {m['_message']}") for name in (guarded, open_)]
    for agent in agents:
        closing(agent, agent.close)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [public_jwk(key, "k1", "RS256")]}))
    section = (
        f'[mcp.jwt]\njwks_file = "{tmp_path / "jwks.json"}"\nissuer = "{ISSUER}"\naudience = "{AUDIENCE}"\n'
        f'leeway_ms = 0\n[mcp.jwt.allow]\n{guarded} = ["tools:guarded"]\n'
    )
    bridge = McpBridge(broker, names, tmp_path, [guarded, open_], native=[guarded, open_], extra=section)
    closing(bridge, bridge.stop)
    allowed = mint(key, "k1", "RS256", scope="openid tools:guarded")
    other = mint(key, "k1", "RS256", scope="openid")
    expired = mint(key, "k1", "RS256", exp=int(time.time()) - 60)
    foreign = mint(rsa.generate_private_key(public_exponent=65537, key_size=2048), "k1", "RS256")

    # Refused before anything is read: no token, and each broken one with why.
    none = rpc(bridge, None, "tools/list", {})
    assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer", none.text
    for broken, why in [(expired, "expired"), (foreign, "signature"), ("not-a-jwt", "not a JWT")]:
        refused = rpc(bridge, broken, "tools/list", {})
        assert refused.status_code == 401, (why, refused.status_code, refused.text)
        assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"', refused.headers
        assert why in refused.text, (why, refused.text)

    # A token without the scope sees and calls only the open tool.
    listed = rpc(bridge, other, "tools/list", {}).json()["result"]["tools"]
    assert [t["name"] for t in listed] == [open_], listed
    forbidden = rpc(bridge, other, "tools/call", {"name": guarded, "arguments": {"text": "let me in"}}).json()
    assert "this token may not call" in forbidden["error"]["message"], forbidden
    called = rpc(bridge, other, "tools/call", {"name": open_, "arguments": {"text": "open"}}).json()
    assert called["result"]["content"][0]["text"] == "echo: open", called

    # The SDK's client with the allowed token: both tools, and the guarded one answers.
    async def scenario() -> tuple[list[str], str]:
        async with bridge.client(token=allowed) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            answered = await client.call_tool(guarded, {"text": "with a JWT"})
            (content,) = answered.content
            assert isinstance(content, TextContent), answered
            return tools, content.text

    tools, text = asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))
    assert tools == sorted([guarded, open_]) and text == "echo: with a JWT", (tools, text)
    first = agents[0].next_request(WAIT)
    assert first["_message"] == "with a JWT", "nothing of the refused calls reached the guarded agent"
    # A task is its maker's: a token of another subject neither reads nor cancels it.
    alice = mint(key, "k1", "RS256", sub="alice", scope="tools:guarded")
    bob = mint(key, "k1", "RS256", sub="bob", scope="tools:guarded")
    created = task_rpc(bridge, alice, "tools/call", {"name": guarded, "arguments": {"text": "alice's"}})
    task_id = created["result"]["taskId"]
    for method in ("tasks/get", "tasks/cancel"):
        stranger = task_rpc(bridge, bob, method, {"taskId": task_id})
        assert "unknown task" in stranger["error"]["message"], stranger
    assert task_rpc(bridge, alice, "tasks/get", {"taskId": task_id})["result"]["taskId"] == task_id
    assert agents[0].next_request(WAIT)["_message"] == "alice's"

    unauthorized = bridge.metric("bridge_mcp_unauthorized_total")
    assert unauthorized == 4, unauthorized

    bridge.stop()
    bridge.process.wait_log('"message":"stopped"', WAIT)
    log = "".join(bridge.process.log)
    assert log.count("MCP request refused for its token") == 4, log
    for token in (allowed, other, expired, foreign, alice, bob):
        assert token.split(".")[2] not in log, "a token's signature is in the log"
