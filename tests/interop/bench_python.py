"""The Python figure beside `cargo bench --bench translate`: the same Wise Agents → Civitas
work (PyYAML load of a WiseAgentMessage, build the Civitas dict, json.dumps) and back
(json.loads, yaml.dump), with PyYAML's full Loader as Wise Agents uses it, and with the C
loader where PyYAML has it. Prints one line per figure: 'python <what>: N msg/s'."""

import json
import sys
import time
import uuid

import yaml


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"
    yaml_loader = [yaml.Loader, yaml.CLoader] if hasattr(yaml, "CLoader") else [yaml.Loader]


def wa_to_civitas(body, loader):
    m = yaml.load(body, Loader=loader)
    d = m.__dict__
    payload = {
        "message": d["_message"],
        "message_type": d["_message_type"],
        "context_name": d["_context_name"],
        "tool_id": d["_tool_id"],
        "route_response_to": d["_route_response_to"],
    }
    out = {
        "schema_version": 1,
        "id": str(uuid.uuid4()),
        "type": "message",
        "sender": d["_sender"] or "",
        "recipient": "WeatherAgent",
        "correlation_id": None,
        "reply_to": d["_sender"],
        "payload": {k: v for k, v in payload.items() if v is not None},
        "timestamp": time.time(),
        "trace_id": "",
        "span_id": "",
        "parent_span_id": None,
        "attempt": 0,
        "priority": 0,
        "ttl": None,
        "seq": None,
    }
    return json.dumps(out).encode()


def civitas_to_wa(body):
    d = json.loads(body)
    p = d["payload"]
    m = WiseAgentMessage()
    m.__dict__.update(
        {
            "_message": p.get("message"),
            "_message_type": p.get("message_type"),
            "_context_name": p.get("context_name"),
            "_tool_id": p.get("tool_id"),
            "_route_response_to": p.get("route_response_to"),
            "_sender": d["sender"],
        }
    )
    return yaml.dump(m).encode()


def rate(fn, arg, seconds=2.0):
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            fn(*arg)
        n += 100
    return n / (time.perf_counter() - start)


def main():
    wa_body = open(sys.argv[1]).read()
    civitas_body = wa_to_civitas(wa_body, yaml.Loader)
    print(f"python wiseagents->civitas (yaml.Loader): {rate(wa_to_civitas, (wa_body, yaml.Loader)):.0f} msg/s")
    if hasattr(yaml, "CLoader"):
        print(f"python wiseagents->civitas (yaml.CLoader): {rate(wa_to_civitas, (wa_body, yaml.CLoader)):.0f} msg/s")
    print(f"python civitas->wiseagents (yaml.dump): {rate(civitas_to_wa, (civitas_body,)):.0f} msg/s")


if __name__ == "__main__":
    main()
