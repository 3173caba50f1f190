"""Live runtime status: what a hosted runtime says about each of its connectors, and the
interface of the registry that keeps it.

A runtime publishes one :class:`ConnectorLive` per connector it hosts (its *source* is the
runtime: one per session build); a :class:`StatusRegistry` keeps them in memory with a TTL and
answers, per connector, the :class:`LiveStatus` of every source together
(:func:`aggregate`). Nothing here is ever persisted, and a value carries only what is safe to
show anyone who may see the connector list: a state word, counts, ages and times. No URL,
header, command, input schema, message text or credential has a field here.

Pure: values and one Protocol, no I/O.

Design: docs/runtime.md "Live status"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "LIVE_TTL",
    "ConnectorLive",
    "LiveState",
    "LiveStatus",
    "StatusRegistry",
    "aggregate",
]

LIVE_TTL = 90.0
"""Seconds an entry stays fresh without an update; older, it reads as ``unknown``."""

LiveState = Literal["connected", "connecting", "cached", "failed", "needs-auth", "not-connected", "disabled"]
"""What one runtime knows of one connector: ``connected`` (a live session), ``connecting`` (a
connect or restart under way), ``cached`` (not connected; its cached catalog is what the
runtime lists), ``failed`` (the last connect failed or the server crashed), ``needs-auth`` (the
last connect failed for want of credentials or an authorization), ``not-connected`` (not
connected, nothing cached), ``disabled`` (not started here)."""

_RANK: dict[str, int] = {
    state: rank
    for rank, state in enumerate(
        ("connected", "needs-auth", "failed", "connecting", "cached", "not-connected", "disabled")
    )
}
"""Which source's state the aggregate shows: the first in this order that any fresh source has."""


@dataclass(frozen=True, slots=True)
class ConnectorLive:
    """One runtime's status of one connector.

    Attributes:
        connector_id: the connector's stable id (``con_…``).
        state: see :data:`LiveState`.
        tool_count: tools the runtime lists for it now (live catalog, or the cached one).
        resource_count: resources it listed, None when this runtime has not listed them.
        failed_at: Unix seconds of the last failure, None when it has not failed.
        restarts: crash restarts of the connection in this runtime.
        in_flight: requests (tool calls, reads) under way on it.
        updated_at: Unix seconds of this update (set by the registry).
    """

    connector_id: str
    state: LiveState
    tool_count: int = 0
    resource_count: int | None = None
    failed_at: float | None = None
    restarts: int = 0
    in_flight: int = 0
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """A connector's live status over every runtime that reported it.

    Attributes:
        state: ``unknown`` when no source updated it within the TTL, else the aggregate
            :data:`LiveState` (see :func:`aggregate`).
        fresh: whether any source is within the TTL (``state`` is then not ``unknown``).
        sessions: fresh sources (runtimes) behind it.
        tool_count: the largest tool count of the fresh sources (the same connector lists the
            same catalog in each; adding them would count its tools once per session).
        resource_count: likewise, None when no fresh source listed resources.
        failure_age: seconds since the most recent failure of a fresh source that is failing
            now (``failed``/``needs-auth``), else None.
        restarts: crash restarts, summed over the fresh sources.
        in_flight: requests under way, summed over the fresh sources.
        updated_at: Unix seconds of the latest update of any source (stale ones too).
    """

    state: LiveState | Literal["unknown"]
    fresh: bool
    sessions: int
    tool_count: int
    resource_count: int | None
    failure_age: float | None
    restarts: int
    in_flight: int
    updated_at: float

    def key(self) -> tuple[object, ...]:
        """What a change event compares: everything but the times (a heartbeat changes no key;
        the failure's age is left out too: it moves every second)."""
        return (
            self.state,
            self.sessions,
            self.tool_count,
            self.resource_count,
            self.failure_age is None,
            self.restarts,
            self.in_flight,
        )


def aggregate(entries: Iterable[ConnectorLive], *, now: float, ttl: float = LIVE_TTL) -> LiveStatus | None:
    """The :class:`LiveStatus` of one connector from its sources' entries.

    Fresh entries (``now - updated_at <= ttl``) decide: the state is the first of
    ``connected > needs-auth > failed > connecting > cached > not-connected > disabled`` that one
    of them has (connected if any session is connected), ``in_flight`` and ``restarts`` are
    summed, tool and resource counts are the largest. Without a fresh entry the status is
    ``unknown`` (stale, not gone: ``updated_at`` still says when it was last heard of).

    Args:
        entries: the connector's entries, one per source.
        now: Unix seconds.
        ttl: seconds an entry stays fresh.

    Returns:
        None when there are no entries at all.
    """
    every = list(entries)
    if not every:
        return None
    latest = max(e.updated_at for e in every)
    fresh = [e for e in every if now - e.updated_at <= ttl]
    if not fresh:
        return LiveStatus("unknown", False, 0, 0, None, None, 0, 0, latest)
    state = min((e.state for e in fresh), key=lambda s: _RANK[s])
    resources = [e.resource_count for e in fresh if e.resource_count is not None]
    failing = [e.failed_at for e in fresh if e.failed_at is not None and e.state in ("failed", "needs-auth")]
    return LiveStatus(
        state=state,
        fresh=True,
        sessions=len(fresh),
        tool_count=max(e.tool_count for e in fresh),
        resource_count=max(resources) if resources else None,
        failure_age=max(0.0, now - max(failing)) if failing and state in ("failed", "needs-auth") else None,
        restarts=sum(e.restarts for e in fresh),
        in_flight=sum(e.in_flight for e in fresh),
        updated_at=latest,
    )


class StatusRegistry(Protocol):
    """Where hosted runtimes publish their connectors' live status and the API reads it.

    One per serve process in memory (:class:`patchbay.runtime.live_status.InProcessStatusRegistry`);
    an implementation shared by several instances (e.g. on Redis) keeps the same contract:
    entries expire to ``unknown`` after the TTL, nothing sensitive is stored, and every method
    returns at once (no waiting on I/O in the caller's event loop beyond a bounded round trip).
    """

    def publish(self, source: str, entries: Iterable[ConnectorLive]) -> None:
        """Replace what ``source`` (a runtime's opaque id) says about these connectors; their
        ``updated_at`` becomes now."""
        ...

    def touch(self, source: str) -> None:
        """Heartbeat: ``source``'s entries are fresh again, unchanged."""
        ...

    def withdraw(self, source: str) -> None:
        """``source`` stopped: forget its entries."""
        ...

    def read(self, connector_id: str) -> LiveStatus | None:
        """The connector's :class:`LiveStatus`, None when no source reported it."""
        ...

    def read_all(self) -> Mapping[str, LiveStatus]:
        """Every reported connector's :class:`LiveStatus`, by connector id."""
        ...
