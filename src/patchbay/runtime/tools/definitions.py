"""Tool definitions for model APIs: the visible tools in the shape a model API wants.

Formats (:data:`DefinitionFormat`): ``"mcp"`` (the MCP ``Tool`` shape), ``"openai"`` (Chat
Completions function tools), ``"openai-responses"`` (the Responses API's flat function tool),
``"anthropic"`` (tool use; the default) and ``"proxy"`` (the one ``mcp`` proxy tool,
:mod:`patchbay.runtime.tools.proxy`, which hosts get unless they ask for direct tools). Every
``name`` is the tool's wire name, which :meth:`Runtime.call_wire` maps back. Input schemas for the
model APIs go through :func:`patchbay.core.schema_convert.convert_input_schema`; a tool whose
schema cannot be made acceptable is left out and reported in :attr:`ToolDefinitions.diagnostics`
as ``{tool, format, reason}``; denied tools are left out without a diagnostic.

Design: docs/tool-definitions.md
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, overload

from patchbay.core.errors import UnacceptableSchema, ValidationError
from patchbay.core.schema_bounds import DEFAULT_SCHEMA_BOUNDS, SchemaBounds
from patchbay.core.schema_convert import Target, convert_input_schema, object_input_schema

__all__ = [
    "DefinitionDiagnostic",
    "DefinitionFormat",
    "OfferedTool",
    "ToolDefinitions",
    "build_definitions",
    "check_format",
    "compact_size",
    "definition_for",
    "definition_shape",
]

DefinitionFormat = Literal["mcp", "openai", "openai-responses", "anthropic", "proxy"]
"""What :meth:`Runtime.tool_definitions` can produce (see the module docstring)."""

_TARGET: dict[str, Target] = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}


class OfferedTool(Protocol):
    """What a definition is made from: one visible tool, as
    :class:`patchbay.runtime.runtime.RuntimeTool` describes it (read-only)."""

    @property
    def name(self) -> str:
        """The canonical name (``mcp.<connector>.<tool>``, or a local tool's bare name)."""

    @property
    def wire_name(self) -> str:
        """The name written into definitions (``[A-Za-z0-9_-]{1,64}``)."""

    @property
    def connector(self) -> str | None:
        """The connector's name; None for a local tool."""

    @property
    def tool(self) -> str:
        """The server's own name for the tool."""

    @property
    def title(self) -> str | None: ...

    @property
    def description(self) -> str | None: ...

    @property
    def decision(self) -> str:
        """``allow``, ``ask`` or ``deny``."""

    @property
    def input_schema(self) -> dict[str, Any]: ...

    @property
    def output_schema(self) -> dict[str, Any] | None: ...

    @property
    def annotations(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class DefinitionDiagnostic:
    """A tool left out of one format, and why.

    Attributes:
        tool: the canonical tool name (``mcp.<connector>.<tool>``, or a local tool's name).
        format: the format asked for.
        reason: one sentence, e.g. ``"$ref '#/$defs/Missing' points at nothing in the schema"``.
    """

    tool: str
    format: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """``{"tool", "format", "reason"}``."""
        return {"tool": self.tool, "format": self.format, "reason": self.reason}


@dataclass(frozen=True)
class ToolDefinitions(Sequence[dict[str, Any]]):
    """The definitions of one format plus the tools left out of it.

    It is a sequence of the definition dicts (so ``list(result)``, ``len(result)`` and
    ``result[0]`` work as with the plain list earlier versions returned); ``definitions`` is the
    same list and ``diagnostics`` the :class:`DefinitionDiagnostic` of each tool left out.
    """

    format: str
    definitions: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[DefinitionDiagnostic] = field(default_factory=list)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self.definitions[index]

    def __len__(self) -> int:
        return len(self.definitions)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.definitions)

    def to_dict(self) -> dict[str, Any]:
        """``{"format", "definitions", "diagnostics": [{tool, format, reason}, ...]}`` (JSON-able)."""
        return {
            "format": self.format,
            "definitions": self.definitions,
            "diagnostics": [diagnostic.to_dict() for diagnostic in self.diagnostics],
        }

    def size_bytes(self) -> int:
        """UTF-8 bytes of the definitions as compact JSON: what a request pays for them."""
        return compact_size(self.definitions)


def compact_size(value: Any) -> int:
    """UTF-8 bytes of ``value`` as compact JSON (``separators=(",", ":")``, UTF-8 kept)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def check_format(format: str, allowed: Iterable[str]) -> None:
    """Raises ValidationError (``validation_error``, field ``format``) for an unknown format."""
    choices = list(allowed)
    if format not in choices:
        raise ValidationError(
            f"unknown tool definition format {format!r}; use one of {', '.join(choices)}",
            details={"field": "format"},
        )


def definition_shape(
    name: str, description: str, schema: dict[str, Any], format: str, tool: OfferedTool | None
) -> dict[str, Any]:
    """One definition in a direct format from its parts; ``tool`` (None for the proxy tool)
    supplies the MCP shape's ``title``, ``outputSchema`` and ``annotations``."""
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if format == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    if format == "openai-responses":
        return {"type": "function", "name": name, "description": description, "parameters": schema, "strict": False}
    definition: dict[str, Any] = {"name": name}
    if tool is not None and tool.title:
        definition["title"] = tool.title
    if description:
        definition["description"] = description
    definition["inputSchema"] = schema
    if tool is not None and tool.output_schema is not None:
        definition["outputSchema"] = tool.output_schema
    if tool is not None and tool.annotations:
        definition["annotations"] = tool.annotations
    return definition


def definition_for(tool: OfferedTool, format: str, bounds: SchemaBounds = DEFAULT_SCHEMA_BOUNDS) -> dict[str, Any]:
    """One tool in one direct format (``mcp``, ``openai``, ``openai-responses``, ``anthropic``).

    Raises:
        UnacceptableSchema: its input schema cannot be made acceptable (the reason is the message).
    """
    target = _TARGET.get(format)
    if target is None:
        schema = object_input_schema(tool.input_schema)
    else:
        schema = convert_input_schema(tool.input_schema, target, bounds)
    return definition_shape(tool.wire_name, tool.description or "", schema, format, tool)


def build_definitions(
    tools: Iterable[OfferedTool], format: str, bounds: SchemaBounds = DEFAULT_SCHEMA_BOUNDS
) -> ToolDefinitions:
    """The direct definitions of ``tools`` (``deny`` tools skipped) in ``format``.

    Raises:
        ValidationError: ``validation_error`` for a format that is not a direct one.
    """
    check_format(format, ("mcp", "openai", "openai-responses", "anthropic"))
    definitions = []
    diagnostics = []
    for tool in tools:
        if tool.decision == "deny":
            continue
        try:
            definitions.append(definition_for(tool, format, bounds))
        except UnacceptableSchema as exc:
            diagnostics.append(DefinitionDiagnostic(tool.name, format, str(exc)))
    return ToolDefinitions(format, definitions, diagnostics)
