"""The bridge's conversations page (src/http/conversations.html, which it serves at
``GET /conversations``) in a real headless Chromium: served here with its data
(``conversations.json``, the bridge's schema) by Python's http.server under a path prefix, so
that the page's fetch must be relative; the DOM after its scripts ran is read back and its
stable markup asserted (the sections, participants and events with their data- attributes).
Skipped when no Chromium is installed (scripts/browser.sh installs Debian's). With
``SAB_PAGE_SCREENSHOT=/some/page.png``, the screenshot test leaves its picture there."""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from browser_testing import Page, chromium, parse, rendered_dom, screenshot

PAGE = Path(__file__).resolve().parents[3] / "src" / "http" / "conversations.html"
PREFIX = "/sab/"

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (scripts/browser.sh)")

BOOKS = "4bf92f3577b34da6a3ce929d0e0e4736"
PLAN = "0af7651916cd43dd8448eb211c80319c"


def event(at_ms: int, kind: str, src: str | None, dst: str | None, **more: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"route": None, "source": None, "destination": None, "message_id": None}
    fields.update(span_id=None, latency_ms=None, detail=None)
    fields.update(more)
    return {"at_ms": at_ms, "kind": kind, "from": src, "to": dst, **fields}


# Newest first: a Wise Agents agent asking a Civitas one (held for Redis on the way), then an
# older, id-less conversation with a PenguiFlow flow whose answer is dead-lettered and times out.
CONVERSATIONS: dict[str, Any] = {
    "limit": 1000,
    "forgotten": 12,
    "conversations": [
        {
            "trace_id": BOOKS,
            "conversation": "Books",
            "started_ms": 1764900000123,
            "updated_ms": 1764900001456,
            "participants": [{"name": "Asker", "framework": "wiseagents"}, {"name": "Lib", "framework": "civitas"}],
            "events": [
                event(
                    1764900000123,
                    "ask",
                    "Asker",
                    "Lib",
                    route="wiseagents->civitas",
                    source="/queue/request/Lib",
                    destination="/queue/civitas.lib",
                    message_id="ID:asker-1",
                    span_id="00f067aa0ba902b7",
                    latency_ms=1.7,
                ),
                event(1764900000400, "hold", None, None, detail="held for Redis: the registry is unreachable"),
                event(1764900001456, "answer", "Lib", "Asker", route="civitas->wiseagents", latency_ms=2.4),
            ],
        },
        {
            "trace_id": PLAN,
            "conversation": None,
            "started_ms": 1764899990000,
            "updated_ms": 1764899996100,
            "participants": [
                {"name": "Planner", "framework": "wiseagents"},
                {"name": "Flow", "framework": "penguiflow"},
            ],
            "events": [
                event(1764899990000, "ask", "Planner", "Flow", route="wiseagents->penguiflow", latency_ms=0.9),
                event(1764899990250, "dead_letter", "Flow", None, detail="decode: not a PenguiFlow envelope"),
                event(1764899993100, "timeout", "Flow", "Planner", latency_ms=3000),
                event(1764899996100, "late", "Flow", "Planner"),
            ],
        },
    ],
}


# The served site ----------------------------------------------------------------------------


@dataclass
class Site:
    """The page at ``<prefix>conversations`` and its data at ``<prefix>conversations.json``:
    ``answers`` in turn (the last one again and again), each a JSON document or an HTTP status;
    with ``token``, both want ``Authorization: Bearer <token>``."""

    port: int = 0
    answers: list[dict[str, Any] | int] = field(default_factory=list)
    token: str | None = None
    requests: list[str] = field(default_factory=list)

    def url(self, query: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{PREFIX}conversations" + (f"?{query}" if query else "")

    def next_answer(self) -> dict[str, Any] | int:
        served = sum(1 for r in self.requests if r.startswith(f"{PREFIX}conversations.json"))
        return self.answers[min(served, len(self.answers) - 1)]


def handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if site.token is not None and self.headers.get("Authorization") != f"Bearer {site.token}":
                self.reply(401, "text/plain", b"unauthorized")
            elif path == f"{PREFIX}conversations":
                self.reply(200, "text/html; charset=utf-8", PAGE.read_bytes())
            elif path == f"{PREFIX}conversations.json":
                answer = site.next_answer()
                if isinstance(answer, int):
                    self.reply(answer, "text/plain", b"no")
                else:
                    self.reply(200, "application/json", json.dumps(answer).encode())
            else:
                self.reply(404, "text/plain", b"not found")
            site.requests.append(self.path)

        def reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site(answers=[CONVERSATIONS])
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(served))
    served.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# Reading the page ----------------------------------------------------------------------------


