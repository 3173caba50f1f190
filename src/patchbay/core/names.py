"""Connector and tool names (DESIGN.md "Names", seed 000 §5, seed 003 §7.3)."""

from __future__ import annotations

import hashlib
import re

from patchbay.core.errors import ConfigError, PatchbayError

__all__ = [
    "MCP_PREFIX",
    "is_connector_name",
    "WIRE_NAME_MAX",
    "canonical_tool_name",
    "parse_canonical_tool_name",
    "validate_connector_name",
    "wire_tool_name",
]

MCP_PREFIX = "mcp."
WIRE_NAME_MAX = 64
_CONNECTOR_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def validate_connector_name(name: str) -> str:
    """Return ``name`` if it is a valid connector name, else raise.

    Rule (seed 003 §7.3): 1–64 chars of ``^[a-z0-9][a-z0-9-]*[a-z0-9]$`` (one char allowed); so no
    upper case, control characters, dots or path separators. Uniqueness (case-insensitive) is the
    store's job.

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
            f"{name!r} must be lower-case letters, digits and inner hyphens "
            "(^[a-z0-9][a-z0-9-]*[a-z0-9]$)",
        )
    return name


def is_connector_name(name: str) -> bool:
    """Whether ``name`` has the connector-name form (no exception; for lookups)."""
    return isinstance(name, str) and 0 < len(name) <= 64 and _CONNECTOR_NAME.fullmatch(name) is not None


def canonical_tool_name(connector: str, tool: str) -> str:
    """``mcp.<connector>.<tool>`` (seed 000 §5). The tool part is the server's original name."""
    return f"{MCP_PREFIX}{connector}.{tool}"


def parse_canonical_tool_name(name: str) -> tuple[str, str]:
    """Split ``mcp.<connector>.<tool>`` into ``(connector, tool)``.

    Connector names never contain dots, so the first dot after the prefix ends the connector; the
    tool part may itself contain dots.

    Raises:
        PatchbayError: ``validation_error`` when ``name`` is not a canonical MCP tool name.
    """
    if not name.startswith(MCP_PREFIX):
        raise PatchbayError(f"{name!r} is not an MCP tool name (mcp.<connector>.<tool>)", code="validation_error")
    connector, sep, tool = name[len(MCP_PREFIX) :].partition(".")
    if not sep or not connector or not tool:
        raise PatchbayError(f"{name!r} is not an MCP tool name (mcp.<connector>.<tool>)", code="validation_error")
    return connector, tool


def wire_tool_name(connector: str, tool: str) -> str:
    """``mcp__<connector>__<tool>`` for model APIs that forbid dots (DESIGN.md "Names").

    Characters outside ``[A-Za-z0-9_-]`` become ``_``; a name longer than 64 characters is cut and
    given an 8-hex-digit SHA-256 suffix of the canonical name, so the result is deterministic. The
    mapping back goes through the runtime's table, never by parsing.
    """
    raw = f"mcp__{connector}__{_WIRE_UNSAFE.sub('_', tool)}"
    if len(raw) <= WIRE_NAME_MAX:
        return raw
    digest = hashlib.sha256(canonical_tool_name(connector, tool).encode()).hexdigest()[:8]
    return f"{raw[: WIRE_NAME_MAX - 9]}_{digest}"
