"""The one-tool proxy (``format="proxy"``): one small ``mcp`` tool with which a model
searches, describes and calls the session's catalog instead of receiving every schema up front.

:func:`parse_proxy_arguments` checks what a model sent (:data:`PROXY_INPUT_SCHEMA`),
:func:`search_catalog` ranks the offered tools, and :func:`run_proxy` executes one use; the tool's
own definition is :func:`patchbay.runtime.tools.definitions.proxy_definitions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from patchbay.core.errors import FailureReason, ToolCallError, UnacceptableSchema, ValidationError
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.settings import Settings
from patchbay.runtime.calls.result import ToolCallResult, local_result
from patchbay.runtime.tools.definitions import (
    DefinitionDiagnostic,
    OfferedTool,
    ToolDefinitions,
    definition_for,
    definition_shape,
)

__all__ = [
    "PROXY_DESCRIPTION",
    "PROXY_INPUT_SCHEMA",
    "PROXY_TOOL_NAME",
    "SEARCH_LIMIT",
    "SEARCH_LIMIT_MAX",
    "ProxyHost",
    "ProxyRequest",
    "ProxyShape",
    "connector_counts",
    "parse_proxy_arguments",
    "proxy_definitions",
    "run_proxy",
    "search_catalog",
]

ProxyShape = Literal["mcp", "openai", "openai-responses", "anthropic"]
"""The API shape the proxy tool is written in."""

PROXY_TOOL_NAME = "mcp"
"""The proxy tool's name (the single ``mcp`` proxy tool)."""

SEARCH_LIMIT_MAX = 50
"""The most results one proxy ``search`` may ask for."""

SEARCH_LIMIT = 10
"""Results a proxy ``search`` returns unless it asks for a ``limit`` (at most :data:`SEARCH_LIMIT_MAX`)."""
_MAX_QUERY = 1000
_ONE_LINE = 160


PROXY_DESCRIPTION = (
    "Use the MCP tools of this session. action=search: find tools by keywords (query; empty lists all) "
    "-> names and one-line descriptions. action=describe: one tool's full definition and input schema "
    "(tool). action=call: run one tool (tool, arguments). Tool names come from search. "
    "action=connectors: the connectors and how many tools each offers."
)
PROXY_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search", "describe", "call", "connectors"]},
        "query": {"type": "string"},
        "tool": {"type": "string"},
        "arguments": {"type": "object"},
        "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX},
    },
    "required": ["action"],
}
"""The proxy's whole input schema; kept small on purpose (it is what every request pays for)."""


def proxy_definitions(shape: str = "mcp", *, local_names: Iterable[str] = ()) -> ToolDefinitions:
    """The proxy tool alone (format ``proxy``), written in ``shape``.

    A local tool of the host that is also named ``mcp`` would clash with it in a model's tool list;
    the proxy is still returned, with a diagnostic, and :meth:`Runtime.call_wire` then calls the
    local tool, so the host reaches the proxy through :meth:`Runtime.call_proxy`.

    Raises:
        ValidationError: ``validation_error`` (field ``shape``) for an unknown shape.
    """
    if shape not in get_args(ProxyShape):
        raise ValidationError(
            f"unknown proxy shape {shape!r}; use one of {', '.join(get_args(ProxyShape))}", details={"field": "shape"}
        )
    definition = definition_shape(PROXY_TOOL_NAME, PROXY_DESCRIPTION, PROXY_INPUT_SCHEMA, shape, None)
    diagnostics = []
    if PROXY_TOOL_NAME in set(local_names):
        diagnostics.append(
            DefinitionDiagnostic(
                PROXY_TOOL_NAME,
                "proxy",
                "a local tool is also named 'mcp': call_wire('mcp') calls it; reach the proxy through call_proxy()",
            )
        )
    return ToolDefinitions("proxy", [definition], diagnostics)


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """The proxy tool's arguments, checked.

    Attributes:
        action: ``search``, ``describe``, ``call`` or ``connectors``.
        query: search keywords (``""`` lists every tool, by name).
        tool: the tool to describe or call (wire or canonical name); ``""`` for search.
        arguments: the arguments of a ``call``.
        limit: how many search results at most (1–:data:`SEARCH_LIMIT_MAX`).
    """

    action: Literal["search", "describe", "call", "connectors"]
    query: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    limit: int = SEARCH_LIMIT


