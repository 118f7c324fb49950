"""Ops as a VOX agent: a role handler for inbound messages, behind the orchestrator, joined to
the bridge by vox_stomp's VoxBridge. VOX is not published: this runs on the model of VOX in
adapters/vox/tests/vox_model (see docs/VOX.md); with the real VOX, import it instead.
config/bridge.toml gives Ops the UUID 6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11.

  .venv/bin/python examples/vox_ops.py [--seconds N]"""

import asyncio
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters/vox/tests/vox_model"))
from vox.agent import Agent  # noqa: E402
from vox.messaging import MSG_COMMAND_REQUEST, MSG_COMMAND_RESULT, VOXMessage  # noqa: E402
from vox.orchestrator import Orchestrator  # noqa: E402

from vox_stomp import VoxBridge  # noqa: E402

OPS = uuid.UUID("6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11")


async def main(seconds: float) -> None:
    os.environ.setdefault("SAB_STOMP_LOGIN", "admin")
    os.environ.setdefault("SAB_STOMP_PASSCODE", "admin")
    orchestrator = Orchestrator()
    ops = orchestrator.register(Agent("Ops", OPS))

    @ops.on("inbound_message")
    async def on_inbound(source: str, message: VOXMessage) -> None:
        if message.type != MSG_COMMAND_REQUEST:
            return
        print(f"[Ops] {message.details.get('sender')} asks: {message.details.get('message')}", flush=True)
        await ops.send(
            VOXMessage(
                message_id=uuid.uuid4(),
                message_source="ops",
                emitted_at=datetime.now(UTC).isoformat(),
                source=ops.uuid,
                target=message.source,
                type=MSG_COMMAND_RESULT,
                details={"message": "nginx restarted on web1"},
                reply_to=message.message_id,
            )
        )

    bridge = VoxBridge(
        orchestrator,
        {"Ops": OPS},
        namespace="0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10",
        inbox="/queue/vox.{agent}",
        ingress="/queue/bridge.vox",
    )
    orchestrator.add_outbound(bridge.send)
    await bridge.start()
    print("[Ops] listening on /queue/vox.Ops", flush=True)
    try:
        await asyncio.sleep(seconds)
    finally:
        await bridge.stop()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 3600))
