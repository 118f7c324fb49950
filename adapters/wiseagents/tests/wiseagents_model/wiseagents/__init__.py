"""A MODEL of Wise Agents (wise-agents/wise-agents at 5d76309; not on PyPI), under its real
module paths, for the bridge's registry and collaboration tests. Written from upstream's
source, not copied from it: only what a Wise Agents system does on the wire (STOMP + YAML) and
in its Redis registry (keys, fields, the exact pickles), for the classes the tests use. Line
references ("core.py 899-956") are to upstream at that commit. ../README.md says what was
compared with upstream's own code, and how."""

from wiseagents.utils import AbstractClassError, enforce_no_abstract_class_instances
from wiseagents.core import (
    WiseAgent,
    WiseAgentCollaborationType,
    WiseAgentContext,
    WiseAgentMetaData,
    WiseAgentRegistry,
    WiseAgentTool,
)
from wiseagents.wise_agent_messaging import WiseAgentEvent, WiseAgentMessage, WiseAgentMessageType, WiseAgentTransport

__all__ = [
    "WiseAgentRegistry",
    "WiseAgentContext",
    "WiseAgent",
    "WiseAgentTool",
    "WiseAgentMetaData",
    "WiseAgentMessage",
    "WiseAgentMessageType",
    "WiseAgentTransport",
    "WiseAgentEvent",
    "WiseAgentCollaborationType",
    "AbstractClassError",
    "enforce_no_abstract_class_instances",
]
