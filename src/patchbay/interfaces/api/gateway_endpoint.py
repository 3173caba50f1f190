"""The gateway over Streamable HTTP: ``/mcp`` on ``patchbay serve``.

The same :class:`~patchbay.interfaces.gateway.Gateway` as ``patchbay gateway --stdio``, served by
the SDK's Streamable HTTP session manager in the API's own process, behind the API's guards
(:mod:`patchbay.interfaces.api.app`: the ``Host``/``Origin`` check, the body limit and the
token check, so a request without ``Authorization: Bearer <token>`` is 401 ``unauthorized``).
The token is the gateway token (:mod:`patchbay.control.gateway_token`: it opens this path and
nothing else) or, from a loopback client only, the API token; a remote host (``serve
--allow-remote``) must send the gateway token (:mod:`patchbay.interfaces.api.auth`).

Which workspace: ``?cwd=DIR`` or the ``X-Patchbay-Project: DIR`` header (the same directory when
both are given, else 422 ``validation_error``; an absolute path as the REST routes' ``cwd``, else
422 ``validation_error`` with ``details.field`` ``cwd``), default the directory ``serve`` was
started in. An empty ``cwd`` and any query parameter but ``cwd`` and ``mode`` are 422 too: a
misspelt one would quietly serve another workspace.
Which mode: ``?mode=direct|proxy|auto`` (default ``auto``, decided from the cached catalog when
the workspace's gateway first starts). A host sends the same URL and headers with every request
of its session, so a session stays with the workspace and mode it was opened for.

One :class:`~patchbay.interfaces.gateway.owner.RuntimeOwner` per workspace (project), started by
the first request that names it and kept until the app stops: its runtime's connections are
reused by every request and session, of every mode. Each mode the workspace is asked for has its
own gateway and session manager (2025-era sessions with their session id, 2026-07-28 requests
stateless). The runtime is reloaded when a committed change alters the workspace's projection:
at once for changes committed through this process (:meth:`HttpGateway.committed`, the connector
service's commit listener); at once too for changes another ``patchbay serve`` on the same Redis
committed (its :class:`~patchbay.interfaces.gateway.fanout.ChangeFanout` notifies the wake-up
topic ``projection``, which every runtime owner here follows through the app's wake-ups); and, as
the fallback for a lost wake-up, a degraded Redis or a process that announces nothing (the CLI),
when the store's change counter moves (read every ``Settings.gateway_reload_poll`` seconds).
Connected hosts are then told ``notifications/tools/list_changed``
(:mod:`patchbay.interfaces.gateway.owner`).

An ``ask`` call waits for the person's answer on this serve's settings page
(:mod:`patchbay.interfaces.gateway.approvals`): up to ``Settings.gateway_approval_wait``
seconds, then it ends ``approval_pending`` with the approval's URL and the identical call made
again takes the answer.

Errors before a session exists are the API's one error shape: 422 ``validation_error`` (bad
``mode``, two different workspaces, a workspace that is no absolute path), 404 ``not_found`` or 422 ``invalid_config`` for a workspace
that cannot be used, 503 ``canonical_state_unavailable``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from patchbay.adapters.wakeups import Wakeups
from patchbay.core.errors import ErrorCode, PatchbayError, ValidationError
from patchbay.core.live_status import StatusRegistry
from patchbay.core.settings import Settings
from patchbay.interfaces.api.auth import GATEWAY_PATH
from patchbay.interfaces.api.errors import STATUS, error_response
from patchbay.interfaces.gateway import Gateway, GatewayMode, choose_mode
from patchbay.interfaces.gateway.approvals import GatewayApprovals
from patchbay.interfaces.gateway.owner import ConfigSource, RuntimeOwner
from patchbay.runtime.calls.permissions import Approver

__all__ = ["GATEWAY_PATH", "PROJECT_HEADER", "HttpGateway", "Preparer"]

PROJECT_HEADER = "X-Patchbay-Project"
"""The header naming the workspace directory (as ``?cwd=`` does)."""
_MODES = ("proxy", "direct", "auto")

Preparer = Callable[[Path], tuple[str, ConfigSource]]
"""``prepare(workspace) -> (project_id, load)``: the workspace's project (created on first use)
and a loader of its projection (:data:`~patchbay.interfaces.gateway.owner.ConfigSource`). Run in
a worker thread; raises :class:`PatchbayError` for an unusable workspace."""


@dataclass
class _Workspace:
    """One workspace's runtime owner and the gateways (by served mode) over it."""

    owner: RuntimeOwner
    path: str
    gateways: dict[str, tuple[Gateway, StreamableHTTPSessionManager]] = field(default_factory=dict)


