"""core.py: the registry on Redis, contexts, agent metadata, tools, and the base agent's
request handling (upstream core.py). Only the Redis mode (`use_redis: true`) is modelled: the
in-process mode shares nothing between processes, so no bridge can take part in it.

What is kept exactly, because the bridge reads or writes it: the Redis keys and types (hashes
`agents`, `tools`, `contexts`, and one hash per context name), the field names, which values
are pickled and how (class instances by NEWOBJ + BUILD with the same state dicts; plain lists,
bools and ints; `collaboration_type` and `route_response_to` as plain strings), the WATCH/MULTI
transactions, and every message handle_response sends."""

from __future__ import annotations

import json
import logging
import os
import pickle
from abc import abstractmethod
from enum import StrEnum, auto
from typing import Any, Callable, Dict, List, Optional

import redis
import yaml

from wiseagents.utils import enforce_no_abstract_class_instances
from wiseagents.wise_agent_messaging import WiseAgentEvent, WiseAgentMessage, WiseAgentMessageType, WiseAgentTransport
from wiseagents.yaml import WiseAgentsYAMLObject

log = logging.getLogger(__name__)


class WiseAgentCollaborationType(StrEnum):
    """Stored in Redis as its value: the lower-case name (auto() of a StrEnum), core.py 26-31."""

    SEQUENTIAL = auto()
    SEQUENTIAL_MEMORY = auto()
    PHASED = auto()
    INDEPENDENT = auto()
    CHAT = auto()


class WiseAgentTool(WiseAgentsYAMLObject):
    """core.py 34-112. Pickle state (underscores stripped): name, description,
    parameters_json_schema, agent_tool, call_back — in that order. Registers itself."""

    yaml_tag = "!wiseagents.WiseAgentTool"

    def __init__(
        self,
        name: str,
        description: str,
        agent_tool: bool,
        parameters_json_schema: dict = {},
        call_back: Optional[Callable[..., str]] = None,
    ) -> None:
        self._name = name
        self._description = description
        self._parameters_json_schema = parameters_json_schema
        self._agent_tool = agent_tool
        self._call_back = call_back
        WiseAgentRegistry.register_tool(self)

    name = property(lambda self: self._name)
    description = property(lambda self: self._description)
    call_back = property(lambda self: self._call_back)
    json_schema = property(lambda self: self._parameters_json_schema)
    is_agent_tool = property(lambda self: self._agent_tool)

    def get_tool_OpenAI_format(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.json_schema},
        }

    def exec(self, **kwargs: Any) -> str:
        return json.dumps(kwargs) if self.call_back is None else self.call_back(**kwargs)


