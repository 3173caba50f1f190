"""The REST API application (seed 003 §8): :func:`create_app` builds it, ``patchbay serve`` serves it.

Usage::

    from patchbay.interfaces.api import create_app
    app = create_app(Settings(home=tmp_path))            # an ASGI app; uvicorn or an ASGI client

Layout: contracts in :mod:`~patchbay.interfaces.api.contracts` (the one module of request and
response models), errors in :mod:`~patchbay.interfaces.api.errors`, routes by area in
:mod:`~patchbay.interfaces.api.routes` (connectors, tools and probe, import, the deprecated
compatibility projections). Routes only translate: the connector service
(:class:`~patchbay.control.connectors.ConnectorService`) validates, writes and decides.

Where the state is: one :class:`ApiContext` per app holds the settings and one connector service
(so one prober: per-connector probe locks and the global probe limit are shared by every request,
seed 003 §9.2, §15). The store is opened on first use; while it cannot be opened every route
answers 503 ``canonical_state_unavailable`` (seed 003 §15) and the next request tries again.

Who may call: a control plane on loopback can start local commands (a stdio connector is a
command line), so a web page must not be able to drive it. Requests whose ``Host`` is not a
loopback name (DNS rebinding) or whose ``Origin`` is not this server's own are refused with 403
``origin_refused`` before any route runs; with ``allowed_hosts=None`` (``serve --allow-remote``)
only the Origin rule applies. No CORS headers are sent, so browsers keep cross-origin pages out
of the JSON routes.

Sessions and runtime reload (seed 003 §10.2, §10.5): the app's lifespan runs one
:class:`~patchbay.runtime.sessions.SessionHost`, so the serve process hosts workspace runtimes
(``/api/sessions``: open one, list its tools, call them on the governed path, close it). The
host's :meth:`~patchbay.runtime.sessions.SessionHost.committed` is the connector service's one
:meth:`~patchbay.control.connectors.ConnectorService.on_committed` listener for reloads: every
committed mutation re-projects the workspaces it affects, then the host rebuilds their idle
sessions at once and marks busy ones ``restart_pending``. Each mutating route collects the
reloads its own service calls caused (:func:`~patchbay.runtime.sessions.collect_reloads`) and
answers with them as ``runtime_reload`` (``runtime_reload_failed`` and the sessions when a rebuild
failed; the change is saved all the same). Leaving the lifespan closes every session: no server
process is left behind. An app run without its lifespan (an ASGI client that skips it) has no
host: its mutations report no sessions and the session routes answer 500 ``unknown``.
Sessions are built from the projection in memory, never from the workspace file, and a change
committed by another process (the store's change counter, read before each call) rebuilds a
session before its next call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from patchbay import __version__
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ErrorCode, PatchbayError
from patchbay.core.models import Project, RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.interfaces.api.errors import error_response, install_error_handlers
from patchbay.interfaces.api.responses import RedactedJSONResponse
from patchbay.runtime.sessions import SessionHost

__all__ = ["LOOPBACK_HOSTS", "ApiContext", "create_app"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Host names a loopback-bound server answers to."""


