"""The per-request exchange of a :class:`~patchbay.runtime.connection.ServerConnection`.

:class:`RequestExchange` is a mixin of ``ServerConnection``: it holds ``tools/call``
(:meth:`~RequestExchange.call_tool`) and the other requests (:meth:`~RequestExchange.request`:
``resources/*``, ``prompts/*``), while the connection's owner task, lifecycle and restart policy stay
in :mod:`patchbay.runtime.connection`.

**Calls** run in the caller's task on the shared SDK session (safe from several tasks at once),
so concurrent calls are concurrent on the wire and a caller's cancellation cancels exactly its
request (the SDK then sends ``notifications/cancelled``).

**Timeouts**: a call fails with ``timeout`` when no result and no progress
notification arrived for ``request_timeout`` seconds, or after ``max_call_seconds`` in total
whatever the progress; the cancellation makes the SDK send ``notifications/cancelled`` and drop a
late reply, and the connection stays usable.

**Unresponsive servers**: after ``unresponsive_timeouts`` request timeouts in a row (no answer,
not even an error, in between) the connection counts as crashed with reason ``unresponsive``, so
the restart policy replaces the server instead of letting every later call wait out its timeout.

**Crashes during a request**: a request that sees the connection die counts the crash (the first to
notice does) and fails with ``mcp_server_restarted`` / ``mcp_server_unstable`` /
``mcp_server_unavailable`` as the restart policy decides; it is never re-sent.

**Output check**: a successful ``tools/call`` result is checked against the
tool's ``outputSchema`` (:mod:`patchbay.runtime.output_schema`) after the call, off the event loop.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports import ClientConnection
from patchbay.core.errors import ErrorCode, FailureReason, ToolCallError
from patchbay.core.redaction import redact_text
from patchbay.runtime.output_schema import check_tool_result

if TYPE_CHECKING:
    from patchbay.core.models import ToolSummary
    from patchbay.runtime.access import ConnectorAccess
    from patchbay.runtime.catalog_refresh import CatalogRefresh
    from patchbay.runtime.connection import ConnectionState

__all__ = ["RequestExchange"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_OnProgress = ProgressFnT


class RequestExchange:
    """Requests on a connection's live session; mixed into
    :class:`~patchbay.runtime.connection.ServerConnection`, which owns the state declared below.
    """

    if TYPE_CHECKING:  # set by ServerConnection.__init__ and its owner task
        name: str
        tools: dict[str, ToolSummary]
        failure: tuple[ErrorCode, str] | None
        crashes: int
        request_timeout: float
        max_call_seconds: float
        unresponsive_timeouts: int
        refresh: CatalogRefresh
        _timeouts: int
        _unresponsive: bool
        _lost: bool
        _state: ConnectionState
        _client: Client | None
        _conn: ClientConnection | None
        _access: ConnectorAccess
        _generation: int
        _inflight: int
        _idle_wait_unbounded: bool
        _last_used: float
        _wake: anyio.Event
        _stderr_tail: str

        async def ensure_connected(self) -> None: ...

        def _mark_lost(self, generation: int, message: str) -> FailureReason: ...

    async def call_tool(self, tool: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Send ``tools/call`` for ``tool`` (the server's original name) on the live session.

        Returns the server's ``CallToolResult`` as is (``is_error`` results included).

        Raises:
            ToolCallError: ``mcp_server_unavailable`` (not connected), ``mcp_server_restarted`` /
                ``mcp_server_unstable`` (the server crashed during the call), ``timeout``
                (``request_timeout`` seconds without a result or progress, or ``max_call_seconds``
                in total; ``details["timeoutSeconds"]``, ``details["capped"]``), ``tool_error`` (a
                JSON-RPC error, ``details["mcpCode"]``; an invalid result; or a successful result
                whose structuredContent is missing or violates the tool's outputSchema,
                ``details["problem"]``, ``details["jsonPath"]``).
        """
        if self._state in ("idle", "closing"):  # closed for idleness (perhaps during an approval)
            await self.ensure_connected()
        client, conn = self._live()
        refused_before = self._access.mark()
        try:
            return await self._exchange(
                client,
                conn,
                repr(tool),
                lambda live, on_progress: live.call_tool(tool, arguments, progress_callback=on_progress),
                cap=self.max_call_seconds,
                check=functools.partial(self._check_output, tool),
            )
        finally:
            self.refresh.call_finished()
            self._access.audit("mcp_tool_call", refused_before)

    async def _check_output(self, tool: str, result: types.CallToolResult) -> None:
        """Apply the outputSchema rules (runtime/output_schema.py); isError results pass unchecked."""
        listed = self.tools.get(tool)
        output_schema = listed.output_schema if listed is not None else None
        if output_schema is None or result.is_error:
            return
        # Off the event loop: validating a large result takes a while (~1.5 s for ~0.9 MB).
        await anyio.to_thread.run_sync(
            functools.partial(check_tool_result, tool, output_schema, result, connector=self.name)
        )

    # -- other requests: resources and prompts (used by runtime/peer.py) -------------

    async def request(self, method: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send one request other than ``tools/call`` (``resources/list``, ``resources/read``,
        ``prompts/get``, ...) on the live session, in the caller's task, connecting first if needed.

        Args:
            method: the JSON-RPC method, for messages.
            send: ``await send(client)`` makes the SDK call and returns its result.

        The rules of :meth:`call_tool` apply, except that these requests report no progress: the
        answer must come within ``request_timeout`` seconds; a crash during the request counts like
        one during a call and the request is never re-sent.

        Raises:
            ToolCallError: ``mcp_server_unavailable``, ``mcp_server_restarted`` /
                ``mcp_server_unstable``, ``timeout`` (``details["timeoutSeconds"]``), or
                ``tool_error`` (a JSON-RPC error: ``details["mcpCode"]``; or an invalid result).
        """
        if self._state != "connected":
            await self.ensure_connected()
        client, conn = self._live()
        return await self._exchange(client, conn, method, lambda live, _: send(live), cap=None)

    def _live(self) -> tuple[Client, ClientConnection]:
        """The live session's client and connection. Raises ``mcp_server_unavailable`` without one."""
        client, conn = self._client, self._conn
        if client is None or conn is None or self._state != "connected":
            raise self._unavailable()
        return client, conn

    async def _exchange(
        self,
        client: Client,
        conn: ClientConnection,
        what: str,
        send: Callable[[Client, _OnProgress | None], Awaitable[_T]],
        *,
        cap: float | None,
        check: Callable[[_T], Awaitable[None]] | None = None,
    ) -> _T:
        """One request on the live session with the rules that :meth:`call_tool` and :meth:`request`
        share: the timeout, crash detection (never re-sent) and error translation.

        Args:
            what: the request for messages (a tool's ``repr`` or a JSON-RPC method).
            send: ``await send(client, on_progress)`` makes the SDK call; ``on_progress`` is None
                when ``cap`` is None.
            cap: ``max_call_seconds`` for a request whose progress notifications restart the
                ``request_timeout`` clock (never past the cap); None: no progress, the answer must
                come within ``request_timeout`` seconds.
            check: awaited on the result outside the timeout (the outputSchema rules).

        Raises:
            ToolCallError: ``mcp_server_restarted`` / ``mcp_server_unstable``, ``mcp_server_unavailable``
                (the crash used the last restart), ``timeout`` (``details["timeoutSeconds"]``,
                ``details["capped"]``), ``tool_error`` (``details["mcpCode"]``, or an invalid result).
        """
        conn_ended, generation = conn.ended, self._generation
        idle = self.request_timeout
        started = anyio.current_time()
        scope = anyio.CancelScope(deadline=started + (idle if cap is None else min(idle, cap)))
        on_progress = None
        if cap is not None:
            limit = cap

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                # A sign of life: the idle part of the timeout starts again, never past the hard cap.
                scope.deadline = min(started + limit, anyio.current_time() + idle)

        self._inflight += 1
        try:
            with scope:
                result = await send(client, on_progress)
            if not scope.cancelled_caught:
                self._timeouts = 0
                if check is not None:
                    await check(result)
                return result
            self._timed_out(generation)
            if cap is None:
                raise ToolCallError(
                    FailureReason.TIMEOUT,
                    f"{self.name}: no answer to {what} within {idle:g}s",
                    details={"connector": self.name, "timeoutSeconds": idle, "capped": False},
                )
            capped = anyio.current_time() - started >= cap - 1e-3
            seconds = cap if capped else idle
            raise ToolCallError(
                FailureReason.TIMEOUT,
                f"{self.name}: no result for {what} within {seconds:g}s"
                + (" (the total cap for one call)" if capped else " without progress"),
                details={"connector": self.name, "timeoutSeconds": seconds, "capped": capped},
            )
        except MCPError as exc:
            self._timeouts = 0  # an answer, even an error, is a sign of life
            # -32000 is both the SDK's "connection closed" and many servers' generic error code:
            # only a stream that really ended (or the SDK's own wording) is a crash.
            if exc.error.code == types.CONNECTION_CLOSED and (
                conn_ended.is_set() or (exc.error.message == "Connection closed" and exc.error.data is None)
            ):
                raise self._crashed_during_call(generation, exc.error.message or "connection closed") from exc
            raise ToolCallError(
                FailureReason.TOOL_ERROR,
                f"{self.name}: {what} failed: {exc.error.message}",
                details={"connector": self.name, "mcpCode": exc.error.code},
            ) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise self._crashed_during_call(generation, f"the connection closed ({type(exc).__name__})") from exc
        except (RuntimeError, pydantic.ValidationError) as exc:
            if self._state != "connected" or self._generation != generation:
                raise self._crashed_during_call(generation, "the connection closed") from exc
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ToolCallError(
                FailureReason.TOOL_ERROR,
                f"{self.name}: {what} returned an invalid result: {first}",
                details={"connector": self.name},
            ) from exc
        except ToolCallError:
            raise
        except Exception as exc:
            # A fault of ours or of the SDK: this request fails with a code, nothing else does.
            text = redact_text(str(exc), self._access.known)[:1000]
            logger.error("connector %s: internal error during %s: %s: %s", self.name, what, type(exc).__name__, text)
            raise ToolCallError(
                FailureReason.MCP_SERVER_UNAVAILABLE,
                f"MCP server {self.name!r} is unavailable: internal error during {what} ({type(exc).__name__})",
                details={"connector": self.name, "code": str(ErrorCode.UNKNOWN), "state": self._state},
            ) from exc
        finally:
            self._inflight -= 1
            self._last_used = anyio.current_time()
            if self._inflight == 0 and self._idle_wait_unbounded:
                self._wake.set()  # the owner waits without an idle deadline: the clock starts now

    def _timed_out(self, generation: int) -> None:
        """Count a request timeout; the ``unresponsive_timeouts``-th in a row (with no answer
        between them) makes the connection a crash, so the restart policy replaces the server."""
        self._timeouts += 1
        limit = self.unresponsive_timeouts
        if limit and self._timeouts >= limit and generation == self._generation:
            self._timeouts = 0
            self._unresponsive = True
            self._mark_lost(generation, f"the server did not answer {limit} requests in a row (unresponsive)")
            self._unresponsive = self._lost  # only if this counted the crash (not already lost/stopping)

    # -- errors callers see -------------------------------------------------------------------

    def _crashed_during_call(self, generation: int, message: str) -> ToolCallError:
        reason = self._mark_lost(generation, message)
        if reason is FailureReason.MCP_SERVER_UNAVAILABLE:
            return self._unavailable()
        text = {
            FailureReason.MCP_SERVER_RESTARTED: "crashed during the call and is being restarted",
            FailureReason.MCP_SERVER_UNSTABLE: f"crashed during the call (crash {self.crashes})",
        }[reason]
        return ToolCallError(
            reason,
            f"MCP server {self.name!r} {text}; the call was not re-sent",
            details={"connector": self.name, "code": str(ErrorCode.SERVER_CLOSED), "crashCount": self.crashes},
        )

    def _unavailable(self) -> ToolCallError:
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
