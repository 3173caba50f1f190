"""The permission decision for one tool, as a pure function (DESIGN.md "Permissions").

Order, for tool T of connector C in project P:

1. C disabled → not visible. T matched by ``exclude_tools``, or not matched by a non-empty
   ``include_tools`` (glob patterns) → not visible.
2. Global grant ``deny`` → deny; nothing lifts it.
3. Else the project grant for (P, C, T) if any, else the global grant if any.
4. Else ``approval_mode``: ``allow_all`` → allow, except tools annotated ``destructiveHint``, which
   stay ``ask`` unless explicitly granted; ``ask``/``custom`` → ask.

Step 5 (``ask`` with no approver → deny ``approval_unavailable``) happens at call time in the
runtime, because only the runtime knows whether an approver is attached.

Resource reads and prompts are decided in their own key spaces (``GrantKind``), never under a
tool name, so no name a server gives a tool can borrow their grants; ``include_tools`` and
``exclude_tools`` are tool patterns and do not apply to them:

* resource reads (:func:`decide_resource_read`): disabled → invisible; a global ``deny`` →
  deny; else the project's resource grant, else the global one; else ``approval_mode``
  (``allow_all`` → allow, ``ask``/``custom`` → ask). Risk is always ``read``.
* prompts (:func:`decide_prompt`): a person triggers a prompt, so its trigger is the approval and
  a prompt is never asked. Disabled → invisible; a global ``deny`` of the prompt or of ``*`` →
  deny; else the project's grant of the prompt, else its ``*``, else the global grant of the
  prompt, else the global ``*``; else allow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from patchbay.core.models import ApprovalMode, ConnectorSettings, GrantDecision

__all__ = [
    "ALL_PROMPTS",
    "Decision",
    "DecisionSource",
    "Risk",
    "decide",
    "decide_for",
    "decide_prompt",
    "decide_resource_read",
    "is_visible",
    "risk_of",
    "risk_reason",
]

ALL_PROMPTS = "*"
"""The prompt-grant subject that covers every prompt of a connector."""

Risk = Literal["read", "destructive", "network"]
DecisionSource = Literal[
    "disabled",
    "excluded",
    "not_included",
    "global_deny",
    "project_grant",
    "global_grant",
    "allow_all",
    "destructive_default",
    "approval_mode",
    "user_triggered",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """The effective decision for one tool.

    Attributes:
        visible: False when the tool is not projected at all (step 1); ``decision`` is then ``deny``.
        decision: ``allow``, ``ask`` or ``deny``.
        source: which rule decided (for ``sourcedFrom`` in events and the ``tools`` listing).
        risk: ``read``, ``destructive`` or ``network``.
    """

    visible: bool
    decision: GrantDecision
    source: DecisionSource
    risk: Risk


def risk_of(annotations: dict[str, Any] | None) -> Risk:
    """Risk at decision from tool annotations: readOnlyHint → read, destructiveHint → destructive,
    otherwise an MCP tool is ``network``."""
    annotations = annotations or {}
    if annotations.get("readOnlyHint"):
        return "read"
    if annotations.get("destructiveHint"):
        return "destructive"
    return "network"


def risk_reason(annotations: dict[str, Any] | None) -> str:
    """Why :func:`risk_of` gives what it gives, in words (``network`` is the default for a tool
    whose annotations claim neither read-only nor destructive; it does not mean the tool was
    seen using the network)."""
    annotations = annotations or {}
    if annotations.get("readOnlyHint"):
        return "annotated readOnlyHint"
    if annotations.get("destructiveHint"):
        return "annotated destructiveHint"
    return "no annotation says otherwise"


def is_visible(
    tool: str, include_tools: tuple[str, ...] | list[str], exclude_tools: tuple[str, ...] | list[str]
) -> bool:
    """Step 1's include/exclude rule; patterns are case-sensitive ``fnmatch`` globs."""
    if any(fnmatchcase(tool, pattern) for pattern in exclude_tools):
        return False
    if include_tools and not any(fnmatchcase(tool, pattern) for pattern in include_tools):
        return False
    return True


