"""MCP resources: listing, URI templates, and the explicit include.

Listing reads metadata only; content is read only by :func:`include_resource`, the explicit
include, which passes the
:class:`~patchbay.runtime.calls.permissions.PermissionEngine` in the resource key space and logs
the ``mcp.resource.requested`` → ``permission.*`` → ``mcp.resource.fetched`` chain. A denial raises
``ToolCallError`` ``permission_denied`` / ``approval_unavailable``; a failed read raises its
``ToolCallError``. Templates are expanded with
:func:`~patchbay.runtime.context.resource_uris.expand_uri_template`.

Design: docs/context.md (the event chain and URI templates)
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from patchbay.core.errors import FailureReason, ToolCallError, ValidationError
from patchbay.runtime.calls.permissions import RESOURCE_READ, USER_EXPLICIT_INCLUDE, PermissionEngine
from patchbay.runtime.context.peer import ConnectorPeer, list_all
from patchbay.runtime.context.resource_uris import expand_uri_template, template_variables, validate_resource_uri
from patchbay.runtime.output.guard import GUARD_IN_THREAD_BYTES

__all__ = [
    "IncludedResource",
    "ResourceContent",
    "ResourceInfo",
    "ResourceTemplateInfo",
    "expand_uri_template",
    "include_resource",
    "list_resource_templates",
    "list_resources",
    "validate_resource_uri",
]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource as the server lists it (untrusted metadata).

    Attributes:
        uri: what :func:`include_resource` reads.
        name: the server's name for it (for display only; reads are by URI).
        title / description / mime_type: as listed, if any.
        size: the size in bytes the server announces, if any (not checked).
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"uri", "name", "title", "description", "mimeType", "size"}``."""
        return {
            "uri": self.uri,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "mimeType": self.mime_type,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True)
class ResourceTemplateInfo:
    """One resource template as the server lists it.

    Attributes:
        uri_template: the RFC 6570 template, e.g. ``demo://resource/dynamic/text/{resourceId}``.
        name / title / description / mime_type: as listed.
        variables: the template's variable names, in order of appearance (empty when the template
            is malformed; :meth:`expand` then says why).
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    variables: tuple[str, ...] = ()

    def expand(self, values: Mapping[str, str | int]) -> str:
        """:func:`expand_uri_template` of this template."""
        return expand_uri_template(self.uri_template, values)

    def to_dict(self) -> dict[str, Any]:
        """``{"uriTemplate", "name", "title", "description", "mimeType", "variables"}``."""
        return {
            "uriTemplate": self.uri_template,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "mimeType": self.mime_type,
            "variables": list(self.variables),
        }


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One item of a ``resources/read`` result: text or a base64 blob.

    Attributes:
        uri: the item's URI as the server gave it.
        mime_type: its MIME type, if given.
        text: the text (None for a blob).
        blob: the base64 text of a binary item (None for text).
        size_bytes: UTF-8 bytes of the text, or decoded bytes of the blob.
    """

    uri: str
    mime_type: str | None
    text: str | None
    blob: str | None
    size_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``{"uri", "mimeType"?, "text" | "blob"}``."""
        out: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        if self.text is not None:
            out["text"] = self.text
        else:
            out["blob"] = self.blob
        return out


@dataclass(frozen=True, slots=True)
class IncludedResource:
    """A resource the user (or a policy) explicitly included, marked with its source.

    Attributes:
        server: the connector it came from.
        uri: the URI that was read.
        include_id: ``ri_<seq>``, naming the include's events.
        contents: the items read, whole.
        size_bytes: the sum of the items' ``size_bytes``.
        content_hash: ``sha256:<hex>`` of the items' bytes (text as UTF-8, blobs decoded),
            concatenated in order; for one item, the SHA-256 of that item.
        source: ``{"mcp": {"server", "uri"}}``, for audit and for a context builder.
    """

    server: str
    uri: str
    include_id: str
    contents: tuple[ResourceContent, ...]
    size_bytes: int
    content_hash: str
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        """``[mcp:<server>:<uri>]``: what marks it in a model's context."""
        return f"[mcp:{self.server}:{self.uri}]"

    @property
    def text(self) -> str:
        """Every text item joined with ``"\\n"``; untrusted, see :attr:`model_text`."""
        return "\n".join(item.text for item in self.contents if item.text is not None)

    @property
    def body(self) -> str:
        """Each item on its own line(s): a text item's text, a blob as a ``[blob <mime>, <n>
        bytes]`` note (binary content is not text for a model); no prefix."""
        return "\n".join(
            item.text
            if item.text is not None
            else f"[blob {item.mime_type or 'application/octet-stream'}, {item.size_bytes} bytes]"
            for item in self.contents
        )

    @property
    def model_text(self) -> str:
        """The content as untrusted text for a model: :attr:`prefix`, a newline, :attr:`body`."""
        return f"{self.prefix}\n{self.body}"

    def to_dict(self) -> dict[str, Any]:
        """``{"server", "uri", "includeId", "sizeBytes", "contentHash", "source", "contents"}``."""
        return {
            "server": self.server,
            "uri": self.uri,
            "includeId": self.include_id,
            "sizeBytes": self.size_bytes,
            "contentHash": self.content_hash,
            "source": self.source,
            "contents": [item.to_dict() for item in self.contents],
        }


