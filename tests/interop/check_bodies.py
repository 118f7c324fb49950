"""Reads every body the bridge wrote (cases.jsonl from tests/interop_python.rs) with the
frameworks' real parsers and checks each reads back to what the bridge meant.

PyYAML's full yaml.Loader for Wise Agents, Civitas's own serializer (JSON and msgpack),
penguiflow.types.Message, and a pydantic model with VOX's fields and types.
Prints 'N passed, N failed' and exits non-zero on any failure."""

import json
import math
import os
import sys
from datetime import datetime
from typing import Optional
from uuid import UUID

import yaml
from pydantic import BaseModel, ConfigDict

sys.path.insert(0, os.path.join(os.environ.get("SAB_VENV", ".venv"), "civitas-src"))
from civitas.serializer import JsonSerializer, MsgpackSerializer  # noqa: E402
from penguiflow.types import FinalAnswer, Message as PenguiMessage  # noqa: E402


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"
    yaml_loader = yaml.Loader


class VoxMessage(BaseModel):
    model_config = ConfigDict(frozen=True)
    message_id: UUID
    message_source: str
    emitted_at: datetime
    source: UUID
    target: UUID
    type: str
    details: dict = {}
    reply_to: Optional[UUID] = None


WA_KEYS = ["_context_name", "_message", "_message_type", "_route_response_to", "_sender", "_tool_id"]


def check_wiseagents(body, expect):
    # stomp.py hands the receiver the body decoded as UTF-8.
    msg = yaml.load(body.decode("utf-8"), Loader=yaml.Loader)
    assert isinstance(msg, WiseAgentMessage), f"loaded a {type(msg).__name__}"
    got = {k: msg.__dict__[k] for k in WA_KEYS}  # KeyError = a key is missing
    assert got == expect, f"got {got!r}, want {expect!r}"


def check_civitas(body, expect, encoding):
    serializer = MsgpackSerializer() if encoding == "msgpack" else JsonSerializer()
    got = serializer.deserialize(body).to_dict()
    assert got == expect, f"got {got!r}, want {expect!r}"


def check_vox(body, expect):
    msg = VoxMessage.model_validate_json(body)
    assert msg.emitted_at.tzinfo is not None, "emitted_at has no timezone"
    got = msg.model_dump(mode="json")
    want_time = expect.pop("emitted_at_unix")
    assert math.isclose(msg.emitted_at.timestamp(), want_time, abs_tol=1e-6), (msg.emitted_at, want_time)
    got.pop("emitted_at")
    assert got == expect, f"got {got!r}, want {expect!r}"


def check_penguiflow(body, expect):
    msg = PenguiMessage.model_validate_json(body)
    got = msg.model_dump(mode="json")
    assert got == expect, f"got {got!r}, want {expect!r}"
    if isinstance(msg.payload, dict) and "text" in msg.payload:
        FinalAnswer.model_validate(msg.payload)


def main(path):
    passed = failed = 0
    with open(path) as cases:
        for line in cases:
            case = json.loads(line)
            body = bytes.fromhex(case["body"])
            try:
                kind = case["framework"]
                if kind == "wiseagents":
                    check_wiseagents(body, case["expect"])
                elif kind == "civitas":
                    check_civitas(body, case["expect"], case["encoding"])
                elif kind == "vox":
                    check_vox(body, case["expect"])
                elif kind == "penguiflow":
                    check_penguiflow(body, case["expect"])
                else:
                    raise AssertionError(f"unknown framework {kind}")
                passed += 1
            except Exception as exc:  # report every failure, not just the first
                failed += 1
                if failed <= 20:
                    print(f"FAIL {case['framework']} #{case['n']}: {exc!r}\n  body: {body[:300]!r}")
    print(f"interop: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main(sys.argv[1])
