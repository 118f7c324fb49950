"""Names that live behind the bridge (Wise Agents, VOX, PenguiFlow agents) made routable."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from civitas.registry import LocalRegistry, RoutingEntry


class BridgeRegistry(LocalRegistry):
    """Civitas's LocalRegistry, plus a routing fallback: a name no local or announced agent has
    and that matches one of ``remote`` (names or globs, e.g. ``["*"]``) routes to the bridge.
    Names beginning with ``_`` (Civitas's own ``_reply.*``, ``_agency.*``, ``_runtime``) never
    do. Broadcast patterns (``lookup_all``) and capabilities still see registered agents only."""

    def __init__(self, remote: Iterable[str] = ()) -> None:
        super().__init__()
        self._remote = tuple(remote)

    def is_remote(self, name: str) -> bool:
        return bool(name) and not name.startswith("_") and any(fnmatch.fnmatchcase(name, p) for p in self._remote)

    def lookup(self, name: str) -> RoutingEntry | None:
        entry = super().lookup(name)
        if entry is None and self.is_remote(name):
            return RoutingEntry(name=name, address=name, is_local=False)
        return entry
