"""Runs one scenario with upstream's Wise Agents and the same with this model, and compares
what each wrote to Redis (every key, field and pickle, byte for byte) and to STOMP (every
destination and YAML body). Run by hand, outside the test suite (README.md beside this file):

  python check_against_upstream.py compare --upstream /path/to/wise-agents/src [--python PY]
  python check_against_upstream.py registry --upstream /path/to/wise-agents/src [--match GLOB]

`registry` reads what is in the Redis registry now (e.g. what a running bridge registered) the
way upstream reads it: every `agents`, `tools` and `contexts` entry whose name matches GLOB
through upstream's own `WiseAgentRegistry` (`get_agent_names_and_descriptions`, `get_tool`,
`get_context` and the context's `collaboration_type`), printing what each gives or raises.
(It unpickles what is in Redis: point it only at a Redis you trust.)

PY is an interpreter that can import upstream (redis, PyYAML, stomp.py, openai, pydantic); the
model runs with the same interpreter. langchain*/gradio, which upstream imports at start-up
but which nothing here uses, are replaced by empty stand-ins. Needs ActiveMQ on 61613
(admin/admin) and Redis on 6379. Scenario: a sequential coordinator over two LLM agents, a
phased coordinator whose LLM selects agents from the registry, a PassThroughClientAgent that
nests a request, an agent tool, a context created and removed, every agent stopped."""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import os
import subprocess
import sys
import threading
import types
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIX = "Chk"
STUBBED = ("langchain_community", "langchain_core", "langchain_huggingface", "langchain_postgres", "gradio")


class _Anything(type):
    def __getattr__(cls, name):
        return cls


class _Stub(metaclass=_Anything):
    def __init__(self, *args, **kwargs):
        pass


class _StubModule(types.ModuleType):
    __path__: list = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        pass


def deterministic_uuid4() -> None:
    counter = iter(range(1, 1 << 30))
    uuid.uuid4 = lambda: uuid.UUID(int=(0x5AB << 96) + next(counter), version=4)


def record_sends(sent: list) -> None:
    import stomp

    original = stomp.Connection.send

    def send(self, destination, body, *args, **kwargs):
        sent.append([destination, body if isinstance(body, str) else body.decode()])
        return original(self, destination, body, *args, **kwargs)

    stomp.Connection.send = send


def snapshot(db) -> dict:
    out = {}
    for hash_name in ("agents", "tools", "contexts"):
        for field, value in sorted(db.hgetall(hash_name).items()):
            if field.decode().startswith(PREFIX):
                out[f"{hash_name}/{field.decode()}"] = value.hex()
    for key in sorted(db.keys(PREFIX + "*")):
        for field, value in sorted(db.hgetall(key).items()):
            out[f"{key.decode()}/{field.decode()}"] = value.hex()
    return out


def clean(db) -> None:
    for hash_name in ("agents", "tools", "contexts"):
        for field in db.hkeys(hash_name):
            if field.decode().startswith(PREFIX):
                db.hdel(hash_name, field)
    for key in db.keys(PREFIX + "*"):
        db.delete(key)


