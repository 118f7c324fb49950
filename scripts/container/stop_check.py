"""The container test's check of a clean stop (scripts/container-test.sh): nothing lost.

  python stop_check.py send N RUN     N Wise Agents requests to WeatherAgent, each `_message`
                                      unique, confirmed by the broker (a receipt after the last);
                                      says "[stop-check] N/4 sent" a quarter of the way
  python stop_check.py account N RUN  after the bridge stopped: each request is either still
                                      on /queue/request/WeatherAgent or translated on
                                      /queue/civitas.WeatherAgent, exactly once; none dead-lettered

STOMP_PORT, STOMP_USER, STOMP_PASSWORD: the broker, as examples/ask_weather.py."""

import json
import os
import queue
import sys
import time

import stomp
import yaml


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"
    yaml_loader = yaml.Loader


class Inbox(stomp.ConnectionListener):
    def __init__(self):
        self.frames = queue.Queue()
        self.receipts = queue.Queue()

    def on_message(self, frame):
        self.frames.put(frame)

    def on_receipt(self, frame):
        self.receipts.put(frame.headers.get("receipt-id"))


def connect(inbox):
    conn = stomp.Connection([("127.0.0.1", int(os.environ.get("STOMP_PORT", "61613")))], heartbeats=(60000, 60000))
    conn.set_listener("", inbox)
    conn.connect(os.environ.get("STOMP_USER", "admin"), os.environ.get("STOMP_PASSWORD", "admin"), wait=True)
    return conn


def send(n, run):
    inbox = Inbox()
    conn = connect(inbox)
    for i in range(n):
        request = WiseAgentMessage()
        request.__dict__.update(
            {
                "_message": f"stop-check {run} {i}",
                "_sender": "Assistant",
                "_message_type": "QUERY",
                "_context_name": "default",
                "_tool_id": f"call_{run}_{i}",
                "_route_response_to": "User",
            }
        )
        headers = {"receipt": "last"} if i == n - 1 else {}
        conn.send("/queue/request/WeatherAgent", yaml.dump(request), headers=headers)
        if i + 1 == n // 4:
            print(f"[stop-check] {i + 1} sent", flush=True)
    assert inbox.receipts.get(timeout=30) == "last"
    conn.disconnect()
    print(f"[stop-check] {n} requests sent and received by the broker", flush=True)


def account(n, run):
    inbox = Inbox()
    conn = connect(inbox)
    conn.subscribe("/queue/request/WeatherAgent", id="request", ack="auto")
    conn.subscribe("/queue/civitas.WeatherAgent", id="civitas", ack="auto")
    conn.subscribe("/queue/bridge.dead", id="dead", ack="auto")
    seen = {"request": [], "civitas": [], "dead": []}
    prefix = f"stop-check {run} "
    deadline = time.time() + 60
    quiet_until = None
    # Until every request is accounted for, then one more second for any repeat (bounded).
    while time.time() < deadline:
        total = len(seen["request"]) + len(seen["civitas"]) + len(seen["dead"])
        if total >= n and quiet_until is None:
            quiet_until = time.time() + 1.0
        if quiet_until is not None and time.time() >= quiet_until:
            break
        try:
            frame = inbox.frames.get(timeout=0.2)
        except queue.Empty:
            continue
        sub = frame.headers["subscription"]
        body = frame.body if isinstance(frame.body, str) else frame.body.decode()
        if sub == "civitas":
            text = json.loads(body).get("payload", {}).get("message", "")
        elif sub == "request":
            text = getattr(yaml.load(body, Loader=yaml.Loader), "_message", "")
        else:
            text = body
        if prefix in text:
            seen[sub].append(text)
    conn.disconnect()
    ids = seen["request"] + seen["civitas"]
    missing = [i for i in range(n) if f"{prefix}{i}" not in ids]
    repeated = len(ids) - len(set(ids))
    print(
        f"[stop-check] of {n}: {len(seen['civitas'])} translated for the Civitas agent, "
        f"{len(seen['request'])} still waiting for the bridge, {len(seen['dead'])} dead-lettered, "
        f"{len(missing)} lost, {repeated} repeated",
        flush=True,
    )
    if missing or repeated or seen["dead"]:
        sys.exit(1)


if __name__ == "__main__":
    action, count, run = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    {"send": send, "account": account}[action](count, run)
