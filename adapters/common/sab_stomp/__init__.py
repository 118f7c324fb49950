"""The STOMP link shared by the stomp-agent-bridge adapters (Civitas, PenguiFlow, VOX)."""

from .link import AsyncLink, Link, LinkConfig, SendFailed

__all__ = ["AsyncLink", "Link", "LinkConfig", "SendFailed"]
