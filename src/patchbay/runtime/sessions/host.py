"""The session host: one owner task per session runtime, and the reload state machine (see
:mod:`patchbay.runtime.sessions` for the contract)."""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.from_thread import BlockingPortal

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.oauth.provider import Authorizer
from patchbay.core.errors import ErrorCode, FailureReason, NotFoundError, PatchbayError, ToolCallError, ValidationError
from patchbay.core.live_status import StatusRegistry
from patchbay.core.models import Project, RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.runtime.calls.permissions import Approver
from patchbay.runtime.calls.result import ToolCallResult
from patchbay.runtime.connection.hooks import ElicitationHandler
from patchbay.runtime.events.log import new_session_id, session_log_path
from patchbay.runtime.runtime import LocalTool, Runtime, RuntimeTool
from patchbay.runtime.sessions.results import (
    ProjectionOutcome,
    ReloadResult,
    ReloadStatus,
    ReloadTicket,
    SessionReload,
    current_collector,
)
from patchbay.runtime.sessions.state import SessionInfo, SessionState, _Session
from patchbay.runtime.snapshot import load_snapshot

__all__ = [
    "CLOSE_GRACE",
    "RELOAD_TIMEOUT",
    "ConfigLoader",
    "ProjectResolver",
    "SessionHost",
    "StateVersion",
    "SessionInfo",
    "SessionState",
]

logger = logging.getLogger("patchbay.runtime.sessions")

RELOAD_TIMEOUT = 30.0
"""Seconds :meth:`SessionHost.reload` waits for idle sessions to rebuild; a slower one is
reported ``pending`` (it still rebuilds)."""
CLOSE_GRACE = 10.0
"""Seconds a closing session waits for its cancelled calls to unwind before exiting its runtime."""

ProjectResolver = Callable[[Path], Project]
"""``resolve(workspace) -> Project``: the workspace's stable project, its snapshot projected and
current (run in a worker thread). A control plane passes e.g. ``service.project`` followed by
``service.projector.project``; the runtime layer never imports the control plane."""

ConfigLoader = Callable[[Project], RuntimeConfig]
"""``load(project) -> RuntimeConfig``: the config a (re)build of a session of ``project`` uses (run
in a worker thread). A control plane hosting sessions in its own process passes its in-memory
projection (``service.projector.runtime_config``), so no workspace file is trusted; the default
loads the workspace's sealed snapshot and verifies it with the data home's key
(:func:`~patchbay.runtime.snapshot.load_snapshot`)."""

StateVersion = Callable[[], Awaitable[int]]
"""``await version() -> int``: the canonical state's change counter, moved by every committed
change of any process (awaited before each hosted call: a reader whose I/O could block runs it in
a worker thread, one whose read is a local lookup need not pay that hop on every call). It may
raise a :class:`PatchbayError` (e.g. ``canonical_state_unavailable``), which fails that call."""


class _HostState(enum.Enum):
    UNOPENED = 1
    OPENED = 2
    CLOSED = 3


def _idle(session: _Session) -> bool:
    """No call of ``session`` is in flight."""
    return session.in_flight == 0


def _as_patchbay_error(exc: Exception) -> PatchbayError:
    if isinstance(exc, PatchbayError):
        return exc
    logger.error("building a session runtime failed unexpectedly", exc_info=exc)
    return PatchbayError(f"the runtime could not be built ({type(exc).__name__})", code=ErrorCode.UNKNOWN)


