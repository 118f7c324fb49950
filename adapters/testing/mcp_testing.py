"""Helpers for the MCP interop tests (tests only), on the official MCP Python SDK (``mcp``
2.3.0, as scripts/python-env.sh pins it):

- ``mcp_section(...)``: the bridge's ``[mcp]`` configuration, for ``config_toml(extra=...)``;
- ``McpBridge``: the bridge binary serving agents as MCP tools at ``/mcp`` on its HTTP listener,
  an SDK client of it (``client(...)``: Streamable HTTP, the protocol version the SDK
  negotiates, or the 2025 handshake with ``mode="legacy"``), its ``/metrics``, and a reload
  of its configuration (SIGHUP) awaited in its log."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from a2a_testing import WAIT, metric_value
from sab_testing import BridgeProcess, Broker, Names, config_toml, free_port


def mcp_section(
    tools: Sequence[str],
    descriptions: dict[str, str] | None = None,
    token_file: Path | None = None,
    reply_timeout_ms: int | None = None,
    max_body_bytes: int | None = None,
    max_calls: int | None = None,
) -> str:
    """The ``[mcp]`` table (and ``[mcp.descriptions]``) of the bridge's configuration."""
    text = "[mcp]\ntools = [" + ", ".join(f'"{t}"' for t in tools) + "]\n"
    if token_file is not None:
        text += f'token_file = "{token_file}"\n'
    if reply_timeout_ms is not None:
        text += f"reply_timeout_ms = {reply_timeout_ms}\n"
    if max_body_bytes is not None:
        text += f"max_body_bytes = {max_body_bytes}\n"
    if max_calls is not None:
        text += f"max_calls = {max_calls}\n"
    if descriptions:
        text += "\n[mcp.descriptions]\n" + "".join(f'{k} = "{v}"\n' for k, v in descriptions.items())
    return text


class McpBridge:
    """The bridge binary with an ``[mcp]`` section on a fresh HTTP port; its Wise Agents reply
    agent is the test's own (``names.reply_agent``, or ``reply_agent``), so that bridges of other
    tests on the same broker never take its answers. ``agents`` are proxied agents (``config_toml``'s), ``native``
    the Wise Agents agents it knows by name."""

    def __init__(
        self,
        broker: Broker,
        names: Names,
        tmp: Path,
        tools: Sequence[str],
        native: Sequence[str] = (),
        agents: list[tuple[str, str, str]] | None = None,
        token: str | None = None,
        extra: str = "",
        reply_agent: str | None = None,
        **mcp: Any,
    ) -> None:
        self.broker, self.names, self.tmp = broker, names, tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.token_file = None
        if token is not None:
            self.token_file = tmp / "mcp-token"
            self.token_file.write_text(token + "\n")
        self.agents = agents or []
        self.mcp = mcp
        self.extra = extra
        self.reply_agent = reply_agent
        self.process = BridgeProcess(self.toml(tools, native), tmp)

    def toml(self, tools: Sequence[str], native: Sequence[str]) -> str:
        section = mcp_section(tools, token_file=self.token_file, **self.mcp)
        return config_toml(
            self.broker,
            self.names,
            self.agents,
            self.port,
            wiseagents=native,
            reply_agent=self.reply_agent,
            extra=section + self.extra,
        )

    def stop(self) -> int:
        if self.process.proc.poll() is None:
            return self.process.stop()
        return self.process.proc.returncode

    def client(self, token: str | None = None, mode: str = "auto") -> Client:
        """An SDK client of the tools, as the SDK's users make one: a URL (Streamable HTTP), or
        with a bearer token the SDK's transport over an HTTP client that sends it."""
        if token is None:
            return Client(self.url, mode=mode, read_timeout_seconds=WAIT)
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)
        return Client(streamable_http_client(self.url, http_client=http), mode=mode, read_timeout_seconds=WAIT)

    def reload(self, tools: Sequence[str], native: Sequence[str]) -> str:
        """Writes the configuration with ``tools`` and ``native`` and sends SIGHUP; the log line
        that says it was reloaded."""
        (self.tmp / "bridge.toml").write_text(self.toml(tools, native))
        self.process.proc.send_signal(signal.SIGHUP)
        return self.process.wait_log("configuration reloaded", WAIT)

    def metric(self, name: str, **labels: str) -> float | None:
        got = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert got.status_code == 200, got.text
        return metric_value(got.text, name, **labels)

    def ready(self) -> bool:
        return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5).status_code == 200
