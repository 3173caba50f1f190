"""The state one API app shares between its requests: :class:`ApiContext`.

One :class:`ApiContext` per app holds the settings and one connector service
(so one prober: per-connector probe locks and the global probe limit are shared by every request).
The store is opened on first use; while it cannot be opened every route
answers 503 ``canonical_state_unavailable`` and the next request tries again.

Sessions and runtime reload: the app's lifespan runs one
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

Live status: in process by default; with ``PATCHBAY_REDIS_URL`` the registry is shared with the
other instances through Redis (:func:`open_status_registry`), synced by the lifespan.

Approvals: the broker keeps each waiting call's row in the store (any instance on it lists and
answers it) and is woken through :attr:`ApiContext.wakeups` (Redis pub/sub with
``PATCHBAY_REDIS_URL``, else in process: :func:`~patchbay.adapters.wakeups.open_wakeups`); the
lifespan runs the wake-up subscription and the broker's follower of the other instances.

Gateway reloads across instances: every committed mutation is also announced on the wake-up topic
``projection`` (:class:`~patchbay.interfaces.gateway.fanout.ChangeFanout`, run by the lifespan);
the ``/mcp`` gateway's runtime owners of every instance on the same Redis follow it and reload at
once, with the store's change counter polled as the fallback.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from sqlalchemy.engine import make_url

from patchbay.adapters.wakeups import LocalWakeups, Wakeups
from patchbay.control.connectors import ConnectorService
from patchbay.control.oauth_logins import WebLogins
from patchbay.core.errors import ErrorCode, PatchbayError
from patchbay.core.live_status import StatusRegistry
from patchbay.core.models import Project, RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.interfaces.api.gateway_endpoint import HttpGateway
from patchbay.interfaces.api.listing import ConnectorListing
from patchbay.interfaces.gateway.catalogs import with_cached_catalogs
from patchbay.interfaces.gateway.fanout import ChangeFanout
from patchbay.runtime.calls.approvals import ApprovalBroker
from patchbay.runtime.live_status import InProcessStatusRegistry
from patchbay.runtime.sessions import SessionHost

__all__ = ["ApiContext", "open_status_registry"]


def open_status_registry(settings: Settings) -> StatusRegistry:
    """The live status registry ``settings`` ask for: shared through Redis
    (:class:`~patchbay.adapters.redis_status.RedisStatusRegistry`, keys under
    ``<redis_prefix>live:``) when ``settings.redis_url`` is set, else in process. Opens no
    connection; never raises."""
    if settings.redis_url is None:
        return InProcessStatusRegistry()
    from patchbay.adapters.redis_status import RedisStatusRegistry

    return RedisStatusRegistry(
        settings.redis_url.get_secret_value(), prefix=f"{settings.redis_prefix}live:", timeout=settings.redis_timeout
    )


@dataclass
class ApiContext:
    """The state one app shares between requests.

    Args:
        settings: the data home and limits.
        workspace: default workspace for routes given no ``cwd`` (probe and stdio creation run
            there): the directory ``patchbay serve`` was started in.
        service: an already-built connector service (tests, embedding); else opened lazily.
        host: the session host while the app's lifespan runs (:meth:`hosting`), else None.
        listing: the connector list kept between requests (``GET /api/mcp/connectors``).
        logins: the settings page's OAuth logins while the lifespan runs, else None.
        status: the live status registry the hosted sessions publish to (in memory, this
            process's, or shared through Redis: :func:`open_status_registry`; ``runtime_state``
            and ``GET /api/mcp/status/stream`` read it). One with a ``run`` method (the Redis
            one) is synced while the lifespan runs and closed (``aclose``) after it.
        streams_closing: set by :meth:`close_streams` when the server shuts down: every open
            status stream ends (within its next look), so none holds the shutdown up.
        gateway: the MCP gateway at ``/mcp`` (:mod:`~patchbay.interfaces.api.gateway_endpoint`),
            told of every committed change and stopped with the streams; None: not served.
        wakeups: how approvals answered on one instance wake the call waiting on another, and
            how committed changes reach the gateways of every instance
            (:func:`~patchbay.adapters.wakeups.open_wakeups`); run and closed by the lifespan.
        page_url: this server's base URL once ``serve`` has bound it (``http://host:port``); None
            before (the settings' ``api_host``/``api_port`` are used then).
    """

    settings: Settings
    workspace: Path
    service: ConnectorService | None = None
    host: SessionHost | None = None
    listing: ConnectorListing = field(default_factory=ConnectorListing)
    logins: WebLogins | None = None
    status: StatusRegistry = field(default_factory=InProcessStatusRegistry)
    streams_closing: bool = False
    gateway: HttpGateway | None = None
    wakeups: Wakeups = field(default_factory=LocalWakeups)
    page_url: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _detach: Callable[[], None] | None = None
    _watch: _CommitWatch | None = None
    _reading: tuple[int, int] | None = None
    _approvals: ApprovalBroker | None = None
    _fanout: ChangeFanout | None = None

    def settings_page(self) -> str:
        """The base URL the settings page is served at (:attr:`page_url`, else the settings'
        address), for the approval links a gateway host is given."""
        if self.page_url is not None:
            return self.page_url
        host = self.settings.api_host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.settings.api_port}"

    def approval_broker(self) -> ApprovalBroker:
        """The process's approval broker (created on first use, expiry ``settings.approval_expiry``):
        browser-approved sessions wait on it, the approval routes answer through it. Its
        approvals are shared through the store's ``pending_approvals`` and :attr:`wakeups`."""
        if self._approvals is None:
            self._approvals = ApprovalBroker(
                expiry=self.settings.approval_expiry,
                store=lambda: self.connector_service().repository.approvals,
                wakeups=self.wakeups,
                recheck=self.settings.approval_recheck,
            )
        return self._approvals

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
        """Make the host the service's reload listener, once both exist (call under the lock).
        A committed mutation also ends the approvals waiting under the old policy, reloads this
        process's gateway at once and is announced to the other instances' gateways."""
        if self.host is not None and self.service is not None and self._detach is None:
            service, host, broker, gateway = self.service, self.host, self.approval_broker(), self.gateway
            fanout = self._fanout

            def committed(project_id: str | None, report: Any = None) -> Any:
                broker.invalidate()
                if gateway is not None:
                    gateway.committed(project_id)
                if fanout is not None:
                    fanout.committed(project_id)
                return host.committed(project_id, report)

            self._detach = service.on_committed(committed)

    def _resolve(self, workspace: Path) -> Project:
        """The host's resolver: the workspace's project (created on first use), its snapshot
        projected from the state committed now. Runs in a worker thread."""
        service = self.connector_service()
        project = service.queries.project(workspace)
        service.projector.project(project)
        return project

    def _load(self, project: Project) -> RuntimeConfig:
        """The host's loader: the projection built in memory from the store, never the workspace
        file (which anything that can write the workspace could have replaced)."""
        return self.connector_service().projector.runtime_config(project)

    async def state_version(self) -> int:
        """The store's change counter, moved by every commit of any process (how it is read: the
        session host's reader below). Raises CanonicalStateUnavailable while the store cannot be
        opened."""
        return await self._state_version()

    async def _state_version(self) -> int:
        """The store's change counter, read before each hosted call so changes committed by
        another process (the CLI, a second ``serve``) reach open sessions.

        Reading it is a store query (a worker thread, SQLAlchemy: about a millisecond); on a
        SQLite store it is read again only when SQLite's ``data_version`` says some connection
        committed since the last read (:class:`_CommitWatch`, microseconds, no thread), else the
        last reading is still the counter."""
        service = self.service
        if service is None:  # not opened yet: opening is file I/O
            return await anyio.to_thread.run_sync(lambda: self.connector_service().repository.state_version())
        if self._watch is None:
            self._watch = _CommitWatch(service.settings.resolved_database_url)
        mark = self._watch.mark()  # before the read: the reading then covers every commit up to it
        if mark is not None and self._reading is not None and self._reading[0] == mark:
            return self._reading[1]
        version = await anyio.to_thread.run_sync(service.repository.state_version)
        self._reading = (mark, version) if mark is not None else None
        return version

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
        then close every session (their servers stop). Committed mutations are announced on the
        wake-ups meanwhile (:class:`~patchbay.interfaces.gateway.fanout.ChangeFanout`). OAuth
        logins started from the page run here too and are cancelled on the way out. A shared status registry syncs with Redis in
        the background meanwhile and, after the sessions closed (withdrawing their status),
        writes that last and closes. Enter and exit in one task."""
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(self._close_service)  # runs last: after the sessions closed
            sync = getattr(self.status, "run", None)
            closing = getattr(self.status, "aclose", None)
            if sync is not None and closing is not None:
                stack.push_async_callback(closing)  # after the sync stopped and the host closed
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                group.start_soon(sync)
            stack.push_async_callback(self.wakeups.aclose)  # after the subscription stopped
            coordination = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(coordination.cancel_scope.cancel)
            coordination.start_soon(self.wakeups.run)
            await coordination.start(self.approval_broker().run)
            self._fanout = ChangeFanout(self.wakeups)
            await coordination.start(self._fanout.run)
            host = SessionHost(
                self.settings,
                resolve=self._resolve,
                load=self._load,
                state_version=self._state_version,
                status=self.status,
            )
            await stack.enter_async_context(host)
            self.logins = await stack.enter_async_context(WebLogins().running())
            if self.gateway is not None:
                await stack.enter_async_context(self.gateway.running())
            stack.callback(setattr, self, "logins", None)
            stack.callback(self._stop_hosting)  # runs first: no reload is scheduled on a closing host
            with self._lock:
                self.host = host
                self._attach()
            yield

    def close_streams(self) -> None:
        """End the open status streams and the gateway's sessions (the server is shutting down;
        they would never end)."""
        self.streams_closing = True
        if self.gateway is not None:
            self.gateway.stop_sessions()

    def gateway_source(self, workspace: Path) -> tuple[str, Callable[[], RuntimeConfig]]:
        """The gateway's :data:`~patchbay.interfaces.api.gateway_endpoint.Preparer`: the
        workspace's project (created on first use, its snapshot projected) and a loader of its
        projection in memory with the store's cached catalogs in full. Runs in a worker thread.

        Raises:
            ConfigError: ``invalid_config`` for an unusable workspace path;
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        project = self._resolve(workspace)

        def load() -> RuntimeConfig:
            return with_cached_catalogs(self.connector_service(), self._load(project))

        return project.project_id, load

    async def _close_service(self) -> None:
        if self.service is not None:
            await self.service.aclose()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self.service is not None:
            self.service.repository.close()


class _CommitWatch:
    """Whether anything was committed to a SQLite store since an earlier look, for the price of
    one ``PRAGMA data_version`` on a connection of its own (SQLite moves that value whenever
    another connection, of any process, commits; this one never writes).

    Args:
        url: the store's SQLAlchemy URL; for anything but a SQLite file :meth:`mark` is always
            None (no cheap check: read the counter itself).
    """

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self._path = parsed.database if parsed.get_backend_name() == "sqlite" else None
        if self._path in ("", ":memory:"):
            self._path = None
        self._conn: sqlite3.Connection | None = None

    def mark(self) -> int | None:
        """SQLite's ``data_version`` now: equal to an earlier mark when nothing was committed
        in between. None when it cannot be read (no SQLite file, an error): read the counter."""
        if self._path is None:
            return None
        try:
            if self._conn is None:
                # mode=rw: never creates a file; autocommit: no read transaction pins an old
                # snapshot between marks; one caller at a time (the event loop's thread)
                uri = f"file:{quote(self._path)}?mode=rw"
                self._conn = sqlite3.connect(uri, uri=True, timeout=0.1, isolation_level=None, check_same_thread=False)
            row = self._conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            self.close()
            return None
        return int(row[0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
