"""Wake-ups within this process: the single-instance default (and :func:`open_wakeups`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from patchbay.adapters.leases.base import CoordinationState
from patchbay.adapters.wakeups.base import Wakeups, Watch, WatchRegistry
from patchbay.core.settings import Settings

__all__ = ["LocalWakeups", "open_wakeups"]


def open_wakeups(settings: Settings) -> Wakeups:
    """The wake-ups ``settings`` ask for: ``RedisWakeups`` (channel ``<redis_prefix>wake``) when
    ``settings.redis_url`` is set, else :class:`LocalWakeups`. Opens no connection; never
    raises."""
    if settings.redis_url is None:
        return LocalWakeups()
    from patchbay.adapters.wakeups.redis_pubsub import RedisWakeups

    return RedisWakeups(
        settings.redis_url.get_secret_value(), channel=f"{settings.redis_prefix}wake", timeout=settings.redis_timeout
    )


class LocalWakeups:
    """In-process :class:`~patchbay.adapters.wakeups.base.Wakeups`; :meth:`state` is always
    ``ok``. Use it from one event loop."""

    backend = "local"

    def __init__(self) -> None:
        self._registry = WatchRegistry()

    @asynccontextmanager
    async def watch(self, topic: str) -> AsyncIterator[Watch]:
        """See :meth:`Wakeups.watch <patchbay.adapters.wakeups.base.Wakeups.watch>`."""
        async with self._registry.watch(topic) as watch:
            yield watch

    async def notify(self, topic: str) -> None:
        """Wake every watch of ``topic`` in this process."""
        self._registry.wake(topic)
        await anyio.lowlevel.checkpoint()

    def state(self) -> CoordinationState:
        """Always ``ok``: nobody else to reach."""
        return "ok"

    async def run(self) -> None:
        """Nothing to receive: waits until cancelled."""
        await anyio.sleep_forever()

    async def aclose(self) -> None:
        """Nothing to close."""