def _invalid(field_name: str, message: str) -> ValidationError:
    return ValidationError(message, details={"field": field_name})


def parse_proxy_arguments(arguments: Any) -> ProxyRequest:
    """Check what a model sent to the proxy tool (its input schema, :data:`PROXY_INPUT_SCHEMA`).

    ``arguments`` of a ``call`` may also arrive as a JSON text of an object (some models send
    nested objects that way).

    Raises:
        ValidationError: ``validation_error`` with ``details["field"]`` naming the bad argument:
            not an object, unknown keys, a missing or unknown ``action``, a missing ``tool`` for
            ``describe``/``call``, a ``limit`` outside 1–50, ``arguments`` that are no object.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise _invalid("arguments", "the proxy tool's arguments must be a JSON object")
    unknown = sorted(set(arguments) - set(PROXY_INPUT_SCHEMA["properties"]))
    if unknown:
        raise _invalid(
            str(unknown[0]), f"unknown proxy argument(s) {unknown}; use action, query, tool, arguments, limit"
        )
    action = arguments.get("action")
    if action not in ("search", "describe", "call", "connectors"):
        raise _invalid("action", "action must be one of search, describe, call, connectors")
    query = arguments.get("query", "")
    if not isinstance(query, str) or len(query) > _MAX_QUERY:
        raise _invalid("query", f"query must be text of at most {_MAX_QUERY} characters")
    tool = arguments.get("tool", "")
    if not isinstance(tool, str):
        raise _invalid("tool", "tool must be a tool name")
    if action in ("describe", "call") and not tool:
        raise _invalid("tool", f"{action} needs a tool name (from search)")
    limit = arguments.get("limit", SEARCH_LIMIT)
    if type(limit) is not int or not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise _invalid("limit", f"limit must be an integer from 1 to {SEARCH_LIMIT_MAX}")
    call_arguments = arguments.get("arguments", {})
    if isinstance(call_arguments, str):
        try:
            call_arguments = json.loads(call_arguments) if call_arguments.strip() else {}
        except ValueError:
            raise _invalid("arguments", "arguments must be a JSON object") from None
    if call_arguments is None:
        call_arguments = {}
    if not isinstance(call_arguments, Mapping):
        raise _invalid("arguments", "arguments must be a JSON object")
    return ProxyRequest(action, query, tool, dict(call_arguments), limit)


_WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_CAMEL.sub(r"\1 \2", text).lower())


def _one_line(text: str | None) -> str:
    line = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    return line if len(line) <= _ONE_LINE else line[: _ONE_LINE - 1] + "…"


def _score(tool: OfferedTool, query: list[str]) -> int:
    """Name tokens weigh 3, a piece of a name 2, description and title words 1 (prefixes count)."""
    names = set(_tokens(tool.tool)) | set(_tokens(tool.connector or ""))
    name_text = f"{tool.tool} {tool.connector or ''}".lower()
    words = set(_tokens(f"{tool.title or ''} {tool.description or ''}"))
    score = 0
    for token in query:
        if token in names:
            score += 3
        elif token in name_text:
            score += 2
        if token in words or (len(token) >= 3 and any(word.startswith(token) for word in words)):
            score += 1
    return score


def search_catalog(tools: Iterable[OfferedTool], query: str, limit: int = SEARCH_LIMIT) -> dict[str, Any]:
    """Rank the offered MCP tools (``deny`` and local tools skipped) against ``query``.

    Deterministic: query and texts are split into lower-case word tokens (camelCase and
    punctuation split too); each tool scores per query token 3 for a word of its tool or connector
    name, else 2 for a piece of the name, plus 1 for a word (or word prefix of 3+ letters) of its
    title or description. Tools scoring 0 are dropped (an empty query keeps every tool), the rest
    sorted by score, then wire name.

    Returns:
        ``{"query", "total", "tools": [{"name": <wire name>, "description": <one line>}, ...]}``
        with at most ``limit`` tools; ``total`` counts every match.
    """
    words = _tokens(query)
    ranked = []
    for tool in tools:
        if tool.connector is None or tool.decision == "deny":
            continue
        score = _score(tool, words)
        if words and score == 0:
            continue
        ranked.append((-score, tool.wire_name, tool))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return {
        "query": query,
        "total": len(ranked),
        "tools": [{"name": wire, "description": _one_line(tool.description)} for _, wire, tool in ranked[:limit]],
    }


def connector_counts(tools: Iterable[OfferedTool]) -> dict[str, Any]:
    """``{"connectors": [{"name", "tools": <offered tools>}, ...]}`` by name, for the connectors
    that offer at least one tool (``deny`` and local tools skipped)."""
    counts: dict[str, int] = {}
    for tool in tools:
        if tool.connector is not None and tool.decision != "deny":
            counts[tool.connector] = counts.get(tool.connector, 0) + 1
    return {"connectors": [{"name": name, "tools": counts[name]} for name in sorted(counts)]}


class ProxyHost(Protocol):
    """What the proxy needs of the runtime it runs in (:class:`patchbay.runtime.runtime.Runtime`)."""

    @property
    def settings(self) -> Settings: ...

    async def list_tools(self) -> Sequence[OfferedTool]: ...

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult: ...

    async def call_wire(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult: ...


def _find(tools: Iterable[OfferedTool], name: str) -> OfferedTool | None:
    for tool in tools:
        if tool.connector is not None and name in (tool.wire_name, tool.name):
            return tool
    return None


async def run_proxy(runtime: ProxyHost, arguments: Any) -> ToolCallResult:
    """Execute one use of the proxy tool.

    * ``search``: :func:`search_catalog` over :meth:`Runtime.list_tools` (connects the enabled
      connectors); the result's structured content is that dict, its text the same as JSON.
    * ``connectors``: :func:`connector_counts` over the same catalog.
    * ``describe``: the tool's MCP-shape definition (``name``, ``title``, ``description``,
      ``inputSchema``, ``outputSchema``, ``annotations``) plus ``canonicalName``.
    * ``call``: :meth:`Runtime.call_wire` (a wire name) or :meth:`Runtime.call` (a canonical name)
      with ``tool`` and ``arguments``: the governed path, with its permission decision and whole
      event chain; its result (or ``ToolCallError``) is returned. The proxy cannot call itself.

    ``search``, ``connectors`` and ``describe`` only read the runtime's own catalog: they reach no server tool and
    write no event; their result has ``tool_call_id == ""`` and ``name == "mcp"``.

    Raises:
        ValidationError: ``validation_error`` for bad proxy arguments (:func:`parse_proxy_arguments`).
        ToolCallError: ``unknown_tool`` when ``describe`` names no offered MCP tool,
            ``permission_denied`` when it names a denied one; for ``call``, whatever
            :meth:`Runtime.call` raises (a denied tool stays denied).
    """
    request = parse_proxy_arguments(arguments)
    if request.action == "call":
        if request.tool != PROXY_TOOL_NAME and _WIRE_NAME.fullmatch(request.tool):
            return await runtime.call_wire(request.tool, request.arguments)
        return await runtime.call(request.tool, request.arguments)  # a canonical name; never the proxy itself
    tools = await runtime.list_tools()
    if request.action == "search":
        return local_result("", PROXY_TOOL_NAME, search_catalog(tools, request.query, request.limit))
    if request.action == "connectors":
        return local_result("", PROXY_TOOL_NAME, connector_counts(tools))
    tool = _find(tools, request.tool)
    if tool is None:
        raise ToolCallError(
            FailureReason.UNKNOWN_TOOL,
            f"unknown tool {request.tool!r}; search for tool names first",
            details={"tool": request.tool},
        )
    if tool.decision == "deny":
        raise ToolCallError(
            FailureReason.PERMISSION_DENIED, f"{tool.name} is denied by policy", details={"tool": tool.name}
        )
    try:
        definition = definition_for(tool, "mcp", SchemaBounds.from_settings(runtime.settings))
    except UnacceptableSchema as exc:
        raise ToolCallError(
            FailureReason.UNKNOWN_TOOL, f"{tool.name} cannot be offered: {exc}", details={"tool": tool.name}
        ) from None
    return local_result("", PROXY_TOOL_NAME, {**definition, "canonicalName": tool.name})
