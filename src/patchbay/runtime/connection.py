"""ServerConnection: one long-lived MCP client connection per connector (seed 000 §2, §3).

Lifecycle (the SDK requires a ``Client`` to be entered and exited in the same task):

* **Owner task.** The first use starts one task in the runtime's task group. That task enters
  :func:`patchbay.adapters.transports.open_client`, lists the tools (following every cursor, at
  most ``settings.probe_max_pages`` pages; none when the server has no ``tools`` capability),
  publishes the live catalog, then waits until the
  connection is asked to stop (runtime exit) or is found dead, and exits the client context itself
  (for stdio: the SDK's shielded stdin-close/SIGTERM/SIGKILL sequence plus a process-group sweep).
  Connect + initialize + listing are bounded by ``settings.connect_timeout``.
* **Calls.** ``tools/call`` requests run in the caller's own task on the shared SDK session (which
  is safe to use from several tasks at once), so concurrent calls are concurrent on the wire and a
  caller's cancellation cancels exactly its request (the SDK sends ``notifications/cancelled``).
  Only the lifecycle lives in the owner task; this avoids a task hop per call on the hot path.
* **Failures.** A failed connect leaves the connection ``failed``: every call fails fast with
  ``ToolCallError(mcp_server_unavailable)`` whose ``details["code"]`` is the classified probe code
  (``command_not_found``, ``timeout``, ``server_closed``, ...). A server that dies mid-call makes
  the SDK raise ``MCPError(CONNECTION_CLOSED)``: that call fails at once with
  ``mcp_server_unavailable``, the connection turns ``failed`` and the owner task reaps the server.
  A call whose result does not arrive within ``settings.request_timeout`` fails with ``timeout``.

Restart policy and lifecycle modes (seed 000 §3.1; eager/keep-alive) are a later addition: they
hook into the owner task (reconnect loop) and :meth:`ServerConnection._lost`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pydantic
from anyio.abc import TaskGroup
from mcp import Client
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports import ClientConnection, classify, open_client
from patchbay.adapters.transports.catalog import list_catalog
from patchbay.core.errors import ErrorCode, FailureReason, ToolCallError
from patchbay.core.models import RuntimeServer, ToolSummary
from patchbay.core.settings import Settings

__all__ = ["ConnectionState", "ServerConnection"]

ConnectionState = Literal["idle", "connecting", "connected", "failed", "closed"]
Emit = Callable[[str, dict[str, Any]], object]

_CLIENT_INFO = types.Implementation(name="patchbay", version="0.1.0")
_STDERR_IN_DETAILS = 1000


class ServerConnection:
    """The runtime's connection to one connector.

    Args:
        server: the projected connector (target, settings, grants, cached catalog).
        workspace: the canonical workspace root (stdio ``cwd`` is relative to it).
        settings: ``connect_timeout``, ``request_timeout``, ``probe_max_pages``,
            ``stderr_tail_bytes``, ``protocol_mode``.
        emit: ``emit(event_type, payload)`` for ``mcp.server.connected`` / ``mcp.server.shutdown``.

    Must be created inside a running event loop (it holds anyio events).
    """

    def __init__(self, server: RuntimeServer, *, workspace: Path, settings: Settings, emit: Emit | None = None):
        self.server = server
        self.name = server.name
        self._workspace = workspace
        self._settings = settings
        self._emit_event = emit
        self._state: ConnectionState = "idle"
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._client: Client | None = None
        self._conn: ClientConnection | None = None
        self.tools: dict[str, ToolSummary] = {}
        """The live catalog by original tool name (empty until connected)."""
        self.failure: tuple[ErrorCode, str] | None = None
        """``(probe code, message)`` once the connection failed."""
        self.protocol_version: str | None = None
        self._stderr_tail = ""

    def _emit(self, type: str, payload: dict[str, Any]) -> None:
        # Lifecycle events come from the owner task: a logging failure must not take the
        # runtime's task group down with it.
        if self._emit_event is not None:
            with contextlib.suppress(Exception):
                self._emit_event(type, payload)

    @property
    def state(self) -> ConnectionState:
        return self._state

    async def ensure_connected(self, task_group: TaskGroup) -> None:
        """Start the owner task on first use and wait until the connection is ready.

        Raises:
            ToolCallError: ``mcp_server_unavailable`` (``details["code"]``: the probe code) when
                connecting failed now or earlier, or the connection is closed.
        """
        if self._state == "idle":
            self._state = "connecting"
            task_group.start_soon(self._run, name=f"patchbay-connector-{self.name}")
        if self._state == "connecting":
            await self._ready.wait()
        if self._state != "connected":
            raise self._unavailable()

    async def call_tool(
        self, tool: str, arguments: dict[str, Any] | None, *, read_timeout_seconds: float | None = None
    ) -> types.CallToolResult:
        """Send ``tools/call`` for ``tool`` (the server's original name) on the live session.

        Returns the server's ``CallToolResult`` as is (``is_error`` results included).

        Raises:
            ToolCallError: ``mcp_server_unavailable`` (not connected, or the server went away,
                ``details["code"] == "server_closed"``), ``timeout`` (no result within
                ``read_timeout_seconds``, default ``settings.request_timeout``), ``tool_error`` (the
                server answered with a JSON-RPC error, ``details["mcpCode"]``, or an invalid result).
        """
        client = self._client
        if client is None or self._state != "connected":
            raise self._unavailable()
        seconds = self._settings.request_timeout if read_timeout_seconds is None else read_timeout_seconds
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=seconds)
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                self._lost(exc.error.message or "connection closed")
                raise self._unavailable() from exc
            if exc.error.code == types.REQUEST_TIMEOUT:
                raise ToolCallError(
                    FailureReason.TIMEOUT,
                    f"{self.name}: no result for {tool!r} within {seconds:g}s",
                    details={"connector": self.name, "timeoutSeconds": seconds},
                ) from exc
            raise ToolCallError(
                FailureReason.TOOL_ERROR,
                f"{self.name}: {tool!r} failed: {exc.error.message}",
                details={"connector": self.name, "mcpCode": exc.error.code},
            ) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            self._lost(f"the connection closed ({type(exc).__name__})")
            raise self._unavailable() from exc
        except (RuntimeError, pydantic.ValidationError) as exc:
            if self._state != "connected":
                raise self._unavailable() from exc
            raise ToolCallError(
                FailureReason.TOOL_ERROR,
                f"{self.name}: {tool!r} returned an invalid result: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                details={"connector": self.name},
            ) from exc

    def request_stop(self) -> None:
        """Ask the owner task to close the connection (returns at once; see :meth:`wait_closed`)."""
        if self._state == "idle":
            self._state = "closed"
            self._ready.set()
            self._done.set()
        elif self._state == "connecting" and self._scope is not None:
            self._scope.cancel()
        self._stop.set()

    async def wait_closed(self) -> None:
        """Wait until the owner task has exited its client context (the server is gone)."""
        await self._done.wait()

    # -- owner task -------------------------------------------------------------------------

    async def _run(self) -> None:
        settings = self._settings
        links: list[Any] = []
        scope = self._scope = anyio.CancelScope(deadline=anyio.current_time() + settings.connect_timeout)
        try:
            with scope:
                async with open_client(
                    self.server.target,
                    workspace=self._workspace,
                    stderr_tail_bytes=settings.stderr_tail_bytes,
                    mode=settings.protocol_mode,
                    link_holder=links,
                    client_info=_CLIENT_INFO,
                ) as conn:
                    catalog = await list_catalog(
                        conn.client,
                        max_pages=settings.probe_max_pages,
                        max_metadata_bytes=settings.probe_max_metadata_bytes,
                        resources=False,
                    )
                    tools = catalog.tools
                    scope.deadline = math.inf
                    self._publish(conn, tools)
                    await self._stop.wait()
            if scope.cancelled_caught and self._state == "connecting" and not self._stop.is_set():
                self._fail(ErrorCode.TIMEOUT, f"connecting took longer than {settings.connect_timeout:g}s", links)
        except Exception as exc:
            if self._state == "connecting":
                status = getattr(links[0], "last_status", None) if links else None
                code, message = classify(exc, http_status=status)
                self._fail(code, message, links)
            # An error while closing an established connection changes nothing for callers.
        finally:
            self._client = None
            self._conn = None
            if self._state == "connecting":  # the runtime closed (or was cancelled) while connecting
                self._fail(ErrorCode.SERVER_CLOSED, "the runtime closed while connecting", links)
            if self._state == "connected":
                self._state = "closed"
                self._emit("mcp.server.shutdown", {"server": self.name})
            self._ready.set()
            self._done.set()

    def _publish(self, conn: ClientConnection, tools: list[ToolSummary]) -> None:
        self._conn = conn
        self._client = conn.client
        self.tools = {tool.name: tool for tool in tools}
        self.protocol_version = str(conn.client.protocol_version) if conn.client.protocol_version else "unknown"
        self._state = "connected"
        self._emit(
            "mcp.server.connected",
            {"server": self.name, "toolCount": len(self.tools), "protocolVersion": self.protocol_version},
        )
        self._ready.set()

    def _fail(self, code: ErrorCode, message: str, links: list[Any]) -> None:
        self.failure = (code, message)
        self._state = "failed"
        if links and hasattr(links[0], "stderr"):
            self._stderr_tail = links[0].stderr.text()[-_STDERR_IN_DETAILS:]

    def _lost(self, message: str) -> None:
        """The server went away under a live session: fail fast from now on, reap it.

        Not a crash when the runtime is closing the connection anyway (an in-flight call then
        just fails as unavailable).
        """
        if self._state == "connected" and not self._stop.is_set():
            self.failure = (ErrorCode.SERVER_CLOSED, message)
            self._state = "failed"
            if self._conn is not None:
                self._stderr_tail = self._conn.stderr_tail()[-_STDERR_IN_DETAILS:]
            self._emit("mcp.server.crashed", {"server": self.name, "code": str(ErrorCode.SERVER_CLOSED)})
        self._stop.set()

    def _unavailable(self) -> ToolCallError:
        code, message = self.failure or (ErrorCode.SERVER_CLOSED, "the connection is closed")
        details: dict[str, Any] = {"connector": self.name, "code": str(code)}
        if self._stderr_tail:
            details["stderrTail"] = self._stderr_tail
        return ToolCallError(
            FailureReason.MCP_SERVER_UNAVAILABLE, f"MCP server {self.name!r} is unavailable: {message}", details=details
        )
