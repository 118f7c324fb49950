"""Helpers for tests that read what the bridge exported from Jaeger (tests only): the private
Jaeger of scripts/jaeger.sh (v1.75.0, in-memory storage), through its HTTP query API, with the
standard library only.

- ``available()``: the query API answers;
- ``traces(service, **tags)``: the traces of a service in the last hour, optionally only those
  with a span carrying every tag given;
- ``trace(trace_id)``: one trace, or ``None`` while Jaeger has none of its spans;
- ``wait_trace(trace_id, predicate)``: a trace once ``predicate`` holds of it (spans arrive in
  batches, as the exporter sends them: a test waits for the tree it expects, with a bound);
- ``spans_by_name``, ``parent_of``, ``tag``, ``service_of``, ``describe``: for asserting on a
  trace's tree.

A trace is the query API's JSON: ``{"traceID", "spans": [...], "processes": {...}}``, each span
``{"traceID", "spanID", "operationName", "references": [{"refType", "traceID", "spanID"}],
"startTime", "duration", "tags": [{"key", "type", "value"}], "logs", "processID"}`` (an OTLP
parent is a ``CHILD_OF`` reference; span kind and status are the tags ``span.kind``,
``otel.status_code`` and ``error``).

Environment: ``SAB_JAEGER_QUERY`` (default ``http://127.0.0.1:$SAB_JAEGER_QUERY_PORT``, 16686)
and ``SAB_JAEGER_OTLP`` (default ``http://127.0.0.1:$SAB_JAEGER_OTLP_HTTP_PORT``, 4318), the
ports scripts/jaeger.sh reads."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

JAEGER_QUERY = os.environ.get("SAB_JAEGER_QUERY") or (
    f"http://127.0.0.1:{os.environ.get('SAB_JAEGER_QUERY_PORT', '16686')}"
)
#: Where an exporter sends OTLP over HTTP (the bridge appends ``/v1/traces``).
OTLP_ENDPOINT = os.environ.get("SAB_JAEGER_OTLP") or (
    f"http://127.0.0.1:{os.environ.get('SAB_JAEGER_OTLP_HTTP_PORT', '4318')}"
)

Trace = dict[str, Any]
Span = dict[str, Any]

# One request to the query API: seconds before it counts as failed (a busy machine).
REQUEST_TIMEOUT = 10.0
# How often wait_trace asks again.
POLL = 0.2


def _get(path: str, query: dict[str, str] | None = None) -> Any:
    url = JAEGER_QUERY.rstrip("/") + path
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
        return json.load(response)


def available() -> bool:
    """Whether Jaeger's query API answers (``/api/services``, 200)."""
    try:
        with urllib.request.urlopen(JAEGER_QUERY.rstrip("/") + "/api/services", timeout=2.0) as response:
            status: int = response.status
            return status == 200
    except (OSError, ValueError):
        return False


def _tag_value(value: str | int | float | bool) -> str:
    # The query API's tags are strings, matched against each tag's value as Jaeger prints it.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def traces(service: str, *, limit: int = 100, lookback: str = "1h", **tags: str | int | float | bool) -> list[Trace]:
    """The traces with spans of ``service`` in the last ``lookback`` (at most ``limit``), those
    only with a span carrying every one of ``tags`` (keys with dots: ``**{"messaging.system":
    "stomp"}``). An unknown service has none."""
    query = {"service": service, "limit": str(limit), "lookback": lookback}
    if tags:
        query["tags"] = json.dumps({key: _tag_value(value) for key, value in tags.items()})
    found: list[Trace] = _get("/api/traces", query)["data"] or []
    return found


def trace(trace_id: str) -> Trace | None:
    """The trace ``trace_id`` (32 hexadecimal digits) as Jaeger has it now, or ``None`` if it has
    none of its spans yet."""
    try:
        data = _get("/api/traces/" + urllib.parse.quote(trace_id.lower(), safe=""))["data"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    if not data:
        return None
    found: Trace = data[0]
    return found


def wait_trace(trace_id: str, predicate: Callable[[Trace], bool], timeout: float = 60.0) -> Trace:
    """The trace ``trace_id`` once ``predicate`` holds of it, asked for every 0.2 s. Raises
    AssertionError, with the trace last seen, if it does not within ``timeout`` seconds (sized
    for a busy machine: an exporter sends its batch every few seconds)."""
    deadline = time.monotonic() + timeout
    last: Trace | None = None
    while True:
        last = trace(trace_id)
        if last is not None and predicate(last):
            return last
        if time.monotonic() >= deadline:
            seen = "no span of it" if last is None else f"{len(last['spans'])} span(s):\n{describe(last)}"
            raise AssertionError(f"trace {trace_id}: not as expected within {timeout:g} s; Jaeger had {seen}")
        time.sleep(POLL)


def spans_by_name(trace: Trace) -> dict[str, list[Span]]:
    """The trace's spans by operation name, each list in start order."""
    named: dict[str, list[Span]] = {}
    for span in sorted(trace["spans"], key=lambda span: span["startTime"]):
        named.setdefault(span["operationName"], []).append(span)
    return named


def parent_id(span: Span) -> str | None:
    """The id of the span's parent (its ``CHILD_OF`` reference), whether Jaeger received that
    parent or not; ``None`` for a root."""
    for reference in span.get("references") or []:
        if reference.get("refType") == "CHILD_OF":
            found: str = reference["spanID"]
            return found
    return None


def parent_of(trace: Trace, span: Span) -> Span | None:
    """The span's parent (its ``CHILD_OF`` reference) among the trace's spans: ``None`` for a root,
    and for a parent Jaeger has not received (or that is in another trace)."""
    for reference in span.get("references") or []:
        if reference.get("refType") == "CHILD_OF":
            for candidate in trace["spans"]:
                if candidate["spanID"] == reference["spanID"] and candidate["traceID"] == reference["traceID"]:
                    found: Span = candidate
                    return found
    return None


def tag(span: Span, key: str) -> Any:
    """The value of the span's tag ``key`` (an OTLP attribute, or ``span.kind``,
    ``otel.status_code``, ``error``...), or ``None`` if it has none."""
    for item in span.get("tags") or []:
        if item["key"] == key:
            return item["value"]
    return None


def service_of(trace: Trace, span: Span) -> str:
    """The ``service.name`` of the process (the OTLP resource) that exported the span."""
    name: str = trace["processes"][span["processID"]]["serviceName"]
    return name


def describe(trace: Trace) -> str:
    """The trace's tree, one span a line, indented under its parent, for assertion messages."""
    spans = sorted(trace["spans"], key=lambda span: span["startTime"])
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = parent_of(trace, span)
        children.setdefault(None if parent is None else parent["spanID"], []).append(span)
    lines: list[str] = []
    shown: set[str] = set()

    def walk(parent: str | None, depth: int) -> None:
        for span in children.get(parent, []):
            if span["spanID"] in shown:  # a malformed trace's loop
                continue
            shown.add(span["spanID"])
            lines.append(f"{'  ' * depth}{service_of(trace, span)}: {span['operationName']} ({span['spanID']})")
            walk(span["spanID"], depth + 1)

    walk(None, 0)
    return "\n".join(lines)
