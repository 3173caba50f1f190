"""Leases held in this process only: the single-instance default, and the fallback when Redis is
unreachable.

Expiry uses anyio's clock (:func:`anyio.current_time`), so one store belongs to one event loop.
Nothing here awaits anything but a checkpoint: the answers are immediate.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

from patchbay.adapters.leases.base import CoordinationState, Lease

__all__ = ["LocalLeases"]


class LocalLeases:
    """In-process :class:`~patchbay.adapters.leases.base.Leases`.

    Usage::

        leases = LocalLeases()
        lease = await leases.acquire("probe:conn-1", "me", ttl=30)
        ...
        await leases.release(lease)

    Its :meth:`state` is always ``ok``: with one instance there is nobody to coordinate with.
    """

    backend = "local"

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, float]] = {}  # key -> (owner, expires at)
        self._slots: dict[str, dict[str, float]] = {}  # key -> owner -> expires at

    def _live_owner(self, key: str) -> str | None:
        held = self._keys.get(key)
        if held is None:
            return None
        if held[1] <= anyio.current_time():
            del self._keys[key]
            return None
        return held[0]

    def _live_slots(self, key: str) -> dict[str, float]:
        now = anyio.current_time()
        places = {owner: until for owner, until in self._slots.get(key, {}).items() if until > now}
        if places:
            self._slots[key] = places
        else:
            self._slots.pop(key, None)
        return places

    async def acquire(self, key: str, owner: str, ttl: float) -> Lease | None:
        """See :meth:`Leases.acquire <patchbay.adapters.leases.base.Leases.acquire>`."""
        await anyio.lowlevel.checkpoint()
        if self._live_owner(key) is not None:
            return None
        self._keys[key] = (owner, anyio.current_time() + ttl)
        return Lease(key, owner, ttl, backend=self.backend)

    async def acquire_slot(self, key: str, owner: str, ttl: float, limit: int) -> Lease | None:
        """See :meth:`Leases.acquire_slot <patchbay.adapters.leases.base.Leases.acquire_slot>`."""
        await anyio.lowlevel.checkpoint()
        places = self._live_slots(key)
        if owner not in places and len(places) >= limit:
            return None
        self._slots.setdefault(key, places)[owner] = anyio.current_time() + ttl
        return Lease(key, owner, ttl, limit=limit, backend=self.backend)

    async def renew(self, lease: Lease) -> bool:
        """See :meth:`Leases.renew <patchbay.adapters.leases.base.Leases.renew>`."""
        await anyio.lowlevel.checkpoint()
        until = anyio.current_time() + lease.ttl
        if lease.limit is not None:
            places = self._live_slots(lease.key)
            if lease.owner not in places:
                return False
            places[lease.owner] = until
            return True
        if self._live_owner(lease.key) != lease.owner:
            return False
        self._keys[lease.key] = (lease.owner, until)
        return True

    async def release(self, lease: Lease) -> bool:
        """See :meth:`Leases.release <patchbay.adapters.leases.base.Leases.release>`."""
        await anyio.lowlevel.checkpoint()
        if lease.limit is not None:
            places = self._live_slots(lease.key)
            if places.pop(lease.owner, None) is None:
                return False
            if not places:
                self._slots.pop(lease.key, None)
            return True
        if self._live_owner(lease.key) != lease.owner:
            return False
        del self._keys[lease.key]
        return True

    def state(self) -> CoordinationState:
        """Always ``ok``."""
        return "ok"

    async def aclose(self) -> None:
        """Nothing to close."""
        await anyio.lowlevel.checkpoint()
