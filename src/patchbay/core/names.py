"""Connector and tool names (DESIGN.md "Names")."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from patchbay.core.errors import ConfigError, ErrorCode, PatchbayError

__all__ = [
    "MCP_PREFIX",
    "is_connector_name",
    "WIRE_NAME_MAX",
    "TOOL_NAME_MAX",
    "canonical_tool_name",
    "is_exact_wire_name",
    "parse_canonical_tool_name",
    "tool_name_problem",
    "validate_connector_name",
    "wire_tool_name",
]

MCP_PREFIX = "mcp."
WIRE_NAME_MAX = 64
_CONNECTOR_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
TOOL_NAME_MAX = 128
"""MCP's tool names: 1-128 characters of ``[A-Za-z0-9_.-]``."""
_TOOL_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_INVISIBLE = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})


def validate_connector_name(name: str) -> str:
    """Return ``name`` if it is a valid connector name, else raise.

    Rule: 1–64 chars of ``^[a-z0-9][a-z0-9-]*[a-z0-9]$`` (one char allowed); so no upper case,
    control characters, dots or path separators. Uniqueness (case-insensitive) is the store's job.

    Raises:
        ConfigError: ``invalid_config`` with field ``name``.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError("name", "must not be empty")
    if len(name) > 64:
        raise ConfigError("name", f"must be at most 64 characters, got {len(name)}")
    if not _CONNECTOR_NAME.fullmatch(name):
        raise ConfigError(
            "name",
            f"{name!r} must be lower-case letters, digits and inner hyphens (^[a-z0-9][a-z0-9-]*[a-z0-9]$)",
        )
    return name


def is_connector_name(name: str) -> bool:
    """Whether ``name`` has the connector-name form (no exception; for lookups)."""
    return isinstance(name, str) and 0 < len(name) <= 64 and _CONNECTOR_NAME.fullmatch(name) is not None


def canonical_tool_name(connector: str, tool: str) -> str:
    """``mcp.<connector>.<tool>``. The tool part is the server's original name."""
    return f"{MCP_PREFIX}{connector}.{tool}"


def parse_canonical_tool_name(name: str) -> tuple[str, str]:
    """Split ``mcp.<connector>.<tool>`` into ``(connector, tool)``.

    Connector names never contain dots, so the first dot after the prefix ends the connector; the
    tool part may itself contain dots.

    Raises:
        PatchbayError: ``validation_error`` when ``name`` is not a canonical MCP tool name.
    """
    if not name.startswith(MCP_PREFIX):
        raise PatchbayError(
            f"{name!r} is not an MCP tool name (mcp.<connector>.<tool>)", code=ErrorCode.VALIDATION_ERROR
        )
    connector, sep, tool = name[len(MCP_PREFIX) :].partition(".")
    if not sep or not connector or not tool:
        raise PatchbayError(
            f"{name!r} is not an MCP tool name (mcp.<connector>.<tool>)", code=ErrorCode.VALIDATION_ERROR
        )
    return connector, tool


def _character(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def tool_name_problem(name: str) -> str | None:
    """Why a server's tool name is outside MCP's tool-name rule (1-128 characters of
    ``[A-Za-z0-9_.-]``) or looks like a Patchbay canonical name, as a phrase completing "its name
    ..."; None for a clean name. Such a tool is kept (a deny or an exclude still matches it
    exactly) but flagged, because a person cannot tell ``dаnger`` (Cyrillic ``а``) or ``danger\u200b``
    from ``danger`` on a screen.

    The first problem found is named: empty, too long, starts with ``mcp.`` (any case), then
    the first offending character: whitespace, an invisible or control character, a non-ASCII
    letter or digit (a possible lookalike), or any other character, each with its code point.
    """
    if not name:
        return "is empty"
    if len(name) > TOOL_NAME_MAX:
        return f"is {len(name)} characters long (MCP allows at most {TOOL_NAME_MAX})"
    if name.lower().startswith(MCP_PREFIX):
        return f"starts with {name[:4]!r}, like a Patchbay canonical name (mcp.<connector>.<tool>)"
    found = _TOOL_NAME_UNSAFE.search(name)
    if found is None:
        return None
    ch = found.group()
    if ch.isspace():
        return f"contains whitespace ({_character(ch)})"
    if unicodedata.category(ch) in _INVISIBLE:
        return f"contains an invisible or control character ({_character(ch)})"
    if ch.isalnum():
        return f"contains a non-ASCII letter or digit that can look like an ASCII one ({_character(ch)})"
    return f"contains {ch!r} ({_character(ch)}), outside MCP's [A-Za-z0-9_.-]"


def is_exact_wire_name(connector: str, tool: str) -> bool:
    """Whether ``mcp__<connector>__<tool>`` is the tool's wire name unchanged: the tool's name is
    only ``[A-Za-z0-9_-]`` and the result fits :data:`WIRE_NAME_MAX`."""
    return _WIRE_UNSAFE.search(tool) is None and len(f"mcp__{connector}__{tool}") <= WIRE_NAME_MAX


def wire_tool_name(connector: str, tool: str, *, attempt: int = 0) -> str:
    """``mcp__<connector>__<tool>`` for model APIs that forbid dots (DESIGN.md "Names").

    A tool whose name is already wire-safe and short enough keeps it exactly
    (:func:`is_exact_wire_name`). Any other name is sanitised (characters outside
    ``[A-Za-z0-9_-]`` become ``_``), cut to fit 64 characters, and *always* given an
    8-hex-digit SHA-256 suffix of the canonical name: so a sanitised name can never equal the
    exact wire name of another tool (``x.y`` becomes ``mcp__c__x_y_<hash>``, while
    ``mcp__c__x_y`` only ever means the tool ``x_y``). ``attempt`` > 0 hashes again (the
    router's way out when a server picked an exact name equal to another tool's suffixed one).
    The mapping back goes through the runtime's table, never by parsing.
    """
    raw = f"mcp__{connector}__{_WIRE_UNSAFE.sub('_', tool)}"
    if attempt == 0 and is_exact_wire_name(connector, tool):
        return raw
    seed = canonical_tool_name(connector, tool) + (f"#{attempt}" if attempt else "")
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{raw[: WIRE_NAME_MAX - 9]}_{digest}"
