"""The MCP tests' fixtures: the root conftest.py gives ``broker``; ``closing`` and the a2a-sdk
agent server (adapters/testing/a2a_testing.py, on the tests' path through
adapters/pyproject.toml) are made fixtures of this directory by importing them here."""

from a2a_testing import a2a_agent_server, closing

__all__ = ["a2a_agent_server", "closing"]
