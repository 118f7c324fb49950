"""The adapter's own UUIDv7, in place of Civitas's private one: the same shape as the ids
Civitas writes (lowercase, hyphenated, version 7, RFC 9562 variant), its time the clock's."""

from __future__ import annotations

import re
import time
import uuid

from civitas.messages import Message

from civitas_stomp.ids import uuid7

SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_a_uuid7_has_the_shape_of_civitas_own_ids():
    ours, civitas_own = uuid7(), Message().id
    assert SHAPE.fullmatch(ours), ours
    assert SHAPE.fullmatch(civitas_own), civitas_own
    parsed = uuid.UUID(ours)
    assert (parsed.version, parsed.variant, str(parsed)) == (7, uuid.RFC_4122, ours)


def test_a_uuid7_carries_the_current_time_in_milliseconds_and_its_random_bits_differ():
    before = time.time_ns() // 1_000_000
    ids = [uuid7() for _ in range(100)]
    after = time.time_ns() // 1_000_000
    millis = [uuid.UUID(i).int >> 80 for i in ids]
    assert all(before <= m <= after for m in millis), (before, millis, after)
    assert millis == sorted(millis), "time-ordered"
    assert len(set(ids)) == len(ids)