# -- listing ---------------------------------------------------------------------------------


def _resources_offered(capabilities: types.ServerCapabilities) -> bool:
    return capabilities.resources is not None


async def list_resources(peer: ConnectorPeer) -> list[ResourceInfo]:
    """Every resource the connector lists (``resources/list``, all pages). Metadata only: no
    resource is read. A server without the resources capability lists none.

    Raises:
        CatalogError: ``tool_list_failed`` past the page or metadata bound.
        ToolCallError: ``mcp_server_unavailable``, ``timeout``, ``tool_error``, ...
    """

    async def fetch(client: Client, cursor: str | None) -> types.ListResourcesResult:
        return await client.list_resources(cursor=cursor, cache_mode="bypass")

    listed = await list_all(peer, "resources/list", fetch, lambda page: page.resources, _resources_offered)
    return [ResourceInfo(str(r.uri), r.name, r.title, r.description, r.mime_type, r.size) for r in listed]


async def list_resource_templates(peer: ConnectorPeer) -> list[ResourceTemplateInfo]:
    """Every resource template the connector lists (``resources/templates/list``, all pages).

    Raises:
        CatalogError, ToolCallError: as :func:`list_resources`.
    """

    async def fetch(client: Client, cursor: str | None) -> types.ListResourceTemplatesResult:
        return await client.list_resource_templates(cursor=cursor, cache_mode="bypass")

    listed = await list_all(
        peer, "resources/templates/list", fetch, lambda page: page.resource_templates, _resources_offered
    )
    out = []
    for t in listed:
        try:
            variables = template_variables(t.uri_template)
        except ValidationError:
            variables = ()
        out.append(ResourceTemplateInfo(t.uri_template, t.name, t.title, t.description, t.mime_type, variables))
    return out


# -- the explicit include --------------------------------------------------------------------


class _BadContent(Exception):
    """A read result that cannot be used (a blob that is not base64)."""


def _contents(result: types.ReadResourceResult) -> tuple[tuple[ResourceContent, ...], int, str]:
    """The items, their total size and ``sha256:<hex>``; raises _BadContent for a bad blob."""
    digest = hashlib.sha256()
    items: list[ResourceContent] = []
    total = 0
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            data = item.text.encode("utf-8", "surrogatepass")
            items.append(ResourceContent(str(item.uri), item.mime_type, item.text, None, len(data)))
        else:
            try:
                data = base64.b64decode(item.blob, validate=True)
            except (binascii.Error, ValueError):
                raise _BadContent(f"the blob of {str(item.uri)[:200]!r} is not valid base64") from None
            items.append(ResourceContent(str(item.uri), item.mime_type, None, item.blob, len(data)))
        digest.update(data)
        total += len(data)
    return tuple(items), total, f"sha256:{digest.hexdigest()}"


def _rough_size(result: types.ReadResourceResult) -> int:
    return sum(len(getattr(item, "text", "") or getattr(item, "blob", "") or "") for item in result.contents)


