"""Reading a server's catalog: every page of tools/list (and resources/list), within bounds.

The SDK returns one page per call (shared/notes/mcp-sdk-2.3-client.md §1.8); this walks
``next_cursor`` under a page budget and a metadata byte budget (seed 003 §9.2). Both the probe and
the runtime's connections list through here, so they agree on what a server offers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports.errors import classify
from patchbay.core.errors import ErrorCode, ProbeError
from patchbay.core.models import ResourceSummary, ToolSummary

__all__ = ["Catalog", "CatalogError", "list_catalog", "resource_summary", "tool_summary"]


class CatalogError(ProbeError):
    """A list request failed or a bound was exceeded (code ``tool_list_failed``)."""

    def __init__(self, message: str):
        super().__init__(message, code=ErrorCode.TOOL_LIST_FAILED)


@dataclass
class Catalog:
    """What the list requests gathered from one connected server."""

    tools: list[ToolSummary] = field(default_factory=list)
    resources: list[ResourceSummary] = field(default_factory=list)
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    pages: int = 0
    metadata_bytes: int = 0


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


async def list_catalog(
    client: Client, *, max_pages: int, max_metadata_bytes: int, resources: bool = True
) -> Catalog:
    """List tools, and resources when ``resources`` and the server advertises them.

    A server without the tools capability, or one answering the first tools/list with -32601
    (Method not found), has 0 tools: that is not an error (issue 2, seed 003 §9).

    Args:
        max_pages: list pages allowed in total (tools and resources together; seed: 50).
        max_metadata_bytes: bytes of listed metadata (wire JSON) allowed in total (seed: 2 MiB).

    Raises:
        CatalogError: ``tool_list_failed`` when a request fails or a bound is exceeded.
    """
    capabilities = client.server_capabilities
    info = client.server_info
    catalog = Catalog(
        server_info={"name": info.name, "version": info.version} if info is not None else None,
        protocol_version=client.protocol_version,
    )
    budget = _Budget(catalog, max_pages, max_metadata_bytes)
    if capabilities is None or capabilities.tools is not None:
        catalog.tools = [tool_summary(t) for t in await budget.list_all("tools/list", client.list_tools)]
    if resources and capabilities is not None and capabilities.resources is not None:
        catalog.resources = [resource_summary(r) for r in await budget.list_all("resources/list", client.list_resources)]
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
        items: list[Any] = []
        cursor: str | None = None
        while True:
            if catalog.pages >= self.max_pages:
                raise CatalogError(
                    f"{method}: the server needs more than {self.max_pages} list pages (tools and resources together)"
                )
            try:
                page = await fetch(cursor=cursor, cache_mode="bypass")
            except MCPError as exc:
                if exc.error.code == types.METHOD_NOT_FOUND and cursor is None:
                    return items
                raise CatalogError(f"{method} failed: {exc.error.message} (JSON-RPC {exc.error.code})") from None
            except Exception as exc:
                _, message = classify(exc)
                raise CatalogError(f"{method} failed: {message}") from None
            catalog.pages += 1
            listed = page.tools if isinstance(page, types.ListToolsResult) else page.resources
            for item in listed:
                catalog.metadata_bytes += _wire_size(item)
                if catalog.metadata_bytes > self.max_bytes:
                    raise CatalogError(
                        f"{method}: the listed metadata exceeds the cap of {self.max_bytes} bytes "
                        f"({self.max_bytes / (1024 * 1024):g} MiB)"
                    )
                items.append(item)
            cursor = page.next_cursor
            if not cursor:
                return items
