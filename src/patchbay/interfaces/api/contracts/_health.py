"""The health answer (``GET /api/health``)."""

from __future__ import annotations

from typing import Literal

from patchbay.interfaces.api.contracts._base import _Response

__all__ = ["CoordinationHealth", "DatabaseHealth", "Health"]


class DatabaseHealth(_Response):
    """Whether this instance can read the canonical store now."""

    backend: Literal["sqlite", "postgresql"]
    ok: bool


class CoordinationHealth(_Response):
    """How instances coordinate: ``in-process`` (one instance; nothing shared but the database)."""

    backend: Literal["in-process"]


class Health(_Response):
    """``status`` alone for an unauthenticated caller (a load balancer's liveness probe); the
    details for one holding the API token."""

    status: Literal["ok", "degraded"]
    """``ok``: the store answers; ``degraded``: it does not (the routes that need it answer 503)."""
    instance: str | None = None
    """This process's instance id (``<hostname>-<pid>-<random>``); authenticated callers only."""
    database: DatabaseHealth | None = None
    coordination: CoordinationHealth | None = None
