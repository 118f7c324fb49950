"""Civitas's ids: UUIDv7 (RFC 9562) as a lowercase hyphenated string, as civitas.messages
makes them. Civitas does not export its generator (``civitas.messages._uuid7`` is private),
so the adapter has its own; Python 3.14's ``uuid.uuid7`` where there is one."""

from __future__ import annotations

import os
import sys
import time
import uuid


def uuid7() -> str:
    """A new UUIDv7: 48 bits of Unix milliseconds, version 7, 74 random bits, variant 0b10."""
    if sys.version_info >= (3, 14):
        return str(uuid.uuid7())
    millis = (time.time_ns() // 1_000_000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")  # 80 bits: 12 for rand_a, 62 for rand_b
    rand_a, rand_b = (rand >> 62) & 0xFFF, rand & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))
