"""What every route shares: the context, the connector service, the ``{connector}`` path parameter,
the ``cwd`` query parameter (the workspace), and the ``runtime_reload`` report of a mutation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Query, Request
from fastapi import Path as PathParam

import patchbay.interfaces.api.contracts as c
from patchbay.control.connectors import ConnectorService
from patchbay.core.models import Connector
from patchbay.interfaces.api.context import ApiContext
from patchbay.runtime.sessions import ReloadResult

__all__ = [
    "ConnectorRef",
    "Context",
    "Service",
    "Workspace",
    "reload_view",
    "resolve_connector",
    "workspace_or_default",
]


# Dependencies are ``async def``: FastAPI runs a plain ``def`` dependency in the threadpool, a
# thread hop on every request for what is an attribute read once the store is open.


async def _context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.context  # Starlette's app state is untyped
    return context


async def _service(context: Annotated[ApiContext, Depends(_context)]) -> ConnectorService:
    if context.service is not None:
        return context.service
    # the first request opens the store (file I/O, migrations): off the event loop
    return await anyio.to_thread.run_sync(context.connector_service)


Context = Annotated[ApiContext, Depends(_context)]
Service = Annotated[ConnectorService, Depends(_service)]
"""The connector service; opening the store may answer 503 ``canonical_state_unavailable``."""

ConnectorRef = Annotated[
    str,
    PathParam(
        min_length=1,
        max_length=200,
        description="The connector's id (`con_…`) or its name.",
    ),
]

Workspace = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=4096,
        pattern=r"^/[^\x00]*$",
        description="Absolute path of a workspace directory: the scope is that workspace's project.",
    ),
]


def resolve_connector(service: ConnectorService, ref: str) -> Connector:
    """The connector named by id (``con_…``) or name.

    Raises:
        NotFoundError: ``not_found``.
    """
    if ref.startswith("con_"):  # a name never has "_" (DESIGN.md "Names")
        return service.repository.connectors.get(ref)
    return service.get(ref)


def workspace_or_default(context: ApiContext, cwd: str | None) -> Path:
    """``cwd`` as a path, or the app's default workspace."""
    return Path(cwd) if cwd is not None else context.workspace


def reload_view(outcome: ReloadResult) -> c.RuntimeReload:
    """A mutation's ``runtime_reload``: ``outcome.to_dict()`` as its contract.

    Every mutating route wraps its service calls in
    :func:`~patchbay.runtime.sessions.collect_reloads` and reports what they caused: in a plain
    ``def`` route (a worker thread) ``reloads.result()``, in an ``async def`` one
    ``await reloads.wait()`` (blocking the event loop's thread would deadlock the host).
    """
    return c.RuntimeReload.model_validate(outcome.to_dict())