class HttpGateway:
    """The ASGI app at :data:`GATEWAY_PATH` (see the module docstring).

    Args:
        settings: the runtimes' settings; ``gateway_reload_poll`` (seconds) paces the change watch.
        workspace: the default workspace (no ``cwd`` and no header).
        prepare: see :data:`Preparer`.
        state_version: the store's change counter (``await state_version() -> int``), watched for
            changes of other processes; None: only :meth:`committed` reloads.
        status: the live status registry the runtimes publish to.
        approvals: who answers the ``ask`` calls (the settings page of this serve); None: they
            end ``approval_unavailable``.
        wakeups: the app's wake-ups (run by its lifespan), whose
            :data:`~patchbay.interfaces.gateway.fanout.PROJECTION_TOPIC` every workspace's runtime
            owner follows (:meth:`RuntimeOwner.follow
            <patchbay.interfaces.gateway.owner.RuntimeOwner.follow>`); None: not followed.

    Serve requests only inside :meth:`running` (the app's lifespan); outside it they are 503.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        workspace: Path,
        prepare: Preparer,
        state_version: Callable[[], Awaitable[int]] | None = None,
        status: StatusRegistry | None = None,
        approvals: GatewayApprovals | None = None,
        wakeups: Wakeups | None = None,
    ):
        self.settings = settings
        self._wakeups = wakeups
        self.workspace = workspace
        self.approvals = approvals
        self._prepare = prepare
        self._state_version = state_version
        self._status = status
        self._paths: dict[str, str] = {}  # workspace as asked → project id
        self._workspaces: dict[str, _Workspace] = {}
        self._lock = anyio.Lock()
        self._runtimes: TaskGroup | None = None
        self._served: TaskGroup | None = None
        self._stopping = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve while the block runs; on the way out end every session and listen stream, then
        retire every runtime (their servers stop) and remove the approvals its hosts' calls left
        open (parked). Enter and exit in one task."""
        try:
            async with anyio.create_task_group() as runtimes:
                self._runtimes = runtimes
                try:
                    async with anyio.create_task_group() as served:
                        self._served = served
                        try:
                            yield
                        finally:
                            served.cancel_scope.cancel()
                finally:
                    self._served = None
                    for entry in self._workspaces.values():
                        entry.owner.close()
                    if self.approvals is not None:  # nobody will make those calls here again
                        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                            await self.approvals.broker.discard_parked()
        finally:
            self._runtimes = None
            self._workspaces.clear()
            self._paths.clear()

    def stop_sessions(self) -> None:
        """End every host session and listen stream now (the server is shutting down: an open
        stream would hold it up); the runtimes stay until :meth:`running` ends."""
        self._stopping = True
        if self._served is not None:
            self._served.cancel_scope.cancel()

    def committed(self, project_id: str | None) -> None:
        """A connector service ``on_committed`` listener: reload the runtime of ``project_id``'s
        workspace (every workspace for None), when the projection changed. Never blocks; callable
        from any thread."""
        for key, entry in list(self._workspaces.items()):
            if project_id is None or key == project_id:
                entry.owner.changed()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            workspace, mode = self._target(scope)
            manager = await self._manager(workspace, mode)
        except PatchbayError as exc:
            await error_response(STATUS.get(exc.code, 500), exc.code, exc.message, exc.details)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    def _target(self, scope: Scope) -> tuple[str, GatewayMode]:
        # blank values kept: an empty ?cwd= is refused, not taken for "the default workspace"
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        unknown = sorted(set(query) - {"cwd", "mode"})
        if unknown:  # a misspelt ?cwd would quietly serve another workspace's tools
            raise ValidationError(
                f"unknown query parameter {unknown[0][:60]!r}: /mcp takes ?cwd=DIR and ?mode=direct|proxy|auto",
                details={"field": unknown[0][:60]},
            )
        header = PROJECT_HEADER.lower().encode("ascii")
        named = {v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == header}
        named.update(query.get("cwd", []))
        if len(named) > 1:
            which = "?cwd= values" if len(set(query.get("cwd", []))) > 1 else f"?cwd= and {PROJECT_HEADER}"
            raise ValidationError(f"the workspace is named more than once ({which} differ)", details={"field": "cwd"})
        given = named.pop() if named else None
        workspace = str(self.workspace) if given is None else given
        if given is not None and (not workspace.startswith("/") or "\x00" in workspace):
            # As the REST routes' ``cwd``: a relative path would name a directory of the server's
            # own working directory, which the host never chose.
            raise ValidationError(
                f"cwd: must be an absolute path (?cwd= or the {PROJECT_HEADER} header)", details={"field": "cwd"}
            )
        modes = query.get("mode", ["auto"])
        if len(modes) != 1 or modes[0] not in _MODES:
            raise ValidationError(f"mode must be one of {', '.join(_MODES)}", details={"field": "mode"})
        return workspace, cast(GatewayMode, modes[0])

    async def _manager(self, workspace: str, mode: GatewayMode) -> StreamableHTTPSessionManager:
        async with self._lock:
            if self._runtimes is None or self._served is None or self._stopping:
                raise PatchbayError("the gateway is not running", code=ErrorCode.CANONICAL_STATE_UNAVAILABLE)
            known = self._paths.get(workspace)
            entry = self._workspaces.get(known) if known is not None else None
            if entry is None:
                project_id, load = await anyio.to_thread.run_sync(self._prepare, Path(workspace))
                self._paths[workspace] = project_id
                entry = self._workspaces.get(project_id)
                if entry is None:
                    entry = await self._start(project_id, load)
            runtime = entry.owner.runtime
            served = choose_mode(mode, runtime.cached_tools(), self.settings)
            pair = entry.gateways.get(served)
            if pair is None:
                gateway = Gateway(runtime, served, project=entry.path)
                manager = StreamableHTTPSessionManager(gateway.server())
                await self._served.start(_run_manager, manager)
                self._served.start_soon(gateway.run_background)
                entry.owner.add(gateway)
                pair = entry.gateways[served] = (gateway, manager)
            return pair[1]

    def _approver_for(self, workspace: str) -> Approver:
        assert self.approvals is not None
        return self.approvals.approver(workspace=workspace)

    async def _start(self, project_id: str, load: ConfigSource) -> _Workspace:
        assert self._runtimes is not None and self._served is not None
        approver_for = None if self.approvals is None else self._approver_for
        owner = RuntimeOwner(self.settings, load, status=self._status, approver_for=approver_for)
        runtime = await owner.start(self._runtimes)
        entry = _Workspace(owner, runtime.config.workspace)
        self._workspaces[project_id] = entry
        if self._wakeups is not None:
            await self._served.start(owner.follow, self._wakeups)
        if self._state_version is not None:
            self._served.start_soon(owner.watch, self._state_version, self.settings.gateway_reload_poll)
        return entry


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
