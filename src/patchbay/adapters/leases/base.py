"""What a lease is, and the protocol every lease store implements.

A *lease* is a named lock with an expiry: one owner holds ``key`` until it releases it or until
``ttl`` seconds pass without a renewal, whichever comes first. A *slot* lease is one of ``limit``
places under a shared name (the global "at most N probes at once"); each holder's place expires
the same way. Both are non-blocking: ``acquire``/``acquire_slot`` answer at once, and
:func:`patchbay.adapters.leases.hold.held` is the waiting, renewing wrapper.

The rules every store keeps (the contract tests in ``tests/adapters/leases`` check both):

* ``acquire`` succeeds only when nobody holds the key, or its holder's lease expired;
* ``renew`` is compare-and-renew: it extends the lease only for its owner and only while it is
  still held (an expired lease is not revived: somebody else may hold it by now);
* ``release`` is owner-only: another owner's release is refused and changes nothing;
* a slot name never has more than ``limit`` live holders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["CoordinationState", "Lease", "Leases"]

CoordinationState = Literal["ok", "degraded"]
"""``ok``: leases are shared with the other instances (or there is only this one); ``degraded``:
the shared store is unreachable and leases only hold within this process."""


@dataclass(frozen=True)
class Lease:
    """A lease as its holder knows it.

    Attributes:
        key: the lease's name (a connector id for a probe lease, the limit's name for a slot).
        owner: who holds it; unique per holder (see :func:`patchbay.core.instance.instance_id`).
        ttl: seconds the lease lasts after its acquisition or last renewal.
        limit: for a slot lease, the number of places under ``key``; None for a plain lease.
        backend: which store granted it (``"local"`` or ``"redis"``), so a renewal or release goes
            back to the same store.
    """

    key: str
    owner: str
    ttl: float
    limit: int | None = None
    backend: str = "local"


class Leases(Protocol):
    """A lease store. Keys and owners are short strings; ``ttl`` is in seconds (> 0)."""

    async def acquire(self, key: str, owner: str, ttl: float) -> Lease | None:
        """Take ``key`` for ``owner`` for ``ttl`` seconds; None when somebody else holds it."""
        ...

    async def acquire_slot(self, key: str, owner: str, ttl: float, limit: int) -> Lease | None:
        """Take one of ``limit`` places under ``key``; None when all are held by live leases.

        An owner that already holds a place keeps it (and its expiry is extended)."""
        ...

    async def renew(self, lease: Lease) -> bool:
        """Extend ``lease`` by its ttl; False when its owner no longer holds it (expired, released,
        taken over) -- it is not taken again then."""
        ...

    async def release(self, lease: Lease) -> bool:
        """Give ``lease`` up; False (and nothing changed) when its owner does not hold it."""
        ...

    def state(self) -> CoordinationState:
        """Whether leases are shared with the other instances right now (no I/O)."""
        ...

    async def aclose(self) -> None:
        """Close any connection the store holds; the store may be used again afterwards."""
        ...
