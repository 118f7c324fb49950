"""A Civitas agent on STOMP, for the walkthrough: it reads the bridge's Civitas messages with
Civitas's own Message and JsonSerializer and answers the way Civitas's reply() does (to
reply_to, same correlation_id, type "reply"), through the bridge's Civitas ingress.

  python examples/civitas_weather_agent.py [--count N]"""

import os
import sys

import stomp

sys.path.insert(0, os.path.join(os.environ.get("SAB_VENV", ".venv"), "civitas-src"))
from civitas.messages import Message  # noqa: E402
from civitas.serializer import JsonSerializer  # noqa: E402

NAME, INBOX, INGRESS = "WeatherAgent", "/queue/civitas.WeatherAgent", "/queue/bridge.civitas"


class Agent(stomp.ConnectionListener):
    def __init__(self, conn, count):
        self.conn, self.left, self.serializer = conn, count, JsonSerializer()

    def on_message(self, frame):
        asked = self.serializer.deserialize(frame.body.encode() if isinstance(frame.body, str) else frame.body)
        question = asked.payload.get("message", "")
        print(f"[{NAME}] {asked.sender} asks: {question}", flush=True)
        answer = Message(
            type="reply",
            sender=NAME,
            recipient=asked.reply_to or asked.sender,
            correlation_id=asked.correlation_id,
            trace_id=asked.trace_id,
            parent_span_id=asked.span_id,
            payload={"message": "Sunny, 21 C, light wind from the west."},
        )
        self.conn.send(INGRESS, self.serializer.serialize(answer), content_type="application/json")
        self.left -= 1


def main():
    count = int(sys.argv[sys.argv.index("--count") + 1]) if "--count" in sys.argv else 1
    conn = stomp.Connection([("127.0.0.1", int(os.environ.get("STOMP_PORT", "61613")))], heartbeats=(60000, 60000))
    agent = Agent(conn, count)
    conn.set_listener("", agent)
    conn.connect(os.environ.get("STOMP_USER", "admin"), os.environ.get("STOMP_PASSWORD", "admin"), wait=True)
    conn.subscribe(INBOX, id="1", ack="auto")
    print(f"[{NAME}] listening on {INBOX}", flush=True)
    import time

    deadline = time.time() + float(os.environ.get("AGENT_SECONDS", "60"))
    while agent.left > 0 and time.time() < deadline:
        time.sleep(0.05)
    conn.disconnect()
    sys.exit(0 if agent.left == 0 else 1)


if __name__ == "__main__":
    main()
