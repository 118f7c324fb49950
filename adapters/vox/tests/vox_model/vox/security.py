class SecurityError(Exception):
    """Raised by the orchestrator's guardrail when an inbound payload is refused."""
