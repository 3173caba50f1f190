"""The per-request exchange of a :class:`ServerConnection`.

:class:`RequestExchange` sends ``tools/call`` (:meth:`~RequestExchange.call_tool`) and the other
requests (:meth:`~RequestExchange.request`: ``resources/*``, ``prompts/*``) in the caller's task on
the live session its :class:`Session` (the connection) gives it. It owns the per-request timeouts
(``timeout`` after ``request_timeout`` seconds without progress, or ``max_call_seconds`` in all),
counts an unresponsive server or a connection that died as a crash, and checks a result against the
tool's ``outputSchema`` (:mod:`patchbay.runtime.output.schema_check`). It counts the requests in flight
for :mod:`patchbay.runtime.connection.elicitation` (:attr:`RequestExchange.relays`), and holds a
call's ``request_timeout`` clock while a person answers a server's elicitation for it.

Design: docs/connections.md
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports import ClientConnection
from patchbay.core.errors import ErrorCode, FailureReason, ToolCallError
from patchbay.core.redaction import redact_text
from patchbay.runtime.connection.access import ConnectorAccess
from patchbay.runtime.connection.elicitation import CallRelays
from patchbay.runtime.output.schema_check import check_tool_result_async

__all__ = ["Live", "RequestExchange", "Session", "relaying_progress"]

_PROGRESS_SINK: ContextVar[ProgressFnT | None] = ContextVar("patchbay_progress_sink", default=None)


@contextmanager
def relaying_progress(sink: ProgressFnT) -> Iterator[None]:
    """Within the block, every ``notifications/progress`` a server sends for a tool call made from
    this context is also passed to ``sink(progress, total, message)`` (a gateway forwards it to
    its host). A sink that fails is logged and dropped for that call; the call goes on."""
    token = _PROGRESS_SINK.set(sink)
    try:
        yield
    finally:
        _PROGRESS_SINK.reset(token)


logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class Live(NamedTuple):
    """The live session a request goes out on."""

    conn: ClientConnection
    generation: int
    """Which connection of the connector it is (each reconnect makes a new one)."""


class Session(Protocol):
    """What a :class:`RequestExchange` needs from the connection that holds it."""

    @property
    def crashes(self) -> int:
        """Crashes so far in the runtime session."""
        ...

    @property
    def state(self) -> str:
        """The connection's state (``connected``, ``restarting``, ...), for error details."""
        ...

    async def live_for_call(self) -> Live:
        """The live session for a ``tools/call`` (reopening one closed for idleness).

        Raises:
            ToolCallError: ``mcp_server_unavailable``.
        """
        ...

    async def live_for_request(self) -> Live:
        """The live session for another request (connecting first if needed).

        Raises:
            ToolCallError: ``mcp_server_unavailable``.
        """
        ...

    def is_current(self, generation: int) -> bool:
        """Whether connection ``generation`` is still the live one."""
        ...

    def lost(self, generation: int, message: str, *, unresponsive: bool = False) -> FailureReason:
        """Connection ``generation`` died (or stopped answering): count the crash if it is the
        first to notice; returns what the requests on it fail with."""
        ...

    def unavailable(self) -> ToolCallError:
        """The ``mcp_server_unavailable`` error for the connection's current state."""
        ...

    def output_schema(self, tool: str) -> dict[str, Any] | None:
        """The listed ``outputSchema`` of ``tool`` (None: none, or not listed)."""
        ...

    def request_started(self) -> None:
        """A request is in flight (the connection does not close for idleness meanwhile)."""
        ...

    def request_finished(self) -> None:
        """A request ended (the idle clock starts again)."""
        ...