class WiseAgentContext:
    """core.py 115-645. A context's pickle in the `contexts` hash holds only `_name` and
    `_config` (it is written from __init__ before the Redis handle exists); everything else
    lives in the hash named after the context. Loading it connects to the Redis its `_config`
    names (`redis_host`, `redis_port`, no credentials), when `_config["use_redis"]` is true."""

    _redis_db: Optional[redis.Redis] = None
    _use_redis: bool = False
    _trace_enabled: bool = False

    def __init__(self, name: str, config: Optional[Dict[str, Any]] = None) -> None:
        self._name = name
        self._config = config if config is not None else {"use_redis": False}
        WiseAgentRegistry.register_context(self)
        self._connect()
        if self._config.get("trace_enabled") == True:  # noqa: E712 - upstream compares with ==
            self._trace_enabled = True

    def _connect(self) -> None:
        if self._config.get("use_redis") == True and self._redis_db is None:  # noqa: E712
            self._redis_db = redis.Redis(host=self._config["redis_host"], port=self._config["redis_port"])
            self._use_redis = True
        if not self._use_redis:
            raise NotImplementedError("the model has only the Redis mode (use_redis: true)")

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_redis_db", "_use_redis")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._connect()

    def __repr__(self) -> str:
        return f"WiseAgentContext(name={self.name}, collaboration_type={self.collaboration_type})"

    name = property(lambda self: self._name)
    trace_enabled = property(lambda self: self._trace_enabled)

    # -- lists kept as one pickle per field, appended under WATCH/MULTI (core.py 207-256) --
    def _append_to_redis_list(self, key: str, value: Any) -> None:
        pipe = self._redis_db.pipeline(transaction=True)
        while True:
            pipe.watch(self.name)
            try:
                if not pipe.hexists(self.name, key):
                    stored: List[Any] = [value]
                else:
                    stored = pickle.loads(pipe.hget(self.name, key))
                    stored.append(value)
                pipe.multi()
                pipe.hset(self.name, key, value=pickle.dumps(stored))
                pipe.execute()
                return
            except redis.WatchError:
                continue

    def _remove_from_redis_list(self, key: str, value: Any) -> None:
        pipe = self._redis_db.pipeline(transaction=True)
        while True:
            pipe.watch(self.name)
            try:
                if not pipe.hexists(self.name, key):
                    pipe.unwatch()
                    return
                stored = pickle.loads(pipe.hget(self.name, key))
                stored.remove(value)  # ValueError when absent, as upstream
                pipe.multi()
                pipe.hset(self.name, key, value=pickle.dumps(stored))
                pipe.execute()
                return
            except redis.WatchError:
                continue

    def _get_list_from_redis(self, key: str) -> List[Any]:
        raw = self._redis_db.hget(self.name, key)
        return pickle.loads(raw) if raw is not None else []

    @property
    def message_trace(self) -> List[str]:
        return self._get_list_from_redis("message_trace")

    def trace(self, message: WiseAgentMessage) -> None:
        if self.trace_enabled:
            self._append_to_redis_list("message_trace", repr(message))

    @property
    def llm_chat_completion(self) -> List[Any]:
        return self._get_list_from_redis("llm_chat_completion")

    def append_chat_completion(self, messages: Any) -> None:
        self._append_to_redis_list("llm_chat_completion", messages)

    @property
    def llm_required_tool_call(self) -> List[str]:
        return self._get_list_from_redis("llm_required_tool_call")

    def append_required_tool_call(self, tool_name: str) -> None:
        self._append_to_redis_list("llm_required_tool_call", tool_name)

    def remove_required_tool_call(self, tool_name: str) -> None:
        self._remove_from_redis_list("llm_required_tool_call", tool_name)

    @property
    def llm_available_tools_in_chat(self) -> List[Any]:
        return self._get_list_from_redis("llm_available_tools_in_chat")

    def append_available_tool_in_chat(self, tools: Any) -> None:
        self._append_to_redis_list("llm_available_tools_in_chat", tools)

    # -- sequential collaboration (core.py 353-426) --
    def get_agents_sequence(self) -> List[str]:
        return self._get_list_from_redis("agents_sequence")

    def set_agents_sequence(self, agents_sequence: List[str]) -> None:
        self._redis_db.hset(self.name, "agents_sequence", pickle.dumps(agents_sequence))

    def get_route_response_to(self) -> Optional[str]:
        return self._redis_db.hget(self.name, "route_response_to").decode("utf-8")  # plain string

    def set_route_response_to(self, agent: str) -> None:
        self._redis_db.hset(self.name, "route_response_to", agent)

    def get_next_agent_in_sequence(self, current_agent: str) -> Optional[str]:
        sequence = self.get_agents_sequence()
        if current_agent in sequence:
            following = sequence.index(current_agent) + 1  # the first occurrence
            if following < len(sequence):
                return sequence[following]
        return None

    # -- phased collaboration (core.py 428-588) --
    def get_agent_phase_assignments(self) -> List[List[str]]:
        return self._get_list_from_redis("agent_phase_assignments")

    def set_agent_phase_assignments(self, agent_phase_assignments: List[List[str]]) -> None:
        self._redis_db.hset(self.name, "agent_phase_assignments", value=pickle.dumps(agent_phase_assignments))

    def get_current_phase(self) -> Optional[int]:
        raw = self._redis_db.hget(self.name, "current_phase")
        return pickle.loads(raw) if raw is not None else None

    def set_current_phase(self, phase: int) -> None:
        pipe = self._redis_db.pipeline(transaction=True)
        pipe.hset(self.name, "current_phase", pickle.dumps(phase))
        pipe.hset(
            self.name,
            "required_agents_for_current_phase",
            value=pickle.dumps(self.get_agent_phase_assignments()[phase]),
        )
        pipe.execute()

    def get_agents_for_next_phase(self) -> Optional[List[str]]:
        following = self.get_current_phase() + 1
        if following < len(self.get_agent_phase_assignments()):
            self.set_current_phase(following)
            return self.get_agent_phase_assignments()[following]
        return None

    def get_required_agents_for_current_phase(self) -> List[str]:
        return self._get_list_from_redis("required_agents_for_current_phase")

    def remove_required_agent_for_current_phase(self, agent_name: str) -> None:
        self._remove_from_redis_list("required_agents_for_current_phase", agent_name)

    def get_current_query(self) -> Optional[str]:
        return self._get_list_from_redis("queries")[0]  # the FIRST query in Redis mode (core.py 556)

    def add_query(self, query: str) -> None:
        self._append_to_redis_list("queries", query)

    def get_queries(self) -> List[str]:
        return self._get_list_from_redis("queries")

    @property
    def collaboration_type(self) -> WiseAgentCollaborationType:
        raw = self._redis_db.hget(self.name, "collaboration_type")
        if raw is None:
            return WiseAgentCollaborationType.INDEPENDENT
        return WiseAgentCollaborationType(raw.decode("utf-8"))

    def set_collaboration_type(self, collaboration_type: WiseAgentCollaborationType) -> None:
        self._redis_db.hset(self.name, "collaboration_type", value=collaboration_type.value)

    def set_restart_sequence(self, restart_sequence: bool) -> None:
        self._redis_db.hset(self.name, "restart_sequence", value=pickle.dumps(restart_sequence))

    def get_restart_sequence(self) -> bool:
        raw = self._redis_db.hget(self.name, "restart_sequence")
        return pickle.loads(raw) if raw is not None else False