def scenario() -> dict:
    import redis
    from scripted_llm import EchoLLM, PhasedLLM
    from wiseagents import WiseAgentMessage, WiseAgentMetaData, WiseAgentRegistry, WiseAgentTool
    from wiseagents.agents import (
        LLMOnlyWiseAgent,
        PassThroughClientAgent,
        PhasedCoordinatorWiseAgent,
        SequentialCoordinatorWiseAgent,
    )
    from wiseagents.transports import StompWiseAgentTransport

    os.environ.setdefault("STOMP_USER", "admin")
    os.environ.setdefault("STOMP_PASSWORD", "admin")
    WiseAgentRegistry.config = {"use_redis": True, "redis_ssl": False, "redis_host": "127.0.0.1", "redis_port": 6379}
    db = redis.Redis()
    clean(db)
    sent: list = []
    record_sends(sent)
    deterministic_uuid4()
    answers: list = []
    arrived = threading.Semaphore(0)

    def transport(name):
        return StompWiseAgentTransport(host="127.0.0.1", port=61613, agent_name=name)

    def delivered(message):
        answers.append(
            [
                message.message,
                message.sender,
                message.context_name,
                None if message.message_type is None else str(message.message_type),
            ]
        )
        arrived.release()

    agents = [
        LLMOnlyWiseAgent(
            name=f"{PREFIX}A",
            metadata=WiseAgentMetaData(description="Chkalpha facts"),
            llm=EchoLLM(),
            transport=transport(f"{PREFIX}A"),
        ),
        LLMOnlyWiseAgent(
            name=f"{PREFIX}B",
            metadata=WiseAgentMetaData(description="Chkbeta facts", system_message="be brief"),
            llm=EchoLLM(),
            transport=transport(f"{PREFIX}B"),
        ),
    ]
    agents.append(
        SequentialCoordinatorWiseAgent(
            name=f"{PREFIX}Seq",
            metadata=WiseAgentMetaData(description="seq"),
            transport=transport(f"{PREFIX}Seq"),
            agents=[f"{PREFIX}A", f"{PREFIX}B"],
        )
    )
    agents.append(
        PhasedCoordinatorWiseAgent(
            name=f"{PREFIX}Phased",
            metadata=WiseAgentMetaData(description="ph"),
            transport=transport(f"{PREFIX}Phased"),
            llm=PhasedLLM([["Chkalpha"], ["Chkbeta"]]),
        )
    )
    agents.append(
        PassThroughClientAgent(
            name=f"{PREFIX}Relay",
            metadata=WiseAgentMetaData(description="relay"),
            transport=transport(f"{PREFIX}Relay"),
            destination_agent_name=f"{PREFIX}A",
        )
    )
    client = PassThroughClientAgent(
        name=f"{PREFIX}Client", metadata=WiseAgentMetaData(description="client"), transport=transport(f"{PREFIX}Client")
    )
    client.set_response_delivery(delivered)
    agents.append(client)
    agents[-2].set_response_delivery(delivered)
    WiseAgentTool(
        name=f"{PREFIX}A",
        description="Chkalpha facts",
        agent_tool=True,
        parameters_json_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    )
    context = f"{PREFIX}Ctx." + str(uuid.uuid4())
    WiseAgentRegistry.create_context(context)
    steps = [(f"{PREFIX}Seq", "q1"), (f"{PREFIX}Phased", "q2"), (f"{PREFIX}Relay", "q3")]
    for dest, text in steps:
        client.send_request(WiseAgentMessage(message=text, sender=client.name, context_name=context), dest)
        if dest == f"{PREFIX}Relay":  # the relay's answer reaches the relay, not the client
            pass
        assert arrived.acquire(timeout=30), f"no answer from {dest}"
    names = WiseAgentRegistry.get_agent_names_and_descriptions()
    during = snapshot(db)
    WiseAgentRegistry.remove_context(context)
    for agent in agents:
        agent.stop_agent()
    result = {
        "answers": answers,
        "sent": sorted(sent),
        "redis_during": during,
        "redis_after": snapshot(db),
        "names": sorted(n for n in names if n.startswith(f"Agent Name: {PREFIX}")),
    }
    clean(db)
    return result


def run(impl: str, out: str) -> None:
    sys.meta_path.insert(0, _StubFinder())
    sys.path[:0] = [impl, str(HERE.parent)]
    result = scenario()
    import wiseagents

    result["implementation"] = wiseagents.__file__
    Path(out).write_text(json.dumps(result, indent=1, sort_keys=True))
    os._exit(0)  # stomp.py's receiver threads


def _chat_item(item) -> list:
    """A chat completion item with the coordinators' prompts reduced to what they carry (the
    model paraphrases their wording): the query and the agent lines of the selection prompt."""
    role = item.get("role") if isinstance(item, dict) else item.role
    content = item.get("content") if isinstance(item, dict) else item.content
    if role == "user" and isinstance(content, str) and len(content) > 40:
        content = "<prompt> " + " / ".join(
            line.strip() for line in content.splitlines() if line.strip().startswith(("Query:", "Agent Name:"))
        )
    if not isinstance(content, str) and content is not None:
        content = repr(content)  # e.g. the nested WiseAgentMessage a relayed request carries
    fields = sorted(item.__pydantic_fields_set__) if not isinstance(item, dict) else None
    return [type(item).__module__ + "." + type(item).__qualname__, role, content, fields]


