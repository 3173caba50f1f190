"""The live status registry shared by every Patchbay instance on one Redis
(:class:`RedisStatusRegistry`, used by ``patchbay serve`` when ``PATCHBAY_REDIS_URL`` is set).

The :class:`~patchbay.core.live_status.StatusRegistry` contract says every method returns at
once, and its callers (a runtime's status feed, the API's routes, some in worker threads) are
synchronous. So no method of the registry talks to Redis: it keeps this instance's sources in
memory, as the in-process registry does, plus a *mirror* of the other instances' sources, and
:meth:`RedisStatusRegistry.sync` (run every ``interval`` seconds by :meth:`RedisStatusRegistry.run`)
exchanges them with Redis: it writes the sources that changed since the last sync and reads
everyone's. Another instance sees a change within about two intervals (one second each by
default); a test calls :meth:`~RedisStatusRegistry.sync` itself.

In Redis, under ``<prefix>`` (``Settings.redis_prefix`` + ``live:``):

* ``<prefix>source:<source>`` -- a hash per source (one hosted runtime): connector id -> the
  entry as JSON, only the fields of :class:`~patchbay.core.live_status.ConnectorLive` (a state
  word, counts, Unix times; never a URL, header, schema or credential). It expires
  :data:`~patchbay.core.live_status.LIVE_TTL` seconds after its last write (Redis-side
  ``PEXPIRE``), so an instance that died leaves nothing behind; a heartbeat (:meth:`touch`)
  rewrites it;
* ``<prefix>sources`` -- the set of source ids, so a read needs no ``SCAN``; a member whose hash
  expired is dropped by the next read. It expires with the last source written.

Redis down or too slow (every call is bounded by ``timeout`` seconds, redis-py's retries off): the
sync fails with :class:`~patchbay.core.errors.CoordinationUnavailable`, the registry logs it once,
reports ``degraded`` (:meth:`state`), forgets the mirror and answers from this instance's sources
only -- exactly what the in-process registry would answer. It tries Redis again at the next sync;
the first that works writes every source of this instance again (catching up) and reads the
others'.

Entry times are the writing instance's clock; instances are expected to keep their clocks within
a few seconds of each other (the TTL is 90 s).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar, get_args

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from patchbay.adapters.leases.base import CoordinationState
from patchbay.adapters.redis_loop import discard_client
from patchbay.core.errors import CoordinationUnavailable
from patchbay.core.instance import instance_id
from patchbay.core.live_status import LIVE_TTL, ConnectorLive, LiveState, LiveStatus, aggregate
from patchbay.core.redaction import redact_url

__all__ = ["RedisStatusRegistry", "decode_entry", "encode_entry"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_STATES: frozenset[str] = frozenset(get_args(LiveState))

_FORGET_AFTER = 10
"""This instance's entries older than this many TTLs are dropped (a runtime that never withdrew)."""


def encode_entry(entry: ConnectorLive) -> str:
    """``entry`` as the compact JSON stored in Redis: exactly the fields of
    :class:`~patchbay.core.live_status.ConnectorLive`."""
    return json.dumps(dataclasses.asdict(entry), separators=(",", ":"), sort_keys=True)


def _number(value: object, *, integer: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) if integer else True


