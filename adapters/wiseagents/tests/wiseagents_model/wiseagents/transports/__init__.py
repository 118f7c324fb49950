from wiseagents.transports.stomp import StompWiseAgentTransport

__all__ = ["StompWiseAgentTransport"]
