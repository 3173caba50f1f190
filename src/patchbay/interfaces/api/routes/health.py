"""The health route: ``GET /api/health``, for a load balancer and for operators.

Unauthenticated (a liveness probe carries no token) it answers ``{"status"}`` only: ``ok`` or
``degraded``, nothing about the host, the store or the process. With the API token (or a
login's cookie, or on a ``--no-auth`` server) it adds this process's instance id, the store's
backend and whether it answers, the coordination backend (``in-process``, or ``redis``
and whether Redis answers) and the wake-ups' backend and state (``local``, or ``redis``:
``degraded`` while Redis does not answer or the subscription is down, asked now). Always 200:
``degraded`` is an answer, not an error (docs/security.md "Health").
"""

from __future__ import annotations

from typing import Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

import patchbay.interfaces.api.contracts as c
from patchbay.core.errors import PatchbayError
from patchbay.core.instance import instance_id
from patchbay.interfaces.api.auth import HEALTH_PATH, request_access
from patchbay.interfaces.api.context import ApiContext
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import Context

__all__ = ["DATABASE_CHECK_SECONDS", "router"]

router = APIRouter(tags=["health"])

DATABASE_CHECK_SECONDS = 3.0
"""How long the health answer waits for the store before it calls it not ok."""


def _read_store(context: ApiContext) -> bool:
    try:
        context.connector_service().repository.state_version()
    except (PatchbayError, SQLAlchemyError, OSError):
        return False
    return True


async def _database_ok(context: ApiContext) -> bool:
    with anyio.move_on_after(DATABASE_CHECK_SECONDS):
        return await anyio.to_thread.run_sync(_read_store, context, abandon_on_cancel=True)
    return False


async def _shared_ok(shared: object) -> bool:
    """Whether one coordination user (a lease store, a status registry) reaches Redis: asked now
    through its ``check()`` when it has one, else its last known ``state()``; one with neither
    coordinates nothing (in process): ok."""
    check = getattr(shared, "check", None)
    if check is not None:
        with anyio.move_on_after(DATABASE_CHECK_SECONDS):
            return bool((await check()) == "ok")
        return False
    state = getattr(shared, "state", None)
    return state is None or bool(state() == "ok")


async def _coordination_ok(context: ApiContext) -> bool:
    """Whether Redis answers (asked now, bounded by ``PATCHBAY_REDIS_TIMEOUT``), through the lease
    store of this instance's prober and through the shared live status registry; without the
    store open there is no prober: not ok."""
    service = context.service
    if service is None:
        return False
    return await _shared_ok(service.prober.leases) and await _shared_ok(context.status)


async def _wakeups_state(context: ApiContext) -> Literal["ok", "degraded"]:
    """The wake-ups' state: asked now through their ``check()`` (the Redis ones, bounded), else
    their last known ``state()``; a check that does not answer in time is ``degraded``."""
    wakeups = context.wakeups
    check = getattr(wakeups, "check", None)
    if check is None:
        return "ok" if wakeups.state() == "ok" else "degraded"
    with anyio.move_on_after(DATABASE_CHECK_SECONDS):
        return "ok" if (await check()) == "ok" else "degraded"
    return "degraded"


@router.get(
    HEALTH_PATH,
    response_model=c.Health,
    response_model_exclude_none=True,
    responses=error_responses(),
    openapi_extra={"security": [{}, {"apiToken": []}]},  # anyone; the token adds the details
    summary="Is this instance healthy",
)
async def health(request: Request, context: Context) -> c.Health:
    """``ok`` when the canonical store answers (within a few seconds) and, with
    ``PATCHBAY_REDIS_URL``, Redis too (leases, live status and wake-ups); else ``degraded``.
    Needs no token; only an authenticated caller gets the details (``instance``, ``database``
    ``{backend, ok}``, ``coordination`` ``{backend, ok}``, ``wakeups`` ``{backend, state}``)."""
    ok = await _database_ok(context)
    redis = context.settings.redis_url is not None
    coordinated = await _coordination_ok(context) if redis else True
    woken = await _wakeups_state(context)
    status: Literal["ok", "degraded"] = "ok" if ok and coordinated and woken == "ok" else "degraded"
    if request_access(request.scope) is None:
        return c.Health(status=status)
    backend = make_url(context.settings.resolved_database_url).get_backend_name()
    return c.Health(
        status=status,
        instance=instance_id(),
        database=c.DatabaseHealth(backend="postgresql" if backend == "postgresql" else "sqlite", ok=ok),
        coordination=c.CoordinationHealth(backend="redis" if redis else "in-process", ok=coordinated),
        wakeups=c.WakeupsHealth(backend="redis" if context.wakeups.backend == "redis" else "local", state=woken),
    )