class WiseAgentMetaData(WiseAgentsYAMLObject):
    """core.py 648-704. Pickle state: system_message, pre_user_messages, post_user_messages
    (set by __new__), then description."""

    yaml_tag = "!wiseagents.WiseAgentMetaData"

    def __new__(cls, *args: Any, **kwargs: Any) -> WiseAgentMetaData:
        obj = super().__new__(cls)
        obj._system_message = None
        obj._pre_user_messages = None
        obj._post_user_messages = None
        return obj

    def __init__(
        self,
        description: str,
        system_message: Optional[str] = None,
        pre_user_messages: Optional[List[str]] = None,
        post_user_messages: Optional[List[str]] = None,
    ) -> None:
        self._description = description
        self._system_message = system_message
        self._pre_user_messages = pre_user_messages
        self._post_user_messages = post_user_messages

    def __repr__(self) -> str:
        return (
            f"WiseAgentMetaData(description={self.description}, system_message={self.system_message},"
            f"pre_user_messages={self.pre_user_messages},post_user_messages={self.post_user_messages})"
        )

    def __eq__(self, value: object) -> bool:
        return repr(self) == repr(value)

    description = property(lambda self: self._description)
    system_message = property(lambda self: self._system_message)
    pre_user_messages = property(lambda self: self._pre_user_messages)
    post_user_messages = property(lambda self: self._post_user_messages)


