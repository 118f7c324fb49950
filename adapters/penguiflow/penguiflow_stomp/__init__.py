"""PenguiFlow on STOMP through stomp-agent-bridge.

- :class:`BridgeBus` is a PenguiFlow ``MessageBus`` (``create(..., message_bus=bus)``): it
  publishes the flow's ``BusEnvelope``\\ s that leave the flow (by default every edge into the
  Rookery: answers, ``FinalAnswer``, stream chunks) to the bridge's PenguiFlow ingress.
- :class:`BridgeInbox` is the flow's source: it feeds each message of the agent's inbox into the
  flow with ``flow.emit`` (acknowledged once the flow took it), and gives nodes ``ask()`` to
  question an agent behind the bridge and await its answer."""

from .bus import BridgeBus, envelope_json
from .inbox import BridgeInbox

__all__ = ["BridgeBus", "BridgeInbox", "envelope_json"]