def _comparable(snap: dict) -> dict:
    import pickle

    out = dict(snap)
    for key, value in snap.items():
        if key.endswith("/llm_chat_completion"):
            out[key] = [_chat_item(item) for item in pickle.loads(bytes.fromhex(value))]
    return out


def compare(upstream: str, python: str) -> int:
    outs = {}
    for label, impl in (("upstream", upstream), ("model", str(HERE))):
        out = f"/tmp/wa-check-{label}.json"
        subprocess.run([python, __file__, "run", "--impl", impl, "--out", out], check=True, timeout=180)
        outs[label] = json.loads(Path(out).read_text())
        print(f"{label}: {outs[label]['implementation']}")
    sys.meta_path.insert(0, _StubFinder())
    sys.path[:0] = [upstream, str(HERE.parent)]
    up, model = outs["upstream"], outs["model"]
    raw = sum(up[s] != model[s] for s in ("redis_during", "redis_after"))
    for out in (up, model):
        out["redis_during"], out["redis_after"] = _comparable(out["redis_during"]), _comparable(out["redis_after"])
    print(
        f"Redis snapshots byte-identical: {'yes' if raw == 0 else 'no'}; compared with llm_chat_completion "
        "unpickled, prompts reduced to their query and agent lines, pydantic's field sets unordered"
    )
    differences = 0
    for section in ("answers", "sent", "names", "redis_during", "redis_after"):
        same = up[section] == model[section]
        size = len(up[section])
        print(f"{section}: {'identical' if same else 'DIFFERENT'} ({size} items)")
        if not same:
            differences += 1
            if isinstance(up[section], dict):
                for key in sorted(set(up[section]) | set(model[section])):
                    if up[section].get(key) != model[section].get(key):
                        print(f"  {key}\n    upstream {up[section].get(key)}\n    model    {model[section].get(key)}")
            else:
                for a, b in zip(up[section], model[section]):
                    if a != b:
                        print(f"  upstream {a!r}\n  model    {b!r}")
    return 1 if differences else 0


def read_registry(upstream: str, match: str) -> int:
    import fnmatch

    sys.meta_path.insert(0, _StubFinder())
    sys.path.insert(0, upstream)
    import redis
    from wiseagents import WiseAgentRegistry

    WiseAgentRegistry.config = {"use_redis": True, "redis_ssl": False, "redis_host": "127.0.0.1", "redis_port": 6379}
    db, failures = redis.Redis(), 0

    def names(key: str) -> list:
        return sorted(f.decode() for f in db.hkeys(key) if fnmatch.fnmatchcase(f.decode(), match))

    checks = [
        ("agents", lambda n: WiseAgentRegistry.get_agent_metadata(n).description),
        ("tools", lambda n: WiseAgentRegistry.get_tool(n).get_tool_OpenAI_format()),
        ("contexts", lambda n: str(WiseAgentRegistry.get_context(n).collaboration_type)),
    ]
    for key, read in checks:
        for name in names(key):
            try:
                print(f"{key}/{name}: {read(name)!r}")
            except Exception as error:  # noqa: BLE001 - the point is to show it
                failures += 1
                print(f"{key}/{name}: RAISES {type(error).__name__}: {error}")
    lines = [
        line
        for line in WiseAgentRegistry.get_agent_names_and_descriptions()
        if fnmatch.fnmatchcase(line.split(" Agent Description:")[0][len("Agent Name: ") :], match)
    ]
    print("get_agent_names_and_descriptions():", lines)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--impl", required=True)
    r.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--upstream", required=True, help="the src/ folder of a wise-agents checkout")
    c.add_argument("--python", default=sys.executable)
    g = sub.add_parser("registry")
    g.add_argument("--upstream", required=True, help="the src/ folder of a wise-agents checkout")
    g.add_argument("--match", default="*")
    args = parser.parse_args()
    if args.command == "registry":
        return read_registry(args.upstream, args.match)
    if args.command == "run":
        run(args.impl, args.out)
        return 0
    return compare(args.upstream, args.python)


if __name__ == "__main__":
    sys.exit(main())