class SessionHost:
    """Long-lived workspace runtimes, one per session, rebuilt after committed changes.

    Usage::

        async with SessionHost(settings, resolve=prepare_workspace) as host:
            service.on_committed(host.committed)
            session = await host.open(Path("~/work/repo").expanduser())
            result = await host.call(session, "mcp.time.get_current_time", {"timezone": "UTC"})
            outcome = await host.reload()              # every session (or: reload({"prj_…"}))
            await host.close(session)

    Args:
        settings: passed to every :class:`Runtime` (timeouts, data home, sessions dir).
        resolve: see :data:`ProjectResolver`; :meth:`open` calls it in a worker thread.
        credentials: resolves credential bindings for every runtime (default: each runtime's
            credential store of ``settings.home``).
        reload_timeout: see :data:`RELOAD_TIMEOUT` (seconds).
        load: see :data:`ConfigLoader` (default: the verified snapshot file of the workspace).
        state_version: see :data:`StateVersion`; when given, a call first reads it and, when it
            moved since the session's runtime was built (a change committed by another process,
            e.g. ``patchbay grant`` or a second ``serve``), rebuilds the session and waits for
            the rebuild, as a reload would. None: only :meth:`reload`/:meth:`committed` rebuild.
        status: the live status registry every session's runtime publishes to (None: none).

    Enter and exit the host in one task; :meth:`open`, :meth:`call`, :meth:`reload` and
    :meth:`close` may be awaited from any task of its event loop, :meth:`committed` called from
    any thread. Exit closes every session.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        resolve: ProjectResolver,
        credentials: CredentialResolver | None = None,
        reload_timeout: float = RELOAD_TIMEOUT,
        load: ConfigLoader | None = None,
        state_version: StateVersion | None = None,
        status: StatusRegistry | None = None,
    ):
        self.settings = settings
        self._status = status
        self._resolve = resolve
        self._load = load
        self._state_version = state_version
        self._credentials = credentials
        self.reload_timeout = reload_timeout
        self._sessions: dict[str, _Session] = {}
        self._state = _HostState.UNOPENED
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._portal: BlockingPortal | None = None
        self._loop_thread: int | None = None

    async def __aenter__(self) -> SessionHost:
        if self._state is not _HostState.UNOPENED:
            raise RuntimeError("a SessionHost can be entered only once")
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            self._portal = await stack.enter_async_context(BlockingPortal())
            self._loop_thread = threading.get_ident()
            self._stack = stack.pop_all()
        self._state = _HostState.OPENED
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._state is not _HostState.OPENED:
            return
        self._state = _HostState.CLOSED
        try:
            # Graceful even when the host is being cancelled: each owner task exits its runtime
            # (servers stop, process groups swept); bounded, then the task group cancels the rest.
            with anyio.move_on_after(CLOSE_GRACE * 2, shield=True):
                async with anyio.create_task_group() as group:
                    for session in list(self._sessions.values()):
                        group.start_soon(self._close, session)
        finally:
            if self._stack is not None:
                stack, self._stack = self._stack, None
                await stack.__aexit__(None, None, None)

    def _opened(self) -> TaskGroup:
        if self._state is not _HostState.OPENED or self._tg is None:
            raise RuntimeError("the SessionHost is not open; use `async with SessionHost(...) as host:`")
        return self._tg

    # -- sessions ---------------------------------------------------------------------------

    async def open(
        self,
        workspace: Path | str,
        *,
        session_id: str | None = None,
        approver: Approver | None = None,
        allowed_tools: Iterable[str] | None = None,
        local_tools: Mapping[str, LocalTool] | None = None,
        authorizer: Authorizer | None = None,
        elicitation_handler: ElicitationHandler | None = None,
    ) -> str:
        """Start a session in ``workspace``; returns its id once its runtime is entered.

        The keyword arguments are :class:`Runtime`'s and apply to every rebuild of the session.

        Raises:
            ValidationError: ``validation_error`` for a bad or already used ``session_id``.
            NotFoundError: ``not_found`` when the workspace has no snapshot.
            ConfigError: ``invalid_config`` (not a workspace, a bad snapshot or option).
            PatchbayError: whatever ``resolve`` raises (e.g. ``canonical_state_unavailable``).
        """
        tg = self._opened()
        sid = session_id if session_id is not None else new_session_id()
        session_log_path(self.settings.sessions_dir, sid)  # validates the id
        if sid in self._sessions:
            raise ValidationError(f"session {sid!r} is already open", details={"field": "session_id"})
        project = await anyio.to_thread.run_sync(self._resolve, Path(workspace))
        options = {
            "approver": approver,
            "allowed_tools": None if allowed_tools is None else tuple(allowed_tools),
            "local_tools": dict(local_tools or {}),
            "authorizer": authorizer,
            "elicitation_handler": elicitation_handler,
        }
        session = _Session(sid, project, options)
        self._sessions[sid] = session
        error = await tg.start(self._own, session)
        if error is not None:
            raise error
        return sid

    def sessions(self) -> list[SessionInfo]:
        """Every open session, in opening order."""
        return [session.info() for session in self._sessions.values()]

    def session(self, session_id: str) -> SessionInfo:
        """One open session. Raises NotFoundError (``not_found``)."""
        return self._get(session_id).info()

    def _get(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None or session.closing:
            raise NotFoundError(f"no open session {session_id!r}", details={"session_id": session_id})
        return session

    async def close(self, session_id: str) -> None:
        """Close a session: its calls in flight are cancelled (they fail with ``cancelled``), its
        runtime exits and its servers stop.

        Raises:
            NotFoundError: ``not_found`` for no open session of that id.
        """
        await self._close(self._get(session_id))

    async def drain(self, grace: float) -> None:
        """Let the calls in flight of every session run for up to ``grace`` seconds, then cancel
        those still running (they fail with ``cancelled``); the sessions stay open. For a
        bounded shutdown: the servers stop when the host exits.
        """
        with anyio.move_on_after(grace):
            for session in list(self._sessions.values()):
                await session.until(functools.partial(_idle, session))
        for session in list(self._sessions.values()):
            for scope in list(session.scopes):
                scope.cancel()

    async def _close(self, session: _Session) -> None:
        session.closing = True
        for scope in list(session.scopes):
            scope.cancel()
        session.notify()
        await session.done.wait()

    # -- calls ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def use(self, session_id: str) -> AsyncIterator[Runtime]:
        """Lend the session's runtime for the block, counted as a call in flight (so a reload
        waits for the block to end rather than interrupting it).

        Waits while the session is building or has a rebuild pending; with a ``state_version``
        reader, first rebuilds the session when a change was committed (by any process) after its
        runtime was built.

        Raises:
            NotFoundError: ``not_found`` for no open session (also when it closes meanwhile).
            PatchbayError: what the ``state_version`` reader raises (e.g.
                ``canonical_state_unavailable``): the state cannot be checked, so nothing runs.
            ToolCallError: ``mcp_server_unavailable`` with ``details["code"] ==
                "runtime_reload_failed"`` (and ``details["error"]``) when the session's last build
                failed; ``cancelled`` when the session is closed during the block.
        """
        session = self._get(session_id)
        await self._current(session)
        self._get(session_id)
        runtime = session.runtime
        if runtime is None:
            error = session.last_error
            raise ToolCallError(
                FailureReason.MCP_SERVER_UNAVAILABLE,
                f"session {session_id} has no runtime: its last reload failed "
                f"({error.message if error else 'unknown'}); fix the configuration, then reload",
                details={
                    "code": str(ErrorCode.RUNTIME_RELOAD_FAILED),
                    "session_id": session_id,
                    "error": error.to_dict() if error else None,
                },
            )
        scope = anyio.CancelScope()
        session.in_flight += 1
        session.scopes.add(scope)
        try:
            with scope:
                yield runtime
        finally:
            session.scopes.discard(scope)
            session.in_flight -= 1
            if session.in_flight == 0:
                session.notify()
        if scope.cancelled_caught:
            raise ToolCallError(
                FailureReason.CANCELLED, f"session {session_id} was closed", details={"session_id": session_id}
            )

    async def _current(self, session: _Session) -> None:
        """Wait until the session's runtime (or failed build) covers every change committed before
        now: with a :data:`StateVersion`, a build that read an older counter is redone first."""
        if self._state_version is None:
            await session.until(lambda: session.closing or session.attempted >= session.requested)
            return
        version = await self._state_version()
        # Two rounds suffice: a build already running may have read the counter before it moved;
        # the one requested here reads it afterwards (or fails, and the session fails closed).
        for _ in range(2):
            await session.until(lambda: session.closing or session.attempted >= session.requested)
            if session.closing or session.built_version >= version:
                return
            session.requested += 1
            session.notify()
        await session.until(lambda: session.closing or session.attempted >= session.requested)

    async def call(self, session_id: str, tool: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """:meth:`Runtime.call` on the session's runtime (see :meth:`use` for waiting and errors)."""
        async with self.use(session_id) as runtime:
            return await runtime.call(tool, arguments)

    async def list_tools(self, session_id: str) -> list[RuntimeTool]:
        """:meth:`Runtime.list_tools` on the session's runtime (see :meth:`use`)."""
        async with self.use(session_id) as runtime:
            return await runtime.list_tools()

    # -- the owner task ---------------------------------------------------------------------

    async def _build(self, session: _Session) -> Runtime:
        if self._state_version is not None:
            # Read before the state the build uses, so a change committed meanwhile moves the
            # counter past it and the next call rebuilds again.
            session.built_version = -1  # unreadable: the next call that can read it rebuilds
            session.built_version = await self._state_version()
        if session.forced is not None:
            raise session.forced
        project = session.project
        load = self._load or self._load_file
        config = await anyio.to_thread.run_sync(lambda: load(project))
        return Runtime(
            config,
            settings=self.settings,
            session_id=session.id,
            credentials=self._credentials,
            status=self._status,
            **session.options,
        )

    def _load_file(self, project: Project) -> RuntimeConfig:
        return load_snapshot(project.path, project_id=project.project_id, home=self.settings.home)

    def _finished(self, session: _Session, target: int, error: PatchbayError | None) -> None:
        session.attempted = target
        session.last_error = error
        if error is None:
            session.builds += 1
        elif session.builds:
            logger.warning("session %s has no runtime: its rebuild failed: %s", session.id, error)
        session.notify()

    async def _own(self, session: _Session, *, task_status: TaskStatus[PatchbayError | None]) -> None:
        """Build, enter, serve, exit — again after each reload request, until closed."""
        started = False
        try:
            while not session.closing:
                target = session.requested
                error: PatchbayError | None
                try:
                    runtime = await self._build(session)
                except Exception as exc:
                    error = _as_patchbay_error(exc)
                    self._finished(session, target, error)
                    if not started:
                        started = True
                        task_status.started(error)
                        return
                    await session.until(lambda: session.closing or session.requested > session.attempted)
                    continue
                async with AsyncExitStack() as stack:
                    try:
                        await stack.enter_async_context(runtime)
                    except Exception as exc:
                        error = _as_patchbay_error(exc)
                    else:
                        error = None
                        session.runtime = runtime
                    self._finished(session, target, error)
                    if not started:
                        started = True
                        task_status.started(error)
                        if error is not None:
                            return
                    await session.until(
                        lambda: session.closing or (session.requested > session.attempted and session.in_flight == 0)
                    )
                    if session.closing:
                        with anyio.move_on_after(CLOSE_GRACE):
                            await session.until(lambda: session.in_flight == 0)
                    session.runtime = None
                    session.notify()
                # the old runtime has exited here: its servers are gone before the next build
        finally:
            session.runtime = None
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]
            session.closing = True
            session.notify()
            session.done.set()

    # -- reload -----------------------------------------------------------------------------

    async def reload(
        self,
        project_ids: Iterable[str] | None = None,
        *,
        unprojected: Mapping[str, PatchbayError] | None = None,
    ) -> ReloadResult:
        """Rebuild the sessions of ``project_ids`` (default: every session) from their snapshots, as
        the module docstring describes.

        Args:
            project_ids: the projects a committed change affected; None for all.
            unprojected: project id → why its snapshot was not re-written after the change; the
                sessions of those projects fail with that error instead of loading a stale
                snapshot.

        Returns:
            The affected sessions, each ``reloaded``, ``pending`` or ``failed``; never raises for
            a session. ``result.code`` is ``runtime_reload_failed`` when any failed.
        """
        self._opened()
        wanted = None if project_ids is None else set(project_ids)
        stale = dict(unprojected or {})
        affected = [
            s
            for s in list(self._sessions.values())
            if not s.closing and (wanted is None or s.project.project_id in wanted)
        ]
        generations: dict[str, int] = {}
        for session in affected:
            session.requested += 1
            session.forced = stale.get(session.project.project_id)
            generations[session.id] = session.requested
            session.notify()
        waiting = [s for s in affected if s.in_flight == 0]

        async def settle(session: _Session) -> None:
            await session.until(lambda: session.closing or session.attempted >= generations[session.id])

        with anyio.move_on_after(self.reload_timeout):
            async with anyio.create_task_group() as group:
                for session in waiting:
                    group.start_soon(settle, session)
        outcomes = []
        for session in affected:
            status: ReloadStatus = "pending"
            error = None
            if session.attempted >= generations[session.id]:
                if session.last_error is not None:
                    status, error = "failed", session.last_error.to_dict()
                else:
                    status = "reloaded"
            elif session.closing:
                continue  # closed meanwhile: nothing left to reload
            outcomes.append(SessionReload(session.id, session.project.project_id, session.project.path, status, error))
        result = ReloadResult(tuple(outcomes))
        if result.failed:
            logger.warning("runtime reload failed for sessions %s", ", ".join(s.session_id for s in result.failed))
        return result

    def committed(self, project_id: str | None, report: ProjectionOutcome | None = None) -> ReloadTicket:
        """A ``ConnectorService.on_committed`` listener: schedule the reload of the sessions a
        committed change affects — ``project_id``'s, or every session for None — and return its
        ticket (also added to the current :func:`collect_reloads` collector).

        ``report`` (the control plane's projection report) names workspaces whose snapshot was
        not re-written; their sessions fail rather than reload a stale snapshot (fail closed).
        Never blocks and never raises; when the host is not open the ticket holds an empty result.
        """
        ticket = ReloadTicket()
        ticket._loop_thread = self._loop_thread
        collector = current_collector()
        if collector is not None:
            collector.tickets.append(ticket)
        try:
            if self._state is not _HostState.OPENED or self._tg is None or self._portal is None:
                raise RuntimeError("the SessionHost is not open")
            if threading.get_ident() == self._loop_thread:
                self._tg.start_soon(self._fulfil, ticket, project_id, report)
            else:
                self._portal.start_task_soon(self._fulfil, ticket, project_id, report)
        except RuntimeError:
            ticket._resolve(ReloadResult())
        return ticket

    async def _fulfil(self, ticket: ReloadTicket, project_id: str | None, report: ProjectionOutcome | None) -> None:
        try:
            ticket._resolve(
                await self.reload(None if project_id is None else (project_id,), unprojected=self._stale(report))
            )
        except Exception:
            logger.exception("runtime reload after a committed change failed")
        finally:
            ticket._resolve(ReloadResult())  # cancelled (host closing) or failed: nothing reloaded

    def _stale(self, report: ProjectionOutcome | None) -> dict[str, PatchbayError]:
        if report is None:
            return {}
        if report.error is not None:  # nothing could be projected: every snapshot may be stale
            code = report.error.get("code")
            error = PatchbayError(
                f"the runtime snapshots were not re-written ({report.error.get('message', '')})",
                code=code if code in ErrorCode.__members__.values() else ErrorCode.UNKNOWN,
            )
            return {s.project.project_id: error for s in self._sessions.values()}
        stale: dict[str, PatchbayError] = {}
        for workspace in report.workspaces:
            if workspace.status == "written":
                continue
            stale[workspace.project_id] = PatchbayError(
                f"the runtime snapshot of {workspace.workspace} was not re-written ({workspace.message})",
                code=ErrorCode(workspace.code or ErrorCode.INVALID_CONFIG),
                details={
                    "project_id": workspace.project_id,
                    "workspace": workspace.workspace,
                    "status": workspace.status,
                },
            )
        return stale
