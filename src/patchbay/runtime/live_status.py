"""The in-process :class:`~patchbay.core.live_status.StatusRegistry`: one per ``patchbay serve``.

Hosted runtimes publish their connectors' live status here
(:class:`patchbay.runtime.connection.status_feed.StatusFeed`); the REST API reads it for
``runtime_state`` and streams its changes. In memory only, never written anywhere; thread-safe
(the API reads from worker threads). An entry not updated for :data:`LIVE_TTL` seconds reads as
``unknown``; one not updated for ten times that (a runtime that vanished without withdrawing) is
forgotten.

Design: docs/runtime.md "Live status"
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from patchbay.core.live_status import LIVE_TTL, ConnectorLive, LiveStatus, aggregate

__all__ = ["InProcessStatusRegistry"]

_FORGET_AFTER = 10
"""Entries older than this many TTLs are dropped."""


class InProcessStatusRegistry:
    """Live status in a dict, by source and connector.

    Usage::

        registry = InProcessStatusRegistry()
        registry.publish("rt_1", [ConnectorLive("con_x", "connected", tool_count=2)])
        registry.read("con_x").state        # "connected"; "unknown" 90 s after the last update

    Args:
        ttl: seconds an entry stays fresh (default :data:`LIVE_TTL`).
        clock: Unix seconds now (tests inject one).
    """

    def __init__(self, *, ttl: float = LIVE_TTL, clock: Callable[[], float] = time.time) -> None:
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._by_source: dict[str, dict[str, ConnectorLive]] = {}

    def publish(self, source: str, entries: Iterable[ConnectorLive]) -> None:
        now = self._clock()
        with self._lock:
            mine = self._by_source.setdefault(source, {})
            for entry in entries:
                mine[entry.connector_id] = dataclasses.replace(entry, updated_at=now)

    def touch(self, source: str) -> None:
        now = self._clock()
        with self._lock:
            mine = self._by_source.get(source)
            if mine is not None:
                for key, entry in mine.items():
                    mine[key] = dataclasses.replace(entry, updated_at=now)

    def withdraw(self, source: str) -> None:
        with self._lock:
            self._by_source.pop(source, None)

    def read(self, connector_id: str) -> LiveStatus | None:
        now = self._clock()
        with self._lock:
            entries = [m[connector_id] for m in self._by_source.values() if connector_id in m]
        return aggregate(entries, now=now, ttl=self.ttl)

    def read_all(self) -> Mapping[str, LiveStatus]:
        now = self._clock()
        by_connector: dict[str, list[ConnectorLive]] = {}
        with self._lock:
            self._forget(now)
            for mine in self._by_source.values():
                for connector_id, entry in mine.items():
                    by_connector.setdefault(connector_id, []).append(entry)
        result: dict[str, LiveStatus] = {}
        for connector_id, entries in by_connector.items():
            status = aggregate(entries, now=now, ttl=self.ttl)
            if status is not None:
                result[connector_id] = status
        return result

    def _forget(self, now: float) -> None:
        """Drop entries long past their TTL (call under the lock)."""
        limit = now - self.ttl * _FORGET_AFTER
        for source in list(self._by_source):
            mine = self._by_source[source]
            for key in [k for k, e in mine.items() if e.updated_at < limit]:
                del mine[key]
            if not mine:
                del self._by_source[source]
