"""Capability scope: which connectors a runtime may start and which of their tools it may register,
decided from names alone before anything starts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from patchbay.core.errors import ValidationError
from patchbay.core.names import MCP_PREFIX, canonical_tool_name, is_connector_name, wire_tool_name

__all__ = ["ToolScope", "tool_scope"]


@dataclass(frozen=True, slots=True)
class ToolScope:
    """A runtime's capability scope: the connectors it may start and the tools it may register."""

    connectors: frozenset[str]
    names: frozenset[str]

    def admits(self, connector: str, tool: str) -> bool:
        return canonical_tool_name(connector, tool) in self.names or wire_tool_name(connector, tool) in self.names


def tool_scope(allowed_tools: Iterable[str] | None) -> ToolScope | None:
    """Parse a runtime's ``allowed_tools`` (see :class:`patchbay.runtime.runtime.Runtime`).

    Full MCP names (``mcp.<connector>.<tool>`` or ``mcp__<connector>__<tool>``) select their
    connector; other names are local tools and select nothing. None means "no scope".

    Raises:
        ValidationError: ``validation_error`` when it is a bare string or holds a non-string.
    """
    if allowed_tools is None:
        return None
    if isinstance(allowed_tools, str):
        raise ValidationError(
            "allowed_tools must be a list of tool names, not a string", details={"field": "allowed_tools"}
        )
    names = list(allowed_tools)
    if any(not isinstance(name, str) or not name for name in names):
        raise ValidationError("allowed_tools must hold non-empty strings", details={"field": "allowed_tools"})
    connectors: set[str] = set()
    for name in names:
        if name.startswith(MCP_PREFIX):
            connector, _, tool = name[len(MCP_PREFIX) :].partition(".")
        elif name.startswith("mcp__"):
            connector, _, tool = name[len("mcp__") :].partition("__")
        else:
            continue  # a local tool
        if not tool:
            continue  # names no tool, so it selects no connector either
        if is_connector_name(connector):
            connectors.add(connector)
    return ToolScope(frozenset(connectors), frozenset(names))