def decode_entry(raw: str | bytes) -> ConnectorLive | None:
    """The entry stored as ``raw``; None for anything that is not one (bad JSON, an unknown
    state, a field of the wrong type, a field too many): a shared Redis is not trusted to hold
    only what Patchbay wrote."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    names = {f.name for f in dataclasses.fields(ConnectorLive)}
    if not isinstance(data, dict) or set(data) != names:
        return None
    if not isinstance(data["connector_id"], str) or data["state"] not in _STATES:
        return None
    if not all(_number(data[k], integer=True) and data[k] >= 0 for k in ("tool_count", "restarts", "in_flight")):
        return None
    if data["resource_count"] is not None and not _number(data["resource_count"], integer=True):
        return None
    if data["failed_at"] is not None and not _number(data["failed_at"], integer=False):
        return None
    if not _number(data["updated_at"], integer=False):
        return None
    return ConnectorLive(**data)


class RedisStatusRegistry:
    """A :class:`~patchbay.core.live_status.StatusRegistry` shared through Redis.

    Usage::

        registry = RedisStatusRegistry("redis://127.0.0.1:6379/0", prefix="patchbay:live:")
        async with anyio.create_task_group() as group:
            group.start_soon(registry.run)          # sync every second until cancelled
            registry.publish("rt_1", [ConnectorLive("con_x", "connected", tool_count=2)])
            registry.read("con_x")                  # this instance's and every other's sources
            ...
            group.cancel_scope.cancel()
        await registry.aclose()                     # final write of the withdrawals, then close

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL (a password in it is only ever shown
            redacted, see :attr:`display_url`).
        prefix: put before every key.
        timeout: seconds for connecting, for each reply, and for each whole sync step.
        ttl: seconds an entry stays fresh, and the Redis-side expiry of a source's hash.
        interval: seconds between two syncs in :meth:`run`.
        clock: Unix seconds now (tests inject one).

    Thread-safe for the :class:`StatusRegistry` methods; :meth:`sync`, :meth:`run`, :meth:`check`
    and :meth:`aclose` belong to one event loop.
    """

    backend = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "patchbay:live:",
        timeout: float = 0.5,
        ttl: float = LIVE_TTL,
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._url = url
        self.prefix = prefix
        self.timeout = timeout
        self.ttl = ttl
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._own: dict[str, dict[str, ConnectorLive]] = {}
        self._dirty: set[str] = set()  # own sources to write at the next sync
        self._gone: set[str] = set()  # withdrawn sources to delete at the next sync
        self._mirror: dict[str, dict[str, ConnectorLive]] = {}  # other instances' sources
        self._degraded = False
        self._client: aioredis.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def display_url(self) -> str:
        """The URL with any password masked."""
        return redact_url(self._url)

    # -- StatusRegistry (no I/O) ------------------------------------------------------------

    def publish(self, source: str, entries: Iterable[ConnectorLive]) -> None:
        """See :meth:`StatusRegistry.publish <patchbay.core.live_status.StatusRegistry.publish>`;
        written to Redis at the next sync."""
        now = self._clock()
        with self._lock:
            mine = self._own.setdefault(source, {})
            for entry in entries:
                mine[entry.connector_id] = dataclasses.replace(entry, updated_at=now)
            self._dirty.add(source)
            self._gone.discard(source)

    def touch(self, source: str) -> None:
        """See :meth:`StatusRegistry.touch <patchbay.core.live_status.StatusRegistry.touch>`; the
        source's hash is rewritten (and its expiry reset) at the next sync."""
        now = self._clock()
        with self._lock:
            mine = self._own.get(source)
            if mine is not None:
                for key, entry in mine.items():
                    mine[key] = dataclasses.replace(entry, updated_at=now)
                self._dirty.add(source)

    def withdraw(self, source: str) -> None:
        """See :meth:`StatusRegistry.withdraw <patchbay.core.live_status.StatusRegistry.withdraw>`;
        deleted from Redis at the next sync (or at :meth:`aclose`)."""
        with self._lock:
            if self._own.pop(source, None) is not None:
                self._gone.add(source)
            self._dirty.discard(source)

    def _entries(self) -> dict[str, list[ConnectorLive]]:
        """Every entry by connector: this instance's, and the mirror unless degraded (under the
        lock)."""
        limit = self._clock() - self.ttl * _FORGET_AFTER
        for source in list(self._own):
            mine = self._own[source]
            for key in [k for k, e in mine.items() if e.updated_at < limit]:
                del mine[key]
        by_connector: dict[str, list[ConnectorLive]] = {}
        sources = list(self._own.items())
        if not self._degraded:
            sources += [(s, m) for s, m in self._mirror.items() if s not in self._own and s not in self._gone]
        for _, mine in sources:
            for connector_id, entry in mine.items():
                by_connector.setdefault(connector_id, []).append(entry)
        return by_connector

    def read(self, connector_id: str) -> LiveStatus | None:
        """See :meth:`StatusRegistry.read <patchbay.core.live_status.StatusRegistry.read>`: over
        every instance's sources as of the last sync (this instance's only while degraded)."""
        with self._lock:
            entries = self._entries().get(connector_id, [])
        return aggregate(entries, now=self._clock(), ttl=self.ttl)

    def read_all(self) -> Mapping[str, LiveStatus]:
        """See :meth:`StatusRegistry.read_all <patchbay.core.live_status.StatusRegistry.read_all>`."""
        with self._lock:
            by_connector = self._entries()
        now = self._clock()
        result: dict[str, LiveStatus] = {}
        for connector_id, entries in by_connector.items():
            status = aggregate(entries, now=now, ttl=self.ttl)
            if status is not None:
                result[connector_id] = status
        return result

    # -- coordination ----------------------------------------------------------------------

    def state(self) -> CoordinationState:
        """``ok`` while the last sync reached Redis; ``degraded`` since one failed (no I/O)."""
        return "degraded" if self._degraded else "ok"

    def _redis(self) -> aioredis.Redis:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # a pool's connections belong to one loop
            old, old_loop = self._client, self._loop
            try:
                client = aioredis.Redis.from_url(
                    self._url,
                    socket_timeout=self.timeout,
                    socket_connect_timeout=self.timeout,
                    retry=Retry(NoBackoff(), 0),
                    health_check_interval=0,
                    client_name=f"patchbay-status-{instance_id()}",
                )
            except ValueError as exc:  # a URL redis-py cannot use: never reachable
                raise CoordinationUnavailable(f"Redis at {self.display_url} is unavailable: {exc}") from exc
            self._loop, self._client = loop, client
            if old is not None and old_loop is not None:
                discard_client(old, old_loop)  # at most one client open: close the other loop's
        return self._client

    async def _call(self, awaitable: Awaitable[_T]) -> _T:
        try:
            with anyio.fail_after(self.timeout):
                return await awaitable
        except (redis.exceptions.RedisError, TimeoutError, OSError) as exc:  # refused, slow, auth, OOM, ...
            raise CoordinationUnavailable(f"Redis at {self.display_url} is unavailable: {type(exc).__name__}") from exc

    def _failed(self, exc: CoordinationUnavailable) -> None:
        with self._lock:
            if not self._degraded:
                logger.warning("coordination degraded, live status is this instance's only: %s", exc.message)
            self._degraded = True
            self._mirror = {}
            self._dirty |= set(self._own)  # written again once Redis answers

    def _answered(self) -> None:
        if self._degraded:
            logger.warning("coordination recovered: Redis at %s answers again", self.display_url)
        self._degraded = False

    async def check(self) -> CoordinationState:
        """Ask Redis now (bounded by ``timeout``) and return the state that follows."""
        try:
            await self._call(self._redis().ping())
        except CoordinationUnavailable as exc:
            self._failed(exc)
        else:
            self._answered()
        return self.state()

    async def _write(self) -> None:
        """Write the changed sources and delete the withdrawn ones, in one transaction."""
        with self._lock:
            dirty = {s: list(self._own[s].values()) for s in self._dirty if s in self._own}
            gone = set(self._gone)
            self._dirty.clear()
            self._gone.clear()
        if not dirty and not gone:
            return
        ttl_ms = max(1, int(self.ttl * 1000))
        index = self.prefix + "sources"
        try:
            pipe = self._redis().pipeline(transaction=True)
            for source in gone:
                pipe.delete(self.prefix + "source:" + source)
                pipe.srem(index, source)
            for source, entries in dirty.items():
                key = self.prefix + "source:" + source
                pipe.delete(key)
                if entries:
                    pipe.hset(key, mapping={e.connector_id: encode_entry(e) for e in entries})
                    pipe.pexpire(key, ttl_ms)
                pipe.sadd(index, source)
            if dirty:
                pipe.pexpire(index, ttl_ms)
            await self._call(pipe.execute())
        except BaseException:
            with self._lock:  # not written: next time (a source withdrawn meanwhile stays gone)
                self._dirty |= {s for s in dirty if s in self._own}
                self._gone |= {s for s in gone if s not in self._own}
            raise

    async def _read(self) -> dict[str, dict[str, ConnectorLive]]:
        """Every source in Redis, decoded; drops index members whose hash expired."""
        client = self._redis()
        index = self.prefix + "sources"
        members = await self._call(client.smembers(index))
        sources = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)
        if not sources:
            return {}
        pipe = client.pipeline(transaction=False)
        for source in sources:
            pipe.hgetall(self.prefix + "source:" + source)
        hashes: list[Any] = await self._call(pipe.execute())
        found: dict[str, dict[str, ConnectorLive]] = {}
        expired: list[str] = []
        for source, fields in zip(sources, hashes, strict=True):
            if not fields:
                expired.append(source)
                continue
            entries = {}
            for connector_id, raw in fields.items():
                entry = decode_entry(raw)
                cid = connector_id.decode() if isinstance(connector_id, bytes) else str(connector_id)
                if entry is not None and entry.connector_id == cid:
                    entries[cid] = entry
            found[source] = entries
        if expired:
            await self._call(client.srem(index, *expired))
        return found

    async def sync(self) -> CoordinationState:
        """Write this instance's changes to Redis and read every instance's sources; returns the
        state that follows. Never raises for Redis (a failure degrades, see the module); bounded
        by about three ``timeout``\\ s (six when a pooled connection broke, see below).

        A connection of the pool that Redis closed (Redis restarted since the last sync) fails
        its first command: while the registry was ``ok``, a connection error is tried once more
        on a new connection before it counts as an outage. A timeout is not tried again."""
        retry = not self._degraded
        while True:
            try:
                await self._write()
                found = await self._read()
            except CoordinationUnavailable as exc:
                if retry and isinstance(exc.__cause__, redis.exceptions.ConnectionError):
                    retry = False
                    continue
                self._failed(exc)
            else:
                with self._lock:
                    self._mirror = found
                self._answered()
            return self.state()

    async def run(self) -> None:
        """:meth:`sync` every ``interval`` seconds until cancelled (run it in a task group)."""
        while True:
            await self.sync()
            await anyio.sleep(self.interval)

    async def aclose(self) -> None:
        """Delete the withdrawn sources from Redis (bounded, shielded), then close the connection
        pool (on its own event loop when it was opened on another one); the next sync opens a new
        one."""
        with anyio.CancelScope(shield=True):
            if self._client is not None and not self._degraded:
                try:
                    await self._write()
                except CoordinationUnavailable as exc:
                    self._failed(exc)
            client, loop = self._client, self._loop
            self._client = self._loop = None
            if client is None:
                return
            if loop is not None and loop is not asyncio.get_running_loop():
                discard_client(client, loop)  # a pool is closed on its own loop, or shut down
                return
            with anyio.move_on_after(self.timeout):
                await client.aclose()
