"""Wake-ups: a nudge that something changed in the store, delivered to the waiters of every
Patchbay instance (Redis pub/sub when ``PATCHBAY_REDIS_URL`` is set) or of this process only.

A wake-up carries no data but its topic: a waiter that is woken re-reads the authoritative state
(the database) itself, and a waiter that is not woken (a lost message, Redis down) still re-reads
it after its own bounded poll interval. So a wake-up only makes a change arrive sooner.

* :mod:`~patchbay.adapters.wakeups.base` -- the :class:`Wakeups` protocol and :class:`Watch`;
* :mod:`~patchbay.adapters.wakeups.local` -- :class:`LocalWakeups`, in process;
* :mod:`~patchbay.adapters.wakeups.redis_pubsub` -- ``RedisWakeups`` (imported on use: it loads
  redis), one pub/sub connection per process with the ``ok``/``degraded`` state;
* :func:`open_wakeups` -- the one ``settings`` ask for.

Topics in use: ``approval:<id>`` and ``approvals`` (:mod:`patchbay.runtime.calls.approvals`),
``projection`` (a committed change: :mod:`patchbay.interfaces.gateway.fanout`). Each
implementation names its ``backend`` (``local`` or ``redis``, shown by ``/api/health``).
"""

from patchbay.adapters.wakeups.base import Wakeups, Watch
from patchbay.adapters.wakeups.local import LocalWakeups, open_wakeups

__all__ = ["LocalWakeups", "Wakeups", "Watch", "open_wakeups"]
