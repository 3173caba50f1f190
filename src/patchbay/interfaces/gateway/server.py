"""The gateway's MCP server: the SDK's low-level ``Server`` over one :class:`Runtime`.

Lifecycle: :func:`serve_stdio` enters one runtime for the gateway's whole life (connections are
supervised and reused across calls, never one per call), serves the host over stdio until the host
closes stdin, then exits the runtime, which stops every server it started. Nothing but the protocol
is written to stdout.

Every ``tools/call`` goes through the runtime's governed path (router → permissions → event log →
supervised connection → output guard → redaction) in the one session the gateway logs to. There is
no approver: a host cannot approve for the person, so an ``ask`` tool answers an error result with
``approval_unavailable`` and how to allow it (:mod:`patchbay.interfaces.gateway.results`).

``tools.listChanged`` is advertised: when a connection publishes a catalog that changes what the
host was last given (a server's own ``list_changed``, a reconnect), the host gets
``notifications/tools/list_changed``. A change of the projection itself (a grant, a connector
added or disabled) needs a runtime reload, which the gateway does not do yet: restart it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError, UnacceptableSchema
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.settings import Settings
from patchbay.core.version import __version__
from patchbay.interfaces.gateway.modes import gateway_name, runtime_wire_name
from patchbay.interfaces.gateway.results import call_result, error_result
from patchbay.interfaces.gateway.stdin import pollable_stdin
from patchbay.runtime import Runtime
from patchbay.runtime.calls.result import ToolCallResult
from patchbay.runtime.runtime import RuntimeTool
from patchbay.runtime.tools.definitions import definition_for
from patchbay.runtime.tools.proxy import PROXY_DESCRIPTION, PROXY_INPUT_SCHEMA, PROXY_TOOL_NAME, run_proxy

__all__ = ["GATEWAY_PROXY_DESCRIPTION", "Gateway", "serve_stdio"]

GATEWAY_PROXY_DESCRIPTION = (
    PROXY_DESCRIPTION
    + " It reaches only the MCP connectors Patchbay governs for this workspace, under its permissions."
)
"""The proxy tool's description as the gateway offers it."""


