"""What the A2A task store costs (docs/PERFORMANCE.md, "A2A tasks in memory and in Redis"): not a
test, a measurement. The release bridge serves one Wise Agents echo agent (stomp.py, in this
process) over A2A JSON-RPC, first with its tasks in memory, then in Redis (``[a2a.store]``, the
tests' Redis); for each it measures N sequential ``SendMessage`` calls (each one published to the
agent and completed by its answer: the broker's round trip is in it) and N sequential ``GetTask``
calls of those tasks, from one httpx client on one keep-alive connection: p50 and p99 of each,
and the bridge's CPU per call.

  .venv/bin/python tools/storebench.py [--broker activemq|rabbitmq|artemis] [--bridge PATH]
                                     [--requests 500] [--warmup 50]

The brokers and Redis are the tests' (scripts/brokers.sh, scripts/redis.sh; ``SAB_REDIS_PORT``)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "adapters" / "testing"))

import httpx  # noqa: E402

from sab_testing import BridgeProcess, Broker, Names, WiseAgent, config_toml, free_port  # noqa: E402

BROKERS = {"activemq": Broker, "rabbitmq": Broker.rabbitmq, "artemis": Broker.artemis}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rpc(http: httpx.Client, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": "1", "method": method, "params": params}
    answer = http.post(url, json=body, headers={"A2A-Version": "1.0"})
    got: dict[str, Any] = answer.json()
    assert "result" in got, got
    return got["result"]


def send(http: httpx.Client, url: str, text: str) -> str:
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}
    task = rpc(http, url, "SendMessage", {"message": message})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return str(task["id"])


def ms(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q) - 1] * 1000 if q < 100 else max(samples) * 1000


def measure(args: argparse.Namespace, store: str) -> dict[str, float]:
    broker = BROKERS[args.broker]()
    names = Names(broker)
    echo = names.agent("Echo")
    agent = WiseAgent(broker, echo, lambda m: "echo: " + m["_message"])
    port = free_port()
    extra = f'[a2a]\nserve = ["{echo}"]\n'
    if store == "redis":
        redis_port = os.environ.get("SAB_REDIS_PORT", "6379")
        extra += f'\n[a2a.store]\nport = {redis_port}\nprefix = "sab-bench:{names.uid}:"\n'
    toml = config_toml(broker, names, [], port, wiseagents=[echo], extra=extra)
    os.environ["SAB_BRIDGE_BIN"] = args.bridge
    with tempfile.TemporaryDirectory() as tmp:
        bridge = BridgeProcess(toml, Path(tmp))
        url = f"http://127.0.0.1:{port}/a2a/{echo}"
        try:
            with httpx.Client(timeout=30) as http:
                ids = [send(http, url, f"warm {i}") for i in range(args.warmup)]
                cpu0 = cpu_seconds(bridge.proc.pid)
                sends, gets = [], []
                for i in range(args.requests):
                    t0 = time.perf_counter()
                    ids.append(send(http, url, f"q {i}"))
                    sends.append(time.perf_counter() - t0)
                cpu1 = cpu_seconds(bridge.proc.pid)
                for task_id in ids[args.warmup :]:
                    t0 = time.perf_counter()
                    assert rpc(http, url, "GetTask", {"id": task_id})["id"] == task_id
                    gets.append(time.perf_counter() - t0)
                cpu2 = cpu_seconds(bridge.proc.pid)
        finally:
            bridge.stop()
            agent.close()
    n = args.requests
    return {
        "send_p50": ms(sends, 50),
        "send_p99": ms(sends, 99),
        "get_p50": ms(gets, 50),
        "get_p99": ms(gets, 99),
        "send_cpu_ms": (cpu1 - cpu0) / n * 1000,
        "get_cpu_ms": (cpu2 - cpu1) / n * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", default="activemq", choices=list(BROKERS))
    parser.add_argument("--bridge", default=str(REPO / "target" / "release" / "stomp-agent-bridge"))
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, {args.broker}, {args.requests} calls each, one client")
    print("store  | SendMessage p50 / p99 ms | GetTask p50 / p99 ms | bridge CPU ms per SendMessage / GetTask")
    for store in ("memory", "redis"):
        r = measure(args, store)
        print(
            f"{store:6} | {r['send_p50']:.2f} / {r['send_p99']:.2f} | {r['get_p50']:.2f} / {r['get_p99']:.2f} "
            f"| {r['send_cpu_ms']:.3f} / {r['get_cpu_ms']:.3f}"
        )


if __name__ == "__main__":
    main()
