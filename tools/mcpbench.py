"""What an MCP tool call through the bridge costs, against the broker's own round trip to the same
Wise Agents agent (docs/PERFORMANCE.md's A2A figures, for ``[mcp]``): not a test, a measurement.

The release bridge serves two Wise Agents agents as MCP tools: an echo agent (stomp.py, in a
process of its own so that it shares no interpreter lock with the clients) and a silent one that
never answers. On a real broker it measures

1. N sequential ``tools/call`` requests from one HTTP client (httpx, one keep-alive connection,
   the JSON-RPC posted and its JSON result read) against N sequential asks of the same agent made
   directly by a stomp.py asker the way the bridge asks (a persistent SEND confirmed by a receipt,
   the answer read on its own response queue with client-individual acks): rate, p50, p99, and
   what the bridge adds (MCP p50 - direct p50);
2. the same with many concurrent clients (asyncio and one ``httpx.AsyncClient`` each) against a
   direct asker keeping as many asks outstanding on one STOMP connection;
3. the bridge's RSS before and with ``--held`` calls open on the silent agent, and its CPU while
   they stay open.

Each figure carries the time of day it was taken (UTC) and the CPU each party used meanwhile
(bridge, agent, this client; how many cores the whole machine kept busy): the machine may be busy
with other work, and with many clients a Python HTTP client costs about three times what the
direct asker does, so that it, rather than the bridge, may set the MCP rate. Every STOMP and HTTP
socket here has TCP_NODELAY (stomp.py leaves Nagle on).

  .venv/bin/python tools/mcpbench.py [--broker activemq|rabbitmq|artemis] [--bridge PATH]
                                     [--requests 1000] [--warmup 100] [--clients 64]
                                     [--concurrent-requests 4000] [--held 100] [--hold-secs 10]
                                     [--no-receipt]

The brokers are the tests' (scripts/brokers.sh): sab_testing.Broker, with its environment."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "adapters" / "testing"))
sys.path.insert(0, str(REPO / "adapters" / "common"))

import httpx  # noqa: E402
import stomp  # noqa: E402
import yaml  # noqa: E402

from sab_testing import Broker, Names, config_toml, free_port, wa_load  # noqa: E402

TAG = "!wiseagents.WiseAgentMessage"
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-03-26",
}
TICKS = os.sysconf("SC_CLK_TCK")
#: No Nagle on the HTTP clients either (a request's headers and body may be two writes).
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


# -- Wise Agents messages, on libyaml ---------------------------------------------------------
class _Message(dict[str, Any]):
    """A Wise Agents message's fields, written as the tagged mapping upstream's yaml.dump writes."""


class _Loader(yaml.CSafeLoader):
    """libyaml's safe loader reading the Wise Agents tag as a plain mapping (the clients' and the
    echo agent's YAML costs as little as it can, so that the broker and the bridge set the pace)."""


_Loader.add_constructor(TAG, lambda loader, node: loader.construct_mapping(node))
yaml.add_representer(_Message, lambda dumper, data: dumper.represent_mapping(TAG, dict(data)), Dumper=yaml.CDumper)


def dump(fields: dict[str, Any]) -> str:
    text: str = yaml.dump(_Message(fields), Dumper=yaml.CDumper)
    return text


def load(body: str | bytes) -> dict[str, Any]:
    fields: dict[str, Any] = yaml.load(body, Loader=_Loader)
    return fields


def connect(broker: Broker, listener: stomp.ConnectionListener) -> stomp.Connection:
    conn = stomp.Connection([("127.0.0.1", broker.port)], heartbeats=(60000, 60000), vhost="/")
    conn.set_listener("", listener)
    conn.connect(broker.login, broker.passcode, wait=True)
    # stomp.py leaves Nagle on: an ACK followed by the next SEND would wait for the broker's
    # delayed TCP ack (40 ms on Linux), a client's artefact, not the broker's round trip.
    conn.transport.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


