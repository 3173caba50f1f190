"""Resources, resource templates and prompts of the governed connectors, as the gateway offers them.

Every connector of the runtime contributes what it lists (a server without the capability lists
nothing; one that cannot be reached is left out of the list), under names that say where each
item comes from:

* a resource ``<uri>`` of connector ``c`` is ``patchbay://c/<uri, percent-encoded>``
  (:func:`resource_uri`; :func:`split_resource_uri` is its inverse); a template's constant parts
  are encoded the same way and its ``{variables}`` kept, so the host's expansion of the
  namespaced template names the server's expanded URI;
* a prompt ``p`` of ``c`` is ``c__p`` (connector names have no ``_``, so the first ``__`` splits).

Reading a resource is the runtime's governed explicit include (:meth:`Runtime.include_resource`:
resource grants, ``mcp.resource.requested``/``fetched`` events); getting a prompt is
:meth:`Runtime.expand_prompt` (prompt grants, arguments checked against the declaration, the
messages all user messages). A refusal is a protocol error whose ``data`` carries the stable
code: ``{"code": "approval_unavailable" | "permission_denied" | "not_found" | ...}`` (for
``approval_pending`` also ``approvalId`` and ``approvalUrl``: the same read made again once the
person allowed it proceeds); the message is ``error[<code>]: <message>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from patchbay.core.errors import ErrorCode, FailureReason, NotFoundError, PatchbayError, ToolCallError, ValidationError
from patchbay.runtime import Runtime

__all__ = [
    "RESOURCE_SCHEME",
    "get_prompt",
    "list_prompts",
    "list_resource_templates",
    "list_resources",
    "protocol_error",
    "prompt_name",
    "read_resource",
    "resource_uri",
    "split_prompt_name",
    "split_resource_uri",
    "template_uri",
]

RESOURCE_SCHEME = "patchbay"
"""The scheme of the gateway's resource URIs."""
_PREFIX = f"{RESOURCE_SCHEME}://"
_VARIABLE = re.compile(r"(\{[^{}]*\})")
_CONNECTOR = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def resource_uri(connector: str, uri: str) -> str:
    """``patchbay://<connector>/<uri percent-encoded>`` (every reserved character encoded)."""
    return f"{_PREFIX}{connector}/{quote(uri, safe='')}"


def template_uri(connector: str, template: str) -> str:
    """A server's URI template under the gateway's scheme: its constant parts encoded as
    :func:`resource_uri` does, its ``{...}`` expressions kept."""
    parts = _VARIABLE.split(template)
    encoded = "".join(part if _VARIABLE.fullmatch(part) else quote(part, safe="") for part in parts)
    return f"{_PREFIX}{connector}/{encoded}"


def split_resource_uri(uri: str) -> tuple[str, str]:
    """``(connector, server URI)`` of a gateway resource URI.

    Raises:
        ValidationError: ``validation_error`` (field ``uri``) for a URI the gateway did not give.
    """
    connector, slash, encoded = uri.removeprefix(_PREFIX).partition("/")
    if not uri.startswith(_PREFIX) or not slash or not encoded or not _CONNECTOR.fullmatch(connector):
        raise ValidationError(
            f"not a resource URI of this gateway (they look like {_PREFIX}<connector>/<uri>)", details={"field": "uri"}
        )
    return connector, unquote(encoded)


def prompt_name(connector: str, prompt: str) -> str:
    """``<connector>__<prompt>``."""
    return f"{connector}__{prompt}"


def split_prompt_name(name: str) -> tuple[str, str]:
    """``(connector, prompt)`` of a gateway prompt name.

    Raises:
        ValidationError: ``validation_error`` (field ``name``) for a name without ``__``.
    """
    connector, sep, prompt = name.partition("__")
    if not sep or not prompt or not _CONNECTOR.fullmatch(connector):
        raise ValidationError("a prompt name is <connector>__<prompt>", details={"field": "name"})
    return connector, prompt


