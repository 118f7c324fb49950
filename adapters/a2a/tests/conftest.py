"""The A2A tests' fixtures: the root conftest.py gives ``broker``; the a2a-sdk agent server
(adapters/testing/a2a_testing.py, on the tests' path through adapters/pyproject.toml) is made a
fixture of this directory by importing it here."""

from a2a_testing import a2a_agent_server

__all__ = ["a2a_agent_server"]
