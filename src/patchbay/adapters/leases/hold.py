"""Holding a lease for the length of a block: wait for it, renew it in the background, release it.

A lease store answers at once (:mod:`patchbay.adapters.leases.base`); :func:`held` is the blocking
form the probe uses, :func:`wait_for` the waiting acquisition alone (for a holder that cannot run a
renewing task, e.g. inside an ``httpx2.Auth`` flow: its ttl must then cover what it does). It asks again with a growing pause (``poll`` seconds, doubling up to
``max_poll``) until the lease is granted, renews it every ``ttl / 3`` seconds while the block runs,
and releases it when the block ends, however it ends. A holder that dies stops renewing, so its
lease expires ``ttl`` seconds later at the latest and a waiter elsewhere takes it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from patchbay.adapters.leases.base import Lease, Leases

__all__ = ["held", "wait_for"]

logger = logging.getLogger(__name__)


async def wait_for(
    leases: Leases,
    key: str,
    owner: str,
    ttl: float,
    *,
    limit: int | None = None,
    poll: float = 0.05,
    max_poll: float = 0.5,
) -> Lease:
    """Take ``key`` for ``owner`` (one of ``limit`` places when ``limit`` is given), asking again
    every ``poll`` seconds (doubling up to ``max_poll``) while somebody else holds it.

    The lease is not renewed: release it (``leases.release``) before its ``ttl`` runs out, or
    use :func:`held`. Raises only the caller's cancellation (wrap it in a deadline to bound the
    wait).
    """
    pause = poll
    while True:
        if limit is None:
            lease = await leases.acquire(key, owner, ttl)
        else:
            lease = await leases.acquire_slot(key, owner, ttl, limit)
        if lease is not None:
            return lease
        await anyio.sleep(pause)
        pause = min(max_poll, pause * 2)


@asynccontextmanager
async def held(
    leases: Leases,
    key: str,
    owner: str,
    ttl: float,
    *,
    limit: int | None = None,
    poll: float = 0.05,
    max_poll: float = 0.5,
) -> AsyncIterator[Lease]:
    """Hold ``key`` for ``owner`` (one of ``limit`` places when ``limit`` is given) while the block
    runs.

    Usage::

        async with held(leases, "probe:conn-1", owner, ttl=30):
            ...                                   # nobody else holds probe:conn-1 meanwhile

    Args:
        leases: the store.
        key / owner: as for :meth:`Leases.acquire <patchbay.adapters.leases.base.Leases.acquire>`.
        ttl: seconds (> 0); renewed every ``ttl / 3``.
        limit: take a slot lease of ``limit`` places instead of a plain one.
        poll / max_poll: seconds between attempts while somebody else holds it.

    A renewal that finds the lease lost (expired during a stall, or Redis unreachable) is logged;
    the block is not interrupted. Raises only the caller's cancellation (wrap the block in a
    deadline to bound the wait).
    """
    lease = await wait_for(leases, key, owner, ttl, limit=limit, poll=poll, max_poll=max_poll)

    async def renew_until_cancelled() -> None:
        while True:
            await anyio.sleep(ttl / 3)
            if not await leases.renew(lease):
                logger.warning("lease %s of %s was lost before its holder was done", key, owner)
                return

    raised: BaseException | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(renew_until_cancelled)
            try:
                yield lease
            except BaseException as exc:  # re-raised below as it is, not wrapped in a group
                raised = exc
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(max(1.0, ttl)):
            await leases.release(lease)
    if raised is not None:
        raise raised
