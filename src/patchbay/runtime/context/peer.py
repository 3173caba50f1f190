"""One connector of an open runtime, as resource and prompt operations see it.

:class:`ConnectorPeer` bundles what :mod:`patchbay.runtime.context.resources` and
:mod:`patchbay.runtime.context.prompts` need of a :class:`~patchbay.runtime.Runtime`: the connector, its
supervised connection (requests other than ``tools/call`` go through :meth:`ServerConnection.request
<patchbay.runtime.connection.server_connection.ServerConnection.request>`, with the same timeouts and crash rules as
calls) and the session log. :func:`list_all` walks every page of a list method within the bounds the
catalog uses (``probe_max_pages`` pages and ``probe_max_metadata_bytes`` bytes of listed metadata
per listing).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client

from patchbay.adapters.transports.catalog import walk_pages
from patchbay.core.errors import CatalogError, NotFoundError, ToolCallError
from patchbay.core.models import RuntimeServer
from patchbay.core.settings import Settings
from patchbay.runtime.connection.server_connection import ServerConnection
from patchbay.runtime.events.log import EventLog

__all__ = ["ConnectorPeer", "connector_peer", "list_all"]

_T = TypeVar("_T")
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConnectorPeer:
    """One enabled connector of an open runtime.

    Attributes:
        name: the connector name.
        server: the projected connector (settings and grants decide resource reads).
        connection: its supervised connection (connected on first use).
        log: the runtime's session event log.
        settings: ``request_timeout``, ``probe_max_pages``, ``probe_max_metadata_bytes``,
            ``result_preview_chars``.
    """

    name: str
    server: RuntimeServer
    connection: ServerConnection
    log: EventLog
    settings: Settings

    async def request(self, method: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """``await send(client)`` on the live session, connecting first if needed.

        Raises:
            ToolCallError: see :meth:`ServerConnection.request`.
        """
        return await self.connection.request(method, send)


async def list_all(
    peer: ConnectorPeer,
    method: str,
    fetch: Callable[[Client, str | None], Awaitable[Any]],
    items_of: Callable[[Any], list[Any]],
    offered: Callable[[types.ServerCapabilities], bool],
) -> list[Any]:
    """Every item of a paginated list method, following ``nextCursor`` to the last page.

    Args:
        peer: the connector.
        method: e.g. ``resources/list``, for messages.
        fetch: ``await fetch(client, cursor)`` returns one page (a ``List*Result``).
        items_of: the page's items.
        offered: whether the server's capabilities advertise the method; when they do not, or
            the first page answers -32601 (Method not found), the list is empty (not an error).

    Returns:
        The items in server order (SDK models). Pagination that misbehaves (a repeated cursor,
        more than ``settings.probe_max_pages`` pages, a name listed twice) keeps what was listed
        (:func:`~patchbay.adapters.transports.catalog.walk_pages`); each such warning is logged.

    Raises:
        CatalogError: ``tool_list_failed`` when the items' wire JSON exceeds
            ``settings.probe_max_metadata_bytes`` bytes (the catalog's bound).
        ToolCallError: the connector is unavailable, a request timed out, or a page failed
            (``tool_error``, ``details["mcpCode"]``).
    """
    max_pages, max_bytes = peer.settings.probe_max_pages, peer.settings.probe_max_metadata_bytes
    size = 0

    async def page(cursor: str | None) -> Any:
        first = cursor is None

        async def send(client: Client) -> Any:
            capabilities = client.server_capabilities
            if first and capabilities is not None and not offered(capabilities):
                return None
            return await fetch(client, cursor)

        try:
            return await peer.request(method, send)
        except ToolCallError as exc:
            if first and exc.details.get("mcpCode") == types.METHOD_NOT_FOUND:
                return None
            raise

    def count(item: Any) -> None:
        nonlocal size
        size += len(item.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))
        if size > max_bytes:
            raise CatalogError(f"{peer.name}: {method}: the listed metadata exceeds the cap of {max_bytes} bytes")

    listing = await walk_pages(method, page, items_of, _key_of, max_pages=max_pages, on_item=count)
    for warning in listing.warnings:
        _log.warning("%s: %s", peer.name, warning.message)
    return listing.items


def _key_of(item: Any) -> str:
    """A listed item's identity: a resource's URI, a template's URI template, else its name."""
    for attribute in ("uri", "uri_template"):
        value = getattr(item, attribute, None)
        if value is not None:
            return str(value)
    return str(item.name)


def connector_peer(
    name: str,
    *,
    servers: Mapping[str, RuntimeServer],
    connections: Mapping[str, ServerConnection],
    log: EventLog,
    settings: Settings,
) -> ConnectorPeer:
    """The :class:`ConnectorPeer` of connector ``name`` of an open runtime (not connected yet).

    Raises:
        NotFoundError: ``not_found`` when ``name`` is no enabled, in-scope connector of the runtime.
    """
    if not isinstance(name, str) or name not in servers or name not in connections:
        shown = str(name)[:100]
        raise NotFoundError(f"no enabled connector {shown!r} in this runtime", details={"connector": shown})
    return ConnectorPeer(name, servers[name], connections[name], log, settings)
