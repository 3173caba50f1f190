"""Runtime: the governed client. Every tool call goes ToolRouter → PermissionEngine → executor → MCP
connection, and leaves one auditable event chain in the session log.

:class:`Runtime` owns the session's state and lifecycle (connections, event log, router,
permissions, output guard), lists tools and writes model definitions, and is the door to resources
and prompts. The call path itself (:meth:`Runtime.call`, its event chain and failure reasons) is
:class:`patchbay.runtime.calls.executor.ToolExecutor`, which an open ``Runtime`` holds.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pydantic
from anyio.abc import TaskGroup

from patchbay.adapters.credentials import CredentialResolver, CredentialStore
from patchbay.adapters.oauth.provider import Authorizer
from patchbay.adapters.transports.budget import process_budget
from patchbay.core.errors import ConfigError, PatchbayError, ToolCallError, ValidationError
from patchbay.core.live_status import StatusRegistry
from patchbay.core.models import GrantDecision, RuntimeConfig, RuntimeServer, ToolSummary
from patchbay.core.names import tool_name_problem, validate_connector_name
from patchbay.core.policy import is_visible
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.settings import Settings
from patchbay.runtime.calls.executor import LocalTool, ToolExecutor
from patchbay.runtime.calls.permissions import Approver, PermissionEngine
from patchbay.runtime.calls.result import ToolCallResult
from patchbay.runtime.calls.router import ToolRouter
from patchbay.runtime.connection.catalog_refresh import wire_connector
from patchbay.runtime.connection.hooks import ElicitationHandler, HostHooks
from patchbay.runtime.connection.server_connection import ServerConnection
from patchbay.runtime.connection.status_feed import StatusFeed
from patchbay.runtime.context.peer import ConnectorPeer, connector_peer
from patchbay.runtime.context.prompts import ExpandedPrompt, PromptInfo, expand_prompt, list_prompts
from patchbay.runtime.context.resources import (
    IncludedResource,
    ResourceInfo,
    ResourceTemplateInfo,
    include_resource,
    list_resource_templates,
    list_resources,
)
from patchbay.runtime.events.backend import events_in_database, open_event_log
from patchbay.runtime.events.log import EventLog, new_session_id, session_log_path
from patchbay.runtime.output.guard import OutputGuard
from patchbay.runtime.scope import tool_scope
from patchbay.runtime.tools.definitions import DefinitionFormat, ToolDefinitions, build_definitions, check_format
from patchbay.runtime.tools.proxy import PROXY_TOOL_NAME, ProxyShape, proxy_definitions, run_proxy

__all__ = ["LocalTool", "Runtime", "RuntimeTool", "ToolCallResult"]

_WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CONNECTION_FIELDS = ("connector_id", "target", "runtime_config", "bindings")
"""What a connection is made from: a projection that changes none of them keeps the connection."""


@dataclass(frozen=True, slots=True)
class RuntimeTool:
    """One visible tool as :meth:`Runtime.list_tools` shows it.

    Attributes:
        name: canonical name (``mcp.<connector>.<tool>``, or a local tool's bare name).
        wire_name: the name for model APIs that forbid dots (``mcp__<connector>__<tool>``).
        connector: the connector name; None for a local tool.
        tool: the server's original tool name (or the local name).
        description: the server's description, if any.
        decision: the policy decision, ``allow``/``ask``/``deny`` (``deny`` tools are listed but
            every call is refused).
        risk: ``read``, ``destructive``, ``network``, or ``local`` for local tools.
        input_schema: the tool's JSON Schema for its arguments (``{}`` when unknown).
        title: the server's display title, if any.
        output_schema: the server's ``outputSchema``, if any.
        annotations: the server's tool annotations (wire form, e.g. ``{"readOnlyHint": true}``).
        name_flag: why the server's name for the tool is flagged (outside MCP's
            ``[A-Za-z0-9_.-]``, 1-128, or starting ``mcp.``: a possible lookalike), completing
            "its name ..."; None for a clean name and for local tools.
    """

    name: str
    wire_name: str
    connector: str | None
    tool: str
    description: str | None
    decision: GrantDecision
    risk: str
    input_schema: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    name_flag: str | None = None


class _State(enum.Enum):
    UNOPENED = 1
    OPENED = 2
    CLOSED = 3


class Runtime:
    """A governed MCP client runtime for one workspace session.

    Usage::

        async with Runtime(config, settings=Settings(), approver=ask_user) as runtime:
            result = await runtime.call("mcp.time.get_current_time", {"timezone": "Asia/Tokyo"})
            print(result.text)

    Args:
        config: the projected runtime config; disabled connectors are never reachable.
        settings: timeouts (``connect_timeout``, ``request_timeout``), ``result_preview_chars``,
            ``protocol_mode``, ``sessions_dir`` for the event log, and ``inflight_budget_bytes``
            (sets the size of the byte budget every connection of the process shares, see
            :mod:`patchbay.adapters.transports.budget`).
        approver: asked for ``ask`` decisions; None is headless (``ask`` → ``approval_unavailable``).
        session_id: continue a session (its log is appended to); default: a new ``ses_…`` id.
        local_tools: bare name → callable (see :data:`LocalTool`).
        allowed_tools: capability scope: when given, only these tools exist for this runtime — full
            MCP names (``mcp.<connector>.<tool>`` or ``mcp__<connector>__<tool>``) and local bare
            names. Connectors none of them names are dropped before anything starts (never spawned,
            contacted, or given credentials); of the rest, only the listed tools that pass
            include/exclude are registered. An empty list (or only local names) means no MCP
            discovery at all. Local tools are the host's own and are not scoped.
        credentials: resolves each started connector's credential bindings when it connects; default
            the credential store of ``settings.home``. Only connectors this runtime actually starts
            are resolved; one whose binding cannot be resolved fails with ``mcp_server_unavailable``
            (``details["code"] == "auth_required"``) and the others run on.
        authorizer: ``await authorizer(url)`` brings a person's browser to an OAuth authorization
            URL; with it, a connector that needs a login (or more scope) gets one during its connect
            or call; without it, such a connector fails with ``auth_required`` / ``auth_expired``
            (``details["code"]``) and the others run on.
        elicitation_handler: answers servers' ``elicitation/create`` requests
            (``await handler(params) -> ElicitResult``); without it they are refused.
        status: the live status registry this runtime publishes its connectors' states and
            counts to while it is open (:mod:`patchbay.runtime.connection.status_feed`); None
            publishes nothing.

    Raises:
        ValidationError: ``validation_error`` for a bad ``session_id`` or local tool name.
        ConfigError: ``invalid_config`` for a bad or duplicate connector name.

    Connections are supervised, one owner task each, in a task group the runtime opens on entry
    (see :mod:`patchbay.runtime.connection.server_connection` for lifecycle, restart policy and timeouts); so enter
    and exit the runtime in the same task. ``eager``/``keep_alive`` connectors start connecting on
    entry, ``lazy`` ones on first use. Exit closes every connection and leaves no child process
    (nor grandchild: the process group is swept). A runtime can be entered once.
    """

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        settings: Settings,
        approver: Approver | None = None,
        session_id: str | None = None,
        local_tools: Mapping[str, LocalTool] | None = None,
        allowed_tools: Iterable[str] | None = None,
        credentials: CredentialResolver | None = None,
        authorizer: Authorizer | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        status: StatusRegistry | None = None,
    ):
        self.config = config
        self._status = status
        self._hooks = HostHooks(authorizer=authorizer, elicitation=elicitation_handler)
        self.settings = settings
        if credentials is None:
            store = CredentialStore(settings.home, database=settings.database_identity)
            store.register_values()  # masked before any connector starts, in every server's output
            credentials = store
        self._credentials = credentials
        self._session_id = session_id if session_id is not None else new_session_id()
        self._log_path = session_log_path(settings.sessions_dir, self._session_id)
        self._permissions = PermissionEngine(session_id=self._session_id, approver=approver)
        self._output_guard = OutputGuard(settings)
        self._router = ToolRouter()
        self._local: dict[str, LocalTool] = {}
        self._allowed = tool_scope(allowed_tools)
        for name, fn in (local_tools or {}).items():
            try:
                self._router.add_local(name)
            except PatchbayError as exc:
                raise ValidationError(exc.message, details=exc.details) from None
            self._local[name] = fn
        self._servers: dict[str, RuntimeServer] = {}
        seen: set[str] = set()
        for server in config.servers:
            validate_connector_name(server.name)
            if server.name.lower() in seen:
                raise ConfigError("servers", f"connector name {server.name!r} appears twice")
            seen.add(server.name.lower())
            if self._allowed is not None and server.name not in self._allowed.connectors:
                continue  # out of scope: never started, contacted, or resolved
            try:
                server.options  # noqa: B018 - validates runtime_config before anything starts
            except pydantic.ValidationError as exc:
                raise ConfigError(
                    "runtime_config",
                    f"connector {server.name!r} has invalid runtime options ({exc.error_count()} errors)",
                ) from None
            if server.settings.enabled:
                self._servers[server.name] = server
                # Cached catalogs make bare-name ambiguity checks and wire names work before connecting.
                self._router.set_connector_tools(server.name, self._visible(server, [t.name for t in server.tools]))
        self._state = _State.UNOPENED
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._log: EventLog | None = None
        self._connections: dict[str, ServerConnection] = {}
        self._executor: ToolExecutor | None = None
        self._catalog_listeners: list[Callable[[str], None]] = []

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def event_log_path(self) -> Path:
        """``<settings.sessions_dir>/<session_id>.jsonl``; every event appended so far is in the file
        when this returns (the log is flushed for whoever reads it). With a PostgreSQL store there
        is no file: the events are in the store's table
        (:func:`~patchbay.runtime.events.backend.session_logs` reads them)."""
        if self._log is not None:
            self._log.flush()
        return self._log_path

    def record_event(self, type: str, payload: Mapping[str, Any]) -> None:
        """Append a host event (``user.message``, ``context.built``, ``content.screened``, ...) to
        this session's log, redacted like every event.

        Raises:
            ValidationError: ``validation_error`` for a type not in ``EVENT_TYPES``.
            RuntimeError: the runtime is not entered.
        """
        try:
            self._opened().append(type, dict(payload))
        except ValueError as exc:
            raise ValidationError(str(exc), details={"type": type}) from None

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Runtime:
        if self._state is not _State.UNOPENED:
            raise RuntimeError("a Runtime can be entered only once")
        self._state = _State.CLOSED  # until everything below worked
        # All connections of the process share one budget for the big messages they are reading.
        process_budget(self.settings.inflight_budget_bytes)
        async with AsyncExitStack() as stack:
            opening = functools.partial(
                open_event_log,
                self.settings,
                self._log_path,
                self._session_id,
                metadata={"workspace": self.config.workspace, "projectId": self.config.project_id},
                keep=tuple(s.name for s in self.config.servers),
            )
            if events_in_database(self.settings):
                # the table's log reads the database at open and waits for its commits at close:
                # both in a worker thread, never on the event loop
                self._log = await anyio.to_thread.run_sync(opening)
                stack.push_async_callback(_close_in_thread, self._log)
            else:
                self._log = opening()
                stack.callback(self._log.close)
            for rejected in self.config.rejected:
                # Left out of this runtime (its entry failed its checks): it never starts here.
                self._log.append(
                    "mcp.server.permanently_failed",
                    {
                        "server": rejected.name,
                        "reason": "invalid_config",
                        "field": rejected.field,
                        "message": rejected.message,
                    },
                )
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg.start_soon(self._log.run_writer)
            # Runs before the task group waits for its tasks: the writer ends, and what follows
            # (the connections' last events) is written at once.
            stack.callback(self._log.stop_writer)
            workspace = Path(self.config.workspace)
            feed = StatusFeed(self._status, self._session_id) if self._status is not None else None
            self._connections = {
                name: ServerConnection(
                    server,
                    workspace=workspace,
                    settings=self.settings,
                    task_group=self._tg,
                    emit=self._log.append,
                    on_catalog=self._catalog_changed,
                    credentials=self._credentials,
                    project_id=self.config.project_id,
                    hooks=self._hooks,
                    on_status=feed.changed if feed is not None else None,
                )
                for name, server in self._servers.items()
            }
            if feed is not None:
                feed.publish(self._connections.values())
                self._tg.start_soon(feed.run)
                # before the task group waits for its tasks: the heartbeat ends, the source goes
                stack.callback(feed.close)
            self._executor = ToolExecutor(
                log=self._log,
                settings=self.settings,
                servers=self._servers,
                connections=self._connections,
                router=self._router,
                permissions=self._permissions,
                output_guard=self._output_guard,
                local_tools=self._local,
            )
            for connection in self._connections.values():
                if connection.options.lifecycle in ("eager", "keep_alive"):
                    connection.start()
            self._stack = stack.pop_all()
        self._state = _State.OPENED
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._state = _State.CLOSED
        for connection in self._connections.values():
            connection.request_stop()
        if self._stack is not None:
            stack, self._stack = self._stack, None
            # Graceful: owner tasks close their clients (the servers exit) before the log closes.
            await stack.__aexit__(None, None, None)

    def _opened(self) -> EventLog:
        if self._state is not _State.OPENED or self._log is None:
            raise RuntimeError("the Runtime is not open; use `async with Runtime(...) as runtime:`")
        return self._log

    def _is_live(self, name: str) -> bool:
        return self._connections[name].state == "connected"

    async def _connect(self, name: str) -> None:
        connection = self._connections[name]
        if connection.state != "connected":
            await connection.ensure_connected()

    # -- calls ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Call a tool by canonical name (``mcp.<connector>.<tool>``), wire name, or local bare name.

        Args:
            name: resolved strictly: MCP tools need their full name.
            arguments: the tool's arguments (a JSON object).

        Returns:
            The :class:`ToolCallResult`.

        Raises:
            ToolCallError: with ``reason`` one of ``unknown_tool``, ``ambiguous_call``,
                ``mcp_server_unavailable``, ``permission_denied``, ``approval_unavailable``,
                ``timeout``, ``tool_error`` (see :mod:`patchbay.runtime.calls.executor`);
                ``details["toolCallId"]`` names the call's events. A cancelled call logs
                ``tool.failed {reason: "cancelled"}`` and re-raises the cancellation.
            ValidationError: ``name`` is not a string or ``arguments`` not a mapping.
            RuntimeError: the runtime is not open.
        """
        self._opened()
        assert self._executor is not None  # made on entry, with the log
        return await self._executor.call(name, arguments)

    # -- listing ----------------------------------------------------------------------------

    async def list_tools(self) -> list[RuntimeTool]:
        """Every visible tool: local tools, then each enabled connector's live catalog.

        Connects every enabled connector (concurrently) first; a connector that cannot connect
        contributes no tools.
        """
        self._opened()

        async def connect(name: str) -> None:
            try:
                await self._connect(name)
                await self._connections[name].refresh.settled()  # a list_changed already queued
            except ToolCallError:
                pass

        async with anyio.create_task_group() as group:
            for name in self._servers:
                group.start_soon(connect, name)
        tools = [
            RuntimeTool(name, self._router.wire_name(name), None, name, None, "allow", "local") for name in self._local
        ]
        for name in self._servers:
            connection = self._connections[name]
            if connection.state != "connected":
                continue
            tools.extend(self._connector_tools(name, connection.tools))
        return tools

    def cached_tools(self) -> list[RuntimeTool]:
        """Every visible MCP tool, without contacting any server: a connected connector's live
        catalog, otherwise the cached catalog of the projected snapshot (a connector that was never
        probed contributes nothing until it connects). Decisions as in :meth:`list_tools`.

        Raises:
            RuntimeError: the runtime is not open.
        """
        self._opened()
        tools: list[RuntimeTool] = []
        for name, server in self._servers.items():
            connection = self._connections[name]
            if connection.state == "connected":
                tools.extend(self._connector_tools(name, connection.tools))
            else:
                tools.extend(self._connector_tools(name, {tool.name: tool for tool in server.tools}))
        return tools

    def _connector_tools(self, name: str, catalog: Mapping[str, ToolSummary]) -> list[RuntimeTool]:
        """The routed tools of connector ``name`` found in ``catalog`` (original name → summary)."""
        server = self._servers[name]
        tools = []
        for route in self._router.connector_routes(name):
            live = catalog.get(route.tool)
            if live is None:
                continue
            decision = self._permissions.evaluate(server, route.tool, live)
            tools.append(
                RuntimeTool(
                    route.name,
                    self._router.wire_name(route.name),
                    name,
                    route.tool,
                    live.description,
                    decision.decision,
                    decision.risk,
                    dict(live.input_schema),
                    title=live.title,
                    output_schema=live.output_schema,
                    annotations=live.annotations,
                    name_flag=tool_name_problem(route.tool),
                )
            )
        return tools

    async def tool_definitions(
        self, format: DefinitionFormat = "anthropic", *, shape: ProxyShape = "mcp"
    ) -> ToolDefinitions:
        """Tool definitions for a model API (see :mod:`patchbay.runtime.tools.definitions`).

        Args:
            format: ``"anthropic"`` (default: ``{"name", "description", "input_schema"}``),
                ``"openai"`` (Chat Completions function tools), ``"openai-responses"`` (the
                Responses API's flat function tools, ``strict: false``), ``"mcp"`` (MCP ``Tool``
                shape) or ``"proxy"`` (the one ``mcp`` proxy tool; no connector is contacted).
                ``name`` is always the wire name (``^[A-Za-z0-9_-]{1,64}$``, unique, stable for the
                same catalog) that :meth:`call_wire` maps back.
            shape: for ``"proxy"`` only, the API shape the proxy tool is written in.

        Returns:
            A :class:`ToolDefinitions`: a sequence of the definition dicts, plus ``diagnostics``
            (``{tool, format, reason}``) for each tool whose schema could not be made acceptable.
            ``deny`` tools are left out (offering them would only produce refusals).

        Raises:
            ValidationError: ``validation_error`` for an unknown ``format`` or ``shape``.
            RuntimeError: the runtime is not open.
        """
        self._opened()
        check_format(format, ("anthropic", "openai", "openai-responses", "mcp", "proxy"))
        if format == "proxy":
            return proxy_definitions(shape, local_names=self._local)
        return build_definitions(await self.list_tools(), format, SchemaBounds.from_settings(self.settings))

    async def call_wire(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Call a tool by the wire name a model used (from :meth:`tool_definitions`).

        The name is mapped back to the canonical name through the runtime's table (never parsed)
        and called through :meth:`call`: the same permission decision and event chain. ``"mcp"``
        is the proxy tool (:meth:`call_proxy`) unless a local tool has that name.

        Raises:
            ValidationError: ``validation_error`` when ``name`` is not 1-64 chars of ``[A-Za-z0-9_-]``.
            ToolCallError: as :meth:`call` (an unknown wire name → ``unknown_tool``, logged).
        """
        self._opened()
        if not isinstance(name, str) or not _WIRE_NAME.fullmatch(name):
            raise ValidationError("a wire name is 1-64 characters of [A-Za-z0-9_-]", details={"field": "name"})
        if name == PROXY_TOOL_NAME and name not in self._local:
            return await self.call_proxy(arguments)
        try:
            name = self._router.from_wire(name)
        except KeyError:
            # A lazy connector with no cached catalog has no wire names until it is up.
            connector = wire_connector(name, self._servers)
            if connector is not None and not self._is_live(connector):
                with contextlib.suppress(ToolCallError):  # call() reports the name as unknown
                    await self._connect(connector)
                with contextlib.suppress(KeyError):
                    name = self._router.from_wire(name)
        return await self.call(name, arguments)

    async def call_proxy(self, arguments: Mapping[str, Any] | None) -> ToolCallResult:
        """Run the proxy tool (``format="proxy"``): ``search``, ``describe`` or ``call``.

        ``call`` goes through :meth:`call` (permissions, events); ``search``/``describe`` read the
        catalog only. See :func:`patchbay.runtime.tools.proxy.run_proxy`.

        Raises:
            ValidationError: ``validation_error`` for bad proxy arguments.
            ToolCallError: ``unknown_tool``/``permission_denied`` for ``describe``; as :meth:`call`.
        """
        self._opened()
        return await run_proxy(self, arguments)

    def _catalog_changed(self, name: str, tools: Mapping[str, Any] | None) -> None:
        """A connection published a (new) live catalog, or withdrew it (None)."""
        visible = [] if tools is None else self._visible(self._servers[name], list(tools))
        self._router.set_connector_tools(name, visible)
        if self._executor is not None:
            self._executor.forget_decisions(name)
        for listener in list(self._catalog_listeners):
            listener(name)

    def reproject(self, config: RuntimeConfig) -> bool:
        """Take a new projection of the same workspace in place when it changes only policy:
        grants (tool, resource, prompt), include/exclude, the approval mode or the cached
        catalog. Every connection stays as it is (no server restarts); the routes, decisions and
        wire names follow the new policy at once, and the catalog listeners are called for each
        connector. Returns False, changing nothing, when the change needs a new runtime: a
        connector added, removed, enabled or disabled, or what a connection is made from changed
        (``connector_id``, target, runtime options, credential bindings), or other entries were
        rejected.

        Raises:
            RuntimeError: the runtime is not open.
        """
        self._opened()
        if (config.project_id, config.workspace, config.rejected) != (
            self.config.project_id,
            self.config.workspace,
            self.config.rejected,
        ):
            return False
        wanted = {
            server.name: server
            for server in config.servers
            if server.settings.enabled and (self._allowed is None or server.name in self._allowed.connectors)
        }
        if set(wanted) != set(self._servers):
            return False
        for name, server in wanted.items():
            if any(getattr(server, f) != getattr(self._servers[name], f) for f in _CONNECTION_FIELDS):
                return False
        self.config = config
        for name, server in wanted.items():
            if server == self._servers[name]:
                continue
            self._servers[name] = server  # the executor and the peers read this same table
            connection = self._connections[name]
            connection.server = server
            catalog = connection.tools if connection.state == "connected" else {t.name: t for t in server.tools}
            self._catalog_changed(name, catalog)
        return True

    def add_catalog_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(connector)`` (on the event loop, synchronously: it must not block) each
        time a connection publishes a live catalog (its first connect, a reconnect, a server's
        ``list_changed``) or withdraws it, after the runtime's tables are updated; compare
        :meth:`cached_tools` before and after to see what changed."""
        self._catalog_listeners.append(listener)

    def _visible(self, server: RuntimeServer, tools: list[str]) -> list[str]:
        settings = server.settings
        visible = [tool for tool in tools if is_visible(tool, settings.include_tools, settings.exclude_tools)]
        if self._allowed is not None:
            visible = [tool for tool in visible if self._allowed.admits(server.name, tool)]
        return visible

    def server_states(self) -> dict[str, str]:
        """Each enabled, in-scope connector's connection state (``idle``, ``connecting``,
        ``connected``, ``closing`` (idle close under way), ``restarting``, ``failed``,
        ``permanently_failed``, ``closed``)."""
        return {name: connection.state for name, connection in self._connections.items()}

    def server_failure(self, name: str) -> tuple[str, str] | None:
        """``(code, message)`` of connector ``name``'s last failed connect (e.g. ``("timeout",
        "connecting took longer than 15s")``), None when it has not failed or is not in this
        runtime."""
        connection = self._connections.get(name)
        failure = connection.failure if connection is not None else None
        return (str(failure[0]), failure[1]) if failure else None

    async def shutdown_server(self, name: str) -> None:
        """User-initiated shutdown of one connector: its connection closes, ``mcp.server.shutdown``
        is emitted, its tools leave the router, and it never restarts in this runtime; later calls
        fail with ``mcp_server_unavailable``.

        Raises:
            ValidationError: ``validation_error`` when ``name`` is no connector of this runtime.
        """
        self._opened()
        connection = self._connections.get(name)
        if connection is None:
            raise ValidationError(f"no connector {name!r} in this runtime", details={"field": "name"})
        await connection.shutdown()

    # -- resources and prompts: runtime/context/resources.py, runtime/context/prompts.py --------------

    def _peer(self, connector: str) -> ConnectorPeer:
        return connector_peer(
            connector, servers=self._servers, connections=self._connections, log=self._opened(), settings=self.settings
        )

    async def list_resources(self, connector: str) -> list[ResourceInfo]:
        """Every resource ``connector`` lists, all pages; metadata only, nothing is read.

        Raises:
            NotFoundError: ``not_found`` (no such enabled connector); CatalogError:
            ``tool_list_failed`` (page or size bound); ToolCallError: ``mcp_server_unavailable``,
            ``timeout``, ``tool_error``. See :func:`patchbay.runtime.context.resources.list_resources`.
        """
        found = await list_resources(self._peer(connector))
        connection = self._connections.get(connector)
        if connection is not None:
            connection.resources_listed(len(found))  # the live status carries the count
        return found

    async def list_resource_templates(self, connector: str) -> list[ResourceTemplateInfo]:
        """Every resource template ``connector`` lists, all pages (errors as :meth:`list_resources`)."""
        return await list_resource_templates(self._peer(connector))

    async def include_resource(self, connector: str, uri: str) -> IncludedResource:
        """Read one resource by URI because the user (or a policy) explicitly included it: it passes
        the PermissionEngine with risk ``read`` and ``sourcedFrom: user_explicit_include``, then
        ``mcp.resource.requested`` … ``mcp.resource.fetched {sizeBytes, contentHash}`` are logged.
        Expand a template first (:func:`patchbay.runtime.context.resources.expand_uri_template`).

        Raises:
            ValidationError, NotFoundError, ToolCallError (``permission_denied``,
            ``approval_unavailable``, ...): see :func:`patchbay.runtime.context.resources.include_resource`.
        """
        return await include_resource(self._peer(connector), self._permissions, uri)

    async def list_prompts(self, connector: str) -> list[PromptInfo]:
        """Every prompt ``connector`` lists, all pages (errors as :meth:`list_resources`)."""
        return await list_prompts(self._peer(connector))

    async def expand_prompt(
        self, connector: str, prompt: str, arguments: Mapping[str, Any] | None = None
    ) -> ExpandedPrompt:
        """``prompts/get`` after a local check of the arguments against the declaration; logs
        ``mcp.prompt.invoked`` and ``mcp.prompt.expanded``; the messages are user messages carrying
        ``source: {mcp: {server, prompt}}``.

        Raises:
            ValidationError (unknown argument; ``argument '<name>' is required``), NotFoundError,
            ToolCallError: see :func:`patchbay.runtime.context.prompts.expand_prompt`.
        """
        return await expand_prompt(self._peer(connector), prompt, arguments)


async def _close_in_thread(log: EventLog) -> None:
    """Close ``log`` in a worker thread, even while the closing task is being cancelled."""
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(log.close)