class WiseAgent(WiseAgentsYAMLObject):
    """core.py 707-998: starts its transport and registers itself; handle_request reads the
    context's collaboration type and handle_response routes the answer accordingly."""

    def __new__(cls, *args: Any, **kwargs: Any) -> WiseAgent:
        obj = super().__new__(cls)
        enforce_no_abstract_class_instances(cls, WiseAgent)
        obj._llm = None
        return obj

    def __init__(
        self, name: str, metadata: WiseAgentMetaData, transport: WiseAgentTransport, llm: Any = None, **_unmodelled: Any
    ) -> None:  # vector_db, collection_name, graph_db
        self._name = name
        self._metadata = metadata
        self._llm = llm
        self._transport = transport
        self.start_agent()

    def start_agent(self) -> None:
        if self._llm is not None:
            self._llm.set_agent_name(self._name)
        self.transport.set_call_backs(
            self.handle_request, self.process_event, self.process_error, self.process_response
        )
        self.transport.start()
        WiseAgentRegistry.register_agent(self.name, self.metadata)

    def stop_agent(self) -> None:
        self.transport.stop()
        WiseAgentRegistry.unregister_agent(self.name)

    name = property(lambda self: self._name)
    metadata = property(lambda self: self._metadata)
    llm = property(lambda self: self._llm)
    transport = property(lambda self: self._transport)

    def send_request(self, message: WiseAgentMessage, dest_agent_name: str) -> None:
        message.sender = self.name
        context = WiseAgentRegistry.get_context(message.context_name)
        self.transport.send_request(message, dest_agent_name)
        if context is not None:
            context.trace(message)
        else:
            log.warning(f"Context {message.context_name} not found")

    def send_response(self, message: WiseAgentMessage, dest_agent_name: str) -> None:
        message.sender = self.name
        context = WiseAgentRegistry.get_context(message.context_name)
        self.transport.send_response(message, dest_agent_name)
        context.trace(message)  # AttributeError after sending when the context is unknown

    def handle_request(self, request: WiseAgentMessage) -> bool:
        context = WiseAgentRegistry.get_context(request.context_name)
        collaboration_type = context.collaboration_type  # AttributeError: unknown context (core.py 847)
        history = self.get_conversation_history_if_needed(context, collaboration_type)
        before = len(history)
        response_str = self.process_request(request, history)
        for message in history[before:]:
            context.append_chat_completion(message)
        return self.handle_response(response_str, request, context, collaboration_type)

    def get_conversation_history_if_needed(self, context: WiseAgentContext, collaboration_type: str) -> List[Any]:
        if collaboration_type in (
            WiseAgentCollaborationType.PHASED,
            WiseAgentCollaborationType.CHAT,
            WiseAgentCollaborationType.SEQUENTIAL_MEMORY,
        ):
            return context.llm_chat_completion
        return []

    @abstractmethod
    def process_request(self, request: WiseAgentMessage, conversation_history: List[Any]) -> Optional[str]: ...

    def handle_response(
        self, response_str: Optional[str], request: WiseAgentMessage, context: WiseAgentContext, collaboration_type: str
    ) -> bool:
        """core.py 899-956, the behaviour a proxied agent must have."""
        if not response_str:
            return True
        kind = collaboration_type
        if kind in (WiseAgentCollaborationType.PHASED, WiseAgentCollaborationType.CHAT):
            context.append_chat_completion(messages={"role": "assistant", "content": response_str})
            self.send_response(
                WiseAgentMessage(
                    message=response_str,
                    message_type=WiseAgentMessageType.ACK,
                    sender=self.name,
                    context_name=context.name,
                ),
                request.sender,
            )
        elif kind in (WiseAgentCollaborationType.SEQUENTIAL, WiseAgentCollaborationType.SEQUENTIAL_MEMORY):
            if kind == WiseAgentCollaborationType.SEQUENTIAL_MEMORY:
                context.append_chat_completion(messages={"role": "assistant", "content": response_str})
            next_agent = context.get_next_agent_in_sequence(self.name)
            if next_agent is not None:
                self.send_request(
                    WiseAgentMessage(message=response_str, sender=self.name, context_name=context.name), next_agent
                )
            elif context.get_restart_sequence():
                self.send_request(
                    WiseAgentMessage(message=context.get_current_query(), sender=self.name, context_name=context.name),
                    context.get_agents_sequence()[0],
                )
                context.set_restart_sequence(False)
            else:
                self.send_response(
                    WiseAgentMessage(message=response_str, sender=self.name, context_name=context.name),
                    context.get_route_response_to(),
                )
        else:
            self.send_response(
                WiseAgentMessage(message=response_str, sender=self.name, context_name=context.name), request.sender
            )
        return True

    @abstractmethod
    def process_response(self, message: WiseAgentMessage) -> bool: ...

    @abstractmethod
    def process_event(self, event: WiseAgentEvent) -> bool: ...

    @abstractmethod
    def process_error(self, error: Exception) -> bool: ...


