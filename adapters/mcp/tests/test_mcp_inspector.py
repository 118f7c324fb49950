"""A second MCP client beside the Python SDK: the MCP Inspector's CLI (@modelcontextprotocol/inspector
2.12.0, Node; scripts/mcp-inspector.sh installs it, scripts/test.sh runs that) lists the tools
and calls one through the bridge, with the 2025 handshake and with MCP 2026-07-28, behind a
bearer token. Skipped without the CLI, except in the whole suite (SAB_SUITE), where it must run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from a2a_testing import WAIT, Closing
from mcp_testing import McpBridge
from sab_testing import REPO, Broker, Names, WiseAgent

CLI = Path(os.environ.get("SAB_MCP_INSPECTOR", REPO / ".venv/mcp-inspector/node_modules/.bin/mcp-inspector"))
pytestmark = pytest.mark.skipif(
    not CLI.exists() and not os.environ.get("SAB_SUITE"), reason=f"no MCP Inspector at {CLI} (scripts/mcp-inspector.sh)"
)
TOKEN = "inspector-s3cret"


def inspect(bridge: McpBridge, era: str, *args: str, token: str = TOKEN) -> tuple[int, Any]:
    """The CLI's exit status and its JSON output, against ``bridge`` in protocol ``era``. Without
    proxy variables: with one set, the CLI loads a module Node 20 cannot (docs/MCP.md)."""
    env = {k: v for k, v in os.environ.items() if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    command = [str(CLI), "--cli", bridge.url, "--transport", "http", "--protocol-era", era, "--format", "json"]
    command += ["--header", f"Authorization: Bearer {token}", "--stored-auth-only", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=2 * WAIT, check=False)
    out = done.stdout.strip() or done.stderr.strip()
    return done.returncode, json.loads(out) if out.startswith("{") else out


def test_the_inspector_lists_and_calls_the_tools_in_both_protocol_eras(tmp_path: Path, closing: Closing) -> None:
    broker = Broker()
    names = Names(broker)
    assistant = names.agent("Assistant")
    agent = WiseAgent(broker, assistant, lambda m: f"answer to {m['_message']}")
    closing(agent, agent.close)
    bridge = McpBridge(broker, names, tmp_path, [assistant], native=[assistant], token=TOKEN)
    closing(bridge, bridge.stop)
    for era in ("legacy", "modern"):
        status, listed = inspect(bridge, era, "--method", "tools/list")
        assert status == 0 and [t["name"] for t in listed["result"]["tools"]] == [assistant], listed
        call = ("--method", "tools/call", "--tool-name", assistant, "--tool-arg", f"text=hello {era}")
        status, called = inspect(bridge, era, *call)
        assert status == 0, called
        result = dict(called["result"])
        # MCP 2026-07-28 with the tasks extension offered: a result that is not a task says so.
        assert result.pop("resultType", "complete") == "complete", called
        assert result == {"content": [{"type": "text", "text": f"answer to hello {era}"}], "isError": False}
    status, refused = inspect(bridge, "modern", "--method", "tools/list", token="wrong")
    assert status != 0 and refused["error"]["code"] == "auth_required" and "401" in json.dumps(refused), refused