@dataclass
class ApiContext:
    """The state one app shares between requests.

    Args:
        settings: the data home and limits.
        workspace: default workspace for routes given no ``cwd`` (probe and stdio creation run
            there): the directory ``patchbay serve`` was started in.
        service: an already-built connector service (tests, embedding); else opened lazily.
        host: the session host while the app's lifespan runs (:meth:`hosting`), else None.
    """

    settings: Settings
    workspace: Path
    service: ConnectorService | None = None
    host: SessionHost | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _detach: Callable[[], None] | None = None

    def connector_service(self) -> ConnectorService:
        """The connector service, opening the store on first use.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``; tried again next time.
        """
        if self.service is not None:
            return self.service
        with self._lock:
            if self.service is None:
                from patchbay.adapters.store import open_store

                self.service = ConnectorService(open_store(self.settings), self.settings)
                self._attach()
        return self.service

    def session_host(self) -> SessionHost:
        """The running session host.

        Raises:
            PatchbayError: ``unknown`` (500) when the app runs without its lifespan.
        """
        host = self.host
        if host is None:
            raise PatchbayError(
                "no session host is running (the app was started without its lifespan)", code=ErrorCode.UNKNOWN
            )
        return host

    def _attach(self) -> None:
        """Make the host the service's reload listener, once both exist (call under the lock)."""
        if self.host is not None and self.service is not None and self._detach is None:
            self._detach = self.service.on_committed(self.host.committed)

    def _resolve(self, workspace: Path) -> Project:
        """The host's resolver: the workspace's project (created on first use), its snapshot
        projected from the state committed now (seed 003 §10.2). Runs in a worker thread."""
        service = self.connector_service()
        project = service.project(workspace)
        service.projector.project(project)
        return project

    def _load(self, project: Project) -> RuntimeConfig:
        """The host's loader: the projection built in memory from the store, never the workspace
        file (which anything that can write the workspace could have replaced)."""
        return self.connector_service().projector.runtime_config(project)

    def _state_version(self) -> int:
        """The store's change counter, read before each hosted call so changes committed by
        another process (the CLI, a second ``serve``) reach open sessions."""
        return self.connector_service().repository.state_version()

    def _stop_hosting(self) -> None:
        with self._lock:
            if self._detach is not None:
                self._detach()
                self._detach = None
            self.host = None

    @contextlib.asynccontextmanager
    async def hosting(self) -> AsyncIterator[None]:
        """The app's lifespan: run a :class:`SessionHost` and make it the connector service's
        reload listener (now, or when the store is first opened); on the way out stop listening,
        then close every session (their servers stop). Enter and exit in one task."""
        async with contextlib.AsyncExitStack() as stack:
            host = SessionHost(
                self.settings, resolve=self._resolve, load=self._load, state_version=self._state_version
            )
            await stack.enter_async_context(host)
            stack.callback(self._stop_hosting)  # runs first: no reload is scheduled on a closing host
            with self._lock:
                self.host = host
                self._attach()
            yield

    def close(self) -> None:
        if self.service is not None:
            self.service.repository.close()


def _host_name(value: str) -> str:
    """``127.0.0.1:8765`` → ``127.0.0.1``; ``[::1]:8765`` → ``::1``; lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class LocalOnlyMiddleware:
    """Refuse requests from browsers of other origins and, on loopback, for other host names.

    Args:
        app: the ASGI app.
        allowed_hosts: host names (no port) the ``Host`` header may carry; None: any.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] | None) -> None:
        self.app = app
        self.allowed = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        refusal = None
        if self.allowed is not None and _host_name(host) not in self.allowed:
            refusal = ("Host header names no address this server answers to", {"host": host[:200]})
        origin = headers.get("origin")
        if refusal is None and origin is not None and urlsplit(origin).netloc.lower() != host.lower():
            refusal = ("cross-origin requests are refused", {"origin": origin[:200]})
        if refusal is not None:
            response = error_response(403, "origin_refused", refusal[0], refusal[1])
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(
    settings: Settings | None = None,
    *,
    service: ConnectorService | None = None,
    workspace: Path | None = None,
    allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
) -> FastAPI:
    """Build the REST API.

    Args:
        settings: default ``Settings()`` (``PATCHBAY_HOME`` ...); ignored for the store when
            ``service`` is given.
        service: a connector service to use instead of opening the store.
        workspace: default workspace for routes without ``cwd``; default the current directory.
        allowed_hosts: ``Host`` names answered (default loopback only); None for any
            (``serve --allow-remote``).

    Returns:
        A FastAPI app; ``app.state.context`` is its :class:`ApiContext`. Serve it with its
        lifespan (uvicorn does by default; in tests enter ``app.router.lifespan_context(app)``):
        the lifespan runs the session host.
    """
    from patchbay.interfaces.api.routes import compat, connectors, imports, sessions, tools

    settings = settings or (service.settings if service is not None else Settings())
    context = ApiContext(
        settings=settings,
        workspace=(workspace or Path.cwd()).resolve(),
        service=service,
    )
    app = FastAPI(
        title="Patchbay",
        version=__version__,
        summary=(
            "Connector registry, tool grants, real probes and governed workspace sessions for MCP servers "
            "(seed 003 §8, §10)."
        ),
        default_response_class=RedactedJSONResponse,
        lifespan=lambda _app: context.hosting(),
    )
    app.state.context = context
    install_error_handlers(app)
    routers = (connectors.router, tools.router, imports.router, sessions.router, compat.router)
    for router in routers:
        app.include_router(router)
    app.state.api_routes = [route for router in routers for route in router.routes]  # for 405's Allow
    app.add_middleware(LocalOnlyMiddleware, allowed_hosts=allowed_hosts)
    return app