class Subscribed(stomp.ConnectionListener):
    """A listener that can subscribe and wait for the SUBSCRIBE's receipt."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.awaited: dict[str, threading.Event] = {}

    def on_receipt(self, frame: Any) -> None:
        event = self.awaited.get(frame.headers.get("receipt-id", ""))
        if event is not None:
            event.set()

    def subscribe(self, conn: stomp.Connection, destination: str, sub_id: str, ack: str) -> None:
        event = self.awaited[f"sub-{sub_id}"] = threading.Event()
        # Artemis reads activemq.prefetchSize as its consumer window in bytes (1000: three
        # messages): its own default there.
        prefetch = {} if self.kind == "artemis" else {"activemq.prefetchSize": "1000", "prefetch-count": "1000"}
        conn.subscribe(destination, id=sub_id, ack=ack, receipt=f"sub-{sub_id}", headers=prefetch)
        if not event.wait(10):
            raise SystemExit(f"no RECEIPT for SUBSCRIBE {destination}")


# -- the agents (a process of their own) ----------------------------------------------------
class Agents(Subscribed):
    """The echo agent (answers each QUERY with its text, echoing _tool_id and _context_name to
    the response queue of _sender, as upstream's agents do: ack:auto, a non-persistent SEND) and
    the silent one (reads its requests, never answers)."""

    def __init__(self, broker: Broker, echo: str, silent: str) -> None:
        super().__init__(broker.kind)
        self.broker, self.echo = broker, echo
        self.silent_requests = 0
        self.conn = connect(broker, self)
        self.subscribe(self.conn, f"{broker.request_prefix}{echo}", "echo", "auto")
        self.subscribe(self.conn, f"{broker.request_prefix}{silent}", "silent", "auto")

    def on_message(self, frame: Any) -> None:
        if frame.headers.get("subscription") != "echo":
            self.silent_requests += 1
            return
        ask = load(frame.body)
        reply = dict(ask, _message_type="RESPONSE", _sender=self.echo)
        self.conn.send(f"{self.broker.response_prefix}{ask['_sender']}", dump(reply))


def serve_agents(broker: Broker, echo: str, silent: str) -> None:
    """Runs the agents until stdin closes; says "ready" once subscribed."""
    agents = Agents(broker, echo, silent)
    print("ready", flush=True)
    sys.stdin.read()
    agents.conn.disconnect()


class AgentsProcess:
    def __init__(self, broker_name: str, echo: str, silent: str) -> None:
        argv = [sys.executable, __file__, "--broker", broker_name, "--serve-agents", echo, silent]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"the agents did not start: {line!r}")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


# -- the bridge ------------------------------------------------------------------------------
class Bridge:
    """``stomp-agent-bridge run`` serving the agents as MCP tools; its log goes to a file (not
    through this process), its readiness is its "bridge ready" line."""

    def __init__(self, binary: Path, broker: Broker, names: Names, tools: list[str], tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        mcp = "[mcp]\ntools = [" + ", ".join(f'"{t}"' for t in tools) + "]\nreply_timeout_ms = 600000\n"
        toml = config_toml(broker, names, [], self.port, wiseagents=tools, extra=mcp)
        # The tests hold 16 messages at most; a bench runs with the bridge's default (1024).
        toml = toml.replace("in_flight = 16\n", "in_flight = 1024\n")
        config = tmp / "bridge.toml"
        config.write_text(toml)
        self.log = tmp / "bridge.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [str(binary), "run", "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 30
        while "bridge ready" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the bridge did not start:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        assert match, status
        return int(match.group(1)) / 1024

    def cpu_secs(self) -> float:
        return pid_cpu(self.proc.pid)

    def metric(self, name: str) -> float:
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text
        values = [float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
        return sum(values)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)


# -- measurements ----------------------------------------------------------------------------
@dataclass
class Run:
    at: str
    calls: int
    secs: float
    latencies: list[float]
    cpu: dict[str, float]

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))] * 1000

    @property
    def rate(self) -> float:
        return self.calls / self.secs


def now() -> str:
    return time.strftime("%H:%M:%S", time.gmtime())


def pid_cpu(pid: int) -> float:
    """A process's CPU time so far (utime + stime, /proc/<pid>/stat's fields 14 and 15), in s."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy() -> float:
    """The machine's CPU time so far, all cores, but idle and iowait (/proc/stat), in s."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


class Cpu:
    """CPU time used during a run: the bridge's, the agents', this process's, the machine's."""

    pids: ClassVar[dict[str, int]] = {}

    def __init__(self) -> None:
        self.start = self.snapshot()

    def snapshot(self) -> dict[str, float]:
        taken = {name: pid_cpu(pid) for name, pid in self.pids.items()}
        taken["machine"] = machine_busy()
        return taken

    def used(self) -> dict[str, float]:
        end = self.snapshot()
        return {k: end[k] - self.start[k] for k in end}


def call_body(call_id: int, tool: str, text: str) -> bytes:
    params = {"name": tool, "arguments": {"text": text}}
    return json.dumps({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}).encode()


def result_text(response: httpx.Response) -> str:
    """The text of a ``tools/call`` result (a JSON answer, or the last event of a stream)."""
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:500]}")
    body = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        body = next(d for d in reversed(data) if d)
    message = json.loads(body)
    if "error" in message:
        raise RuntimeError(f"JSON-RPC error: {message['error']}")
    result = message["result"]
    text: str = result["content"][0]["text"]
    if result.get("isError"):
        raise RuntimeError(f"tool error: {text}")
    return text


_ids = itertools.count(1)


def async_transport() -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(socket_options=NODELAY)


def mcp_sequential(bridge: Bridge, tool: str, n: int) -> Run:
    with httpx.Client(headers=MCP_HEADERS, timeout=60, transport=httpx.HTTPTransport(socket_options=NODELAY)) as client:
        latencies = []
        at, cpu = now(), Cpu()
        start = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            text = result_text(client.post(bridge.url, content=call_body(next(_ids), tool, f"ping {i}")))
            latencies.append(time.perf_counter() - t0)
            if text != f"ping {i}":
                raise RuntimeError(f"echoed {text!r} for 'ping {i}'")
        secs = time.perf_counter() - start
    return Run(at, n, secs, latencies, cpu.used())


async def mcp_concurrent_async(bridge: Bridge, tool: str, n: int, clients: int) -> Run:
    latencies: list[float] = []
    issued = itertools.count()
    warmed = asyncio.Barrier(clients + 1)
    go = asyncio.Event()

    async def worker(w: int) -> None:
        async with httpx.AsyncClient(headers=MCP_HEADERS, timeout=60, transport=async_transport()) as client:
            result_text(await client.post(bridge.url, content=call_body(next(_ids), tool, f"warm {w}")))
            await warmed.wait()
            await go.wait()
            while (i := next(issued)) < n:
                t0 = time.perf_counter()
                response = await client.post(bridge.url, content=call_body(next(_ids), tool, f"ping {i}"))
                if result_text(response) != f"ping {i}":
                    raise RuntimeError(f"a wrong answer for 'ping {i}'")
                latencies.append(time.perf_counter() - t0)

    tasks = [asyncio.create_task(worker(w)) for w in range(clients)]
    await warmed.wait()
    at, cpu = now(), Cpu()
    start = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    secs = time.perf_counter() - start
    return Run(at, n, secs, latencies, cpu.used())


class Asker(Subscribed):
    """The broker's own round trip: asks the agent directly, ``window`` asks outstanding on one
    STOMP connection (1: one after the other), each a persistent SEND (confirmed by a receipt
    unless ``receipts`` is off) and done once its answer (acknowledged) and its receipt are in."""

    def __init__(self, broker: Broker, names: Names, agent: str, receipts: bool) -> None:
        super().__init__(broker.kind)
        self.broker, self.agent, self.receipts = broker, agent, receipts
        self.name = names.agent("McpBenchAsker")
        self.lock = threading.Lock()
        self.pending: dict[int, list[float]] = {}  # ask -> [sent at, events still awaited]
        self.latencies: list[float] = []
        self.done = threading.Event()
        self.next_ask = self.total = 0
        self.failure: str | None = None
        self.conn = connect(broker, self)
        self.subscribe(self.conn, f"{broker.response_prefix}{self.name}", "answers", "client-individual")

    def ask(self) -> None:
        """Sends the next ask, if any is left (under ``self.lock``)."""
        if self.next_ask >= self.total:
            return
        i, self.next_ask = self.next_ask, self.next_ask + 1
        fields = {
            "_message": f"ping {i}",
            "_message_type": "QUERY",
            "_sender": self.name,
            "_tool_id": str(i),
            "_route_response_to": self.name,
            "_context_name": "default",
        }
        self.pending[i] = [time.perf_counter(), 2 if self.receipts else 1]
        headers: dict[str, str] = {"persistent": "true"}
        if self.receipts:
            headers["receipt"] = f"ask-{i}"
        self.conn.send(f"{self.broker.request_prefix}{self.agent}", dump(fields), headers=headers)

    def _arrived(self, i: int) -> None:
        with self.lock:
            entry = self.pending.get(i)
            if entry is None:
                self.failure = f"an unexpected answer or receipt for ask {i}"
                self.done.set()
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self.pending[i]
            self.latencies.append(time.perf_counter() - entry[0])
            if len(self.latencies) == self.total:
                self.done.set()
            self.ask()

    def on_receipt(self, frame: Any) -> None:
        rid = frame.headers.get("receipt-id", "")
        if rid.startswith("ask-"):
            self._arrived(int(rid[4:]))
        else:
            super().on_receipt(frame)

    def on_message(self, frame: Any) -> None:
        with self.lock:
            self.conn.ack(frame.headers["message-id"], frame.headers["subscription"])
        answer = load(frame.body)
        if answer["_message"] != f"ping {answer['_tool_id']}":
            self.failure = f"echoed {answer['_message']!r} for ask {answer['_tool_id']}"
        self._arrived(int(answer["_tool_id"]))

    def on_error(self, frame: Any) -> None:
        self.failure = f"ERROR from the broker: {frame.headers} {frame.body}"
        self.done.set()

    def run(self, n: int, window: int) -> Run:
        self.latencies, self.next_ask, self.total = [], 0, n
        self.done.clear()
        at, cpu = now(), Cpu()
        start = time.perf_counter()
        with self.lock:
            for _ in range(window):
                self.ask()
        if not self.done.wait(300):
            raise SystemExit(f"direct asks: {len(self.latencies)} of {n} done in 300 s")
        if self.failure:
            raise SystemExit(f"direct asks: {self.failure}")
        secs = time.perf_counter() - start
        return Run(at, n, secs, list(self.latencies), cpu.used())

    def close(self) -> None:
        try:
            self.conn.disconnect()
        except Exception:  # noqa: BLE001
            pass


@dataclass
class Held:
    at: str
    rss_before: float
    rss_held: float
    cpu_percent: float
    hold_secs: float
    open_secs: float
    waiting: float
    released_secs: float | None


async def hold_calls(bridge: Bridge, tool: str, held: int, hold_secs: float) -> Held:
    """``held`` calls to the silent agent, each on its own connection, open at once (the bridge's
    ``bridge_mcp_calls_waiting`` says so); the bridge's RSS with them, its CPU over ``hold_secs``;
    then the clients go away."""
    rss_before = bridge.rss_mib()
    at = now()
    clients = [httpx.AsyncClient(headers=MCP_HEADERS, timeout=None, transport=async_transport()) for _ in range(held)]
    start = time.perf_counter()
    calls = [
        asyncio.create_task(c.post(bridge.url, content=call_body(next(_ids), tool, f"hold {i}")))
        for i, c in enumerate(clients)
    ]
    waiting = 0.0
    while time.perf_counter() - start < 60:
        waiting = await asyncio.to_thread(bridge.metric, "bridge_mcp_calls_waiting")
        if waiting >= held:
            break
        await asyncio.sleep(0.05)
    open_secs = time.perf_counter() - start
    if waiting < held:
        raise SystemExit(f"only {waiting:.0f} of {held} calls open after 60 s")
    await asyncio.sleep(1)
    rss_held = bridge.rss_mib()
    cpu = bridge.cpu_secs()
    await asyncio.sleep(hold_secs)
    cpu_percent = 100 * (bridge.cpu_secs() - cpu) / hold_secs
    done = [c for c in calls if c.done()]
    if done:
        raise SystemExit(f"{len(done)} held calls ended early: {done[0].result().text[:300]}")
    for c in calls:
        c.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
    for client in clients:
        await client.aclose()
    gone = time.perf_counter()
    released: float | None = None
    while time.perf_counter() - gone < 10:
        if await asyncio.to_thread(bridge.metric, "bridge_mcp_calls_waiting") == 0:
            released = time.perf_counter() - gone
            break
        await asyncio.sleep(0.05)
    return Held(at, rss_before, rss_held, cpu_percent, hold_secs, open_secs, waiting, released)


# -- the report ------------------------------------------------------------------------------
def ms(x: float) -> str:
    return f"{x:.2f} ms"


def row(label: str, clients: int, direct: Run, mcp: Run) -> str:
    def figures(r: Run) -> str:
        return f"{r.rate:,.0f}/s, {ms(r.quantile(0.5))}, {ms(r.quantile(0.99))}"

    added50 = mcp.quantile(0.5) - direct.quantile(0.5)
    added99 = mcp.quantile(0.99) - direct.quantile(0.99)

    def cpu(r: Run) -> str:
        per = ", ".join(f"{1000 * r.cpu[k] / r.calls:.2f}" for k in ("bridge", "agent", "client"))
        return f"{per}; {r.cpu['machine'] / r.secs:.2f}"

    return (
        f"| {label} | {clients} | {direct.calls:,} | {direct.at}: {figures(direct)} | {mcp.at}: {figures(mcp)} "
        f"| {added50:+.2f} ms, {added99:+.2f} ms | {cpu(direct)} | {cpu(mcp)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=["activemq", "rabbitmq", "artemis"], default="activemq")
    parser.add_argument("--bridge", type=Path, default=REPO / "target/release/stomp-agent-bridge")
    parser.add_argument("--requests", type=int, default=1000, help="sequential calls (one client)")
    parser.add_argument("--warmup", type=int, default=100, help="calls (and direct asks) before measuring")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients")
    parser.add_argument("--concurrent-requests", type=int, default=4000, help="calls across the concurrent clients")
    parser.add_argument("--held", type=int, default=100, help="calls held open on the silent agent")
    parser.add_argument("--hold-secs", type=float, default=10.0)
    parser.add_argument("--no-receipt", action="store_true", help="direct asks without a receipt (the bridge waits)")
    parser.add_argument("--serve-agents", nargs=2, metavar=("ECHO", "SILENT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    broker: Broker = {"activemq": Broker, "rabbitmq": Broker.rabbitmq, "artemis": Broker.artemis}[args.broker]()
    if args.serve_agents:
        serve_agents(broker, *args.serve_agents)
        return
    if not args.bridge.exists():
        raise SystemExit(f"no bridge binary at {args.bridge}")
    fields = {"_message": "x", "_message_type": "QUERY", "_sender": "a", "_tool_id": "1", "_context_name": "default"}
    fields["_route_response_to"] = "a"
    assert wa_load(dump(fields))["_tool_id"] == "1", "the lean YAML is the helpers' Wise Agents message"

    names = Names(broker)
    echo, silent = names.agent("McpBenchEcho"), names.agent("McpBenchSilent")
    agents = AgentsProcess(args.broker, echo, silent)
    stack: list[Callable[[], None]] = [agents.stop]
    try:
        with tempfile.TemporaryDirectory(prefix="mcpbench.") as tmp:
            bridge = Bridge(args.bridge, broker, names, [echo, silent], Path(tmp))
            Cpu.pids = {"bridge": bridge.proc.pid, "agent": agents.proc.pid, "client": os.getpid()}
            stack.append(bridge.stop)
            asker = Asker(broker, names, echo, receipts=not args.no_receipt)
            stack.append(asker.close)
            print(f"# {args.broker} on 127.0.0.1:{broker.port}, bridge {args.bridge} (pid {bridge.proc.pid})")
            print(
                f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC: warm-up ({args.warmup} each), "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            asker.run(args.warmup, 1)
            mcp_sequential(bridge, echo, args.warmup)
            seq_direct = asker.run(args.requests, 1)
            seq_mcp = mcp_sequential(bridge, echo, args.requests)
            print(f"# {now()} sequential done", flush=True)
            con_direct = asker.run(args.concurrent_requests, args.clients)
            con_mcp = asyncio.run(mcp_concurrent_async(bridge, echo, args.concurrent_requests, args.clients))
            print(f"# {now()} concurrent done", flush=True)
            held = asyncio.run(hold_calls(bridge, silent, args.held, args.hold_secs))
            receipts = "no receipt" if args.no_receipt else "each confirmed by a receipt"
            print()
            print(
                "| broker | clients | calls | direct (stomp.py asker, persistent, "
                f"{receipts}): UTC, /s, p50, p99 | MCP tools/call through the bridge: UTC, /s, p50, p99 "
                "| added by the bridge (p50, p99) "
                "| direct: CPU s per 1,000 (bridge, agent, client); machine cores busy "
                "| MCP: CPU s per 1,000 (bridge, agent, client); machine cores busy |"
            )
            print("| --- | --- | --- | --- | --- | --- | --- | --- |")
            print(row(args.broker, 1, seq_direct, seq_mcp))
            print(row(args.broker, args.clients, con_direct, con_mcp))
            print()
            released = "not within 10 s" if held.released_secs is None else f"{held.released_secs:.1f} s"
            print(f"| {args.held} MCP calls held open ({args.broker}, {held.at} UTC) | |")
            print("| --- | --- |")
            print(f"| bridge RSS before -> with them open | {held.rss_before:.1f} -> {held.rss_held:.1f} MiB |")
            print(f"| bridge CPU while they stay open ({held.hold_secs:.0f} s) | {held.cpu_percent:.1f} % |")
            print(f"| time to open them (bridge_mcp_calls_waiting = {held.waiting:.0f}) | {held.open_secs:.2f} s |")
            print(f"| bridge_mcp_calls_waiting back to 0 after the clients left | {released} |")
            errors = [line for line in (Path(tmp) / "bridge.log").read_text().splitlines() if '"ERROR"' in line]
            if errors:
                print(f"\n# the bridge logged {len(errors)} errors; the first: {errors[0][:400]}")
    finally:
        for stop in reversed(stack):
            stop()


if __name__ == "__main__":
    main()