class WiseAgentRegistry:
    """core.py 1002-1293, Redis mode. `config` is registry_config.yaml's content: read from
    ./.wise-agents/ or ~/.wise-agents/ when not set (tests set it)."""

    config: Dict[str, Any] = {}
    redis_db: Optional[redis.Redis] = None

    @classmethod
    def get_config(cls) -> Dict[str, Any]:
        if not cls.config:
            for base in (os.getcwd(), os.path.expanduser("~")):
                path = os.path.join(base, ".wise-agents", "registry_config.yaml")
                if os.path.isfile(path):
                    with open(path) as file:
                        cls.config = yaml.load(file, Loader=yaml.FullLoader)
                    break
            else:
                raise FileNotFoundError("registry_config.yaml not found in ./.wise-agents or ~/.wise-agents")
        if cls.config.get("use_redis") != True:  # noqa: E712
            raise NotImplementedError("the model has only the Redis mode (use_redis: true)")
        if cls.redis_db is None:
            if cls.config.get("redis_ssl") is True:
                c = cls.config
                cls.redis_db = redis.Redis(
                    host=c["redis_host"],
                    port=c["redis_port"],
                    username=c["redis_username"],
                    password=c["redis_password"],
                    ssl=True,
                    ssl_certfile=c["redis_ssl_certfile"],
                    ssl_keyfile=c["redis_ssl_keyfile"],
                    ssl_ca_certs=c["redis_ssl_ca_certs"],
                )
            else:
                cls.redis_db = redis.Redis(host=cls.config["redis_host"], port=cls.config["redis_port"])
        return cls.config

    @classmethod
    def _db(cls) -> redis.Redis:
        cls.get_config()
        return cls.redis_db

    @classmethod
    def register_agent(cls, agent_name: str, agent_metadata: WiseAgentMetaData) -> None:
        pipe = cls._db().pipeline(transaction=True)
        while True:
            pipe.watch("agents")
            try:
                if pipe.hexists("agents", agent_name):
                    pipe.unwatch()
                    raise NameError(f"Agent with name {agent_name} already exists")
                pipe.multi()
                pipe.hset("agents", key=agent_name, value=pickle.dumps(agent_metadata))
                pipe.execute()
                return
            except redis.WatchError:
                continue

    @classmethod
    def register_context(cls, context: WiseAgentContext) -> None:
        if cls.does_context_exist(context.name):
            raise NameError(f"Context with name {context.name} already exists")
        cls._db().hset("contexts", key=context.name, value=pickle.dumps(context))

    @classmethod
    def fetch_agents_metadata_dict(cls) -> Dict[str, WiseAgentMetaData]:
        return {k.decode("utf-8"): pickle.loads(v) for k, v in cls._db().hgetall("agents").items()}

    @classmethod
    def get_contexts(cls) -> Dict[bytes, WiseAgentContext]:
        return {k: pickle.loads(v) for k, v in cls._db().hgetall("contexts").items()}  # keys stay bytes

    @classmethod
    def get_agent_metadata(cls, agent_name: str) -> Optional[WiseAgentMetaData]:
        raw = cls._db().hget("agents", key=agent_name)
        return pickle.loads(raw) if raw is not None else None

    @classmethod
    def get_context(cls, context_name: str) -> Optional[WiseAgentContext]:
        raw = cls._db().hget("contexts", key=context_name)
        return pickle.loads(raw) if raw is not None else None

    @classmethod
    def create_context(cls, context_name: str) -> WiseAgentContext:
        if "_" in context_name:
            raise NameError(
                f"First level Context name {context_name} cannot contain an underscore. "
                "If you are trying to create a sub context, use create_sub_context method"
            )
        if cls.does_context_exist(context_name):
            raise NameError(f"Context with name {context_name} already exists")
        return WiseAgentContext(context_name, cls.config)

    @classmethod
    def create_sub_context(cls, parent_context_name: str, sub_context_name: str) -> WiseAgentContext:
        if "_" in sub_context_name:
            raise NameError(f"Sub Context name {sub_context_name} cannot contain an underscore")
        if not cls.does_context_exist(parent_context_name):
            raise NameError(f"Parent context with name {parent_context_name} does not exist")
        return WiseAgentContext(f"{parent_context_name}_{sub_context_name}", cls.config)

    @classmethod
    def remove_context(
        cls, context_name: str, merge_chat_to_parent: Optional[bool] = False
    ) -> Optional[WiseAgentContext]:
        """HDEL contexts only: the context's own hash stays in Redis, as upstream."""
        parent_context = None
        if "_" in context_name and merge_chat_to_parent:
            parent_context = cls.get_context("_".join(context_name.split("_")[:-1]))
            context = cls.get_context(context_name)
            if parent_context is None or context is None:
                raise NameError(f"Parent context of {context_name} or the context does not exist")
            parent_context.append_chat_completion(context.llm_chat_completion)
        cls._db().hdel("contexts", context_name)
        return parent_context

    @classmethod
    def does_context_exist(cls, context_name: str) -> bool:
        return bool(cls._db().hexists("contexts", key=context_name))

    @classmethod
    def unregister_agent(cls, agent_name: str) -> None:
        cls._db().hdel("agents", agent_name)

    @classmethod
    def register_tool(cls, tool: WiseAgentTool) -> None:
        cls._db().hset("tools", key=tool.name, value=pickle.dumps(tool))

    @classmethod
    def get_tools(cls) -> Dict[bytes, WiseAgentTool]:
        return {k: pickle.loads(v) for k, v in cls._db().hgetall("tools").items()}

    @classmethod
    def get_tool(cls, tool_name: str) -> Optional[WiseAgentTool]:
        exists, raw = (
            cls._db().pipeline(transaction=True).hexists("tools", key=tool_name).hget("tools", key=tool_name).execute()
        )
        return pickle.loads(raw) if exists else None

    @classmethod
    def get_agent_names_and_descriptions(cls) -> List[str]:
        return [
            f"Agent Name: {name} Agent Description: {metadata.description}"
            for name, metadata in cls.fetch_agents_metadata_dict().items()
        ]
