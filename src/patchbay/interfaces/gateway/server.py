"""The gateway's MCP server: the SDK's low-level ``Server`` over one :class:`Runtime`.

Lifecycle: :func:`serve_stdio` enters one runtime for the gateway's whole life (connections are
supervised and reused across calls, never one per call), serves the host over stdio until the host
closes stdin, then exits the runtime, which stops every server it started. Nothing but the protocol
is written to stdout. Over HTTP (:mod:`patchbay.interfaces.api.gateway_endpoint`) one :class:`Gateway`
serves every host session of a workspace and mode.

Every ``tools/call`` goes through the runtime's governed path (router → permissions → event log →
supervised connection → output guard → redaction) in the one session the gateway logs to. There is
no approver: a host cannot approve for the person, so an ``ask`` tool answers an error result with
``approval_unavailable`` and how to allow it (:mod:`patchbay.interfaces.gateway.results`).

The connectors' resources, templates and prompts are offered under namespaced names and read
or expanded on the governed path too (:mod:`patchbay.interfaces.gateway.context`).

While a host's ``tools/call`` runs, the upstream server's progress reaches that host, and so do
its elicitations for that call when the host declared elicitation (the mode asked for): on its
call's request for a 2025-era host (:mod:`patchbay.interfaces.gateway.elicitation`), as
``InputRequiredResult`` rounds of the call for a 2026-07-28 host
(:mod:`patchbay.interfaces.gateway.input_rounds`, hosted by :meth:`Gateway.run_background`);
every other elicitation is declined.

``listChanged`` is advertised for tools, resources and prompts. When the tools a host was last
given change, it gets ``notifications/tools/list_changed`` (a 2025-era session on its own
channel, 2026-07-28 hosts on their ``subscriptions/listen`` streams). Two things change them: a
connection publishing a catalog (a server's own ``list_changed``, a reconnect), and a change of
the projection itself (a grant, a connector added, removed, disabled or enabled), for which the
gateway's :class:`~patchbay.interfaces.gateway.owner.RuntimeOwner` reloads the runtime and hands
the new one over with :meth:`Gateway.use_runtime`; after such a reload every host is also told
that resources and prompts changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError, UnacceptableSchema
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.settings import Settings
from patchbay.core.version import __version__
from patchbay.interfaces.gateway.approvals import reporting_to_host
from patchbay.interfaces.gateway.context import (
    get_prompt,
    list_prompts,
    list_resource_templates,
    list_resources,
    read_resource,
)
from patchbay.interfaces.gateway.elicitation import HostElicitation, declared_modes
from patchbay.interfaces.gateway.input_rounds import InputRounds
from patchbay.interfaces.gateway.modes import RUNTIME_WIRE_PREFIX, gateway_name, runtime_wire_name
from patchbay.interfaces.gateway.results import call_result, error_result
from patchbay.interfaces.gateway.stdin import pollable_stdin
from patchbay.runtime import Runtime
from patchbay.runtime.calls.result import ToolCallResult
from patchbay.runtime.connection.elicitation import relaying_elicitation
from patchbay.runtime.connection.exchange import relaying_progress
from patchbay.runtime.runtime import RuntimeTool
from patchbay.runtime.tools.definitions import definition_for
from patchbay.runtime.tools.proxy import PROXY_DESCRIPTION, PROXY_INPUT_SCHEMA, PROXY_TOOL_NAME, run_proxy

__all__ = ["GATEWAY_PROXY_DESCRIPTION", "Gateway", "GatewayServer", "serve_stdio"]

_T = TypeVar("_T")

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
        # the name a direct-mode gateway lists (`time__get_current_time`) names the same tool
        if not name.startswith(RUNTIME_WIRE_PREFIX) and any(
            t.wire_name == runtime_wire_name(name) for t in self._runtime.cached_tools()
        ):
            name = runtime_wire_name(name)
        return await self._runtime.call_wire(name, arguments)


class GatewayServer(Server[Any]):
    """The SDK's low-level server as the gateway runs it: its default initialization options
    advertise ``tools.listChanged`` on 2025-era sessions too (the SDK's Streamable HTTP manager
    builds them without options; on the 2026-07-28 era the flag follows ``subscriptions/listen``,
    which the gateway serves)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True),
            experimental_capabilities,
            extensions,
        )


