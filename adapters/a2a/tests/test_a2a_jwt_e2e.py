"""JWT bearer tokens on the bridge's A2A service (``[a2a.jwt]``, docs/A2A.md "Tokens"), against
the official A2A Python SDK's client (a2a-sdk 1.3.0) and tokens minted here with PyJWT from keys
of the test's own (``cryptography``): an RS256 key in a JWK set file, ES256 keys in a JWK set
served over HTTP (an identity provider's ``jwks_uri``), rotated while the bridge runs.

What the bridge promises: the card declares a bearer scheme of format JWT; a token signed by a
key of the set, of the configured issuer and audience, not expired, passes; any other is 401
with ``WWW-Authenticate: Bearer error="invalid_token"`` and nothing is published; a valid token
whose claim holds none of the values ``a2a.jwt.allow`` gives the agent is 403
``insufficient_scope``; an agent with no entry takes any valid token; a key added to the URL's
set is found by the first token that names it; no token is ever written to the log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from google.protobuf.json_format import MessageToDict

from a2a_testing import WAIT, A2ABridge, Closing, artifact_texts, bearer_auth, send_request
from jwt_testing import AUDIENCE, ISSUER, KeyServer, key_server, mint, public_jwk
from sab_testing import Broker, Names, WiseAgent

__all__ = ["key_server"]  # a fixture of jwt_testing's, made this module's


def test_jwt_bearer_tokens(broker: Broker, tmp_path: Path, closing: Closing, key_server: KeyServer) -> None:
    names = Names(broker)
    guarded, open_ = names.agent("Guarded"), names.agent("Open")
    file_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    url_key, rotated_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [public_jwk(file_key, "file-rsa", "RS256")]}))
    key_server.keys = [public_jwk(url_key, "url-ec", "ES256")]
    section = (
        f'[a2a.jwt]\njwks_file = "{tmp_path / "jwks.json"}"\njwks_url = "{key_server.url}"\n'
        f'issuer = "{ISSUER}"\naudience = "{AUDIENCE}"\njwks_min_refresh_ms = 1000\nleeway_ms = 0\n'
        f'[a2a.jwt.allow]\n{guarded} = ["agents:guarded"]\n'
    )
    wise = [WiseAgent(broker, name, lambda m: f"echo: {m['_message']}") for name in (guarded, open_)]
    for agent in wise:
        closing(agent, agent.close)
    bridge = A2ABridge(broker, names, tmp_path, [guarded, open_], extra=section)
    closing(bridge, bridge.stop)
    allowed = mint(file_key, "file-rsa", "RS256", scope="openid agents:guarded")
    sent = [allowed]

    async def post(http: httpx.AsyncClient, agent: str, token: str, text: str) -> httpx.Response:
        sent.append(token)
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": MessageToDict(send_request(text))}
        headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}
        return await http.post(bridge.agent_url(agent), json=body, headers=headers)

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            card = await bridge.card(http, guarded)
            scheme = card.security_schemes["bearer"].http_auth_security_scheme
            assert (scheme.scheme, scheme.bearer_format) == ("Bearer", "JWT"), card

            # Refused: 401 invalid_token for each broken token, before anything is published.
            for broken, why in [
                (mint(file_key, "file-rsa", "RS256", exp=int(time.time()) - 60), "expired"),
                (mint(file_key, "file-rsa", "RS256", aud="someone-else"), "audience"),
                (mint(file_key, "file-rsa", "RS256", iss="https://other.test"), "issuer"),
                (
                    mint(rsa.generate_private_key(public_exponent=65537, key_size=2048), "file-rsa", "RS256"),
                    "signature",
                ),
                (
                    jwt.encode({"iss": ISSUER, "aud": AUDIENCE}, "secret-of-32-bytes-at-least-0123", algorithm="HS256"),
                    "HS256",
                ),
            ]:
                refused = await post(http, guarded, broken, "refused")
                assert refused.status_code == 401, (why, refused.status_code, refused.text)
                assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"', refused.headers
                assert why in refused.text, (why, refused.text)

            # A valid token without the scope the allow-list asks of this agent: 403.
            no_scope = mint(url_key, "url-ec", "ES256", scope="openid")
            forbidden = await post(http, guarded, no_scope, "forbidden")
            assert forbidden.status_code == 403, (forbidden.status_code, forbidden.text)
            assert forbidden.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'
            # ... which an agent with no entry takes.
            answered = await post(http, open_, no_scope, "open to any valid token")
            assert answered.status_code == 200, answered.text
            assert answered.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answered.text

            # The SDK's own client with its AuthInterceptor and an allowed token.
            interceptor, context = await bearer_auth(card, allowed)
            client = await bridge.client(http, guarded, streaming=False, interceptors=[interceptor])
            answers = [e async for e in client.send_message(send_request("with a JWT"), context=context)]
            assert artifact_texts(answers[0].task) == ["echo: with a JWT"], answers
            # Nothing of the refused calls reached the guarded agent: its first request is this one.
            first = await asyncio.to_thread(wise[0].next_request, WAIT)
            assert first["_message"] == "with a JWT", first

            # The identity provider rotates: a new key in its set is found by the first token
            # that names it (one read of the URL, not one per request).
            reads = key_server.reads
            key_server.keys.append(public_jwk(rotated_key, "url-ec-2", "ES256"))
            rotated = mint(rotated_key, "url-ec-2", "ES256", scope="agents:guarded")
            for text in ("after the rotation", "and again"):
                answered = await post(http, guarded, rotated, text)
                assert answered.status_code == 200 and "error" not in answered.json(), answered.text
            assert key_server.reads == reads + 1, (reads, key_server.reads)

            metrics = (await http.get(f"{bridge.base}/metrics")).text
            assert "bridge_a2a_unauthorized_total 5" in metrics, metrics
            assert "bridge_a2a_forbidden_total 1" in metrics, metrics

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))
    # Each refusal is logged with its reason, and no token (nor its signature) ever is.
    bridge.stop()
    bridge.process.wait_log('"message":"stopped"', WAIT)
    log = "".join(bridge.process.log)
    assert log.count("A2A request refused for its token") == 6, log
    assert "has expired" in log and "holds none of the values" in log, log
    for token in sent:
        assert token.split(".")[2] not in log, "a token's signature is in the log"
