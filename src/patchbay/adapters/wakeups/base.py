"""What a wake-up is, the :class:`Watch` a waiter holds, and the :class:`Wakeups` protocol.

A *topic* is a short string naming what changed (e.g. ``approval:apr_…``). :meth:`Wakeups.notify`
wakes every :class:`Watch` of the topic, in this process at once and, for a shared implementation,
in every other instance as soon as the message arrives. A watch remembers a wake-up that came
while nobody was waiting on it, so a waiter that re-reads the store and then waits misses nothing
that was notified after it started watching.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import anyio

from patchbay.adapters.leases.base import CoordinationState

__all__ = ["Wakeups", "Watch", "WatchRegistry"]


class Watch:
    """One waiter's view of a topic.

    Usage::

        async with wakeups.watch("approval:apr_1") as watch:
            while (decision := read_store()) is None:
                await watch.wait(2.0)       # woken early by a notify, else the poll
    """

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._event = anyio.Event()
        self.wakeups = 0
        """Wake-ups received so far (tests read it)."""

    def wake(self) -> None:
        """Mark the watch woken (from the event loop's thread)."""
        self.wakeups += 1
        self._event.set()

    async def wait(self, seconds: float) -> bool:
        """Wait until woken or ``seconds`` (> 0) pass; True when woken (since the last
        wait returned, or during this one). Never raises but the caller's cancellation."""
        with anyio.move_on_after(seconds):
            await self._event.wait()
        woken = self._event.is_set()
        if woken:
            self._event = anyio.Event()
        return woken


class WatchRegistry:
    """The watches of one process by topic (what both implementations deliver to)."""

    def __init__(self) -> None:
        self._watches: dict[str, set[Watch]] = {}

    @asynccontextmanager
    async def watch(self, topic: str) -> AsyncIterator[Watch]:
        """A :class:`Watch` of ``topic``, registered for the block."""
        watch = Watch(topic)
        self.add(watch)
        try:
            yield watch
        finally:
            self.remove(watch)

    def add(self, watch: Watch) -> None:
        self._watches.setdefault(watch.topic, set()).add(watch)

    def remove(self, watch: Watch) -> None:
        mine = self._watches.get(watch.topic)
        if mine is not None:
            mine.discard(watch)
            if not mine:
                del self._watches[watch.topic]

    def wake(self, topic: str) -> None:
        """Wake every watch of ``topic``."""
        for watch in list(self._watches.get(topic, ())):
            watch.wake()

    def wake_all(self) -> None:
        """Wake every watch (messages may have been lost: everyone re-reads)."""
        for watches in list(self._watches.values()):
            for watch in list(watches):
                watch.wake()

    def __len__(self) -> int:
        return sum(len(w) for w in self._watches.values())


class Wakeups(Protocol):
    """Delivers wake-ups by topic. Every method returns promptly: nothing waits on Redis longer
    than its short timeout, and no method raises for Redis."""

    backend: str
    """``local`` (this process only) or ``redis`` (every instance on the Redis)."""

    def watch(self, topic: str) -> AbstractAsyncContextManager[Watch]:
        """A :class:`Watch` of ``topic`` for the length of the block."""
        ...

    async def notify(self, topic: str) -> None:
        """Wake every watch of ``topic`` here, and (shared) on every other instance."""
        ...

    def state(self) -> CoordinationState:
        """``ok`` while wake-ups reach the other instances (or there is only this one);
        ``degraded`` while they do not (waiters then rely on their poll)."""
        ...

    async def run(self) -> None:
        """Receive other instances' wake-ups until cancelled (a no-op loop in process)."""
        ...

    async def aclose(self) -> None:
        """Close any connection; usable again afterwards."""
        ...
