"""A Wise Agents agent ("Assistant") asks WeatherAgent a question over STOMP, exactly as Wise
Agents does (STOMP 1.1, YAML !wiseagents.WiseAgentMessage, ack auto), and prints the answer
that comes back on its response queue. Exits 1 if none comes within 30 s.

  python examples/ask_weather.py [--to AGENT] "What is the weather in Paris?"

--to names the agent asked (default WeatherAgent; Planner and Ops are the PenguiFlow and VOX
agents of config/bridge.toml, run by examples/penguiflow_planner.py and examples/vox_ops.py)."""

import os
import queue
import sys
import time
import uuid

import stomp
import yaml


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"
    yaml_loader = yaml.Loader


class Inbox(stomp.ConnectionListener):
    def __init__(self):
        self.frames = queue.Queue()

    def on_message(self, frame):
        self.frames.put(frame)


def main():
    args = sys.argv[1:]
    to = "WeatherAgent"
    if "--to" in args:
        i = args.index("--to")
        to = args[i + 1]
        del args[i : i + 2]
    question = args[0] if args else "What is the weather in Paris?"
    inbox = Inbox()
    conn = stomp.Connection([("127.0.0.1", int(os.environ.get("STOMP_PORT", "61613")))], heartbeats=(60000, 60000))
    conn.set_listener("", inbox)
    conn.connect(os.environ.get("STOMP_USER", "admin"), os.environ.get("STOMP_PASSWORD", "admin"), wait=True)
    conn.subscribe("/queue/response/Assistant", id="1", ack="auto")
    request = WiseAgentMessage()
    tool_id = f"call_{uuid.uuid4().hex[:8]}"
    request.__dict__.update(
        {
            "_message": question,
            "_sender": "Assistant",
            "_message_type": "QUERY",
            "_context_name": "default",
            "_tool_id": tool_id,
            "_route_response_to": "User",
        }
    )
    body = yaml.dump(request)
    print(f"[Assistant] sends to /queue/request/{to}:\n{body}", flush=True)
    conn.send(f"/queue/request/{to}", body)
    deadline = time.time() + 30
    while True:  # the answer to this call (an older one may still wait in the queue)
        try:
            frame = inbox.frames.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            print("[Assistant] no answer within 30 s", flush=True)
            sys.exit(1)
        answer = yaml.load(frame.body, Loader=yaml.Loader)
        if answer._tool_id == tool_id:
            break
    print(f"[Assistant] got on /queue/response/Assistant:\n{frame.body}", flush=True)
    assert answer._route_response_to == "User" and answer._context_name == "default", answer.__dict__
    print(f"[Assistant] {to} says: {answer._message}", flush=True)
    conn.disconnect()


if __name__ == "__main__":
    main()