def decide(
    tool: str,
    *,
    annotations: dict[str, Any] | None = None,
    enabled: bool = True,
    include_tools: tuple[str, ...] | list[str] = (),
    exclude_tools: tuple[str, ...] | list[str] = (),
    approval_mode: ApprovalMode = "ask",
    global_grant: GrantDecision | None = None,
    project_grant: GrantDecision | None = None,
) -> Decision:
    """Decide allow/ask/deny for ``tool`` (the server's original name) in the order above.

    Args:
        annotations: the tool's wire annotations (``readOnlyHint``, ``destructiveHint``), or None
            when the tool is unknown to the cache (it then gets no extra authorization).
        global_grant / project_grant: the explicit grants for this tool, if any.
    """
    risk = risk_of(annotations)
    if not enabled:
        return Decision(False, "deny", "disabled", risk)
    if any(fnmatchcase(tool, pattern) for pattern in exclude_tools):
        return Decision(False, "deny", "excluded", risk)
    if include_tools and not any(fnmatchcase(tool, pattern) for pattern in include_tools):
        return Decision(False, "deny", "not_included", risk)
    if global_grant == "deny":
        return Decision(True, "deny", "global_deny", risk)
    if project_grant is not None:
        return Decision(True, project_grant, "project_grant", risk)
    if global_grant is not None:
        return Decision(True, global_grant, "global_grant", risk)
    if approval_mode == "allow_all":
        if risk == "destructive":
            return Decision(True, "ask", "destructive_default", risk)
        return Decision(True, "allow", "allow_all", risk)
    return Decision(True, "ask", "approval_mode", risk)


def decide_for(
    settings: ConnectorSettings,
    tool: str,
    *,
    annotations: dict[str, Any] | None,
    global_grants: Mapping[str, GrantDecision],
    project_grants: Mapping[str, GrantDecision],
) -> Decision:
    """:func:`decide` with a connector's settings and its grant tables (keyed by original tool name)."""
    return decide(
        tool,
        annotations=annotations,
        enabled=settings.enabled,
        include_tools=settings.include_tools,
        exclude_tools=settings.exclude_tools,
        approval_mode=settings.approval_mode,
        global_grant=global_grants.get(tool),
        project_grant=project_grants.get(tool),
    )


def decide_resource_read(
    settings: ConnectorSettings, *, global_grant: GrantDecision | None, project_grant: GrantDecision | None
) -> Decision:
    """The decision on reading a connector's resources (rules in the module docstring).

    Args:
        settings: the connector's settings (``enabled`` and ``approval_mode`` count here).
        global_grant / project_grant: the connector's resource-read grants, if any.
    """
    if not settings.enabled:
        return Decision(False, "deny", "disabled", "read")
    if global_grant == "deny":
        return Decision(True, "deny", "global_deny", "read")
    if project_grant is not None:
        return Decision(True, project_grant, "project_grant", "read")
    if global_grant is not None:
        return Decision(True, global_grant, "global_grant", "read")
    if settings.approval_mode == "allow_all":
        return Decision(True, "allow", "allow_all", "read")
    return Decision(True, "ask", "approval_mode", "read")


def decide_prompt(
    settings: ConnectorSettings,
    prompt: str,
    *,
    global_grants: Mapping[str, GrantDecision],
    project_grants: Mapping[str, GrantDecision],
) -> Decision:
    """The decision on listing and expanding ``prompt`` (rules in the module docstring): ``allow``
    or ``deny``, never ``ask``; an ``ask`` found in a grant table counts as ``deny`` (fail closed).

    Args:
        global_grants / project_grants: prompt grants keyed by prompt name or :data:`ALL_PROMPTS`.
    """
    if not settings.enabled:
        return Decision(False, "deny", "disabled", "read")
    if "deny" in (global_grants.get(prompt), global_grants.get(ALL_PROMPTS)):
        return Decision(True, "deny", "global_deny", "read")
    scopes: tuple[tuple[Mapping[str, GrantDecision], DecisionSource], ...] = (
        (project_grants, "project_grant"),
        (global_grants, "global_grant"),
    )
    for grants, source in scopes:
        for key in (prompt, ALL_PROMPTS):
            found = grants.get(key)
            if found is not None:
                return Decision(True, "allow" if found == "allow" else "deny", source, "read")
    return Decision(True, "allow", "user_triggered", "read")
