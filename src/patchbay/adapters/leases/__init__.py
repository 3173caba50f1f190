"""Leases: named locks with an expiry, shared across Patchbay instances through Redis when
``PATCHBAY_REDIS_URL`` is set, held in process otherwise.

* :mod:`~patchbay.adapters.leases.base` -- :class:`Lease` and the :class:`Leases` protocol;
* :mod:`~patchbay.adapters.leases.local` -- :class:`LocalLeases`, in process (anyio clock);
* :mod:`~patchbay.adapters.leases.redis_store` -- ``RedisLeases`` (imported on use: it loads redis);
* :mod:`~patchbay.adapters.leases.coordinated` -- :class:`CoordinatedLeases`, Redis with the
  in-process fallback and the ``ok``/``degraded`` state, and :func:`open_leases`;
* :mod:`~patchbay.adapters.leases.hold` -- :func:`held`, wait + renew + release around a block,
  and :func:`wait_for`, the waiting acquisition alone.
"""

from patchbay.adapters.leases.base import CoordinationState, Lease, Leases
from patchbay.adapters.leases.coordinated import CoordinatedLeases, open_leases
from patchbay.adapters.leases.hold import held, wait_for
from patchbay.adapters.leases.local import LocalLeases

__all__ = [
    "CoordinatedLeases",
    "CoordinationState",
    "Lease",
    "Leases",
    "LocalLeases",
    "held",
    "open_leases",
    "wait_for",
]