class _ProgressClock:
    """A call's deadline that each progress notification moves: ``request_timeout`` from the
    last sign of life, never past the hard cap. One small object per call, doing nothing until
    the server reports progress."""

    __slots__ = ("cap", "held", "idle", "scope", "sink")

    def __init__(self, scope: anyio.CancelScope, idle: float, cap: float):
        self.scope = scope
        self.idle = idle
        self.cap = cap
        self.held = 0  # elicitations of this call waiting for a person
        self.sink = _PROGRESS_SINK.get()  # a host that asked for this call's progress

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While a person answers for the call, only the cap applies; the idle clock restarts after."""
        self.held += 1
        self.scope.deadline = self.cap
        try:
            yield
        finally:
            self.held -= 1
            if not self.held:
                self.scope.deadline = min(self.cap, anyio.current_time() + self.idle)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.held:
            self.scope.deadline = min(self.cap, anyio.current_time() + self.idle)
        if self.sink is not None:
            try:
                await self.sink(progress, total, message)
            except Exception:  # the host's side failing must not fail the server's call
                logger.warning("progress could not be relayed; relaying stops for this call", exc_info=True)
                self.sink = None


class RequestExchange:
    """Requests on one connector's live session: timeouts, crash detection and error translation.

    Args:
        name: the connector's name (messages, details).
        session: the connection (its live session, crash counting, idle clock).
        access: the connector's access (egress audit line per call, known secrets for redaction).
        request_timeout: seconds a request may go without an answer (or, for a call, progress).
        max_call_seconds: the hard cap on one ``tools/call``, progress or not.
        unresponsive_timeouts: request timeouts in a row that make the connection a crash
            (0: never).
        on_call_finished: called as each ``tools/call`` ends (the catalog refresh counts them).
    """

    def __init__(
        self,
        name: str,
        session: Session,
        access: ConnectorAccess,
        *,
        request_timeout: float,
        max_call_seconds: float,
        unresponsive_timeouts: int,
        on_call_finished: Callable[[], None],
    ):
        self.name = name
        self._session = session
        self._access = access
        self.request_timeout = request_timeout
        self.max_call_seconds = max_call_seconds
        self.unresponsive_timeouts = unresponsive_timeouts
        self._on_call_finished = on_call_finished
        self._timeouts = 0
        self.relays = CallRelays()
        """The requests in flight here, for the elicitation callback (elicitation.py)."""

    def reset(self) -> None:
        """A new connection: the timeouts in a row start again from zero."""
        self._timeouts = 0

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
        live = await self._session.live_for_call()
        refused_before = self._access.mark()
        try:
            return await self._exchange(
                live,
                repr(tool),
                lambda client, on_progress: client.call_tool(tool, arguments, progress_callback=on_progress),
                cap=self.max_call_seconds,
                check=functools.partial(self._check_output, tool),
            )
        finally:
            self._on_call_finished()
            self._access.audit("mcp_tool_call", refused_before)

    async def _check_output(self, tool: str, result: types.CallToolResult) -> None:
        """Apply the outputSchema rules (runtime/output/schema_check.py); isError results pass unchecked."""
        output_schema = self._session.output_schema(tool)
        if output_schema is None or result.is_error:
            return
        # inline for small results; a large one is validated in a worker thread (~1.5 s for ~0.9 MB)
        await check_tool_result_async(tool, output_schema, result, connector=self.name)

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
        live = await self._session.live_for_request()
        return await self._exchange(live, method, lambda client, _: send(client), cap=None)

    async def _exchange(
        self,
        live: Live,
        what: str,
        send: Callable[[Client, ProgressFnT | None], Awaitable[_T]],
        *,
        cap: float | None,
        check: Callable[[_T], Awaitable[None]] | None = None,
    ) -> _T:
        """One request on the live session with the rules that :meth:`call_tool` and :meth:`request`
        share: the timeout, crash detection (never re-sent) and error translation.

        Args:
            live: the session to send on.
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
        conn, generation = live
        conn_ended = conn.ended
        idle = self.request_timeout
        started = anyio.current_time()
        scope = anyio.CancelScope(deadline=started + (idle if cap is None else min(idle, cap)))
        on_progress = None if cap is None else _ProgressClock(scope, idle, started + cap)
        tracked = self.relays.track(None if on_progress is None else on_progress.hold)

        self._session.request_started()
        try:
            with scope, tracked:
                result = await send(conn.client, on_progress)
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
            if not self._session.is_current(generation):
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
                details={"connector": self.name, "code": str(ErrorCode.UNKNOWN), "state": self._session.state},
            ) from exc
        finally:
            self._session.request_finished()

    def _timed_out(self, generation: int) -> None:
        """Count a request timeout; the ``unresponsive_timeouts``-th in a row (with no answer
        between them) makes the connection a crash, so the restart policy replaces the server."""
        self._timeouts += 1
        limit = self.unresponsive_timeouts
        if limit and self._timeouts >= limit and self._session.is_current(generation):
            self._timeouts = 0
            message = f"the server did not answer {limit} requests in a row (unresponsive)"
            self._session.lost(generation, message, unresponsive=True)

    def _crashed_during_call(self, generation: int, message: str) -> ToolCallError:
        reason = self._session.lost(generation, message)
        if reason is FailureReason.MCP_SERVER_UNAVAILABLE:
            return self._session.unavailable()
        crashes = self._session.crashes
        text = {
            FailureReason.MCP_SERVER_RESTARTED: "crashed during the call and is being restarted",
            FailureReason.MCP_SERVER_UNSTABLE: f"crashed during the call (crash {crashes})",
        }[reason]
        return ToolCallError(
            reason,
            f"MCP server {self.name!r} {text}; the call was not re-sent",
            details={"connector": self.name, "code": str(ErrorCode.SERVER_CLOSED), "crashCount": crashes},
        )
