"""wise_agent_messaging.py: the message (a PyYAML YAMLObject tagged !wiseagents.WiseAgentMessage,
six attributes, yaml.dump'ed with sorted keys), its type, and the transport interface
(upstream 13-199)."""

from __future__ import annotations

from abc import abstractmethod
from enum import StrEnum
from typing import Any, Callable, Optional

import yaml
from yaml.resolver import BaseResolver

from wiseagents.utils import enforce_no_abstract_class_instances
from wiseagents.yaml import WiseAgentsYAMLObject


class WiseAgentMessageType(StrEnum):
    ACK = "ACK"
    ALERT = "ALERT"
    CANNOT_ANSWER = "CANNOT_ANSWER"
    QUERY = "QUERY"
    RESPONSE = "RESPONSE"
    ACTION_REQUEST = "ACTION_REQUEST"
    HUMAN = "HUMAN"


class WiseAgentEvent:
    """Upstream's placeholder."""


def _type_as_plain_scalar(dumper: yaml.Dumper, data: WiseAgentMessageType) -> yaml.Node:
    return dumper.represent_scalar(BaseResolver.DEFAULT_SCALAR_TAG, str(data.value))


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"

    def __init__(
        self,
        message: Any,
        context_name: str,
        sender: Optional[str] = None,
        message_type: Optional[WiseAgentMessageType] = None,
        tool_id: Optional[str] = None,
        route_response_to: Optional[str] = None,
    ) -> None:
        # `message` is a str, except PassThroughClientAgent's, which nests a whole message.
        self._message = message
        self._sender = sender
        self._message_type = message_type
        self._tool_id = tool_id
        self._route_response_to = route_response_to
        self._context_name = context_name
        self.__class__.yaml_dumper.add_representer(WiseAgentMessageType, _type_as_plain_scalar)

    def __setstate__(self, state: dict) -> None:
        # Every key is read by name: a body without one of the six raises KeyError (upstream 55-65).
        self._message = state["_message"]
        self._sender = state["_sender"]
        kind = state["_message_type"]
        self._message_type = WiseAgentMessageType(kind) if kind is not None and kind != "" else None
        self._tool_id = state["_tool_id"]
        self._route_response_to = state["_route_response_to"]
        self._context_name = state["_context_name"]

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(message={self.message}, sender={self.sender}, "
            f"message_type={self.message_type}, tool_id={self.tool_id}, context_name={self.context_name}, "
            f"route_response_to={self.route_response_to})"
        )

    context_name = property(lambda self: self._context_name)
    message = property(lambda self: self._message)
    message_type = property(lambda self: self._message_type)
    tool_id = property(lambda self: self._tool_id)
    route_response_to = property(lambda self: self._route_response_to)

    @property
    def sender(self) -> Optional[str]:
        return self._sender

    @sender.setter
    def sender(self, sender: str) -> None:
        self._sender = sender


Receiver = Optional[Callable[..., Any]]


class WiseAgentTransport(WiseAgentsYAMLObject):
    def __init__(self) -> None:
        enforce_no_abstract_class_instances(self.__class__, WiseAgentTransport)

    def set_call_backs(
        self,
        request_receiver: Receiver = None,
        event_receiver: Receiver = None,
        error_receiver: Receiver = None,
        response_receiver: Receiver = None,
    ) -> None:
        self._request_receiver = request_receiver
        self._event_receiver = event_receiver
        self._error_receiver = error_receiver
        self._response_receiver = response_receiver

    request_receiver = property(lambda self: self._request_receiver)
    event_receiver = property(lambda self: self._event_receiver)
    error_receiver = property(lambda self: self._error_receiver)
    response_receiver = property(lambda self: self._response_receiver)

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def send_request(self, message: WiseAgentMessage, dest_agent_name: str) -> None: ...

    @abstractmethod
    def send_response(self, message: WiseAgentMessage, dest_agent_name: str) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...