def protocol_error(error: PatchbayError) -> MCPError:
    """A governed refusal as a protocol error (see the module docstring): ``-32602`` for a bad
    request (``validation_error``, ``not_found``, ``unknown_tool``), ``-32600`` otherwise."""
    code = str(error.reason) if isinstance(error, ToolCallError) else str(error.code)
    invalid = code in (ErrorCode.VALIDATION_ERROR, ErrorCode.NOT_FOUND, "unknown_tool")
    data = {"code": code}
    if code == FailureReason.APPROVAL_PENDING:  # where the person answers; the same read then proceeds
        for key, name in (("approval_id", "approvalId"), ("approval_url", "approvalUrl")):
            if isinstance(value := error.details.get(key), str):
                data[name] = value
    return MCPError(types.INVALID_PARAMS if invalid else types.INVALID_REQUEST, f"error[{code}]: {error.message}", data)


def _connectors(runtime: Runtime) -> list[str]:
    return list(runtime.server_states())


async def list_resources(runtime: Runtime) -> list[types.Resource]:
    """Every connector's resources under gateway URIs (metadata only; nothing is read)."""
    out: list[types.Resource] = []
    for connector in _connectors(runtime):
        try:
            found = await runtime.list_resources(connector)
        except PatchbayError:
            continue  # unreachable or over a bound: left out of the list
        out.extend(
            types.Resource(
                uri=resource_uri(connector, item.uri),
                name=f"{connector}__{item.name}",
                title=item.title,
                description=item.description,
                mime_type=item.mime_type,
                size=item.size,
            )
            for item in found
        )
    return out


async def list_resource_templates(runtime: Runtime) -> list[types.ResourceTemplate]:
    """Every connector's resource templates under gateway URIs (:func:`template_uri`)."""
    out: list[types.ResourceTemplate] = []
    for connector in _connectors(runtime):
        try:
            found = await runtime.list_resource_templates(connector)
        except PatchbayError:
            continue
        out.extend(
            types.ResourceTemplate(
                uri_template=template_uri(connector, item.uri_template),
                name=f"{connector}__{item.name}",
                title=item.title,
                description=item.description,
                mime_type=item.mime_type,
            )
            for item in found
        )
    return out


async def read_resource(runtime: Runtime, uri: str) -> types.ReadResourceResult:
    """Read a gateway resource URI through the governed include; the items keep gateway URIs.

    Raises:
        MCPError: :func:`protocol_error` of the refusal (a bad URI, a denied or unapproved read,
            an unreachable server...).
    """
    try:
        connector, server_uri = split_resource_uri(uri)
        if connector not in runtime.server_states():
            raise NotFoundError(f"no connector {connector!r} in this workspace", details={"connector": connector})
        included = await runtime.include_resource(connector, server_uri)
    except PatchbayError as exc:
        raise protocol_error(exc) from None
    contents: list[types.TextResourceContents | types.BlobResourceContents] = []
    for item in included.contents:
        mapped = resource_uri(connector, item.uri)
        if item.text is not None:
            contents.append(types.TextResourceContents(uri=mapped, mime_type=item.mime_type, text=item.text))
        else:
            contents.append(types.BlobResourceContents(uri=mapped, mime_type=item.mime_type, blob=item.blob or ""))
    return types.ReadResourceResult(contents=contents)


async def list_prompts(runtime: Runtime) -> list[types.Prompt]:
    """Every connector's prompts (the runtime leaves denied ones out) as ``<connector>__<prompt>``."""
    out: list[types.Prompt] = []
    for connector in _connectors(runtime):
        try:
            found = await runtime.list_prompts(connector)
        except PatchbayError:
            continue
        out.extend(
            types.Prompt(
                name=prompt_name(connector, item.name),
                title=item.title,
                description=item.description,
                arguments=[
                    types.PromptArgument(name=a.name, description=a.description, required=a.required)
                    for a in item.arguments
                ],
            )
            for item in found
        )
    return out


async def get_prompt(runtime: Runtime, name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    """Expand a gateway prompt through the runtime (arguments checked, events logged); every
    message is a user message.

    Raises:
        MCPError: :func:`protocol_error` of the refusal.
    """
    try:
        connector, prompt = split_prompt_name(name)
        if connector not in runtime.server_states():
            raise NotFoundError(f"no connector {connector!r} in this workspace", details={"connector": connector})
        expanded = await runtime.expand_prompt(connector, prompt, dict(arguments or {}))
    except PatchbayError as exc:
        raise protocol_error(exc) from None
    messages = [
        types.PromptMessage.model_validate({"role": "user", "content": message.content})
        for message in expanded.messages
    ]
    return types.GetPromptResult(description=expanded.description, messages=messages)
