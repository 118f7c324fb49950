"""Planner as a PenguiFlow flow: one node that answers with a FinalAnswer (a model_copy of the
request, so its meta, and with it the route back, is kept). BridgeBus is the flow's
message_bus, BridgeInbox its source. With config/bridge.toml's defaults (inbox
/queue/penguiflow.{agent}, ingress /queue/bridge.penguiflow) it answers Wise Agents agents.

  .venv/bin/python examples/penguiflow_planner.py [--seconds N]"""

import asyncio
import os
import sys

from penguiflow import Node, create
from penguiflow.types import FinalAnswer, Message
from sab_stomp import AsyncLink, LinkConfig

from penguiflow_stomp import BridgeBus, BridgeInbox


async def plan(msg: Message, ctx) -> Message:
    print(f"[Planner] {msg.meta.get('sender')} asks: {msg.payload}", flush=True)
    return msg.model_copy(update={"payload": FinalAnswer(text="Day 1 Colosseum, day 2 Vatican, day 3 Trastevere.")})


async def main(seconds: float) -> None:
    os.environ.setdefault("SAB_STOMP_LOGIN", "admin")
    os.environ.setdefault("SAB_STOMP_PASSCODE", "admin")
    bus = BridgeBus(AsyncLink(LinkConfig.from_env(), name="planner"), ingress="/queue/bridge.penguiflow")
    flow = create(Node(plan, name="plan").to(), message_bus=bus)
    flow.run()
    inbox = BridgeInbox(flow, "Planner", bus, inbox="/queue/penguiflow.{agent}")
    await inbox.start()
    print("[Planner] listening on /queue/penguiflow.Planner", flush=True)
    try:
        await asyncio.sleep(seconds)
    finally:
        await inbox.stop()
        await flow.stop()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 3600))
