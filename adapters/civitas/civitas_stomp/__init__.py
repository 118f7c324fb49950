"""Civitas agents on STOMP, through stomp-agent-bridge: a transport (the interface Civitas's
in-process, ZMQ and NATS transports implement) and a registry that makes the names behind the
bridge routable, so ask(), send() and reply() work unchanged."""

from .registry import BridgeRegistry
from .transport import StompTransport, bridge_components

__all__ = ["BridgeRegistry", "StompTransport", "bridge_components"]