class _CachedCatalog:
    """The proxy's view of a runtime for the gateway: search and describe read the cached
    catalogs (no server is started for them) unless a connector has never been probed; calls go
    through the runtime."""

    def __init__(self, runtime: Runtime):
        self._runtime = runtime

    @property
    def settings(self) -> Settings:
        return self._runtime.settings

    async def list_tools(self) -> Sequence[RuntimeTool]:
        uncached = [s for s in self._runtime.config.servers if s.settings.enabled and not s.tools]
        if uncached:
            return await self._runtime.list_tools()
        return self._runtime.cached_tools()

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        return await self._runtime.call(name, arguments)

    async def call_wire(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        return await self._runtime.call_wire(name, arguments)


class Gateway:
    """The handlers of one gateway session: ``tools/list`` and ``tools/call`` over ``runtime``.

    Args:
        runtime: an entered runtime, without approver.
        mode: ``direct`` (every visible tool, :func:`~patchbay.interfaces.gateway.modes.gateway_name`)
            or ``proxy`` (the one ``mcp`` tool); ``auto`` is resolved before
            (:func:`~patchbay.interfaces.gateway.modes.choose_mode`).
        project: the workspace path, named in guidance (``patchbay grant ... --project``).
    """

    def __init__(self, runtime: Runtime, mode: Literal["proxy", "direct"], *, project: str = ""):
        self.runtime = runtime
        self.mode = mode
        self.project = project
        self._catalog = _CachedCatalog(runtime)
        self._session: Any = None  # the host's session, from its first request
        self._listed: tuple[Any, ...] | None = None  # what the host was last given
        self._changed = anyio.Event()
        runtime.add_catalog_listener(lambda connector: self._changed.set())

    def server(self) -> Server[Any]:
        """The SDK server whose handlers are this gateway's."""
        return Server(
            "patchbay",
            version=__version__,
            instructions=(
                "Patchbay gateway: the MCP tools of the connectors Patchbay governs for this workspace. "
                "Calls are checked against the workspace's permissions and logged."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def tools(self) -> list[types.Tool]:
        """What ``tools/list`` answers (see :class:`Gateway`); ``deny`` tools are absent and tools
        whose schema cannot be offered are left out."""
        if self.mode == "proxy":
            return [
                types.Tool(name=PROXY_TOOL_NAME, description=GATEWAY_PROXY_DESCRIPTION, input_schema=PROXY_INPUT_SCHEMA)
            ]
        bounds = SchemaBounds.from_settings(self.runtime.settings)
        offered = []
        for tool in await self.runtime.list_tools():
            if tool.connector is None or tool.decision == "deny":
                continue
            try:
                definition = definition_for(tool, "mcp", bounds)
            except UnacceptableSchema:
                continue
            definition["name"] = gateway_name(tool.wire_name)
            offered.append(types.Tool.model_validate(definition))
        return offered

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self._session = ctx.session
        tools = await self.tools()
        self._listed = self._signature()
        return types.ListToolsResult(tools=tools)

    def _signature(self) -> tuple[Any, ...]:
        """What a host's tool list depends on, from the runtime's tables (no server contacted)."""
        if self.mode == "proxy":
            return ()
        return tuple(
            (t.wire_name, t.decision, t.title, t.description, repr(t.input_schema), repr(t.output_schema))
            for t in self.runtime.cached_tools()
        )

    async def relay_catalog_changes(self) -> None:
        """Until cancelled: send the host ``notifications/tools/list_changed`` when the direct
        tools it was last given changed (nothing in proxy mode: its one tool never changes)."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            if self._session is None or self._listed is None or self._signature() == self._listed:
                continue
            self._listed = None  # said once until the host lists again
            await self._session.send_tool_list_changed()

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """Run one ``tools/call`` of the host through the governed path.

        Args:
            name: a direct name (``<connector>__<tool>``) or, in proxy mode, ``mcp``.
            arguments: the host's arguments (a JSON object, or None).

        Returns:
            The call's result; every governed failure is an error result
            (:func:`~patchbay.interfaces.gateway.results.error_result`), never a protocol error.
        """
        proxy = self.mode == "proxy"
        canonical: str | None = None
        typed = False  # the tool declares an outputSchema
        try:
            if proxy:
                if name != PROXY_TOOL_NAME:
                    return error_result(
                        ToolCallError(
                            FailureReason.UNKNOWN_TOOL, f"unknown tool {name!r}: this gateway offers the 'mcp' tool"
                        ),
                        proxy=True,
                    )
                canonical = self._canonical(arguments)
                return call_result(await run_proxy(self._catalog, arguments))
            wire = runtime_wire_name(name)
            tool = next((t for t in self.runtime.cached_tools() if t.wire_name == wire), None)
            canonical = None if tool is None else tool.name
            typed = tool is not None and tool.output_schema is not None
            return call_result(await self.runtime.call_wire(wire, arguments))
        except ToolCallError as exc:
            if exc.result is not None and exc.result.is_error:
                return call_result(exc.result)  # the server's own error result, guarded
            return error_result(exc, canonical=canonical, project=self.project, proxy=proxy, output_schema=typed)
        except PatchbayError as exc:
            return error_result(exc, canonical=canonical, project=self.project, proxy=proxy, output_schema=typed)

    def _canonical(self, arguments: Mapping[str, Any] | None) -> str | None:
        """The canonical name of the tool a proxy request names, when it names a known one."""
        named = arguments.get("tool") if isinstance(arguments, Mapping) else None
        if not isinstance(named, str):
            return None
        return next((t.name for t in self.runtime.cached_tools() if named in (t.wire_name, t.name)), None)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        self._session = ctx.session
        return await self.call(params.name, params.arguments)


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` to the host on this process's stdin/stdout until the host closes stdin
    (or the serving task is cancelled: a pipe's reader stops at once, see
    :mod:`patchbay.interfaces.gateway.stdin`)."""
    server = gateway.server()
    stdin = pollable_stdin()
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
        async with anyio.create_task_group() as group:
            group.start_soon(gateway.relay_catalog_changes)
            await server.run(read_stream, write_stream, options)
            group.cancel_scope.cancel()
