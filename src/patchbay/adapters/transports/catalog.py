"""Reading a server's catalog: every page of tools/list (and resources/list), within bounds.

:func:`walk_pages` follows ``next_cursor`` under a page budget and a metadata byte budget, for the
probe and the runtime's connections alike. Misbehaving pagination keeps what was listed and yields
a :class:`ListingWarning`; the metadata byte cap fails the listing (``tool_list_failed``). A tool
whose schemas break :mod:`patchbay.core.schema_bounds` is left out with a :class:`ToolDiagnostic`
on :attr:`Catalog.diagnostics`; a tool whose name breaks MCP's rule is kept and flagged on
:attr:`Catalog.name_flags` (:func:`flag_tool_name`).

Design: docs/connections.md
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports.errors import classify
from patchbay.core.errors import CatalogError
from patchbay.core.models import ResourceSummary, ToolSummary
from patchbay.core.names import tool_name_problem
from patchbay.core.schema_bounds import DEFAULT_SCHEMA_BOUNDS, SchemaBounds, exceeded_bounds

__all__ = [
    "Catalog",
    "Listing",
    "ListingWarning",
    "ToolDiagnostic",
    "flag_tool_name",
    "list_catalog",
    "resource_summary",
    "screen_tool",
    "tool_summary",
    "walk_pages",
]

_NAME_IN_MESSAGE = 80  # characters of a (server-chosen) tool name quoted in a diagnostic message


@dataclass(frozen=True)
class ToolDiagnostic:
    """A listed tool that was left out of the catalog, or (``problem == "name"``) kept but
    flagged, and why.

    Args:
        tool: the tool's name as the server listed it (untrusted text).
        problem: ``"depth"``, ``"nodes"`` or ``"bytes"`` (a schema bound, see
            :mod:`patchbay.core.schema_bounds`) or ``"malformed"`` (a schema is not a JSON object,
            the ``inputSchema`` root is not ``type: "object"``, ``$schema`` is not a string): the
            tool is left out; ``"name"``: kept, its name flagged (:func:`flag_tool_name`).
        message: one human sentence naming the tool, e.g. ``tool 'deep' left out: its schemas'
            depth 41 exceeds the limit of 32``.
        measured: the measured value for a bound (a lower bound when ``exact`` is False), else None.
        limit: the limit for a bound, else None.
        exact: False when the measure stopped early at the node or byte limit.
    """

    tool: str
    problem: str
    message: str
    measured: int | None = None
    limit: int | None = None
    exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        """``{"tool", "problem", "message", "measured", "limit", "exact"}`` (JSON-able)."""
        return {
            "tool": self.tool,
            "problem": self.problem,
            "message": self.message,
            "measured": self.measured,
            "limit": self.limit,
            "exact": self.exact,
        }


@dataclass(frozen=True)
class ListingWarning:
    """A list whose pagination misbehaved; what was listed is kept.

    Args:
        method: ``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list``.
        problem: ``"repeated_cursor"`` (the server handed out a cursor it had handed out before:
            the same page again, or a cycle), ``"page_limit"`` (the page cap was reached with a
            cursor still to follow) or ``"duplicate_names"`` (a name listed more than once; the
            first listing of each is kept).
        message: one human sentence, e.g. ``tools/list: the server repeated cursor '2' after 3
            pages; the 44 items listed so far are kept``.
        pages: pages read for this list.
        limit: the page cap for ``page_limit``, else None.
        names: for ``duplicate_names``, the names listed more than once (at most 20).
    """

    method: str
    problem: str
    message: str
    pages: int
    limit: int | None = None
    names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The shape of a :class:`ToolDiagnostic` dict (``tool`` is None: no single tool is meant)
        plus ``list`` (the method): ``{"tool", "problem", "message", "measured", "limit", "exact",
        "list"}``; ``measured`` is the pages read."""
        return {
            "tool": None,
            "problem": self.problem,
            "message": self.message,
            "measured": self.pages,
            "limit": self.limit,
            "exact": True,
            "list": self.method,
        }


@dataclass
class Listing:
    """The outcome of :func:`walk_pages`: the items kept, pages read, and any warnings."""

    items: list[Any] = field(default_factory=list)
    pages: int = 0
    warnings: list[ListingWarning] = field(default_factory=list)


_NAMES_IN_WARNING = 20


