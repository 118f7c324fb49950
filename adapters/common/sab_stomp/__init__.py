"""The STOMP link shared by the stomp-agent-bridge adapters (Civitas, PenguiFlow, VOX)."""

from .link import AsyncLink, FrameHandler, Link, LinkConfig, MessageFrame, SendFailed

__all__ = ["AsyncLink", "FrameHandler", "Link", "LinkConfig", "MessageFrame", "SendFailed"]
