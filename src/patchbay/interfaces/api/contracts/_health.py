"""The health answer (``GET /api/health``)."""

from __future__ import annotations

from typing import Literal

from patchbay.interfaces.api.contracts._base import _Response

__all__ = ["CoordinationHealth", "DatabaseHealth", "Health", "WakeupsHealth"]


class DatabaseHealth(_Response):
    """Whether this instance can read the canonical store now."""

    backend: Literal["sqlite", "postgresql"]
    ok: bool


class CoordinationHealth(_Response):
    """How instances coordinate: ``in-process`` (no ``PATCHBAY_REDIS_URL``: nothing shared but the
    database; always ok) or ``redis``, ok while Redis answers (else this instance takes its
    leases in process: degraded)."""

    backend: Literal["in-process", "redis"]
    ok: bool


class WakeupsHealth(_Response):
    """How committed changes and approval answers wake the other instances: ``local`` (no
    ``PATCHBAY_REDIS_URL``: this process only; always ``ok``) or ``redis`` (pub/sub), ``degraded``
    while Redis does not answer or the subscription is down (the gateways and approvals then
    rely on their poll of the store)."""

    backend: Literal["local", "redis"]
    state: Literal["ok", "degraded"]


class Health(_Response):
    """``status`` alone for an unauthenticated caller (a load balancer's liveness probe); the
    details for one holding the API token."""

    status: Literal["ok", "degraded"]
    """``ok``: the store (and Redis, when configured) answers; ``degraded``: one does not (the
    routes that need the store answer 503; without Redis the coordination holds in process only
    and wake-ups reach this process only)."""
    instance: str | None = None
    """This process's instance id (``<hostname>-<pid>-<random>``); authenticated callers only."""
    database: DatabaseHealth | None = None
    coordination: CoordinationHealth | None = None
    wakeups: WakeupsHealth | None = None
