"""Leases in Redis, shared by every Patchbay instance that uses the same Redis.

The standard single-instance Redis lock patterns, with the redis-py asyncio client:

* a plain lease is one key: ``SET <prefix><key> <owner> NX PX <ttl ms>`` takes it; renewing and
  releasing are Lua scripts (``register_script``) that compare the stored owner first, so only the
  owner can extend (``PEXPIRE``) or delete it, and only while it still holds it;
* a slot limit is one sorted set ``<prefix><key>`` of holders scored by their expiry (milliseconds
  of the Redis server's clock, ``TIME``). One script drops the expired members, counts the rest and
  adds the owner when there is room; renewing rescores a live member, releasing removes it. A sorted
  set rather than N keyed slots: one key and one round trip whatever the limit, the limit can change
  between instances' settings without renaming keys, and ``ZRANGE ... WITHSCORES`` shows who holds
  what until when. The set itself expires once its last member would, so a crashed fleet leaves
  nothing behind.

Expiry always uses the Redis server's clock, so instances with skewed clocks still agree.

Nothing here waits long: the socket connect and read timeouts are short (``timeout`` seconds,
default 0.5), redis-py's own retries are off, and every call is bounded by ``timeout`` as well. A
Redis that cannot be reached, answers too slowly or refuses a command (a wrong password, out of
memory) raises
:class:`~patchbay.core.errors.CoordinationUnavailable`; the caller decides what to fall back to
(:class:`patchbay.adapters.leases.coordinated.CoordinatedLeases`).

The client is created on first use, inside the running (asyncio) event loop, whose streams its
pooled connections are. Used from another event loop later (the CLI and tests run one loop after
another), the store makes a client for that loop and closes the previous one on its own loop, or
shuts its sockets down when that loop is gone (:func:`~patchbay.adapters.redis_loop.discard_client`):
at most one client of a store is open at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript

from patchbay.adapters.leases.base import CoordinationState, Lease
from patchbay.adapters.redis_loop import discard_client
from patchbay.core.errors import CoordinationUnavailable
from patchbay.core.instance import instance_id
from patchbay.core.redaction import redact_url

__all__ = ["RedisLeases"]

_T = TypeVar("_T")

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS[1] the set; ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] limit (0 = renew only: never add).
_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not held then
  local limit = tonumber(ARGV[3])
  if limit == 0 or redis.call('ZCARD', KEYS[1]) >= limit then
    return 0
  end
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
"""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisLeases:
    """:class:`~patchbay.adapters.leases.base.Leases` in Redis.

    Usage::

        leases = RedisLeases("redis://127.0.0.1:6379/0")
        lease = await leases.acquire("probe:conn-1", instance_id(), ttl=30)
        ...
        await leases.aclose()

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL (it may carry a password; only its
            redacted form is ever shown, see :attr:`display_url`).
        prefix: put before every key (tests use a unique one each).
        timeout: seconds for connecting, for each reply, and for each whole call.

    Every method raises :class:`~patchbay.core.errors.CoordinationUnavailable`
    (``coordination_unavailable``) when Redis cannot be reached or answers too slowly.
    """

    backend = "redis"

    def __init__(self, url: str, *, prefix: str = "patchbay:lease:", timeout: float = 0.5) -> None:
        self._url = url
        self.prefix = prefix
        self.timeout = timeout
        self._client: aioredis.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scripts: dict[str, AsyncScript] = {}

    @property
    def display_url(self) -> str:
        """The URL with any password masked."""
        return redact_url(self._url)

    def _redis(self) -> aioredis.Redis:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # a pool's connections belong to one loop
            old, old_loop = self._client, self._loop
            self._loop = loop
            client = aioredis.Redis.from_url(
                self._url,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                retry=Retry(NoBackoff(), 0),
                health_check_interval=0,
                client_name=f"patchbay-lease-{instance_id()}",
            )
            self._scripts = {
                "renew": client.register_script(_RENEW),
                "release": client.register_script(_RELEASE),
                "slot": client.register_script(_SLOT),
            }
            self._client = client
            if old is not None and old_loop is not None:
                discard_client(old, old_loop)  # at most one client open: close the other loop's
        return self._client

    async def _call(self, call: Awaitable[_T]) -> _T:
        try:
            with anyio.fail_after(self.timeout * 2):
                return await call
        except (redis.exceptions.RedisError, TimeoutError, OSError) as exc:  # refused, slow, auth, OOM, ...
            raise CoordinationUnavailable(f"Redis at {self.display_url} is unavailable: {type(exc).__name__}") from exc

    async def _script(self, name: str, key: str, *args: Any) -> int:
        self._redis()
        return int(await self._call(self._scripts[name](keys=[self.prefix + key], args=list(args))))

    async def acquire(self, key: str, owner: str, ttl: float) -> Lease | None:
        """See :meth:`Leases.acquire <patchbay.adapters.leases.base.Leases.acquire>`."""
        taken = await self._call(self._redis().set(self.prefix + key, owner, nx=True, px=_ms(ttl)))
        return Lease(key, owner, ttl, backend=self.backend) if taken else None

    async def acquire_slot(self, key: str, owner: str, ttl: float, limit: int) -> Lease | None:
        """See :meth:`Leases.acquire_slot <patchbay.adapters.leases.base.Leases.acquire_slot>`."""
        taken = await self._script("slot", key, owner, _ms(ttl), max(1, limit))
        return Lease(key, owner, ttl, limit=limit, backend=self.backend) if taken else None

    async def renew(self, lease: Lease) -> bool:
        """See :meth:`Leases.renew <patchbay.adapters.leases.base.Leases.renew>`."""
        if lease.limit is not None:
            return await self._script("slot", lease.key, lease.owner, _ms(lease.ttl), 0) == 1
        return await self._script("renew", lease.key, lease.owner, _ms(lease.ttl)) == 1

    async def release(self, lease: Lease) -> bool:
        """See :meth:`Leases.release <patchbay.adapters.leases.base.Leases.release>`."""
        if lease.limit is not None:
            return int(await self._call(self._redis().zrem(self.prefix + lease.key, lease.owner))) == 1
        return await self._script("release", lease.key, lease.owner) == 1

    async def ping(self) -> None:
        """Check that Redis answers.

        Raises:
            CoordinationUnavailable: ``coordination_unavailable``.
        """
        await self._call(self._redis().ping())

    def state(self) -> CoordinationState:
        """``ok``: this store has no fallback of its own (see ``CoordinatedLeases``)."""
        return "ok"

    async def aclose(self) -> None:
        """Close the connection pool (on its own event loop when it was opened on another one);
        the next call opens a new one."""
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is None:
            return
        if loop is not None and loop is not asyncio.get_running_loop():
            discard_client(client, loop)
            return
        with anyio.move_on_after(self.timeout, shield=True):
            await client.aclose()
