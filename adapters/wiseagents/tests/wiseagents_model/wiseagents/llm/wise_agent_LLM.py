"""llm/wise_agent_LLM.py (upstream 11-66): the LLM interface the agents call. Upstream's
OpenAI-API implementation is not modelled: tests give the agents a deterministic LLM that
returns real openai ChatCompletion objects (tests/scripted_llm.py)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Iterable, Optional

from wiseagents.utils import enforce_no_abstract_class_instances
from wiseagents.yaml import WiseAgentsYAMLObject


class WiseAgentLLM(WiseAgentsYAMLObject):
    def __init__(self, model_name: str, system_message: Optional[str] = None) -> None:
        enforce_no_abstract_class_instances(self.__class__, WiseAgentLLM)
        self._system_message = system_message
        self._model_name = model_name

    system_message = property(lambda self: self._system_message)
    model_name = property(lambda self: self._model_name)

    def set_agent_name(self, agent_name: str) -> None:
        self._agent_name = agent_name

    @abstractmethod
    def process_single_prompt(self, prompt: str) -> Any: ...

    @abstractmethod
    def process_chat_completion(self, messages: Iterable[Any], tools: Iterable[Any]) -> Any:
        """Returns an openai ChatCompletion."""
