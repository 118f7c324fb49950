"""WeatherAgent as a real Civitas agent: an AgentProcess with handle(), supervised, in a Civitas
Runtime whose transport is civitas_stomp's StompTransport. With config/bridge.toml's defaults
(inbox /queue/civitas.{agent}, ingress /queue/bridge.civitas, JSON) it answers Wise Agents
agents through the bridge; reply() goes back to them by name.

  .venv/bin/python examples/civitas_agency.py [--seconds N]

Broker from SAB_STOMP_HOST / _PORT / _LOGIN / _PASSCODE (default 127.0.0.1:61613, admin/admin)."""

import asyncio
import os
import sys

from civitas import AgentProcess, Runtime, Supervisor
from civitas.messages import Message

from civitas_stomp import bridge_components


class WeatherAgent(AgentProcess):
    async def handle(self, message: Message) -> Message | None:
        print(f"[WeatherAgent] {message.sender} asks: {message.payload.get('message')}", flush=True)
        return self.reply({"message": "Sunny, 21 C, light wind from the west."})


async def main(seconds: float) -> None:
    os.environ.setdefault("SAB_STOMP_LOGIN", "admin")
    os.environ.setdefault("SAB_STOMP_PASSCODE", "admin")
    runtime = Runtime(
        supervisor=Supervisor("weather-agency", children=[WeatherAgent("WeatherAgent")]),
        components=bridge_components(remote=["*"], encoding="json"),
    )
    await runtime.start()
    print("[WeatherAgent] listening on /queue/civitas.WeatherAgent", flush=True)
    try:
        await asyncio.sleep(seconds)
    finally:
        await runtime.stop()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 3600))