async def include_resource(peer: ConnectorPeer, permissions: PermissionEngine, uri: str) -> IncludedResource:
    """Read one resource because a user (or a policy) explicitly included it.

    The include passes the PermissionEngine in the resource key space with risk ``read`` (an
    ``ask`` decision asks the approver: :class:`ApprovalRequest` with ``kind == "resource"``,
    ``tool == "resources/read"`` and ``arguments == {"uri": uri}``; headless →
    ``approval_unavailable``),
    then ``resources/read`` is sent; the events are in the module docstring.

    Args:
        peer: the connector.
        permissions: the runtime's engine (its approver and "allow for this session" memory;
            ``allow_session`` allows reading any resource of this connector for the session).
        uri: the resource's URI (never its name; expand a template first).

    Returns:
        The :class:`IncludedResource`, contents whole, marked with its source.

    Raises:
        ValidationError: ``validation_error`` for a bad URI (nothing logged or sent).
        ToolCallError: ``permission_denied`` / ``approval_unavailable`` (the server never sees the
            read), ``mcp_server_unavailable``, ``mcp_server_restarted``/``unstable``, ``timeout``,
            ``tool_error`` (a JSON-RPC error such as an unknown resource, ``details["mcpCode"]``;
            or an invalid result); ``details["includeId"]`` names the events.
    """
    uri = validate_resource_uri(uri)
    log, name = peer.log, peer.name
    include_id = f"ri_{log.append('mcp.resource.requested', {'server': name, 'uri': uri})}"
    head = {"server": name, "uri": uri, "includeId": include_id}
    decision = permissions.evaluate_resource_read(peer.server)
    log.append(
        "permission.requested",
        {
            **head,
            "riskAtDecision": "read",
            "sourcedFrom": USER_EXPLICIT_INCLUDE,
            "policySource": permissions.requested_source(name, RESOURCE_READ, decision, kind="resource"),
        },
    )
    resolution = permissions.resolve_now(name, RESOURCE_READ, decision, kind="resource")
    if resolution is None:
        resolution = await permissions.ask(
            name, RESOURCE_READ, decision, name=f"mcp.{name}.{RESOURCE_READ}", arguments={"uri": uri}, kind="resource"
        )
    resolved: dict[str, Any] = {
        **head,
        "decision": resolution.decision,
        "actor": resolution.actor,
        "sourcedFrom": resolution.sourced_from,
    }
    if resolution.reason is not None:
        resolved["reason"] = str(resolution.reason)
    log.append("permission.resolved", resolved)
    if not resolution.allowed:
        raise ToolCallError(
            resolution.reason or FailureReason.PERMISSION_DENIED,
            f"reading {uri[:200]!r} from {name!r} waits for the person's approval at {resolution.details['approval_url']}"
            if "approval_url" in resolution.details
            else f"reading {uri[:200]!r} from {name!r} was denied ({resolution.sourced_from})",
            details={**resolution.details, "connector": name, "uri": uri, "includeId": include_id},
        )

    started = time.perf_counter()

    def failed(reason: str, message: str) -> None:
        log.append(
            "mcp.call.failed",
            {
                "server": name,
                "includeId": include_id,
                "method": "resources/read",
                "durationMs": round((time.perf_counter() - started) * 1000, 3),
                "reason": reason,
                "error": message[: peer.settings.result_preview_chars],
            },
        )

    async def read(client: Client) -> types.ReadResourceResult:
        return await client.read_resource(uri, cache_mode="bypass")

    try:
        result = await peer.request("resources/read", read)
        if _rough_size(result) > GUARD_IN_THREAD_BYTES:  # decoding and hashing take a while: off the loop
            contents, size, digest = await anyio.to_thread.run_sync(functools.partial(_contents, result))
        else:
            contents, size, digest = _contents(result)
    except ToolCallError as exc:
        failed(str(exc.reason), exc.message)
        if "includeId" in exc.details:
            raise
        raise exc.with_details(includeId=include_id) from exc
    except _BadContent as exc:
        failed(str(FailureReason.TOOL_ERROR), str(exc))
        raise ToolCallError(
            FailureReason.TOOL_ERROR,
            f"{name}: resources/read returned an invalid result: {exc}",
            details={"connector": name, "uri": uri, "includeId": include_id},
        ) from None
    except anyio.get_cancelled_exc_class():
        failed(str(FailureReason.CANCELLED), "the read was cancelled")
        raise
    log.append("mcp.resource.fetched", {**head, "sizeBytes": size, "contentHash": digest})
    return IncludedResource(name, uri, include_id, contents, size, digest, {"mcp": {"server": name, "uri": uri}})
