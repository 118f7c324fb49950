"""VOX agents on STOMP through stomp-agent-bridge: each message of an agent's inbox is handed
to ``orchestrator.dispatch_inbound_message(source=..., payload=...)`` (its SecurityError
guardrail kept: a refused request is answered with ``command_error``), and the agents'
``command_result`` / ``command_error`` / ``command_request`` messages for agents behind the
bridge go to its VOX ingress."""

from .adapter import VoxBridge, uuid_of

__all__ = ["VoxBridge", "uuid_of"]
