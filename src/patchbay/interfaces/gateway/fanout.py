"""Committed changes fanned out to the gateways of every instance, through wake-ups.

When this process commits a change (a connector service's ``on_committed`` listener),
:meth:`ChangeFanout.committed` has :meth:`ChangeFanout.run` notify :data:`PROJECTION_TOPIC` on the
process's :class:`~patchbay.adapters.wakeups.Wakeups`. Every gateway runtime that follows the
topic (:meth:`RuntimeOwner.follow <patchbay.interfaces.gateway.owner.RuntimeOwner.follow>`) then
reloads at once: in this process, and, with ``PATCHBAY_REDIS_URL`` (Redis pub/sub), in every other
``patchbay serve`` and ``patchbay gateway --stdio`` on the same Redis.

A wake-up carries no data but its topic: each woken owner loads its workspace's projection from
the store again, and one that did not change changes nothing. Wake-ups only make a change arrive
sooner: a lost message or a degraded Redis is covered by the owners' poll of the store's change
counter (:meth:`RuntimeOwner.watch <patchbay.interfaces.gateway.owner.RuntimeOwner.watch>`, every
``Settings.gateway_reload_poll`` seconds).
"""

from __future__ import annotations

import contextlib
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskStatus
from anyio.lowlevel import EventLoopToken

from patchbay.adapters.wakeups import Wakeups

__all__ = ["PROJECTION_TOPIC", "ChangeFanout"]

PROJECTION_TOPIC = "projection"
"""The wake-up topic of a committed change that may alter a workspace's projection."""


class ChangeFanout:
    """Announces this process's committed changes on :data:`PROJECTION_TOPIC`.

    Usage::

        fanout = ChangeFanout(wakeups)
        await task_group.start(fanout.run)          # announces from now on
        service.on_committed(fanout.committed)      # from any thread

    Args:
        wakeups: where to notify (``LocalWakeups``: this process only; ``RedisWakeups``: every
            instance on the Redis).

    Announcements are coalesced: commits that come while one is being published are announced
    once more after it, never once each.
    """

    def __init__(self, wakeups: Wakeups) -> None:
        self.wakeups = wakeups
        self._wanted = anyio.Event()
        self._token: EventLoopToken | None = None
        self._loop_thread: int | None = None
        self.announced = 0
        """Notifications sent so far (tests read it)."""

    def committed(self, project_id: str | None = None, report: object = None) -> None:
        """A ``ConnectorService.on_committed`` listener: announce the change soon (the arguments
        are not used: every follower re-reads its own projection). Never blocks on Redis,
        callable from any thread; does nothing while :meth:`run` is not running."""
        token = self._token
        if token is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wanted.set()
            return
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody to announce to
            anyio.from_thread.run_sync(lambda: self._wanted.set(), token=token)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: notify :data:`PROJECTION_TOPIC` after each :meth:`committed`
        (``notify`` never raises; a failed publish degrades the wake-ups and the followers' poll
        covers it). ``task_group.start(fanout.run)`` returns once commits are announced."""
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        try:
            task_status.started()
            while True:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                await self.wakeups.notify(PROJECTION_TOPIC)
                self.announced += 1
        finally:
            self._token = None
            self._loop_thread = None
