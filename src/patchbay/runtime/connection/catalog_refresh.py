"""Keeping a live connection's catalog current when the server says it changed.

:class:`CatalogRefresh` (``connection.refresh``) re-lists the tools on ``notifications/tools/
list_changed``, coalescing bursts into one re-list, and republishes the catalog through the
connection's ``on_catalog``; a failed re-list keeps the previous catalog
(:attr:`CatalogRefresh.last_error`). :meth:`CatalogRefresh.settled` and
:meth:`CatalogRefresh.relist_on_demand` let a call see a change its previous call caused;
:meth:`CatalogRefresh.version` and :meth:`CatalogRefresh.subscribe` are the change signal the
resource and prompt listings use.

Design: docs/connections.md
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from patchbay.adapters.transports.catalog import Catalog, list_catalog
from patchbay.core.errors import CatalogError
from patchbay.core.models import ToolSummary
from patchbay.core.settings import Settings

__all__ = [
    "MAX_DELAY_SECONDS",
    "MAX_NAMES_IN_EVENT",
    "QUIET_SECONDS",
    "CatalogRefresh",
    "ListChangedListener",
    "ListKind",
    "wire_connector",
]

ListKind = Literal["tools", "resources", "prompts"]
ListChangedListener = Callable[[str, ListKind], None]
"""``listener(connector_name, kind)``: that list of that connector may have changed."""
Apply = Callable[[int, Catalog], "dict[str, ToolSummary] | None"]
Emit = Callable[[str, dict[str, Any]], None]

MAX_NAMES_IN_EVENT = 100
"""Tool names listed per ``added``/``removed``/``changed`` in one ``mcp.server.tools_changed``."""
QUIET_SECONDS = 0.02
"""A notification-triggered re-list waits until no list_changed arrived for this long..."""
MAX_DELAY_SECONDS = 0.25
"""...but never longer than this after it was queued (an on-demand re-list does not wait)."""
_LISTEN_RETRIES = 3
_KINDS: tuple[ListKind, ...] = ("tools", "resources", "prompts")
_NOTIFICATION_KINDS: dict[type, ListKind] = {
    types.ToolListChangedNotification: "tools",
    types.ResourceListChangedNotification: "resources",
    types.PromptListChangedNotification: "prompts",
    ToolsListChanged: "tools",
    ResourcesListChanged: "resources",
    PromptsListChanged: "prompts",
}


class CatalogRefresh:
    """The list_changed handling of one :class:`~patchbay.runtime.connection.server_connection.ServerConnection`.

    Args:
        name: the connector name (for events and listeners).
        settings: ``connect_timeout`` (seconds, bounds one re-list and any wait for one),
            ``probe_max_pages``, ``probe_max_metadata_bytes``, ``schema_max_depth``/``nodes``/``bytes``.
        emit: ``emit(event_type, payload)``; it must not raise.
        apply: ``apply(generation, catalog)`` installs a re-listed catalog on the connection if
            ``generation`` is still its live one and returns the previous catalog (by original
            tool name), else returns None and changes nothing.
        is_live: whether the connection is connected now (a queued re-list will then run).

    The connection calls :meth:`begin_attempt` when it builds a Client, runs :meth:`run` in a
    task inside the client's context once connected, and :meth:`call_finished` after each
    ``tools/call``.
    """

    def __init__(self, name: str, settings: Settings, *, emit: Emit, apply: Apply, is_live: Callable[[], bool]):
        self.name = name
        self._settings = settings
        self._emit = emit
        self._apply = apply
        self._live = is_live
        self._versions: dict[ListKind, int] = dict.fromkeys(_KINDS, 0)
        self._listeners: dict[object, ListChangedListener] = {}
        self._pending = False
        self._urgent = False
        self._notified_at = 0.0
        self._running = False
        self._wake = anyio.Event()
        self._done = anyio.Event()
        self._calls_done = 0
        self._listed_at = 0
        self._may_change = False
        self.relists = 0
        """Tools re-lists started so far (each connect's own first listing not counted)."""
        self.notifications: dict[ListKind, int] = dict.fromkeys(_KINDS, 0)
        """list_changed notifications received, by kind."""
        self.last_error: str | None = None
        """Why the last re-list (or listen stream) failed, or None after a successful re-list."""
        self.listening = False
        """A 2026-07-28 ``subscriptions/listen`` stream is open (acknowledged) on the connection."""

    # -- for resources/prompts (and anyone caching a list) -----------------------------------

    def version(self, kind: ListKind) -> int:
        """The change counter of ``kind`` (see the module docstring); starts at 0."""
        return self._versions[kind]

    def subscribe(self, listener: ListChangedListener) -> Callable[[], None]:
        """Call ``listener(connector, kind)`` whenever :meth:`version` ``(kind)`` grows.

        Returns:
            An idempotent unsubscribe callable.
        """
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    # -- for the runtime's name resolution ---------------------------------------------------

    @property
    def busy(self) -> bool:
        """A tools re-list is queued or in flight on a live connection."""
        return (self._pending or self._running) and self._live()

    async def settled(self) -> None:
        """Return once no tools re-list is queued or in flight (at most ``connect_timeout`` s)."""
        if self.busy:
            with anyio.move_on_after(self._settings.connect_timeout):
                await self._wait_idle()

    async def relist_on_demand(self) -> bool:
        """Re-list once now if the listing may be stale; True if a re-list ran.

        Stale means: the server advertises ``tools.listChanged`` and a ``tools/call`` on this
        connection finished after the last listing began (its change notification may still be
        on its way). Waits for a queued/in-flight re-list first; bounded by ``connect_timeout``.
        """
        if not self._live():
            return False
        with anyio.move_on_after(self._settings.connect_timeout):
            await self._wait_idle()
            if not self._live() or not self._may_change or self._calls_done <= self._listed_at:
                return False
            self._request(urgent=True)
            await self._wait_idle()
            return True
        return False

    # -- for the connection ------------------------------------------------------------------

    def begin_attempt(self, client_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A connection attempt starts: reset, bump every version, and return ``client_kwargs``
        with this connection's ``message_handler`` (chained before one already there)."""
        self._pending = self._urgent = self._may_change = self.listening = False
        self._release()  # a waiter from an earlier connection whose worker never ran
        self._listed_at = self._calls_done
        for kind in _KINDS:
            self._bump(kind)
        kwargs = dict(client_kwargs)
        chained = kwargs.get("message_handler")

        async def message_handler(message: types.ServerNotification | Exception) -> None:
            kind = _NOTIFICATION_KINDS.get(type(message))
            if kind is not None and not _from_listen_stream(message):  # those come via _listen
                self.notified(kind)
            if chained is not None:
                await chained(message)

        kwargs["message_handler"] = message_handler
        return kwargs

    def notified(self, kind: ListKind) -> None:
        """A ``<kind>/list_changed`` arrived: queue a tools re-list, or bump the version."""
        self.notifications[kind] += 1
        if kind == "tools":
            self._notified_at = anyio.current_time()
            self._request()
        else:
            self._bump(kind)

    def call_finished(self) -> None:
        """A ``tools/call`` on the connection finished (any outcome)."""
        self._calls_done += 1

    async def run(self, client: Client, generation: int) -> None:
        """Serve re-lists for the connection of ``generation`` until cancelled (the connection
        closes). Opens a listen stream on a 2026-07-28 connection whose server serves one."""
        capabilities = client.server_capabilities
        tools = capabilities.tools if capabilities is not None else None
        self._may_change = bool(tools is not None and tools.list_changed)
        try:
            async with anyio.create_task_group() as group:
                if str(client.protocol_version) in MODERN_PROTOCOL_VERSIONS and capabilities is not None:
                    group.start_soon(self._listen, client, capabilities)
                while True:
                    while not self._pending:
                        self._wake = anyio.Event()
                        await self._wake.wait()
                    await self._quiet()
                    await self._relist(client, generation)
        finally:
            self._running = self.listening = False
            self._release()

    # -- internals ---------------------------------------------------------------------------

    def _request(self, *, urgent: bool = False) -> None:
        self._pending = True
        self._urgent = self._urgent or urgent
        self._wake.set()

    async def _quiet(self) -> None:
        """Let a burst of notifications finish arriving (see the module docstring)."""
        deadline = anyio.current_time() + MAX_DELAY_SECONDS
        while not self._urgent:
            until = min(deadline, self._notified_at + QUIET_SECONDS)
            if anyio.current_time() >= until:
                return
            self._wake = anyio.Event()
            with anyio.move_on_after(until - anyio.current_time()):
                await self._wake.wait()

    def _release(self) -> None:
        done, self._done = self._done, anyio.Event()
        done.set()

    async def _wait_idle(self) -> None:
        while self.busy:
            await self._done.wait()

    def _bump(self, kind: ListKind) -> None:
        self._versions[kind] += 1
        for listener in list(self._listeners.values()):
            with contextlib.suppress(Exception):
                listener(self.name, kind)

    async def _relist(self, client: Client, generation: int) -> None:
        settings = self._settings
        self._pending = self._urgent = False
        self._running = True
        self._listed_at = self._calls_done
        self.relists += 1
        try:
            catalog: Catalog | None = None
            with anyio.move_on_after(settings.connect_timeout):
                catalog = await list_catalog(
                    client,
                    max_pages=settings.probe_max_pages,
                    max_metadata_bytes=settings.probe_max_metadata_bytes,
                    resources=False,
                    max_schema_depth=settings.schema_max_depth,
                    max_schema_nodes=settings.schema_max_nodes,
                    max_schema_bytes=settings.schema_max_bytes,
                )
            if catalog is None:
                self.last_error = f"re-listing tools took longer than {settings.connect_timeout:g}s"
                return
            self.last_error = None
            previous = self._apply(generation, catalog)
            if previous is not None:
                self._changed(previous, catalog)
        except CatalogError as exc:
            self.last_error = exc.message
        except Exception as exc:  # boundary: a failed refresh keeps the catalog, never the connection down
            self.last_error = f"re-listing tools failed: {type(exc).__name__}"
        finally:
            self._running = False
            self._release()

    def _changed(self, previous: dict[str, ToolSummary], catalog: Catalog) -> None:
        current = {tool.name: tool for tool in catalog.tools}
        added = [name for name in current if name not in previous]
        removed = [name for name in previous if name not in current]
        changed = [name for name in current if name in previous and current[name] != previous[name]]
        if not (added or removed or changed):
            return
        self._bump("tools")
        payload: dict[str, Any] = {"server": self.name, "toolCount": len(current)}
        for key, names in (("added", added), ("removed", removed), ("changed", changed)):
            payload[key] = names[:MAX_NAMES_IN_EVENT]
            if len(names) > MAX_NAMES_IN_EVENT:
                payload[f"{key}Count"] = len(names)
        if catalog.diagnostics:
            payload["toolsLeftOut"] = [diagnostic.tool for diagnostic in catalog.diagnostics][:MAX_NAMES_IN_EVENT]
        self._emit("mcp.server.tools_changed", payload)

    async def _listen(self, client: Client, capabilities: types.ServerCapabilities) -> None:
        tools = bool(capabilities.tools and capabilities.tools.list_changed)
        prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
        resources = bool(capabilities.resources and capabilities.resources.list_changed)
        if not (tools or prompts or resources):
            return
        for attempt in range(_LISTEN_RETRIES + 1):
            try:
                async with client.listen(
                    tools_list_changed=tools, prompts_list_changed=prompts, resources_list_changed=resources
                ) as subscription:
                    self.listening = True
                    if attempt:  # no replay after a lost stream: refetch what may have changed
                        for kind in _KINDS:
                            self.notified(kind)
                    async for event in subscription:
                        changed = _NOTIFICATION_KINDS.get(type(event))
                        if changed is not None:
                            self.notified(changed)
                return  # the server ended the stream gracefully
            except ListenNotSupportedError:
                return
            except (SubscriptionLost, MCPError, TimeoutError) as exc:
                self.last_error = f"the list_changed stream ended: {exc}"
            except Exception as exc:  # boundary: the stream is an extra; the connection stays up
                self.last_error = f"the list_changed stream failed: {type(exc).__name__}"
                return
            finally:
                self.listening = False


def _from_listen_stream(message: types.ServerNotification | Exception) -> bool:
    """A notification stamped with a listen stream's subscription id (the SDK tees those to the
    ``message_handler`` as well as to the stream)."""
    params = getattr(message, "params", None)
    meta = getattr(params, "meta", None) if params is not None else None
    return isinstance(meta, Mapping) and SUBSCRIPTION_ID_META_KEY in meta


def wire_connector(name: str, connectors: Mapping[str, object]) -> str | None:
    """The connector an ``mcp__<connector>__<tool>`` wire name belongs to, by its prefix.

    Only for deciding which connector to re-list when the name is not (yet) registered:
    connector names have no ``_`` (DESIGN.md "Names"), so the prefix is unambiguous. Resolution
    itself always goes through the router's table.
    """
    if not name.startswith("mcp__"):
        return None
    connector, separator, _tool = name[5:].partition("__")
    return connector if separator and connector in connectors else None