async def walk_pages(
    method: str,
    fetch: Callable[[str | None], Awaitable[Any]],
    items_of: Callable[[Any], list[Any]],
    key_of: Callable[[Any], str],
    *,
    max_pages: int,
    limit_note: str = "",
    on_item: Callable[[Any], None] | None = None,
) -> Listing:
    """Follow ``nextCursor`` from the first page, within ``max_pages`` pages, whatever the server does.

    Args:
        method: the list method, for messages.
        fetch: ``await fetch(cursor)`` → one page (a ``List*Result``), or None for "nothing to
            list" (the walk ends with what it has).
        items_of: the page's items.
        key_of: an item's identity (tool/prompt name, resource URI, template URI template);
            an item whose key was listed before is dropped (the first listing wins).
        max_pages: pages this walk may read (0: none; a page cap reached with a cursor pending
            gives a ``page_limit`` warning).
        limit_note: appended to the page-limit message (e.g. that the cap is shared).
        on_item: called with every listed item before it is kept or dropped (byte accounting);
            whatever it raises ends the walk.

    Returns:
        A :class:`Listing`; the walk stops early (with a :class:`ListingWarning`) at the first
        repeated cursor or at the page cap.

    Raises:
        Whatever ``fetch`` or ``on_item`` raise.
    """
    listing = Listing()
    seen_cursors: set[str] = set()
    keys: set[str] = set()
    duplicates: list[str] = []
    cursor: str | None = None
    while True:
        if listing.pages >= max_pages:
            listing.warnings.append(
                ListingWarning(
                    method,
                    "page_limit",
                    f"{method}: stopped at the limit of {max_pages} list pages{limit_note}; "
                    f"the {len(listing.items)} items listed so far are kept",
                    listing.pages,
                    limit=max_pages,
                )
            )
            break
        page = await fetch(cursor)
        if page is None:
            break
        listing.pages += 1
        for item in items_of(page):
            if on_item is not None:
                on_item(item)
            key = key_of(item)
            if key in keys:
                duplicates.append(key)
                continue
            keys.add(key)
            listing.items.append(item)
        cursor = page.next_cursor
        if not cursor:
            break
        if cursor in seen_cursors:
            shown = cursor if len(cursor) <= _NAME_IN_MESSAGE else cursor[:_NAME_IN_MESSAGE] + "…"
            listing.warnings.append(
                ListingWarning(
                    method,
                    "repeated_cursor",
                    f"{method}: the server repeated cursor {shown!r} after {listing.pages} pages; "
                    f"the {len(listing.items)} items listed so far are kept",
                    listing.pages,
                )
            )
            break
        seen_cursors.add(cursor)
    if duplicates:
        distinct = tuple(dict.fromkeys(duplicates))
        shown_names = ", ".join(
            name if len(name) <= _NAME_IN_MESSAGE else name[:_NAME_IN_MESSAGE] + "…"
            for name in distinct[:_NAMES_IN_WARNING]
        )
        more = f" and {len(distinct) - _NAMES_IN_WARNING} more" if len(distinct) > _NAMES_IN_WARNING else ""
        listing.warnings.append(
            ListingWarning(
                method,
                "duplicate_names",
                f"{method}: {len(duplicates)} later listings of names already listed were dropped "
                f"(the first listing wins): {shown_names}{more}",
                listing.pages,
                names=distinct[:_NAMES_IN_WARNING],
            )
        )
    return listing


@dataclass
class Catalog:
    """What the list requests gathered from one connected server.

    ``diagnostics`` has one :class:`ToolDiagnostic` per listed tool left out of ``tools``;
    ``name_flags`` one per kept tool whose name is flagged (``problem == "name"``).
    ``warnings`` one :class:`ListingWarning` per list whose pagination misbehaved.
    """

    tools: list[ToolSummary] = field(default_factory=list)
    resources: list[ResourceSummary] = field(default_factory=list)
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    pages: int = 0
    metadata_bytes: int = 0
    diagnostics: list[ToolDiagnostic] = field(default_factory=list)
    name_flags: list[ToolDiagnostic] = field(default_factory=list)
    warnings: list[ListingWarning] = field(default_factory=list)


