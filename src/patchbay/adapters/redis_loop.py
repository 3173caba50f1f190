"""Closing a redis-py asyncio client that belongs to another event loop.

A redis-py asyncio client's pooled connections are asyncio streams of the event loop they were
opened on: they cannot be used, nor closed with ``await client.aclose()``, from another loop (on
a closed loop that raises ``RuntimeError: Event loop is closed`` and the sockets stay open). The
Redis users of this package (:class:`~patchbay.adapters.leases.redis_store.RedisLeases`,
:class:`~patchbay.adapters.wakeups.redis_pubsub.RedisWakeups`,
:class:`~patchbay.adapters.redis_status.RedisStatusRegistry`) therefore keep one client per
event loop and, when they are first used from a new loop, make a new client and hand the old one
to :func:`discard_client`, so that at most one client of each is open at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any

import redis.asyncio as aioredis

__all__ = ["discard_client"]

logger = logging.getLogger(__name__)


def discard_client(client: aioredis.Redis, loop: asyncio.AbstractEventLoop) -> None:
    """Close ``client``, whose connections belong to ``loop`` (not the running one). Never
    raises; never waits.

    * ``loop`` still running (in another thread): ``client.aclose()`` is scheduled on it
      (``asyncio.run_coroutine_threadsafe``), as redis-py asks: a client is closed on its loop.
    * ``loop`` closed or stopped: nothing can run on it any more, so each pooled connection's
      socket is shut down (Redis drops the client at once) and the pool forgets its connections;
      the sockets' file descriptors are closed when their transports are collected.
    """
    if not loop.is_closed() and loop.is_running():
        future = asyncio.run_coroutine_threadsafe(client.aclose(), loop)
        future.add_done_callback(_log_failure)
        return
    pool = client.connection_pool
    # redis-py has no public way to reach a pool's connections or their sockets from outside
    # their loop; read what it keeps, defensively (a missing attribute: nothing to shut down)
    connections: list[Any] = [
        *getattr(pool, "_available_connections", ()),
        *getattr(pool, "_in_use_connections", ()),
    ]
    for connection in connections:
        writer = getattr(connection, "_writer", None)
        sock = writer.get_extra_info("socket") if writer is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
    pool.reset()  # type: ignore[no-untyped-call, unused-ignore]


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.debug("closing a Redis client on its own event loop failed: %r", future.exception())
