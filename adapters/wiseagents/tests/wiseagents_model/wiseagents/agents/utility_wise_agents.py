"""agents/utility_wise_agents.py: PassThroughClientAgent (upstream 12-99), which forwards a
request by nesting the whole WiseAgentMessage as `_message`, and LLMOnlyWiseAgent (101-169).
LLMWiseAgentWithTools and ChatWiseAgent are not modelled."""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional

from wiseagents.core import WiseAgent, WiseAgentMetaData
from wiseagents.wise_agent_messaging import WiseAgentMessage, WiseAgentTransport


class PassThroughClientAgent(WiseAgent):
    yaml_tag = "!wiseagents.agents.PassThroughClientAgent"
    _response_delivery: Optional[Callable[[WiseAgentMessage], Any]] = None

    def __init__(
        self,
        name: str,
        metadata: WiseAgentMetaData,
        transport: WiseAgentTransport,
        destination_agent_name: str = "WiseIntelligentAgent",
    ) -> None:
        self._name = name
        self._destination_agent_name = destination_agent_name
        super().__init__(name=name, metadata=metadata, transport=transport, llm=None)

    destination_agent_name = property(lambda self: self._destination_agent_name)
    response_delivery = property(lambda self: self._response_delivery)

    def set_response_delivery(self, response_delivery: Callable[[WiseAgentMessage], Any]) -> None:
        self._response_delivery = response_delivery

    def process_request(self, request: WiseAgentMessage, conversation_history: List[Any]) -> Optional[str]:
        # The whole request as the message (upstream 53): `_message` is a nested WiseAgentMessage.
        self.send_request(
            WiseAgentMessage(message=request, sender=self.name, context_name=request.context_name),
            self.destination_agent_name,
        )
        return None

    def process_response(self, response: WiseAgentMessage) -> bool:
        if self.response_delivery is not None:
            self.response_delivery(response)
        return True

    def process_event(self, event: Any) -> bool:
        return True

    def process_error(self, error: Any) -> bool:
        return True


class LLMOnlyWiseAgent(WiseAgent):
    yaml_tag = "!wiseagents.agents.LLMOnlyWiseAgent"

    def __init__(self, name: str, metadata: WiseAgentMetaData, llm: Any, transport: WiseAgentTransport) -> None:
        super().__init__(name=name, metadata=metadata, transport=transport, llm=llm)

    def process_request(self, request: WiseAgentMessage, conversation_history: List[Any]) -> Optional[str]:
        if self.metadata.system_message or self.llm.system_message:
            conversation_history.append(
                {"role": "system", "content": self.metadata.system_message or self.llm.system_message}
            )
        conversation_history.append({"role": "user", "content": request.message})
        return self.llm.process_chat_completion(conversation_history, []).choices[0].message.content

    def process_response(self, response: WiseAgentMessage) -> bool:
        return True

    def process_event(self, event: Any) -> bool:
        return True

    def process_error(self, error: Any) -> bool:
        logging.error(error)
        return True
