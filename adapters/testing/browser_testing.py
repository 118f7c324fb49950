"""Headless Chromium for the tests of the bridge's web page (tests only: no adapter ships it):
the DOM of a page after its scripts ran, read back as a tree (``parse``), and a screenshot of it.
Debian's ``chromium``, which scripts/browser.sh installs; ``SAB_CHROMIUM`` names another binary.

Two ways to wait for the page's scripts:
- ``--dump-dom`` with ``--virtual-time-budget`` (the default): Chromium runs the page's timers on
  a virtual clock that stands still while a network fetch is pending, and dumps the DOM once the
  budget of virtual time is spent, the page's fetch() answers in: 20 of 20 runs in a row on a
  machine with a load average of 7 to 10 on 2 cores drew every event, in 1 to 3 s each.
- the DevTools protocol (websocket-client, which stomp.py brings), with ``wait_for`` (a CSS
  selector to wait for, at most ``timeout_s``) or ``auth_header``: a listener with basic auth or
  a bearer token wants an ``Authorization`` header, which ``--dump-dom`` cannot send; DevTools
  sets it with ``Network.setExtraHTTPHeaders``, on the page's fetch() too.

Chromium runs with TZ=UTC, so that the times a page writes can be asserted, and in a session of
its own, all of whose processes are ended when it is done."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, cast

import websocket

#: What the DevTools way waits for when only ``auth_header`` is given: a drawn event, or the
#: conversations page's empty state, its "no match" or its error banner.
READY = "g.event, #empty, #nomatch, #error:not([hidden])"

_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--lang=en-US", "--hide-scrollbars")


class BrowserError(RuntimeError):
    """Chromium is missing, did not start, did not finish in time, or produced nothing."""


def chromium() -> str | None:
    """The Chromium binary: ``SAB_CHROMIUM``, else ``chromium`` on PATH; None when there is none
    (scripts/browser.sh installs it), for the tests to skip on."""
    return os.environ.get("SAB_CHROMIUM") or shutil.which("chromium")


def rendered_dom(
    url: str,
    *,
    budget_ms: int = 5000,
    auth_header: str | None = None,
    wait_for: str | None = None,
    timeout_s: float = 30.0,
) -> str:
    """The DOM of ``url`` (as HTML) after its scripts ran: with ``--dump-dom`` after ``budget_ms``
    of virtual time; or, with ``wait_for`` or ``auth_header`` (the whole value of the
    ``Authorization`` header, e.g. ``"Bearer t0ken"`` or ``"Basic dXNlcjpwYXNz"``, sent with
    every request of the page), through DevTools once the selector ``wait_for`` (else
    :data:`READY`) matches."""
    if auth_header is not None or wait_for is not None:
        headers = {} if auth_header is None else {"Authorization": auth_header}
        return _devtools_dom(url, headers, wait_for or READY, timeout_s)
    out = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url], timeout_s)
    if "<html" not in out:
        raise BrowserError(f"chromium dumped no DOM for {url}")
    return out


def screenshot(
    url: str,
    path: str | Path,
    width: int = 1280,
    height: int = 900,
    *,
    budget_ms: int = 5000,
    dark: bool = False,
    timeout_s: float = 30.0,
) -> Path:
    """A PNG of the first ``width`` x ``height`` pixels of ``url`` after ``budget_ms`` of virtual
    time, in the light colour scheme or, with ``dark``, the dark one."""
    out = Path(path).resolve()
    out.unlink(missing_ok=True)
    scheme = ["--force-dark-mode"] if dark else []
    _run(
        [*scheme, f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}", f"--screenshot={out}", url],
        timeout_s,
    )
    if not out.is_file() or out.stat().st_size == 0:
        raise BrowserError(f"chromium wrote no screenshot of {url} to {out}")
    return out


@contextmanager
def _browser(args: Sequence[str]) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """Chromium with a throwaway profile, in a session of its own: every process of it is ended
    on the way out, and the profile removed."""
    with tempfile.TemporaryDirectory(prefix="sab-chromium-") as profile:
        env = {**os.environ, "TZ": "UTC"}
        binary = chromium()
        if binary is None:
            raise BrowserError("no chromium: run scripts/browser.sh, or set SAB_CHROMIUM")
        command = [binary, *_FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
        )
        try:
            yield proc, Path(profile)
        finally:
            _end(proc)


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        except ProcessLookupError:
            pass
    # Helpers (zygote, renderer) it left in its session, if any.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _run(args: Sequence[str], timeout_s: float) -> str:
    with _browser(args) as (proc, _):
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            raise BrowserError(f"chromium {' '.join(args)} did not finish within {timeout_s} s") from e
        if proc.returncode != 0:
            tail = err.decode(errors="replace")[-2000:]
            raise BrowserError(f"chromium {' '.join(args)} exited {proc.returncode}: {tail}")
        return out.decode()


class _DevTools:
    """One page's DevTools session over its websocket: commands by id, events skipped."""

    def __init__(self, ws_url: str, deadline: float) -> None:
        self.deadline = deadline
        self.ws = websocket.create_connection(
            ws_url, timeout=max(1.0, deadline - time.monotonic()), suppress_origin=True
        )
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer to DevTools {method} in time")
            self.ws.settimeout(left)
            message = json.loads(self.ws.recv())
            if message.get("id") != self.next_id:
                continue
            if "error" in message:
                raise BrowserError(f"DevTools {method}: {message['error']}")
            return cast(dict[str, Any], message.get("result", {}))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        self.ws.close()


