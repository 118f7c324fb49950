"""JWTs for the tests of the bridge's bearer tokens (``[a2a.jwt]``, ``[mcp.jwt]``): tokens
minted with PyJWT from keys of the test's own (``cryptography``), and a JWK set served over
HTTP as an identity provider serves its ``jwks_uri``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://idp.test"
AUDIENCE = "stomp-agent-bridge"


class KeyServer:
    """A JWK set served over HTTP as an identity provider serves its ``jwks_uri``; ``keys``
    can change while it runs; ``reads`` counts the GETs."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.reads = 0
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.reads += 1
                body = json.dumps({"keys": served.keys}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def key_server() -> Iterator[KeyServer]:
    server = KeyServer()
    yield server
    server.close()


def public_jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    as_jwk = RSAAlgorithm.to_jwk if alg.startswith("RS") else ECAlgorithm.to_jwk
    return dict(json.loads(as_jwk(key.public_key())), kid=kid, alg=alg, use="sig")


def mint(key: Any, kid: str, alg: str, **claims: Any) -> str:
    """A JWT of ``ISSUER`` for ``AUDIENCE``, valid five minutes, signed by ``key`` (``kid``,
    ``alg``); ``claims`` added or replacing (``None`` drops one)."""
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "a2a-client", "iat": now, "exp": now + 300, **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})
