"""Deterministic stand-ins for the LLMs of Wise Agents agents. They return real openai
ChatCompletion objects, so that what the phased coordinator appends to a context
(choices[0].message, an openai ChatCompletionMessage) pickles as it does upstream.

- EchoLLM: a member agent; answers "<agent>(<last user message>)".
- PhasedLLM: a phased coordinator. It selects agents only from the "Available agents:" lines
  of its prompt (WiseAgentRegistry.get_agent_names_and_descriptions()): those whose
  description contains a keyword of the query's plan; assigns each to a phase by keyword; its
  final answer joins the members' answers found in the context's chat completion (plain
  {"role": "assistant"} dicts), with confidence 100."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from wiseagents.llm import WiseAgentLLM

AGENT_LINE = re.compile(r"^Agent Name: (\S+) Agent Description: (.*)$")


def completion(text: str) -> ChatCompletion:
    message = ChatCompletionMessage(role="assistant", content=text)
    return ChatCompletion(
        id="scripted",
        object="chat.completion",
        created=int(time.time()),
        model="scripted",
        choices=[Choice(index=0, finish_reason="stop", message=message)],
    )


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else getattr(message, "role", "")


class ScriptedLLM(WiseAgentLLM):
    def __init__(self, model_name: str = "scripted", system_message: str | None = None) -> None:
        super().__init__(model_name=model_name, system_message=system_message)
        self.prompts: list[str] = []

    def process_single_prompt(self, prompt: str) -> Any:
        return completion(self.answer([{"role": "user", "content": prompt}])).choices[0].message

    def process_chat_completion(self, messages: Iterable[Any], tools: Iterable[Any]) -> ChatCompletion:
        messages = list(messages)
        self.prompts.append(_text([m for m in messages if _role(m) == "user"][-1]))
        return completion(self.answer(messages))

    def answer(self, messages: list[Any]) -> str:
        raise NotImplementedError


class EchoLLM(ScriptedLLM):
    def answer(self, messages: list[Any]) -> str:
        last = [m for m in messages if _role(m) == "user"][-1]
        content = last.get("content") if isinstance(last, dict) else last.content
        text = content if isinstance(content, str) else getattr(content, "message", str(content))
        return f"{self._agent_name}({text})"


class PhasedLLM(ScriptedLLM):
    """`phases` lists, per phase, the description keywords that put an agent in it."""

    def __init__(self, phases: list[list[str]]) -> None:
        super().__init__()
        self.phases = phases
        self.offered: list[str] = []  # the agent names its selection prompt offered
        self.selected: list[str] = []

    def answer(self, messages: list[Any]) -> str:
        prompt = self.prompts[-1]
        if "Available agents:" in prompt:
            return self.select(prompt)
        if "Assign each" in prompt:
            return "\n".join(
                " ".join(n for n, d in self.selected_descriptions if any(k in d for k in phase))
                for phase in self.phases
            )
        if "final answer" in prompt:
            answers = [m["content"] for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
            return " | ".join(answers) + "\n100"
        return "rephrased"

    def select(self, prompt: str) -> str:
        lines = prompt.split("Available agents:", 1)[1].splitlines()
        agents = [m.groups() for m in map(AGENT_LINE.match, lines) if m]
        self.offered = [name for name, _ in agents]
        keywords = [k for phase in self.phases for k in phase]
        self.selected_descriptions = [(n, d) for n, d in agents if any(k in d for k in keywords)]
        self.selected = [n for n, _ in self.selected_descriptions]
        return " ".join(self.selected)
