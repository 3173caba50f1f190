"""Effective decisions as the control plane reports them: each cached tool of a connector with the
decision it gets in a scope, the connector's resource reads, and the one-line summaries built from
them (DESIGN.md "Permissions")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from patchbay.core.models import Connector, GrantDecision, ProbeOutcome, Project, RuntimeState, ToolGrant

__all__ = [
    "ResourceReadDecision",
    "ToolDecision",
    "ToolDecisions",
    "ToolNameCheck",
    "probe_failed",
    "runtime_state",
    "tool_signature",
]


@dataclass(frozen=True)
class ToolDecision:
    """One tool with its effective decision in a scope (global, or a project)."""

    name: str
    canonical_name: str
    description: str | None
    visible: bool
    decision: GrantDecision
    source: str
    risk: str
    global_grant: GrantDecision | None = None
    project_grant: GrantDecision | None = None
    input_schema: dict[str, Any] | None = None
    """The tool's JSON Schema for its arguments, as the server listed it (from the cache)."""
    name_flag: str | None = None
    """Why the server's name for the tool is flagged (outside MCP's ``[A-Za-z0-9_.-]``, 1-128, or
    starting ``mcp.``), completing "its name ..."; None for a clean name."""
    risk_reason: str = ""
    """Why the tool has its risk (:func:`patchbay.core.policy.risk_reason`)."""


@dataclass(frozen=True)
class ResourceReadDecision:
    """How the connector's resource includes are decided in a scope (their own key space)."""

    decision: GrantDecision
    source: str
    global_grant: GrantDecision | None = None
    project_grant: GrantDecision | None = None


@dataclass(frozen=True)
class ToolDecisions:
    """The tools of one connector as the cache knows them, plus grants that match nothing."""

    connector: Connector
    project: Project | None
    tools: list[ToolDecision]
    cache: str
    """``fresh``, ``stale`` (fingerprint or revision changed: probe again) or ``missing``."""
    resource_reads: ResourceReadDecision
    """The decision on resource includes in the same scope."""
    unmatched_grants: list[ToolGrant] = field(default_factory=list)
    """Grants naming a tool the cache does not know; kept, reported, and matching nothing."""
    prompt_grants: list[ToolGrant] = field(default_factory=list)
    """The connector's prompt grants in the scope (global, plus the project's)."""


@dataclass(frozen=True)
class ToolNameCheck:
    """Whether a tool name is in its connector's cached catalog, checked before a grant names it
    (:meth:`patchbay.control.queries.ConnectorQueries.check_tool_name`).

    Attributes:
        state: ``known`` (the fresh cached catalog lists it), ``unknown`` (the fresh catalog does
            not), or ``unchecked`` (there is no fresh catalog to check against: the connector was
            never probed, or its configuration changed since).
        cache: the cached catalog's state: ``fresh``, ``stale`` or ``missing``.
        suggestions: for ``unknown``, the catalog's closest tool names, best first (at most 3).
    """

    state: Literal["known", "unknown", "unchecked"]
    cache: str
    suggestions: tuple[str, ...] = ()


def probe_failed(connector: Connector, outcome: ProbeOutcome | None) -> bool:
    """Whether the last probe failed and probed the connector's current configuration."""
    return outcome is not None and outcome.state == "error" and outcome.config_revision == connector.revision


def runtime_state(connector: Connector, *, fresh_catalog: bool, outcome: ProbeOutcome | None) -> RuntimeState:
    """What is known about a connector without connecting: ``disabled``; ``ready`` with a fresh
    cached catalog; ``error`` when the last probe of its current configuration failed; else
    ``unknown``."""
    if not connector.settings.enabled:
        return "disabled"
    if fresh_catalog:
        return "ready"
    return "error" if probe_failed(connector, outcome) else "unknown"


_MAX_TYPE_DEPTH = 3


def _type_of(schema: Any, depth: int = 0) -> str:
    """A JSON Schema's type in a few characters: ``string``, ``integer|null``, ``array<string>``,
    ``"a"|"b"`` for a small enum, ``any`` when it says nothing."""
    if not isinstance(schema, dict) or depth > _MAX_TYPE_DEPTH:
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= 5 and all(isinstance(v, str | int | float) for v in enum):
        return "|".join(f'"{v}"' if isinstance(v, str) else str(v) for v in enum)
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind) or "any"
    if kind == "array":
        return f"array<{_type_of(schema.get('items'), depth + 1)}>"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return "|".join(dict.fromkeys(_type_of(o, depth + 1) for o in options))
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1] or "any"
    return "object" if "properties" in schema else "any"


def tool_signature(name: str, input_schema: dict[str, Any] | None) -> str:
    """A tool's arguments in one line, from its input schema: required ones first, in schema
    order, optional ones marked ``?``: ``git_log(repo_path: string, max_count?: integer)``.

    Args:
        name: what to print before the parentheses (the tool's or its canonical name).
        input_schema: the JSON Schema of its arguments (an object schema); None or one without
            ``properties`` gives ``name()``.
    """
    properties = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if not isinstance(properties, dict):
        return f"{name}()"
    required = input_schema.get("required") if isinstance(input_schema, dict) else None
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    first = [f"{key}: {_type_of(value)}" for key, value in properties.items() if key in needed]
    rest = [f"{key}?: {_type_of(value)}" for key, value in properties.items() if key not in needed]
    return f"{name}({', '.join(first + rest)})"