def flag_tool_name(name: str) -> ToolDiagnostic | None:
    """A ``problem == "name"`` diagnostic when ``name`` breaks MCP's tool-name rule or starts
    with ``mcp.`` (:func:`patchbay.core.names.tool_name_problem` says which way), else None. The
    message quotes the name with ``repr`` so invisible characters show as escapes."""
    reason = tool_name_problem(name)
    if reason is None:
        return None
    shown = name if len(name) <= _NAME_IN_MESSAGE else name[:_NAME_IN_MESSAGE] + "…"
    return ToolDiagnostic(tool=name, problem="name", message=f"tool {shown!r} kept but flagged: its name {reason}")


def tool_summary(tool: types.Tool) -> ToolSummary:
    """A listed tool as Patchbay stores it; annotations in wire (camelCase) form."""
    return ToolSummary(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema or {}),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
    )


def resource_summary(resource: types.Resource) -> ResourceSummary:
    return ResourceSummary(
        uri=str(resource.uri), name=resource.name, mime_type=resource.mime_type, description=resource.description
    )


def _wire_size(model: types.Tool | types.Resource) -> int:
    return len(model.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def _malformed(tool: types.Tool) -> str | None:
    """Why the tool's schemas cannot be used as JSON Schemas, or None.

    Only cheap structural rules: the SDK's wire models already refuse most shapes on 2025-era
    connections (and then the whole page fails, not one tool), but 2026-07-28 admits any JSON
    Schema, and a model built in process skips validation. Full metaschema validation of an
    ``outputSchema`` happens when a result is first checked against it
    (:mod:`patchbay.runtime.output.schema_check`).
    """
    input_schema: Any = tool.input_schema
    output_schema: Any = tool.output_schema
    if not isinstance(input_schema, dict):
        return f"its inputSchema is a {type(input_schema).__name__}, not a JSON object"
    if input_schema.get("type") != "object":
        return 'its inputSchema root is not {"type": "object"} (MCP tools take a JSON object)'
    if output_schema is not None and not isinstance(output_schema, dict):
        return f"its outputSchema is a {type(output_schema).__name__}, not a JSON object"
    for label, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        if isinstance(schema, dict) and "$schema" in schema and not isinstance(schema["$schema"], str):
            return f"its {label} has a $schema that is not a string"
    return None


def screen_tool(tool: types.Tool, bounds: SchemaBounds = DEFAULT_SCHEMA_BOUNDS) -> ToolDiagnostic | None:
    """Whether one listed tool may enter the catalog: None if so, else why not.

    Checks, in order: the schemas' bounds (depth, nodes, bytes of ``inputSchema`` +
    ``outputSchema`` together; the diagnostic's fields carry the first broken bound, its message
    all of them), then the structural rules (both schemas JSON objects, an ``inputSchema`` root
    of ``type: "object"``, a string ``$schema``). The measure is iterative and stops at the node
    or byte limit, so screening costs at most ``bounds.max_nodes`` steps per tool. Whether an
    ``outputSchema`` is a valid JSON Schema is not checked here (the metaschema check costs about
    a second for a few thousand properties); :mod:`patchbay.runtime.output.schema_check` checks it once,
    when a result is first validated.

    Args:
        tool: the tool as the SDK parsed it.
        bounds: the limits (``SchemaBounds.from_settings(settings)``; default the Settings defaults).

    Returns:
        ``None`` or a :class:`ToolDiagnostic` (``problem`` ``depth``/``nodes``/``bytes``/``malformed``).

    Why: bounded schemas; one bad tool never costs the server its other tools.
    """
    shown = tool.name if len(tool.name) <= _NAME_IN_MESSAGE else tool.name[:_NAME_IN_MESSAGE] + "…"
    broken = exceeded_bounds(tool.input_schema, tool.output_schema, bounds)
    if broken:
        first = broken[0]
        return ToolDiagnostic(
            tool=tool.name,
            problem=first.bound,
            message=f"tool {shown!r} left out: its schemas' {'; '.join(b.describe() for b in broken)}",
            measured=first.measured,
            limit=first.limit,
            exact=first.exact,
        )
    reason = _malformed(tool)
    if reason is not None:
        return ToolDiagnostic(tool=tool.name, problem="malformed", message=f"tool {shown!r} left out: {reason}")
    return None


async def list_catalog(
    client: Client,
    *,
    max_pages: int,
    max_metadata_bytes: int,
    resources: bool = True,
    max_schema_depth: int = DEFAULT_SCHEMA_BOUNDS.max_depth,
    max_schema_nodes: int = DEFAULT_SCHEMA_BOUNDS.max_nodes,
    max_schema_bytes: int = DEFAULT_SCHEMA_BOUNDS.max_bytes,
) -> Catalog:
    """List tools, and resources when ``resources`` and the server advertises them.

    A server without the tools capability, or one answering the first tools/list with -32601 (Method
    not found), has 0 tools: that is not an error.

    A tool whose schemas break a schema bound or are malformed (:func:`screen_tool`) is left out
    of ``tools`` and gets one :class:`ToolDiagnostic` on ``diagnostics``; the server keeps its
    other tools. Left-out tools still count towards ``max_metadata_bytes``. A
    kept tool with a flagged name (:func:`flag_tool_name`) gets one on ``name_flags``.

    Args:
        max_pages: list pages read in total (tools and resources together; seed: 50).
        max_metadata_bytes: bytes of listed metadata (wire JSON) allowed in total (seed: 2 MiB).
        max_schema_depth: deepest nesting of one tool's schemas (``Settings.schema_max_depth``, 32).
        max_schema_nodes: most JSON values in one tool's schemas (``schema_max_nodes``, 10,000).
        max_schema_bytes: most compact-JSON bytes of one tool's schemas (``schema_max_bytes``,
            256 KiB).

    Pagination that misbehaves (a repeated cursor, a cycle, more than ``max_pages`` pages) ends
    that list with what it listed so far and a :class:`ListingWarning` on ``warnings``; a name
    listed twice keeps its first listing (also a warning).

    Raises:
        CatalogError: ``tool_list_failed`` when a request fails or the metadata bound is exceeded
            (a schema bound only ever costs the one tool, the page bound only later pages).
    """
    capabilities = client.server_capabilities
    info = client.server_info
    catalog = Catalog(
        server_info={"name": info.name, "version": info.version} if info is not None else None,
        protocol_version=client.protocol_version,
    )
    budget = _Budget(catalog, max_pages, max_metadata_bytes)
    bounds = SchemaBounds(max_schema_depth, max_schema_nodes, max_schema_bytes)
    if capabilities is None or capabilities.tools is not None:
        for tool in await budget.list_all("tools/list", client.list_tools):
            diagnostic = screen_tool(tool, bounds)
            if diagnostic is None:
                catalog.tools.append(tool_summary(tool))
                flag = flag_tool_name(tool.name)
                if flag is not None:
                    catalog.name_flags.append(flag)
            else:
                catalog.diagnostics.append(diagnostic)
    if resources and capabilities is not None and capabilities.resources is not None:
        catalog.resources = [
            resource_summary(r) for r in await budget.list_all("resources/list", client.list_resources)
        ]
    return catalog


@dataclass
class _Budget:
    catalog: Catalog
    max_pages: int
    max_bytes: int

    async def list_all(
        self, method: str, fetch: Callable[..., Awaitable[types.ListToolsResult | types.ListResourcesResult]]
    ) -> list[Any]:
        catalog = self.catalog

        async def page(cursor: str | None) -> types.ListToolsResult | types.ListResourcesResult | None:
            try:
                return await fetch(cursor=cursor, cache_mode="bypass")
            except MCPError as exc:
                if exc.error.code == types.METHOD_NOT_FOUND and cursor is None:
                    return None
                raise CatalogError(f"{method} failed: {exc.error.message} (JSON-RPC {exc.error.code})") from None
            except Exception as exc:
                _, message = classify(exc)
                raise CatalogError(f"{method} failed: {message}") from None

        def count(item: types.Tool | types.Resource) -> None:
            catalog.metadata_bytes += _wire_size(item)
            if catalog.metadata_bytes > self.max_bytes:
                raise CatalogError(
                    f"{method}: the listed metadata exceeds the cap of {self.max_bytes} bytes "
                    f"({self.max_bytes / (1024 * 1024):g} MiB)"
                )

        def key(item: types.Tool | types.Resource) -> str:
            return item.name if isinstance(item, types.Tool) else str(item.uri)

        listing = await walk_pages(
            method,
            page,
            lambda result: result.tools if isinstance(result, types.ListToolsResult) else result.resources,
            key,
            max_pages=max(0, self.max_pages - catalog.pages),
            limit_note=f" (the cap of {self.max_pages} counts tools and resources together)",
            on_item=count,
        )
        catalog.pages += listing.pages
        catalog.warnings.extend(listing.warnings)
        return listing.items
