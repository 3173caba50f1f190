"""StatusFeed: a runtime's connections, published to a live status registry.

Each :class:`~patchbay.runtime.connection.server_connection.ServerConnection` of a runtime calls
:meth:`StatusFeed.changed` when its state, in-flight count or catalog changes; the feed turns it
into a :class:`~patchbay.core.live_status.ConnectorLive` (state word and counts only) and
publishes it under the runtime's source id. :meth:`StatusFeed.run` is the heartbeat (a touch of
the source every third of the TTL, so a quiet live session stays fresh); :meth:`StatusFeed.close`
withdraws the source when the runtime exits, and nothing is published after it.

Design: docs/runtime.md "Live status"
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

import anyio

from patchbay.core.errors import ErrorCode
from patchbay.core.live_status import LIVE_TTL, ConnectorLive, LiveState, StatusRegistry
from patchbay.runtime.connection.server_connection import ServerConnection

__all__ = ["StatusFeed", "live_entry"]

_AUTH_CODES = frozenset({ErrorCode.AUTH_REQUIRED, ErrorCode.AUTH_EXPIRED})


def live_entry(connection: ServerConnection) -> ConnectorLive:
    """What the registry keeps of ``connection`` now (``updated_at`` is the registry's to set).

    ``connected``/``connecting`` as they are; ``restarting`` and ``permanently_failed`` are
    ``failed``; a failed connect is ``needs-auth`` when its code is ``auth_required`` or
    ``auth_expired``, else ``failed``; an idle or closed connection is ``cached`` when the
    projection carried a cached catalog, else ``not-connected``.
    """
    raw = connection.state
    state: LiveState
    if raw in ("connected", "connecting"):
        state = raw
    elif raw in ("restarting", "permanently_failed"):
        state = "failed"
    elif raw == "failed":
        code = connection.failure[0] if connection.failure else None
        state = "needs-auth" if code in _AUTH_CODES else "failed"
    else:
        state = "cached" if connection.server.tools else "not-connected"
    tools = len(connection.tools) if raw == "connected" else len(connection.server.tools)
    return ConnectorLive(
        connector_id=connection.server.connector_id,
        state=state,
        tool_count=tools,
        resource_count=connection.resource_count if raw == "connected" else None,
        failed_at=connection.failed_at,
        restarts=connection.crashes,
        in_flight=connection.in_flight,
    )


class StatusFeed:
    """Publishes one runtime's connections to ``registry``.

    Args:
        registry: where the status goes.
        session_id: the runtime's session; the source id is it plus a random suffix, so a
            rebuilt session's new runtime and its old one (still closing) are separate sources.
        interval: heartbeat period in seconds (default a third of :data:`LIVE_TTL`).
    """

    def __init__(self, registry: StatusRegistry, session_id: str, *, interval: float = LIVE_TTL / 3) -> None:
        self._registry = registry
        self.source = f"{session_id}.{secrets.token_hex(4)}"
        self._interval = interval
        self._closed = False
        self._scope: anyio.CancelScope | None = None

    def changed(self, connection: ServerConnection) -> None:
        """Publish ``connection`` as it is now (a connection's ``on_status``)."""
        if not self._closed:
            self._registry.publish(self.source, [live_entry(connection)])

    def publish(self, connections: Iterable[ServerConnection]) -> None:
        """Publish every connection as it is now (when the runtime opens)."""
        if not self._closed:
            self._registry.publish(self.source, [live_entry(c) for c in connections])

    async def run(self) -> None:
        """The heartbeat, until :meth:`close` (run it in the runtime's task group)."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._closed:
                scope.cancel()
            while True:
                await anyio.sleep(self._interval)
                self._registry.touch(self.source)

    def close(self) -> None:
        """Stop the heartbeat and withdraw the source; later changes are not published."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()
        self._registry.withdraw(self.source)
