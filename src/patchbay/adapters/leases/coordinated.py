"""Shared leases with an in-process fallback: what an instance uses when ``PATCHBAY_REDIS_URL`` is
set.

While Redis answers, every lease is taken in Redis and holds across instances (state ``ok``). When
a call to Redis fails (unreachable, too slow: it never waits longer than the Redis store's short
timeout), the instance logs it once, reports ``degraded`` and takes its leases in process instead:
it keeps serving, with serialisation and limits that hold only within itself. It asks Redis again
at most every ``retry_after`` seconds (on the next acquisition, or on :meth:`check`); the first
answer brings the state back to ``ok``. A lease keeps going to the store that granted it, so a lease
taken in process during an outage is released in process after Redis came back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from patchbay.adapters.leases.base import CoordinationState, Lease, Leases
from patchbay.adapters.leases.local import LocalLeases
from patchbay.core.errors import CoordinationUnavailable
from patchbay.core.settings import Settings

if TYPE_CHECKING:
    from patchbay.adapters.leases.redis_store import RedisLeases

__all__ = ["CoordinatedLeases", "open_leases"]

logger = logging.getLogger(__name__)


def open_leases(settings: Settings) -> Leases:
    """The lease store ``settings`` ask for: :class:`CoordinatedLeases` over Redis when
    ``settings.redis_url`` is set, else :class:`~patchbay.adapters.leases.local.LocalLeases`.

    Opens no connection (the Redis client connects on first use). Never raises."""
    if settings.redis_url is None:
        return LocalLeases()
    from patchbay.adapters.leases.redis_store import RedisLeases

    url = settings.redis_url.get_secret_value()
    return CoordinatedLeases(RedisLeases(url, prefix=f"{settings.redis_prefix}lease:", timeout=settings.redis_timeout))


class CoordinatedLeases:
    """:class:`~patchbay.adapters.leases.base.Leases` in Redis, falling back to in-process leases.

    Usage::

        leases = CoordinatedLeases(RedisLeases("redis://127.0.0.1:6379/0"))
        lease = await leases.acquire("probe:conn-1", owner, ttl=30)   # never raises for Redis
        leases.state()                                                 # "ok" | "degraded"

    Args:
        shared: the Redis store.
        local: the fallback; default a new :class:`LocalLeases`.
        retry_after: seconds between attempts to reach Redis again while degraded.
    """

    def __init__(self, shared: RedisLeases, local: LocalLeases | None = None, *, retry_after: float = 2.0) -> None:
        self.shared = shared
        self.local = local or LocalLeases()
        self.retry_after = retry_after
        self._degraded_at: float | None = None  # anyio time of the last failure while degraded

    def state(self) -> CoordinationState:
        """``ok`` while Redis answered last; ``degraded`` since a call to it failed."""
        return "ok" if self._degraded_at is None else "degraded"

    async def check(self) -> CoordinationState:
        """Ask Redis now (bounded by its timeout) and return the state that follows."""
        try:
            await self.shared.ping()
        except CoordinationUnavailable as exc:
            self._failed(exc)
        else:
            self._answered()
        return self.state()

    def _failed(self, exc: CoordinationUnavailable) -> None:
        if self._degraded_at is None:
            logger.warning("coordination degraded, leases hold in this process only: %s", exc.message)
        self._degraded_at = anyio.current_time()

    def _answered(self) -> None:
        if self._degraded_at is not None:
            logger.warning("coordination recovered: Redis at %s answers again", self.shared.display_url)
        self._degraded_at = None

    def _try_shared(self) -> bool:
        return self._degraded_at is None or anyio.current_time() - self._degraded_at >= self.retry_after

    async def acquire(self, key: str, owner: str, ttl: float) -> Lease | None:
        """See :meth:`Leases.acquire <patchbay.adapters.leases.base.Leases.acquire>`; in process
        while degraded."""
        if self._try_shared():
            try:
                lease = await self.shared.acquire(key, owner, ttl)
            except CoordinationUnavailable as exc:
                self._failed(exc)
            else:
                self._answered()
                return lease
        return await self.local.acquire(key, owner, ttl)

    async def acquire_slot(self, key: str, owner: str, ttl: float, limit: int) -> Lease | None:
        """See :meth:`Leases.acquire_slot <patchbay.adapters.leases.base.Leases.acquire_slot>`; in
        process while degraded."""
        if self._try_shared():
            try:
                lease = await self.shared.acquire_slot(key, owner, ttl, limit)
            except CoordinationUnavailable as exc:
                self._failed(exc)
            else:
                self._answered()
                return lease
        return await self.local.acquire_slot(key, owner, ttl, limit)

    async def renew(self, lease: Lease) -> bool:
        """See :meth:`Leases.renew <patchbay.adapters.leases.base.Leases.renew>`; a Redis lease
        that cannot be renewed because Redis is unreachable counts as lost (False)."""
        if lease.backend != self.shared.backend:
            return await self.local.renew(lease)
        try:
            renewed = await self.shared.renew(lease)
        except CoordinationUnavailable as exc:
            self._failed(exc)
            return False
        self._answered()
        return renewed

    async def release(self, lease: Lease) -> bool:
        """See :meth:`Leases.release <patchbay.adapters.leases.base.Leases.release>`; a Redis lease
        that cannot be released now expires after its ttl (False)."""
        if lease.backend != self.shared.backend:
            return await self.local.release(lease)
        try:
            released = await self.shared.release(lease)
        except CoordinationUnavailable as exc:
            self._failed(exc)
            return False
        self._answered()
        return released

    async def aclose(self) -> None:
        """Close the Redis connection pool."""
        await self.shared.aclose()
