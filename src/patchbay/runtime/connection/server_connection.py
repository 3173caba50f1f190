"""ServerConnection: the supervised connection of a runtime to one connector.

One long-lived owner task per connection (started from the runtime's task group) connects, publishes
the live catalog, closes idle ``lazy``/``eager`` connections after ``idle_timeout`` seconds and
restarts a crashed server under its :class:`~patchbay.core.models.RestartPolicy`; calls run in the
caller's task through :attr:`ServerConnection.exchange`. A call that a crash interrupts fails with
``mcp_server_restarted``, ``mcp_server_unstable`` or ``mcp_server_unavailable`` and is never re-sent;
:meth:`ServerConnection.shutdown` and :meth:`ServerConnection.request_stop` close it for good.

Design: docs/connections.md
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp import Client

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.oauth.provider import Authorizer
from patchbay.adapters.transports import ClientConnection, Link
from patchbay.adapters.transports.catalog import Catalog, list_catalog
from patchbay.adapters.transports.connect import connect, connect_failure, with_limit
from patchbay.core.errors import ErrorCode, FailureReason, ToolCallError
from patchbay.core.models import RuntimeServer, ToolSummary
from patchbay.core.redaction import redact_text
from patchbay.core.settings import Settings
from patchbay.runtime.connection.access import ConnectorAccess
from patchbay.runtime.connection.catalog_refresh import CatalogRefresh
from patchbay.runtime.connection.elicitation import detach_relay
from patchbay.runtime.connection.exchange import Live, RequestExchange
from patchbay.runtime.connection.hooks import HostHooks
from patchbay.runtime.connection.restart_policy import RestartDecision, decide_restart, may_retry_connect
from patchbay.runtime.output.schema_check import turn_off_sdk_output_validation

__all__ = ["ConnectionState", "ServerConnection"]

logger = logging.getLogger(__name__)

ConnectionState = Literal[
    "idle", "connecting", "connected", "closing", "restarting", "failed", "permanently_failed", "closed"
]
Emit = Callable[[str, dict[str, Any]], object]
OnCatalog = Callable[[str, "dict[str, ToolSummary] | None"], None]
OnStatus = Callable[["ServerConnection"], None]

_T = TypeVar("_T")
_STDERR_IN_DETAILS = 1000
# Lifecycles whose connection is never closed for idleness and reconnects in the background.
KEPT_ALIVE = frozenset({"keep_alive", "lazy_keep_alive"})
_Outcome = Literal["stopped", "idle", "lost", "connect_failed"]


class ServerConnection:
    """The runtime's supervised connection to one connector.

    Args:
        server: the projected connector (target, settings, grants, cached catalog, options).
        workspace: the canonical workspace root (stdio ``cwd`` is relative to it).
        settings: ``connect_timeout``, ``request_timeout``, ``max_call_seconds``, ``idle_timeout``,
            ``unresponsive_timeouts``, ``probe_max_pages``, ``probe_max_metadata_bytes``,
            ``stderr_tail_bytes``, ``protocol_mode``; the connector's :class:`RuntimeOptions` override the per-connector ones.
        task_group: where the owner task runs (the runtime's).
        emit: ``emit(event_type, payload)`` for the ``mcp.server.*`` lifecycle events.
        on_catalog: ``on_catalog(name, tools)`` when a (re)connect published a catalog, and
            ``on_catalog(name, None)`` when the connector's tools must leave the router
            (permanent failure, user shutdown).
        credentials: resolves ``server.bindings`` at each connect; the values go to the stdio
            environment / HTTP headers and are registered for redaction. A binding that cannot be
            resolved fails the connect with ``auth_required`` (only this connection; it is retried
            like any failed connect).
        project_id: the runtime's project, named in the egress audit lines.
        hooks: the host's authorizer (an OAuth login may then reach a person; the connect
            deadline is lifted while one is under way) and elicitation handler.
        on_status: ``on_status(connection)`` after every change of :attr:`state`, of the
            in-flight count or of the live catalog (the runtime's live status feed); called
            synchronously, it must return at once and never raise.

    Egress: every HTTP/SSE request goes through the egress guard with the connector's
    ``allow_private`` option; each connect attempt and each tool call appends one metadata-only line
    (``mcp_connect`` / ``mcp_tool_call``) to ``<home>/egress-audit.jsonl``, ``approved`` false when
    the guard refused a request meanwhile.

    Requests: :meth:`call_tool` and :meth:`request` go through :attr:`exchange`
    (:class:`~patchbay.runtime.connection.exchange.RequestExchange`: timeouts, crashes during a call, output
    check); what follows a crash is :func:`~patchbay.runtime.connection.restart_policy.decide_restart`.

    Must be created inside a running event loop (it holds anyio events).
    """

    def __init__(
        self,
        server: RuntimeServer,
        *,
        workspace: Path,
        settings: Settings,
        task_group: TaskGroup,
        emit: Emit | None = None,
        on_catalog: OnCatalog | None = None,
        credentials: CredentialResolver | None = None,
        project_id: str | None = None,
        hooks: HostHooks | None = None,
        on_status: OnStatus | None = None,
    ):
        self._on_status = on_status
        self.failed_at: float | None = None
        self.resource_count: int | None = None
        """Resources the server listed the last time this runtime listed them (None: never)."""
        """Unix seconds of the last failure (connect failure or crash), None before any."""
        self.server = server
        self.name = server.name
        self.options = server.options
        self._workspace = workspace
        self._settings = settings
        self._tg = task_group
        self._emit_event = emit
        self._on_catalog = on_catalog
        self._access = ConnectorAccess(server, settings, credentials, project_id)
        self._hooks = hooks or HostHooks()
        self._refused_at_connect = 0
        unresponsive = self.options.unresponsive_timeouts
        self._unresponsive = False
        idle = self.options.idle_timeout or settings.idle_timeout
        self.idle_timeout = math.inf if self.options.lifecycle in KEPT_ALIVE or idle <= 0 else idle

        self._current_state: ConnectionState = "idle"  # through the _state property from here on
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._done = anyio.Event()
        self._done.set()  # no owner task yet
        self._stopping = False
        self._user_shutdown = False
        self._lost = False
        self._scope: anyio.CancelScope | None = None
        self._client: Client | None = None
        self._conn: ClientConnection | None = None
        self._generation = 0
        self._lost_reasons: dict[int, FailureReason] = {}
        self._inflight = 0
        self._idle_wait_unbounded = False
        self._last_used = anyio.current_time()
        self._connect_failures = 0
        self._retry_at = 0.0
        self.crashes = 0
        """Crashes so far in this session (see the module docstring)."""
        self.tools: dict[str, ToolSummary] = {}
        """The live catalog by original tool name (empty until connected)."""
        self.failure: tuple[ErrorCode, str] | None = None
        """``(code, message)`` of the last failure (connect failure or crash)."""
        self.protocol_version: str | None = None
        self._stderr_tail = ""
        self._crash_limit: str | None = None
        self.diagnostics: list[dict[str, Any]] = []
        """Tools the server listed but the catalog left out (schema bounds), one dict each."""
        self.refresh = CatalogRefresh(
            self.name, settings, emit=self._emit, apply=self._relisted, is_live=lambda: self._state == "connected"
        )
        """list_changed handling: tools re-lists, resources/prompts change counters (catalog_refresh.py)."""
        self.exchange = RequestExchange(
            self.name,
            self,
            self._access,
            request_timeout=self.options.request_timeout or settings.request_timeout,
            max_call_seconds=self.options.max_call_seconds or settings.max_call_seconds,
            unresponsive_timeouts=settings.unresponsive_timeouts if unresponsive is None else unresponsive,
            on_call_finished=self.refresh.call_finished,
        )
        """Requests on the live session (exchange.py)."""

    # -- public -----------------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def _state(self) -> ConnectionState:
        return self._current_state

    @_state.setter
    def _state(self, value: ConnectionState) -> None:
        previous = self._current_state
        self._current_state = value
        if value != previous:
            if value in ("failed", "restarting", "permanently_failed"):
                self.failed_at = time.time()
            self._status_changed()

    @property
    def in_flight(self) -> int:
        """Requests under way on the connection now."""
        return self._inflight

    async def call_tool(self, tool: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Send ``tools/call`` on the live session: :meth:`RequestExchange.call_tool
        <patchbay.runtime.connection.exchange.RequestExchange.call_tool>` (its errors, codes and details)."""
        return await self.exchange.call_tool(tool, arguments)

    async def request(self, method: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send another request (``resources/read``, ``prompts/get``, ...): :meth:`RequestExchange.request
        <patchbay.runtime.connection.exchange.RequestExchange.request>`."""
        return await self.exchange.request(method, send)

    def start(self) -> None:
        """Start connecting in the background (``eager``/``keep_alive`` at runtime start)."""
        if self._state == "idle":
            self._start_owner()

    async def ensure_connected(self) -> None:
        """Connect on first use (or after an idle close) and wait until the connection is ready.

        Raises:
            ToolCallError: ``mcp_server_unavailable`` (``details["code"]``: the probe code,
                ``details["state"]``) when connecting failed, the server is restarting (backoff),
                permanently failed, or shut down.
        """
        self._last_used = anyio.current_time()
        if self._state == "closing":  # an idle close is under way: let it finish, then reopen
            await self._done.wait()
        if self._state == "idle":
            self._start_owner()
        elif self._state == "failed" and self._may_retry():
            self._start_owner()
        if self._state == "connecting":
            await self._ready.wait()
        if self._state != "connected":
            raise self.unavailable()

    def request_stop(self) -> None:
        """Close the connection for good (runtime exit); returns at once, see :meth:`wait_closed`."""
        self._stopping = True
        if self._state in ("idle", "failed"):
            self._state = "closed"
            self._ready.set()
        elif self._state == "connecting" and self._scope is not None:
            self._scope.cancel()
        self._wake.set()

    async def shutdown(self) -> None:
        """User-initiated shutdown: close now, emit ``mcp.server.shutdown``, never restart.

        The connector's tools leave the router; later calls fail with ``mcp_server_unavailable``.
        """
        self._user_shutdown = True
        was = self._state
        self.request_stop()
        await self.wait_closed()
        if was in ("idle", "failed", "restarting", "permanently_failed") and self._state != "closed":
            self._state = "closed"
        if was in ("idle", "failed", "restarting"):
            self._emit("mcp.server.shutdown", {"server": self.name, "reason": "requested"})
        self._catalog(None)

    async def wait_closed(self) -> None:
        """Wait until the owner task has exited its client context (the server is gone) and the
        connection's egress audit lines are written."""
        await self._done.wait()
        self._access.flush()

    # -- the exchange's Session -------------------------------------------------------------

    async def live_for_call(self) -> Live:
        if self._state in ("idle", "closing"):  # closed for idleness (perhaps during an approval)
            await self.ensure_connected()
        return self._live()

    async def live_for_request(self) -> Live:
        if self._state != "connected":
            await self.ensure_connected()
        return self._live()

    def _live(self) -> Live:
        """The live session. Raises ``mcp_server_unavailable`` without one."""
        conn = self._conn
        if self._client is None or conn is None or self._state != "connected":
            raise self.unavailable()
        return Live(conn, self._generation)

    def is_current(self, generation: int) -> bool:
        return self._state == "connected" and self._generation == generation

    def lost(self, generation: int, message: str, *, unresponsive: bool = False) -> FailureReason:
        if not unresponsive:
            return self._mark_lost(generation, message)
        self._unresponsive = True
        reason = self._mark_lost(generation, message)
        self._unresponsive = self._lost  # only if this counted the crash (not already lost/stopping)
        return reason

    def output_schema(self, tool: str) -> dict[str, Any] | None:
        listed = self.tools.get(tool)
        return listed.output_schema if listed is not None else None

    def request_started(self) -> None:
        self._inflight += 1
        self._status_changed()

    def request_finished(self) -> None:
        self._inflight -= 1
        self._last_used = anyio.current_time()
        self._status_changed()
        if self._inflight == 0 and self._idle_wait_unbounded:
            self._wake.set()  # the owner waits without an idle deadline: the clock starts now

    def unavailable(self) -> ToolCallError:
        code, message = self.failure or (ErrorCode.SERVER_CLOSED, "the connection is closed")
        state = self._state
        if state == "permanently_failed":
            message = f"it failed permanently after {self.crashes} crashes ({message})"
        elif state == "restarting":
            message = f"it crashed and is restarting ({message})"
        elif state == "closed":
            message = "it was shut down"
        details: dict[str, Any] = {"connector": self.name, "code": str(code), "state": state}
        if self._stderr_tail:
            details["stderrTail"] = self._stderr_tail
        return ToolCallError(
            FailureReason.MCP_SERVER_UNAVAILABLE, f"MCP server {self.name!r} is unavailable: {message}", details=details
        )

    # -- crashes ----------------------------------------------------------------------------

    def _count_crash(self, message: str) -> RestartDecision:
        """Count one crash and decide what follows it (its ``reason``: the in-flight calls')."""
        decision = decide_restart(self.crashes + 1, self.options.restart)
        self.crashes = decision.crash
        self.failure = (ErrorCode.SERVER_CLOSED, message)
        self._state = "restarting" if decision.restart else "permanently_failed"
        self._crash_limit = None
        return decision

    def _mark_lost(self, generation: int, message: str) -> FailureReason:
        """The connection of ``generation`` died; the first to notice counts the crash.

        Synchronous, so a call that saw the connection close learns its reason at once.
        """
        if generation in self._lost_reasons:
            return self._lost_reasons[generation]
        if generation != self._generation or self._state != "connected" or self._stopping:
            return FailureReason.MCP_SERVER_UNAVAILABLE
        reason = self._lost_reasons[generation] = self._count_crash(message).reason
        self._lost = True
        self._wake.set()
        return reason

    def _after_crash(self) -> None:
        payload: dict[str, Any] = {
            "server": self.name,
            "crashCount": self.crashes,
            "code": str(self.failure[0] if self.failure else ErrorCode.SERVER_CLOSED),
            "willRestart": self._state == "restarting",
        }
        if self._unresponsive:  # it stopped answering rather than exiting (RequestExchange._timed_out)
            payload["reason"] = "unresponsive"
            self._unresponsive = False
        if self._crash_limit:
            payload["limit"] = self._crash_limit
        if self._stderr_tail:
            payload["stderrTail"] = self._stderr_tail[-500:]
        self._emit("mcp.server.crashed", payload)
        if self._state == "permanently_failed":
            self._emit(
                "mcp.server.permanently_failed",
                {"server": self.name, "crashCount": self.crashes, "restarts": self.crashes - 1},
            )
            self._catalog(None)

    # -- owner task -------------------------------------------------------------------------

    def _start_owner(self) -> None:
        self._state = "connecting"
        self._ready = anyio.Event()
        self._done = anyio.Event()
        self._tg.start_soon(self._own, name=f"patchbay-connector-{self.name}")

    def _may_retry(self, *, at: float | None = None) -> bool:
        """Whether a failed first connect may be retried (now, or at time ``at``)."""
        when = anyio.current_time() if at is None else at
        return may_retry_connect(self._connect_failures, self.options.restart) and when >= self._retry_at

    async def _own(self) -> None:
        detach_relay()  # started from some call's task: its receive loop relays for no call
        try:
            await self._supervise()
        except Exception as exc:
            # Nothing may leave the owner task: it would end the runtime's task group, and with
            # it every other connection, the session and the host serving other sessions.
            self._fault(exc)
        finally:
            self._client = None
            self._conn = None
            self._access.flush()
            if self._state == "connecting":  # stopped (or cancelled) while connecting
                self._state = "closed" if self._stopping else "failed"
                self.failure = self.failure or (ErrorCode.SERVER_CLOSED, "the runtime closed while connecting")
            self._ready.set()
            self._done.set()

    def _fault(self, exc: Exception) -> None:
        """An unexpected exception in the owner task: this connector fails (its calls get
        ``mcp_server_unavailable`` with ``details["code"] == "unknown"``), a later use may retry
        on the restart policy's delays, and the error is logged redacted."""
        self._log_fault("its connection", exc)
        self.failure = (ErrorCode.UNKNOWN, f"internal error in the connection ({type(exc).__name__})")
        self.tools = {}
        if self._stopping:
            self._state = "closed"
            return
        self._state = "failed"
        self._connect_failures += 1
        self._retry_at = anyio.current_time() + self.options.restart.delay(self._connect_failures)

    async def _supervise(self) -> None:
        restarting = False
        while True:
            outcome = await self._attempt()
            if outcome in ("stopped", "idle"):
                break
            if outcome == "connect_failed" and not restarting:
                self._connect_failures += 1
                delay = self.options.restart.delay(self._connect_failures)
                self._retry_at = anyio.current_time() + delay
                if self.options.lifecycle not in KEPT_ALIVE or not self._may_retry(at=self._retry_at):
                    break
                # A kept-alive connection keeps trying in the background, on the restart policy's delays.
                if not await self._backoff(delay):
                    break
                continue
            if outcome == "connect_failed":
                self._count_crash(self.failure[1] if self.failure else "reconnecting failed")
            self._after_crash()
            if self._state == "permanently_failed":
                break
            restarting = True
            delay = decide_restart(self.crashes, self.options.restart).delay
            self._emit(
                "mcp.server.restarting",
                {"server": self.name, "attempt": self.crashes, "delaySeconds": delay},
            )
            if not await self._backoff(delay):
                break

    async def _backoff(self, delay: float) -> bool:
        """Wait ``delay`` seconds unless stopped; False (and ``closed``) when stopped."""
        with anyio.move_on_after(delay):
            while not self._stopping:
                self._wake = anyio.Event()
                await self._wake.wait()
        if self._stopping:
            self._state = "closed"
            return False
        return True

    async def _attempt(self) -> _Outcome:
        """One connection: connect, publish, serve until stopped/idle/lost, close."""
        settings = self._settings
        links: list[Link] = []
        if self._ready.is_set():  # a restart: calls arriving now wait for this attempt
            self._ready = anyio.Event()
        self._state = "connecting"
        self._lost = False
        self._refused_at_connect = self._access.mark()
        outcome: _Outcome = "stopped"
        closing = False  # set once the connection is being closed: errors from then on are moot
        scope = self._scope = anyio.CancelScope(deadline=anyio.current_time() + settings.connect_timeout)

        def oauth_request() -> None:
            # The authorization server's round trips (each bounded by its own HTTP timeout) are
            # not the MCP server being slow: the handshake gets the whole connect timeout from
            # the last OAuth request on. A lifted deadline (a person is logging in, or connected:
            # a token refresh) stays lifted.
            if self._state == "connecting" and scope.deadline != math.inf:
                scope.deadline = max(scope.deadline, anyio.current_time() + settings.connect_timeout)

        self._access.on_oauth_request = oauth_request
        try:
            with scope:
                env, headers = await self._access.resolve()
                async with connect(
                    self._access.ref,
                    workspace=self._workspace,
                    settings=settings,
                    egress=self._access.egress,
                    credentials=self._access.credentials,
                    env=env,
                    headers=headers,
                    limits=self.options.limits,
                    authorizer=self._authorizer(scope),
                    link_holder=links,
                    **self.refresh.begin_attempt(self._hooks.client_kwargs(self.exchange.relays)),
                ) as conn:
                    # Patchbay checks structured results itself (after the call, see call_tool).
                    turn_off_sdk_output_validation(conn.client.session)
                    catalog = await list_catalog(
                        conn.client,
                        max_pages=settings.probe_max_pages,
                        max_metadata_bytes=settings.probe_max_metadata_bytes,
                        resources=False,
                        max_schema_depth=settings.schema_max_depth,
                        max_schema_nodes=settings.schema_max_nodes,
                        max_schema_bytes=settings.schema_max_bytes,
                    )
                    self.diagnostics = [diagnostic.to_dict() for diagnostic in catalog.diagnostics]
                    scope.deadline = math.inf
                    self._publish(conn, catalog.tools)
                    generation = self._generation
                    async with anyio.create_task_group() as watch:
                        watch.start_soon(self._guarded, generation, self._watch_end, conn, generation)
                        watch.start_soon(self._guarded, generation, self.refresh.run, conn.client, generation)
                        outcome = await self._serve()
                        watch.cancel_scope.cancel()
                    if outcome == "lost":
                        # The launcher writes its limit marker after the server's stdout closed.
                        self._crash_limit = await conn.link.wait_limit_exceeded()
                        self._stderr_tail = conn.stderr_tail(self._access.known)[-_STDERR_IN_DETAILS:]
                    closing = True
            if scope.cancelled_caught and self._state == "connecting" and not self._stopping:
                self._fail_connect(
                    ErrorCode.TIMEOUT, f"connecting took longer than {settings.connect_timeout:g}s", links
                )
                return "connect_failed"
        except Exception as exc:
            if self._state == "connecting":
                code, message = connect_failure(exc, links[0] if links else None)
                self._fail_connect(code, message, links)
                return "connect_failed"
            if not closing:
                # The live connection broke from inside (the SDK, a callback): a crash of this
                # connection for the restart policy; if it cannot count as one, _own fails the
                # connector alone.
                self._log_fault("its live connection", exc)
                self._mark_lost(self._generation, f"internal error in the connection ({type(exc).__name__})")
                if not self._lost:
                    raise
                outcome = "lost"
            # An error while closing an established connection changes nothing for callers.
        finally:
            self._client = None
            self._conn = None
        if outcome == "lost" and links:
            self._stderr_tail = _tail_of(links[0], self._access.known) or self._stderr_tail
        if outcome == "idle":
            self._state = "closed" if self._stopping else "idle"
            self._emit("mcp.server.shutdown", {"server": self.name, "reason": "idle"})
        # Through the property: the state moved on while this method awaited, which the
        # checker's narrowing from the assignment above cannot see.
        elif outcome == "stopped" and self.state == "connected":
            self._state = "closed"
            self._emit(
                "mcp.server.shutdown",
                {"server": self.name, "reason": "requested" if self._user_shutdown else "runtime_closed"},
            )
        elif self._state == "connecting":  # stopped while connecting
            self._state = "closed"
        return outcome

    def _authorizer(self, scope: anyio.CancelScope) -> Authorizer | None:
        """The host's authorizer, lifting the connect deadline while a person is involved."""
        authorizer = self._hooks.authorizer
        if authorizer is None:
            return None

        async def authorize(url: str) -> None:
            scope.deadline = math.inf
            await authorizer(url)

        return authorize

    async def _serve(self) -> _Outcome:
        while True:
            if self._lost:
                return "lost"
            if self._stopping:
                return "stopped"
            deadline = math.inf if self._inflight else self._last_used + self.idle_timeout
            if anyio.current_time() >= deadline:
                # From this instant no new call may use the client that is about to close.
                self._state = "closing"
                self._client = None
                return "idle"
            # Woken by stop/lost, or at the deadline (then the deadline is recomputed from the
            # latest use); a call ending wakes it only when no deadline was set (cheap hot path).
            self._wake = anyio.Event()
            self._idle_wait_unbounded = deadline == math.inf
            with anyio.CancelScope(deadline=deadline):
                await self._wake.wait()

    async def _guarded(self, generation: int, watcher: Callable[..., Any], *args: Any) -> None:
        """Run one of the live connection's watchers; an unexpected exception in it is a crash
        of that connection (restart policy), never an error of the runtime."""
        try:
            await watcher(*args)
        except Exception as exc:
            self._log_fault("watching its connection", exc)
            self._mark_lost(generation, f"internal error watching the connection ({type(exc).__name__})")

    async def _watch_end(self, conn: ClientConnection, generation: int) -> None:
        await conn.ended.wait()
        self._mark_lost(generation, "the server closed the connection")

    def _publish(self, conn: ClientConnection, tools: list[ToolSummary]) -> None:
        self._access.audit("mcp_connect", self._refused_at_connect)
        self._conn = conn
        self._client = conn.client
        self._generation += 1
        self.exchange.reset()
        for old in [g for g in self._lost_reasons if g < self._generation - 8]:
            del self._lost_reasons[old]
        self.tools = {tool.name: tool for tool in tools}
        self.protocol_version = str(conn.client.protocol_version) if conn.client.protocol_version else "unknown"
        self._state = "connected"
        self._last_used = anyio.current_time()
        self._emit(
            "mcp.server.connected",
            {
                "server": self.name,
                "toolCount": len(self.tools),
                "protocolVersion": self.protocol_version,
                "restarts": self.crashes,
                **({"toolsLeftOut": [d["tool"] for d in self.diagnostics]} if self.diagnostics else {}),
            },
        )
        self._catalog(self.tools)
        self._ready.set()

    def _relisted(self, generation: int, catalog: Catalog) -> dict[str, ToolSummary] | None:
        """Install a re-listed catalog (catalog_refresh.py) if ``generation`` is still live.

        Returns the previous catalog, or None (nothing changed) for a stale generation.
        """
        if generation != self._generation or self._state != "connected":
            return None
        previous = self.tools
        self.tools = {tool.name: tool for tool in catalog.tools}
        self.diagnostics = [diagnostic.to_dict() for diagnostic in catalog.diagnostics]
        self._catalog(self.tools)
        return previous

    def _fail_connect(self, code: ErrorCode, message: str, links: list[Link]) -> None:
        self._access.audit("mcp_connect", self._refused_at_connect)
        if links:  # e.g. an address-space limit too small for the server to start at all
            message = with_limit(message, links[0])
        self.failure = (code, message)
        self._state = "failed"
        if links:
            self._stderr_tail = _tail_of(links[0], self._access.known)
        self._ready.set()

    # -- helpers ----------------------------------------------------------------------------

    def _emit(self, type: str, payload: dict[str, Any]) -> None:
        # Lifecycle events come from the owner task: a logging failure must not take the
        # runtime's task group down with it.
        if self._emit_event is not None:
            try:
                self._emit_event(type, payload)
            except Exception as exc:
                logger.warning("connector %s: could not log %s: %s", self.name, type, exc.__class__.__name__)

    def _log_fault(self, where: str, exc: Exception) -> None:
        text = redact_text(str(exc), self._access.known)[:_STDERR_IN_DETAILS]
        logger.error("connector %s: internal error in %s: %s: %s", self.name, where, type(exc).__name__, text)

    def _catalog(self, tools: dict[str, ToolSummary] | None) -> None:
        if self._on_catalog is not None:
            self._on_catalog(self.name, tools)
        self._status_changed()

    def resources_listed(self, count: int) -> None:
        """Record that a full resources/list of this connection found ``count`` resources."""
        self.resource_count = count
        self._status_changed()

    def _status_changed(self) -> None:
        if self._on_status is not None:
            try:
                self._on_status(self)
            except Exception as exc:  # the status feed must never break the connection
                logger.warning("connector %s: live status not published: %s", self.name, type(exc).__name__)


def _tail_of(link: Link, known_secrets: tuple[str, ...] = ()) -> str:
    return link.stderr_tail(known_secrets)[-_STDERR_IN_DETAILS:]
