"""What the connector service reports about tools: each with its effective decision (DESIGN.md
"Permissions"; seed 003 §5.3, §5.4)."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchbay.core.models import Connector, GrantDecision, Project, ToolGrant

__all__ = ["ToolView", "ToolsView"]


@dataclass(frozen=True)
class ToolView:
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
    risk_reason: str = ""
    """Why the tool has its risk (:func:`patchbay.core.policy.risk_reason`)."""


@dataclass(frozen=True)
class ToolsView:
    """The tools of one connector as the cache knows them, plus grants that match nothing."""

    connector: Connector
    project: Project | None
    tools: list[ToolView]
    cache: str
    """``fresh``, ``stale`` (fingerprint or revision changed: probe again) or ``missing``."""
    unmatched_grants: list[ToolGrant] = field(default_factory=list)
    """Grants naming a tool the cache does not know; kept, reported, and matching nothing."""