def render(site: Site, query: str = "", **options: Any) -> Page:
    return parse(rendered_dom(site.url(query), **options))


def traces(page: Page) -> list[str]:
    return [card.trace_id for card in page.sections()]


# The tests -----------------------------------------------------------------------------------


def test_each_conversation_is_a_card_with_its_participants_and_events_in_order(site: Site) -> None:
    page = render(site)
    books, plan = page.sections()
    assert (books.trace_id, books.conversation) == (BOOKS, "Books")
    assert (plan.trace_id, plan.conversation) == (PLAN, "")

    # The header: the conversation id (or a stand-in), the trace id to paste into Jaeger.
    assert books.node.select("h2")[0].text() == "Books"
    assert plan.node.select("h2")[0].text() == "(no conversation id)"
    assert [c.text() for c in books.node.select("code", "trace")] == [BOOKS]
    assert "3 events" in books.node.select("header")[0].text()

    assert books.participants == [("Asker", "wiseagents"), ("Lib", "civitas")]
    assert plan.participants == [("Planner", "wiseagents"), ("Flow", "penguiflow")]
    # The bridge is a lifeline of its own, between them, but no participant.
    lanes = books.node.walk(lambda n: n.tag == "g" and bool({"participant", "bridge-lifeline"} & set(n.classes)))
    assert [g.attrs["data-name"] for g in lanes] == ["Asker", "bridge", "Lib"]

    assert books.events == [("ask", "Asker", "Lib"), ("hold", "", ""), ("answer", "Lib", "Asker")]
    assert plan.events == [
        ("ask", "Planner", "Flow"),
        ("dead_letter", "Flow", ""),
        ("timeout", "Flow", "Planner"),
        ("late", "Flow", "Planner"),
    ]
    assert [g.attrs["data-index"] for g in plan.node.select("g", "event")] == ["0", "1", "2", "3"]
    # Each row is timed (UTC: browser_testing runs Chromium with TZ=UTC); ask and answer say
    # their latency; the tooltip has the rest.
    assert [t.text() for t in books.node.select("text", "time")] == ["02:00:00.123", "02:00:00.400", "02:00:01.456"]
    ask, hold, _ = books.node.select("g", "event")
    assert ask.select("text", "lbl")[0].text() == "ask · 1.7 ms"
    assert "span id: 00f067aa0ba902b7" in ask.select("title")[0].text()
    assert hold.select("rect", "note") and "held for Redis" in hold.text()

    # Only the dead letter is marked as one, with its ✕ and its reason.
    assert plan.dead_letters == [1] and books.dead_letters == []
    dead = plan.node.select("g", "dead-letter")[0]
    assert dead.select("path", "xx")
    assert "decode: not a PenguiFlow envelope" in dead.text()

    assert page.by_id("empty") is None
    error = page.by_id("error")
    assert error is not None and "hidden" in error.attrs
    updated = page.by_id("updated")
    assert updated is not None and updated.text().startswith("updated ")
    # Relative fetches only: the page under a prefix asked for the data beside it.
    assert f"{PREFIX}conversations.json" in site.requests


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("agent=FLOW", [PLAN]),  # a participant, case-insensitive
        ("agent=ask", [BOOKS]),
        ("conversation=Boo", [BOOKS]),  # the conversation id's start
        ("conversation=0af765", [PLAN]),  # the trace id's start
        ("agent=lib&conversation=0af765", []),
    ],
)
def test_the_filters_in_the_url_hide_the_other_conversations(site: Site, query: str, shown: list[str]) -> None:
    page = render(site, query)
    assert traces(page) == shown
    assert (page.by_id("nomatch") is not None) == (not shown)


