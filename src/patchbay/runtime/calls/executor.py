"""The executor of the governed runtime: one tool call from its name to its result, through
ToolRouter → PermissionEngine → MCP connection. An open
:class:`patchbay.runtime.runtime.Runtime` holds one :class:`ToolExecutor`, made from the state the
runtime owns (event log, connections, router, permissions, output guard), and hands it every call.

The chain of one allowed MCP call; ``toolCallId`` is ``tc_<n>`` for the session's n-th call
(consecutive), and every event of the call carries it::

    model.tool_call_requested {tool, args, toolCallId}
    [mcp.server.connected {server, toolCount, protocolVersion}]        first use of the connector
    permission.requested      {tool, args, riskAtDecision, sourcedFrom}
    permission.resolved       {decision, actor, sourcedFrom}
    mcp.call.started          {server, toolCallId, method: "tools/call", args: {name, arguments}}
    tool.started              {tool, toolCallId}
    mcp.call.completed        {server, toolCallId, durationMs}
    tool.completed            {tool, toolCallId, resultPreview, resultSize[, truncated, artifactId]}

Failures end in ``tool.failed {tool, toolCallId, reason}`` and a raised ``ToolCallError`` with that
reason: ``unknown_tool``, ``ambiguous_call`` (after ``tool.ambiguous_call``),
``mcp_server_unavailable``, ``permission_denied`` / ``approval_unavailable`` (after
``permission.resolved {decision: "deny"}``; the server never sees the call), ``timeout`` and
``tool_error`` (both after ``mcp.call.failed``; an ``isError`` result is attached to the exception
as ``.result``). A cancelled call logs reason ``cancelled`` and the cancellation propagates.

The events of a call are appended before the step they record (nothing is sent before its
events are appended) and written by the event log's background writer while the call waits; see
:mod:`patchbay.runtime.events.log` for when they reach the file and what a crash can lose.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from patchbay.adapters.transports.budget import holding_results
from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError, ValidationError
from patchbay.core.models import RuntimeServer
from patchbay.core.names import MCP_PREFIX, parse_canonical_tool_name
from patchbay.core.policy import Decision
from patchbay.core.settings import Settings
from patchbay.core.validation import validate_tool_arguments
from patchbay.runtime.calls.permissions import PermissionEngine, Resolution, policy_fingerprint
from patchbay.runtime.calls.result import CallEvents, ToolCallResult, local_result, mcp_result, tool_error
from patchbay.runtime.calls.router import Route, ToolRouter
from patchbay.runtime.connection.catalog_refresh import wire_connector
from patchbay.runtime.connection.server_connection import ServerConnection
from patchbay.runtime.events.log import EventLog
from patchbay.runtime.output.guard import GUARD_IN_THREAD_BYTES, OutputGuard, rough_size

__all__ = ["LocalTool", "ToolExecutor"]

_MAX_TOOL_NAME = 1024

LocalTool = Callable[..., Any]
"""A local tool: ``fn(**arguments)``, sync (run in a worker thread) or async. It may return a str
(one text block), a dict (structured content, plus its JSON as text), None, or a ``CallToolResult``."""


class ToolExecutor:
    """Runs the tool calls of one open runtime session: :meth:`call` and the steps it takes
    (connect on first use, resolve against a fresh catalog, decide, ask, send, guard the output,
    log the chain of the module docstring).

    Args:
        log: the session's open event log.
        settings: ``result_preview_chars`` (the previews in events and error messages).
        servers: the enabled, in-scope connectors by name.
        connections: their connections, by the same names.
        router: resolves names; kept current by the runtime as catalogs change.
        permissions: decides and asks.
        output_guard: bounds every result.
        local_tools: the host's local tools by bare name.

    The runtime calls :meth:`forget_decisions` when a connector's catalog changes.
    """

    def __init__(
        self,
        *,
        log: EventLog,
        settings: Settings,
        servers: Mapping[str, RuntimeServer],
        connections: Mapping[str, ServerConnection],
        router: ToolRouter,
        permissions: PermissionEngine,
        output_guard: OutputGuard,
        local_tools: Mapping[str, LocalTool],
    ):
        self._log = log
        self._preview_chars = settings.result_preview_chars
        self._servers = servers
        self._connections = connections
        self._router = router
        self._permissions = permissions
        self._output_guard = output_guard
        self._local = local_tools
        self._decisions: dict[tuple[str, str], Decision] = {}

    def forget_decisions(self, connector: str) -> None:
        """Drop the cached policy decisions of ``connector`` (its live catalog changed)."""
        self._decisions = {key: value for key, value in self._decisions.items() if key[0] != connector}

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """The governed call behind :meth:`patchbay.runtime.runtime.Runtime.call`: arguments, result
        and errors (with their failure reasons) as documented there."""
        log = self._log
        if not isinstance(name, str) or not name or len(name) > _MAX_TOOL_NAME or not name.isprintable():
            raise ValidationError(
                f"the tool name must be 1-{_MAX_TOOL_NAME} printable characters", details={"field": "name"}
            )
        if arguments is not None and type(arguments) is not dict and not isinstance(arguments, Mapping):
            raise ValidationError("arguments must be a JSON object", details={"field": "arguments"})
        validate_tool_arguments(dict(arguments or {}))
        # Without the background writer, deferred events go out in one write: the log is released
        # before every await that can suspend (connecting, asking the approver) and before the request.
        events = CallEvents(log, name, dict(arguments or {}))
        try:
            connector = self._connector_of(name)
            if connector is not None and self._connections[connector].state != "connected":
                log.release()
                await self._connections[connector].ensure_connected()
            route = await self._resolve_fresh(name, connector, log)
            events.resolved(route.name, route.connector)
            if route.kind == "local":
                return await self._call_local(events, route)
            return await self._call_mcp(events, route)
        except ToolCallError as exc:
            if exc.reason is FailureReason.AMBIGUOUS_CALL:
                events.ambiguous(exc.details.get("candidates", []))
            events.tool_failed(str(exc.reason))
            if "toolCallId" in exc.details:  # a nested call's failure keeps its own id
                raise
            raise exc.with_details(toolCallId=events.id) from exc
        except anyio.get_cancelled_exc_class():
            events.tool_failed(str(FailureReason.CANCELLED))
            raise
        finally:
            log.release()

    def _connector_of(self, name: str) -> str | None:
        """The connector an MCP-looking name (canonical or known wire name) refers to, if any.

        Raises:
            ToolCallError: ``unknown_tool`` for a canonical name of no enabled connector.
        """
        connector: str | None = None
        if name.startswith(MCP_PREFIX):
            try:
                connector, _tool = parse_canonical_tool_name(name)
            except PatchbayError:
                raise ToolCallError(
                    FailureReason.UNKNOWN_TOOL, f"unknown tool {name!r}", details={"tool": name}
                ) from None
            if connector not in self._servers:
                raise ToolCallError(
                    FailureReason.UNKNOWN_TOOL, f"unknown tool {name!r}: no such connector", details={"tool": name}
                )
        elif name.startswith("mcp__"):
            try:
                connector = parse_canonical_tool_name(self._router.from_wire(name))[0]
            except KeyError:
                connector = None
        return connector

    async def _resolve_fresh(self, name: str, connector: str | None, log: EventLog) -> Route:
        """Resolve ``name`` against a current catalog (catalog_refresh.py).

        A queued or in-flight tools re-list of the name's connector is waited for first; a name
        the router does not know gets one re-list on demand when the listing may be stale.

        Raises:
            ToolCallError: ``unknown_tool`` / ``ambiguous_call`` as :meth:`ToolRouter.resolve`.
        """
        connection = self._connections.get(connector or wire_connector(name, self._servers) or "")
        if connection is None:
            return self._router.resolve(name)
        if connection.refresh.busy:
            log.release()
            await connection.refresh.settled()
        try:
            return self._router.resolve(name)
        except ToolCallError as exc:
            if exc.reason is not FailureReason.UNKNOWN_TOOL:
                raise
            log.release()
            if not await connection.refresh.relist_on_demand():
                raise
        return self._router.resolve(name)

    def _decision(self, connector: str, tool: str, connection: ServerConnection) -> Decision:
        # Inputs are fixed once the live catalog is in (frozen RuntimeServer, live annotations).
        key = (connector, tool)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = self._permissions.evaluate(
                self._servers[connector], tool, connection.tools.get(tool)
            )
        return decision

    async def _call_mcp(self, events: CallEvents, route: Route) -> ToolCallResult:
        connector, tool = route.connector, route.tool
        assert connector is not None
        connection = self._connections[connector]
        decision = self._decision(connector, tool, connection)
        source = self._permissions.requested_source(connector, tool, decision)
        resolution = self._permissions.resolve_now(connector, tool, decision)
        if resolution is not None and resolution.allowed:  # the common case: four events, one append
            events.allowed_and_started(decision.risk, source, resolution, tool)
        else:
            events.permission_requested(decision.risk, source)
            if resolution is None:
                events.log.release()
                resolution = await self._permissions.ask(
                    connector,
                    tool,
                    decision,
                    name=route.name,
                    arguments=events.args,
                    policy=policy_fingerprint(self._servers[connector], tool, decision),
                )
            events.permission_resolved(resolution)
            events.mcp_started(tool)
            events.tool_started()
        started = time.perf_counter()
        # A big result stays charged to the in-flight byte budget until the guard is done with it:
        # its copies (the SDK's result, the guard's) are where the memory goes, not the read.
        with holding_results():
            try:
                result = await connection.call_tool(tool, events.args)
            except ToolCallError as exc:
                events.mcp_failed(_ms_since(started), str(exc.reason), exc.message[: self._preview_chars])
                raise
            except anyio.get_cancelled_exc_class():
                events.mcp_failed(_ms_since(started), str(FailureReason.CANCELLED), "the call was cancelled")
                raise
            duration_ms = _ms_since(started)
            if rough_size(result) > GUARD_IN_THREAD_BYTES:
                # Measuring, cutting and storing a big result takes a while: not on the event loop.
                outcome = await anyio.to_thread.run_sync(
                    functools.partial(mcp_result, events.id, route.name, result, self._output_guard)
                )
            else:
                outcome = mcp_result(events.id, route.name, result, self._output_guard)
            del result  # the outcome is what is left once the charge goes
        if outcome.is_error:
            message = outcome.text[: self._preview_chars] or "the tool reported an error"
            events.mcp_failed(duration_ms, str(FailureReason.TOOL_ERROR), message)
            raise tool_error(route.name, outcome)
        events.mcp_and_tool_completed(duration_ms, outcome, self._preview_chars)
        return outcome

    async def _call_local(self, events: CallEvents, route: Route) -> ToolCallResult:
        name, args = route.name, events.args
        events.permission_requested("local", "local_tool")
        events.permission_resolved(Resolution("allow", "policy", "local_tool"))
        events.tool_started()
        fn = self._local[name]
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(**args)
            else:
                value = await anyio.to_thread.run_sync(functools.partial(fn, **args))
        except Exception as exc:
            raise ToolCallError(
                FailureReason.TOOL_ERROR, f"local tool {name!r} raised {type(exc).__name__}: {exc}"
            ) from exc
        outcome = local_result(events.id, name, value, self._output_guard)
        if outcome.is_error:
            raise tool_error(name, outcome)
        events.tool_completed(outcome, self._preview_chars)
        return outcome


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
