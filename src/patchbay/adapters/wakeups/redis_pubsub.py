"""Wake-ups shared by every Patchbay instance on one Redis: one pub/sub channel, one subscribing
connection per process.

:meth:`RedisWakeups.notify` wakes this process's watches at once and ``PUBLISH``\\ es the topic on
the channel (``<redis_prefix>wake``); :meth:`RedisWakeups.run` keeps one connection ``SUBSCRIBE``\\ d
to it and wakes the watches of each topic that arrives (its own messages included: a waiter woken
twice just re-reads the store once more). Publishing uses a separate ordinary connection, as pub/sub
requires.

Failure: every command is bounded by ``timeout`` seconds with redis-py's retries off. A publish that
fails, or a subscription that drops, logs once and reports ``degraded``; waiters then rely on
their own poll (a wake-up is only a nudge). :meth:`run` subscribes again every ``retry_after``
seconds, and each new subscription wakes every watch of the process, since messages published
meanwhile were lost: everyone re-reads the store. :meth:`aclose` and the cancellation of
:meth:`run` close both connections, so the number of connections of a process stays one
subscriber plus at most one publisher however often it reconnects. The publishing client belongs
to the event loop it was made on: used from a new loop, it is replaced and the old one closed on
its own loop, or shut down when that loop is gone
(:func:`~patchbay.adapters.redis_loop.discard_client`). :meth:`RedisWakeups.check` asks Redis
now (``/api/health``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from patchbay.adapters.leases.base import CoordinationState
from patchbay.adapters.redis_loop import discard_client
from patchbay.adapters.wakeups.base import Watch, WatchRegistry
from patchbay.core.errors import CoordinationUnavailable
from patchbay.core.instance import instance_id
from patchbay.core.redaction import redact_url

__all__ = ["RedisWakeups"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class RedisWakeups:
    """:class:`~patchbay.adapters.wakeups.base.Wakeups` over Redis pub/sub.

    Usage::

        wakeups = RedisWakeups("redis://127.0.0.1:6379/0", channel="patchbay:wake")
        async with anyio.create_task_group() as group:
            group.start_soon(wakeups.run)               # the one subscription of this process
            async with wakeups.watch("approval:apr_1") as watch:
                await watch.wait(2.0)           # another instance's notify wakes it
            group.cancel_scope.cancel()
        await wakeups.aclose()

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL (only shown redacted).
        channel: the pub/sub channel.
        timeout: seconds for connecting and for each command.
        retry_after: seconds between attempts to subscribe again after a failure.

    Connections are named ``patchbay-wake-<instance id>`` (``CLIENT LIST``). Use it from one event
    loop.
    """

    backend = "redis"

    def __init__(self, url: str, *, channel: str = "patchbay:wake", timeout: float = 0.5, retry_after: float = 2.0):
        self._url = url
        self.channel = channel
        self.timeout = timeout
        self.retry_after = retry_after
        self.client_name = f"patchbay-wake-{instance_id()}"
        self._registry = WatchRegistry()
        self._publisher: aioredis.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._degraded = False
        self.subscribed = anyio.Event()
        """Set once the subscription is up (replaced by a new, unset one when it drops)."""

    @property
    def display_url(self) -> str:
        """The URL with any password masked."""
        return redact_url(self._url)

    def _client(self, *, subscriber: bool) -> aioredis.Redis:
        """A new client (no connection yet).

        Raises:
            CoordinationUnavailable: ``coordination_unavailable`` for a URL redis-py cannot use.
        """
        try:
            return aioredis.Redis.from_url(
                self._url,
                # the subscriber's reads wait for messages (bounded by get_message's own timeout)
                socket_timeout=None if subscriber else self.timeout,
                socket_connect_timeout=self.timeout,
                retry=Retry(NoBackoff(), 0),
                health_check_interval=0,
                client_name=self.client_name,
            )
        except ValueError as exc:
            raise CoordinationUnavailable(f"Redis at {self.display_url} is unavailable: {exc}") from exc

    async def _call(self, awaitable: Awaitable[_T]) -> _T:
        try:
            with anyio.fail_after(self.timeout):
                return await awaitable
        except (redis.exceptions.RedisError, TimeoutError, OSError) as exc:
            raise CoordinationUnavailable(f"Redis at {self.display_url} is unavailable: {type(exc).__name__}") from exc

    def _failed(self, exc: CoordinationUnavailable) -> None:
        if not self._degraded:
            logger.warning("coordination degraded, wake-ups reach this process only: %s", exc.message)
        self._degraded = True

    def _answered(self) -> None:
        if self._degraded:
            logger.warning("coordination recovered: Redis at %s answers again", self.display_url)
        self._degraded = False

    def state(self) -> CoordinationState:
        """``degraded`` since a publish or the subscription failed, until the next that works."""
        return "degraded" if self._degraded else "ok"

    @asynccontextmanager
    async def watch(self, topic: str) -> AsyncIterator[Watch]:
        """See :meth:`Wakeups.watch <patchbay.adapters.wakeups.base.Wakeups.watch>`."""
        async with self._registry.watch(topic) as watch:
            yield watch

    def _publishing(self) -> aioredis.Redis:
        """The publishing client of the running event loop (a pool's connections belong to one
        loop: a client made on another loop is closed there, see
        :func:`~patchbay.adapters.redis_loop.discard_client`).

        Raises:
            CoordinationUnavailable: ``coordination_unavailable`` for a URL redis-py cannot use.
        """
        loop = asyncio.get_running_loop()
        if self._publisher is None or self._loop is not loop:
            old, old_loop = self._publisher, self._loop
            self._publisher = self._client(subscriber=False)
            self._loop = loop
            if old is not None and old_loop is not None:
                discard_client(old, old_loop)
        return self._publisher

    async def notify(self, topic: str) -> None:
        """Wake the watches of ``topic`` here at once, then publish it to the other instances
        (bounded by ``timeout``, twice when the first attempt found its connection closed; a
        failure degrades, it never raises)."""
        self._registry.wake(topic)
        for attempt in range(2):
            try:
                await self._call(self._publishing().publish(self.channel, topic))
            except CoordinationUnavailable as exc:
                # a pooled connection Redis closed (it restarted) fails once: try a new one
                if attempt == 0 and isinstance(exc.__cause__, redis.exceptions.ConnectionError):
                    continue
                self._failed(exc)
            else:
                self._answered()
            return

    async def check(self) -> CoordinationState:
        """Ask Redis now (a ``PING`` on the publishing connection, bounded by ``timeout``): when
        it does not answer :meth:`state` is ``degraded`` from now on; returns :meth:`state`.
        Never raises."""
        try:
            await self._call(self._publishing().ping())
        except CoordinationUnavailable as exc:
            self._failed(exc)
        else:
            self._answered()
        return self.state()

    async def _subscription(self) -> None:
        """One subscription, until it fails (raises CoordinationUnavailable) or is cancelled."""
        client = self._client(subscriber=True)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await self._call(pubsub.subscribe(self.channel))
            self._answered()
            self._registry.wake_all()  # whatever was published before now is lost: re-read
            self.subscribed.set()
            while True:
                try:
                    message: Any = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                except (redis.exceptions.RedisError, OSError) as exc:
                    raise CoordinationUnavailable(
                        f"Redis at {self.display_url} is unavailable: {type(exc).__name__}"
                    ) from exc
                if message is not None and message.get("type") == "message":
                    data = message.get("data")
                    self._registry.wake(data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data))
        finally:
            if self.subscribed.is_set():
                self.subscribed = anyio.Event()
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout):
                await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed from redis 8.2
                await client.aclose()

    async def run(self) -> None:
        """Keep the subscription up until cancelled; after a failure try again every
        ``retry_after`` seconds."""
        while True:
            try:
                await self._subscription()
            except CoordinationUnavailable as exc:
                self._failed(exc)
            await anyio.sleep(self.retry_after)

    async def aclose(self) -> None:
        """Close the publishing connection (on its own event loop when it was opened on another
        one; the subscription closes when :meth:`run` is cancelled); usable again afterwards."""
        publisher, loop = self._publisher, self._loop
        self._publisher = self._loop = None
        if publisher is None:
            return
        if loop is not None and loop is not asyncio.get_running_loop():
            discard_client(publisher, loop)
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout):
            await publisher.aclose()