def test_the_page_polls_and_draws_what_came_since(site: Site) -> None:
    first = copy.deepcopy(CONVERSATIONS)
    first["conversations"] = first["conversations"][1:]
    first["conversations"][0]["events"] = first["conversations"][0]["events"][:1]
    site.answers = [first, CONVERSATIONS]
    page = render(site)
    assert traces(page) == [BOOKS, PLAN]
    assert len(page.sections()[1].events) == 4
    assert sum(1 for r in site.requests if r.startswith(f"{PREFIX}conversations.json")) >= 2


def test_a_bridge_with_no_conversation_says_so(site: Site) -> None:
    site.answers = [{"limit": 1000, "forgotten": 0, "conversations": []}]
    page = render(site)
    empty = page.by_id("empty")
    assert empty is not None and empty.tag == "p"
    assert empty.text().startswith("No conversations yet…")
    assert "through the bridge" in empty.text()
    assert traces(page) == []


def test_a_failed_fetch_shows_an_error_banner_and_keeps_the_last_diagrams(site: Site) -> None:
    site.answers = [CONVERSATIONS, 503]
    page = render(site)
    error = page.by_id("error")
    assert error is not None and "hidden" not in error.attrs
    assert "HTTP 503" in error.text()
    assert traces(page) == [BOOKS, PLAN]


def test_strings_from_messages_stay_text_and_unknown_names_get_a_lane(site: Site) -> None:
    hostile = '<img src=x onerror="document.title=1">'
    long_name = "an-agent-whose-name-is-far-too-long-to-fit-in-its-lane"
    site.answers = [
        {
            "limit": 10,
            "forgotten": 0,
            "conversations": [
                {
                    "trace_id": "1" * 32,
                    "conversation": hostile,
                    "started_ms": 1764900000000,
                    "updated_ms": 1764900000000,
                    "truncated": True,
                    "participants": [{"name": hostile, "framework": "vox"}, {"name": long_name, "framework": "a2a"}],
                    "events": [
                        event(1764900000000, "ask", hostile, long_name),
                        event(1764900000001, "answer", "bridge", hostile, detail="error: no route"),
                        event(1764900000002, "receipt", long_name, None),
                        event(1764900000003, "ask", long_name, "Ghost"),
                        event(1764900000004, "failover", None, None, detail="to 127.0.0.1:61623"),
                        event(1764900000005, "something-new", None, None),
                    ],
                }
            ],
        }
    ]
    page = render(site)
    assert not page.select("img")
    (card,) = page.sections()
    assert card.conversation == hostile
    assert card.participants == [(hostile, "vox"), (long_name, "a2a")]
    assert [g.attrs["data-name"] for g in card.node.select("g", "extra-lifeline")] == ["Ghost"]
    assert [e[0] for e in card.events] == ["ask", "answer", "receipt", "ask", "failover", "something-new"]
    # A long name is cut with an ellipsis, and whole in its tooltip.
    name = card.node.select("g", "participant")[1].select("text", "nm")[0]
    assert name.texts[0].endswith("…") and name.select("title")[0].text() == long_name
    assert "more happened" in card.node.select("header")[0].text()


def test_a_listener_that_wants_a_token_is_read_through_devtools(site: Site) -> None:
    site.token = "s3cret"
    refused = render(site)  # --dump-dom sends no header: the page itself is refused
    assert traces(refused) == []
    page = render(site, auth_header="Bearer s3cret")
    assert traces(page) == [BOOKS, PLAN]
    assert page.sections()[0].events[0] == ("ask", "Asker", "Lib")


def test_waiting_for_a_selector_through_devtools(site: Site) -> None:
    page = render(site, wait_for="g.dead-letter")
    assert [card.dead_letters for card in page.sections()] == [[], [1]]


def test_a_screenshot_is_a_png(site: Site, tmp_path: Path) -> None:
    out = Path(os.environ.get("SAB_PAGE_SCREENSHOT") or tmp_path / "page.png")
    screenshot(site.url(), out)
    png = out.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