def _holds(tools: _DevTools, probe: str) -> bool:
    """The probe's value; false while the navigation replaces the document (an evaluation then
    fails: its execution context is gone)."""
    try:
        return bool(tools.evaluate(probe))
    except BrowserError:
        if time.monotonic() > tools.deadline:
            raise
        return False


def _devtools_dom(url: str, headers: dict[str, str], ready: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    with _browser(["--remote-debugging-port=0", "about:blank"]) as (proc, profile):
        port_file = profile / "DevToolsActivePort"
        while not port_file.is_file() or not port_file.read_text().strip():
            if proc.poll() is not None:
                raise BrowserError(f"chromium exited {proc.returncode} before opening its DevTools port")
            if time.monotonic() > deadline:
                raise BrowserError("chromium opened no DevTools port in time")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t.get("type") == "page")
        tools = _DevTools(page["webSocketDebuggerUrl"], deadline)
        try:
            tools.call("Network.enable")
            tools.call("Network.setExtraHTTPHeaders", headers=headers)
            tools.call("Page.navigate", url=url)
            probe = f"document.readyState !== 'loading' && document.querySelector({json.dumps(ready)}) !== null"
            while not _holds(tools, probe):
                if time.monotonic() > deadline:
                    raise BrowserError(f"{ready!r} did not appear on {url} within {timeout_s} s")
                time.sleep(0.1)
            return cast(str, tools.evaluate("'<!DOCTYPE html>\\n' + document.documentElement.outerHTML"))
        finally:
            tools.close()


# The DOM, read back --------------------------------------------------------------------------

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    """An element of the DOM: its tag, attributes, children and own text."""

    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def text(self) -> str:
        """All of its text, its descendants' too (an SVG <title> tooltip's included)."""
        return "".join(self.texts) + "".join(c.text() for c in self.children)

    def walk(self, match: Callable[[Node], bool]) -> list[Node]:
        """The descendants that match, in document order."""
        found: list[Node] = []
        for c in self.children:
            if match(c):
                found.append(c)
            found.extend(c.walk(match))
        return found

    def select(self, tag: str, cls: str | None = None) -> list[Node]:
        """The descendants ``tag`` (with the class ``cls``), in document order."""
        return self.walk(lambda n: n.tag == tag and (cls is None or cls in n.classes))

    def by_id(self, id_: str) -> Node | None:
        found = self.walk(lambda n: n.attrs.get("id") == id_)
        return found[0] if found else None


@dataclass
class Card:
    """A conversation on the conversations page, from its stable markup."""

    trace_id: str
    conversation: str
    #: (name, framework) in left-to-right order; the bridge's lifeline is not one.
    participants: list[tuple[str, str]]
    #: (kind, from, to) in order, "" for a null from or to.
    events: list[tuple[str, str, str]]
    #: the indices of the events marked as dead letters.
    dead_letters: list[int]
    node: Node


@dataclass
class Page:
    root: Node

    def sections(self) -> list[Card]:
        """The conversations' cards, in the page's order (newest first)."""
        return [
            Card(
                trace_id=s.attrs.get("data-trace-id", ""),
                conversation=s.attrs.get("data-conversation", ""),
                participants=[
                    (g.attrs.get("data-name", ""), g.attrs.get("data-framework", ""))
                    for g in s.select("g", "participant")
                ],
                events=[
                    (g.attrs.get("data-kind", ""), g.attrs.get("data-from", ""), g.attrs.get("data-to", ""))
                    for g in s.select("g", "event")
                ],
                dead_letters=[int(g.attrs.get("data-index", "-1")) for g in s.select("g", "dead-letter")],
                node=s,
            )
            for s in self.root.select("section", "conversation")
        ]

    def select(self, tag: str, cls: str | None = None) -> list[Node]:
        return self.root.select(tag, cls)

    def by_id(self, id_: str) -> Node | None:
        return self.root.by_id(id_)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].texts.append(data)


def parse(html: str) -> Page:
    """A DOM that :func:`rendered_dom` returned, as a tree (Python's html.parser: no package)."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return Page(builder.root)