class Gateway:
    """The handlers of a gateway: ``tools/list`` and ``tools/call`` over ``runtime``, and the
    connectors' resources, templates and prompts (:mod:`patchbay.interfaces.gateway.context`),
    for every host session it serves (one over stdio; any number over HTTP). Whoever serves it
    also runs :meth:`run_background` (list_changed relaying, the calls suspended between the
    input rounds of 2026-07-28 hosts).

    Args:
        runtime: an entered runtime, without approver (:meth:`use_runtime` replaces it).
        mode: ``direct`` (every visible tool, :func:`~patchbay.interfaces.gateway.modes.gateway_name`)
            or ``proxy`` (the one ``mcp`` tool); ``auto`` is resolved before
            (:func:`~patchbay.interfaces.gateway.modes.choose_mode`).
        project: the workspace path, named in guidance (``patchbay grant ... --project``).
        bus: where ``list_changed`` events for 2026-07-28 hosts are published (their
            ``subscriptions/listen`` streams read it); default an in-process bus of this gateway.
    """

    def __init__(
        self,
        runtime: Runtime,
        mode: Literal["proxy", "direct"],
        *,
        project: str = "",
        bus: SubscriptionBus | None = None,
    ):
        self.mode = mode
        self.project = project
        self.bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        # each 2025-era host session (by its HTTP session id; "" over stdio): the SDK session to
        # notify it through and what it was last given (None: told of a change, not listed since)
        self._hosts: dict[str, tuple[Any, tuple[Any, ...] | None]] = {}
        self._modern_listed: tuple[Any, ...] | None = None  # the same for the 2026-07-28 hosts
        self._changed = anyio.Event()
        self._busy: dict[Runtime, int] = {}  # calls running, by the runtime they run on
        self._settled = anyio.Event()  # set (and replaced) each time a call ends
        self._ready = anyio.Event()  # unset while the runtime is being replaced (:meth:`hold`)
        self._ready.set()
        self._swapped = False  # the runtime was replaced since the last relay
        self.runtime = runtime
        runtime.add_catalog_listener(self._catalog_changed)
        self.rounds = InputRounds(patience=runtime.settings.max_call_seconds)
        """The calls of 2026-07-28 hosts suspended between input rounds (input_rounds.py)."""

    def hold(self) -> None:
        """Make new ``tools/list`` and ``tools/call`` requests wait until :meth:`use_runtime`
        (the runtime is being replaced); calls already running go on."""
        if self._ready.is_set():
            self._ready = anyio.Event()

    def use_runtime(self, runtime: Runtime) -> None:
        """Serve from ``runtime`` (entered, without approver) from now on, the runtime of a new
        projection (or the old one again), and let the held requests run. Hosts whose tool list
        differs from what they were given are told (:meth:`relay_catalog_changes`)."""
        if runtime is not self.runtime:
            runtime.add_catalog_listener(self._catalog_changed)
        self.runtime = runtime
        self._swapped = True  # resources and prompts may differ too: every host is told
        self._ready.set()
        self._changed.set()

    async def drained(self, runtime: Runtime) -> None:
        """Return once no call of this gateway runs on ``runtime`` (a replaced one)."""
        while self._busy.get(runtime):
            await self._settled.wait()

    def _catalog_changed(self, connector: str) -> None:
        self._changed.set()

    def server(self) -> Server[Any]:
        """The SDK server whose handlers are this gateway's."""
        return GatewayServer(
            "patchbay",
            version=__version__,
            instructions=(
                "Patchbay gateway: the MCP tools of the connectors Patchbay governs for this workspace. "
                "Calls are checked against the workspace's permissions and logged."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=self._listen,
        )

    async def _current(self, ctx: Any) -> Runtime:
        """The runtime a request runs on (after a reload in progress), its host remembered."""
        await self._ready.wait()
        self._listed(ctx, None)
        return self.runtime

    async def _list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await list_resources(await self._current(ctx)))

    async def _list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = await list_resource_templates(await self._current(ctx))
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await self._tracked(read_resource, await self._current(ctx), str(params.uri))

    async def _list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await list_prompts(await self._current(ctx)))

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await self._tracked(get_prompt, await self._current(ctx), params.name, params.arguments)

    async def _tracked(self, operation: Callable[..., Awaitable[_T]], runtime: Runtime, *args: Any) -> _T:
        """``await operation(runtime, *args)`` counted as a call on ``runtime`` (:meth:`drained`)."""
        self._busy[runtime] = self._busy.get(runtime, 0) + 1
        try:
            return await operation(runtime, *args)
        finally:
            self._busy[runtime] -= 1
            if not self._busy[runtime]:
                del self._busy[runtime]
            self._settled.set()
            self._settled = anyio.Event()

    async def tools(self) -> list[types.Tool]:
        """What ``tools/list`` answers (see :class:`Gateway`); ``deny`` tools are absent and tools
        whose schema cannot be offered are left out."""
        if self.mode == "proxy":
            return [
                types.Tool(name=PROXY_TOOL_NAME, description=GATEWAY_PROXY_DESCRIPTION, input_schema=PROXY_INPUT_SCHEMA)
            ]
        runtime = self.runtime
        bounds = SchemaBounds.from_settings(runtime.settings)
        offered = []
        for tool in await runtime.list_tools():
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
        await self._ready.wait()
        tools = await self.tools()
        self._listed(ctx, self._signature())
        return types.ListToolsResult(tools=tools)

    def _listed(self, ctx: Any, signature: tuple[Any, ...] | None) -> None:
        """Remember what the host of ``ctx`` was given (None: nothing yet, only its session)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if signature is not None:
                self._modern_listed = signature
            return
        request = ctx.request
        key = request.headers.get(MCP_SESSION_ID_HEADER, "") if request is not None else ""
        if signature is None and key in self._hosts:
            signature = self._hosts[key][1]
        self._hosts[key] = (ctx.session, signature)

    def _signature(self) -> tuple[Any, ...]:
        """What a host's tool list depends on, from the runtime's tables (no server contacted)."""
        if self.mode == "proxy":
            return ()
        return tuple(
            (t.wire_name, t.decision, t.title, t.description, repr(t.input_schema), repr(t.output_schema))
            for t in self.runtime.cached_tools()
        )

    async def relay_catalog_changes(self) -> None:
        """Until cancelled: send ``notifications/tools/list_changed`` to each host whose direct
        tools changed since it last listed them, once until it lists again (nothing in proxy mode:
        its one tool never changes). A 2025-era host gets it on its session; 2026-07-28 hosts get
        a ``ToolsListChanged`` event on :attr:`bus`. A session that is gone is forgotten."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            current = self._signature()
            for key, (session, listed) in list(self._hosts.items()):
                if listed is None or listed == current:
                    continue
                self._hosts[key] = (session, None)
                try:
                    await session.send_tool_list_changed()
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError):
                    self._hosts.pop(key, None)  # the host went away
            if self._modern_listed is not None and self._modern_listed != current:
                self._modern_listed = None
                await self.bus.publish(ToolsListChanged())
            if self._swapped:
                self._swapped = False
                await self._relay_context_changes()

    async def _relay_context_changes(self) -> None:
        """After a reload: tell every host that resources and prompts may have changed."""
        for key, (session, _listed) in list(self._hosts.items()):
            try:
                await session.send_resource_list_changed()
                await session.send_prompt_list_changed()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError):
                self._hosts.pop(key, None)
        await self.bus.publish(ResourcesListChanged())
        await self.bus.publish(PromptsListChanged())

    def close(self) -> None:
        """End the open ``subscriptions/listen`` streams (the gateway is stopping)."""
        self._listen.close()

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """Run one ``tools/call`` of the host through the governed path.

        Args:
            name: a direct name (``<connector>__<tool>``) or, in proxy mode, ``mcp``.
            arguments: the host's arguments (a JSON object, or None).

        Returns:
            The call's result; every governed failure is an error result
            (:func:`~patchbay.interfaces.gateway.results.error_result`), never a protocol error.
        """
        await self._ready.wait()
        # the runtime this call runs on, even if a reload replaces it meanwhile
        return await self._tracked(self._call, self.runtime, name, arguments)

    async def _call(self, runtime: Runtime, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
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
                canonical = self._canonical(runtime, arguments)
                return call_result(await run_proxy(_CachedCatalog(runtime), arguments))
            wire = runtime_wire_name(name)
            tool = next((t for t in runtime.cached_tools() if t.wire_name == wire), None)
            canonical = None if tool is None else tool.name
            typed = tool is not None and tool.output_schema is not None
            return call_result(await runtime.call_wire(wire, arguments))
        except ToolCallError as exc:
            if exc.result is not None and exc.result.is_error:
                return call_result(exc.result)  # the server's own error result, guarded
            return error_result(exc, canonical=canonical, project=self.project, proxy=proxy, output_schema=typed)
        except PatchbayError as exc:
            return error_result(exc, canonical=canonical, project=self.project, proxy=proxy, output_schema=typed)

    def _canonical(self, runtime: Runtime, arguments: Mapping[str, Any] | None) -> str | None:
        """The canonical name of the tool a proxy request names, when it names a known one."""
        named = arguments.get("tool") if isinstance(arguments, Mapping) else None
        if not isinstance(named, str):
            return None
        return next((t.name for t in runtime.cached_tools() if named in (t.wire_name, t.name)), None)

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._listed(ctx, None)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and declared_modes(ctx.session.client_capabilities):
            # a 2026-07-28 host that can be asked: upstream elicitations become input rounds
            try:
                return await self.rounds.call(ctx, params, lambda: self.call(params.name, params.arguments))
            except PatchbayError as exc:
                return error_result(exc, project=self.project, proxy=self.mode == "proxy")
        # the upstream server's progress reaches the host (a no-op unless it sent a progressToken),
        # and its elicitations for this call reach the host (declined unless it declared the mode)
        with (
            relaying_progress(ctx.session.report_progress),
            relaying_elicitation(HostElicitation(ctx)),
            reporting_to_host(ctx.session.report_progress),
        ):
            return await self.call(params.name, params.arguments)

    async def run_background(self) -> None:
        """Until cancelled: :meth:`relay_catalog_changes` and the calls suspended between input
        rounds (:attr:`rounds`); cancelling it ends those calls."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.rounds.run)
            await self.relay_catalog_changes()


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` to the host on this process's stdin/stdout until the host closes stdin
    (or the serving task is cancelled: a pipe's reader stops at once, see
    :mod:`patchbay.interfaces.gateway.stdin`)."""
    server = gateway.server()
    stdin = pollable_stdin()
    options = server.create_initialization_options()  # GatewayServer's: listChanged everywhere
    async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
        async with anyio.create_task_group() as group:
            group.start_soon(gateway.run_background)
            await server.run(read_stream, write_stream, options)
            group.cancel_scope.cancel()
