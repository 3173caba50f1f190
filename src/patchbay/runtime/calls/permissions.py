"""PermissionEngine: every MCP tool call passes here before it may reach a server.

The decision itself is :func:`patchbay.core.policy.decide` (DESIGN.md "Permissions", steps 1–4):
disabled/excluded/not included → invisible; global ``deny`` → deny (nothing lifts it); else the
project grant, else the global grant; else ``approval_mode`` (``allow_all`` → allow, except
``destructiveHint`` tools, which stay ``ask``). This module adds step 5 and the session memory:

* ``ask`` with no approver attached (headless) → deny, reason ``approval_unavailable``;
* ``ask`` with an approver → its :data:`ApprovalAnswer`: ``allow_once``, ``allow_session``
  (remembered for the rest of this session, for that connector's tool) or ``deny``. An approver
  that raises or answers anything else counts as a denial (fail closed); one that raises
  :class:`~patchbay.core.errors.ApprovalExpiredError` (nobody answered in time) is a denial by the
  runtime, ``sourcedFrom`` ``approval_expired``, reason ``permission_denied``; one that raises
  :class:`~patchbay.core.errors.ApprovalStaleError` (the policy changed while it waited) likewise,
  ``sourcedFrom`` ``approval_stale``. Two signals keep the approver's details (an approval id, the
  page that shows it, a hint) for the call's error: :class:`~patchbay.core.errors.ApprovalPendingError`
  (the approval stays open after the call: reason ``approval_pending``) and
  :class:`~patchbay.core.errors.ApprovalUnavailableError` (nobody to ask: ``approval_unavailable``).

Risk and the destructive rule use the tool's annotations from the live catalog when the server
is connected, else from the cached catalog in the :class:`RuntimeServer`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from patchbay.core.digest import json_digest
from patchbay.core.errors import (
    ApprovalExpiredError,
    ApprovalPendingError,
    ApprovalStaleError,
    ApprovalUnavailableError,
    FailureReason,
)
from patchbay.core.models import GrantKind, RuntimeServer, ToolSummary
from patchbay.core.policy import Decision, DecisionSource, Risk, decide_for, decide_prompt, decide_resource_read
from patchbay.core.redaction import redact_value

__all__ = [
    "Actor",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "PermissionEngine",
    "RESOURCE_READ",
    "Resolution",
    "USER_EXPLICIT_INCLUDE",
    "policy_fingerprint",
]

RESOURCE_READ = "resources/read"
"""What an approver is shown as the ``tool`` of a resource include (the MCP method). It is no
grant key: resource reads are decided in their own key space (``kind="resource"``, risk
``read``; :func:`~patchbay.core.policy.decide_resource_read`), so ``patchbay grant NAME
--resources deny`` blocks every include from that connector, and a server tool that calls itself
``resources/read`` is a tool like any other."""

USER_EXPLICIT_INCLUDE = "user_explicit_include"
"""``sourcedFrom`` of the ``permission.requested`` event of a resource include."""

ApprovalAnswer = Literal["allow_once", "allow_session", "deny"]
"""What an approver answers: allow this call, allow this tool for the rest of the session, or deny."""

Actor = Literal["policy", "user", "runtime"]
"""Who resolved a permission: the policy (grants/mode), the user (an approver answer, or a
remembered "allow for this session"), or the runtime itself (no approver, approver failure)."""

_ANSWERS: frozenset[str] = frozenset({"allow_once", "allow_session", "deny"})

_SIGNALLED = ("approval_id", "approval_url", "hint")


def _signalled(details: Mapping[str, Any]) -> Mapping[str, str]:
    """The details of an approver's signal that a call's error carries on (strings only)."""
    return MappingProxyType({k: v for k in _SIGNALLED if isinstance(v := details.get(k), str)})


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is shown for one ``ask`` decision.

    Attributes:
        name: the canonical tool name, ``mcp.<connector>.<tool>``.
        connector: the connector name.
        tool: the server's original tool name.
        arguments: the call's arguments, redacted (secret-named keys and secret-looking values
            replaced by ``[REDACTED]``).
        risk: ``read``, ``destructive`` or ``network``.
        source: the policy rule that produced ``ask`` (``approval_mode``, ``destructive_default``,
            ``project_grant``, ``global_grant``).
        session_id: the runtime session asking.
        kind: ``tool`` for a tool call, ``resource`` for a resource include (``tool`` is then
            :data:`RESOURCE_READ` and ``arguments`` holds the ``uri``).
        arguments_digest: SHA-256 hex of the canonical JSON of the unredacted arguments
            (:func:`~patchbay.core.digest.json_digest`): binds an answer to this exact call.
        policy: the fingerprint of the policy that decided ``ask`` (:func:`policy_fingerprint`),
            ``""`` when the caller gave none.
    """

    name: str
    connector: str
    tool: str
    arguments: dict[str, Any]
    risk: Risk
    source: DecisionSource
    session_id: str
    kind: GrantKind = "tool"
    arguments_digest: str = ""
    policy: str = ""


def policy_fingerprint(server: RuntimeServer, tool: str, decision: Decision) -> str:
    """SHA-256 hex of what decided ``tool`` of ``server``: the connector revision, its approval
    mode, the tool's global and project grants and the decision (value, source, risk). Any change
    of these gives another fingerprint, so an answer given for the old one can be refused."""
    return json_digest(
        {
            "revision": server.revision,
            "mode": server.settings.approval_mode,
            "global": server.global_grants.get(tool),
            "project": server.project_grants.get(tool),
            "decision": [decision.decision, decision.source, decision.risk],
        }
    )


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]
"""``async def approver(request: ApprovalRequest) -> ApprovalAnswer`` (e.g. a UI prompt)."""


@dataclass(frozen=True, slots=True)
class Resolution:
    """The final answer for one call.

    Attributes:
        decision: ``allow`` or ``deny``.
        actor: see :data:`Actor`.
        sourced_from: the rule or answer behind it: a policy source (``global_deny``,
            ``project_grant``, ``allow_all``, ...), ``session_allow`` (remembered),
            ``user_allow_once``, ``user_allow_session``, ``user_deny``, ``approval_unavailable``,
            ``approver_error``, ``invalid_answer`` or ``approval_pending``.
        reason: the failure reason when denied (``permission_denied``, ``approval_unavailable``
            or ``approval_pending``).
        details: what the approver said with a denial it signalled (``approval_id``,
            ``approval_url``, ``hint``); becomes part of the call's error details.
    """

    decision: Literal["allow", "deny"]
    actor: Actor
    sourced_from: str
    reason: FailureReason | None = None
    details: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


class PermissionEngine:
    """Policy decisions plus approvals and per-session "allow for this session" memory.

    Usage::

        engine = PermissionEngine(session_id="ses_1", approver=my_approver)
        decision = engine.evaluate(server, "get_issue", live_tool)
        resolution = await engine.resolve(server.name, "get_issue", decision,
                                          name="mcp.jira.get_issue", arguments={"key": "PROJ-1"})

    Args:
        session_id: the session this engine's memory belongs to.
        approver: called for ``ask`` decisions; None means headless (``ask`` → deny).
    """

    def __init__(self, *, session_id: str, approver: Approver | None = None):
        self.session_id = session_id
        self.approver = approver
        # Keyed by kind too: an "allow for this session" of resource reads must not allow a tool
        # that a server named like the method.
        self._session_allowed: set[tuple[GrantKind, str, str]] = set()

    def evaluate(self, server: RuntimeServer, tool: str, live: ToolSummary | None = None) -> Decision:
        """The policy decision (steps 1–4) for ``tool`` (original name) of ``server``.

        Args:
            live: the tool as the connected server lists it; when None the cached catalog in
                ``server.tools`` supplies the annotations (no entry: no annotations).
        """
        if live is not None:
            annotations = live.annotations
        else:
            annotations = next((cached.annotations for cached in server.tools if cached.name == tool), None)
        return decide_for(
            server.settings,
            tool,
            annotations=annotations,
            global_grants=server.global_grants,
            project_grants=server.project_grants,
        )

    def evaluate_resource_read(self, server: RuntimeServer) -> Decision:
        """The policy decision for reading ``server``'s resources, in the resource key space:
        always risk ``read`` (a read is usually allowed), so ``allow_all`` allows it and
        ``ask``/``custom`` ask; the connector's resource grants (global deny first, then project,
        then global) decide before the mode. Tool grants and tool patterns play no part."""
        return decide_resource_read(
            server.settings, global_grant=server.global_resource_grant, project_grant=server.project_resource_grant
        )

    def evaluate_prompt(self, server: RuntimeServer, prompt: str) -> Decision:
        """The decision on listing and expanding ``prompt`` of ``server`` in the prompt key space
        (:func:`~patchbay.core.policy.decide_prompt`): ``allow`` unless a prompt grant denies it;
        never ``ask``, because a person triggers a prompt."""
        return decide_prompt(
            server.settings,
            prompt,
            global_grants=server.global_prompt_grants,
            project_grants=server.project_prompt_grants,
        )

    def session_allowed(self, connector: str, tool: str, *, kind: GrantKind = "tool") -> bool:
        """Whether the user answered ``allow_session`` for this tool (or, with ``kind="resource"``,
        this connector's resource reads) earlier in this session."""
        return (kind, connector, tool) in self._session_allowed

    def requested_source(self, connector: str, tool: str, decision: Decision, *, kind: GrantKind = "tool") -> str:
        """``sourcedFrom`` for ``permission.requested``: the policy source, or ``session_allow``."""
        if decision.decision == "ask" and self.session_allowed(connector, tool, kind=kind):
            return "session_allow"
        return decision.source

    def resolve_now(
        self, connector: str, tool: str, decision: Decision, *, kind: GrantKind = "tool"
    ) -> Resolution | None:
        """The resolution when no approver has to be asked; None when :meth:`ask` must run."""
        if not decision.visible or decision.decision == "deny":
            return Resolution("deny", "policy", decision.source, FailureReason.PERMISSION_DENIED)
        if decision.decision == "allow":
            return Resolution("allow", "policy", decision.source)
        if self.session_allowed(connector, tool, kind=kind):
            return Resolution("allow", "user", "session_allow")
        if self.approver is None:
            return Resolution("deny", "runtime", "approval_unavailable", FailureReason.APPROVAL_UNAVAILABLE)
        return None

    async def resolve(
        self,
        connector: str,
        tool: str,
        decision: Decision,
        *,
        name: str,
        arguments: dict[str, Any] | None = None,
        kind: GrantKind = "tool",
    ) -> Resolution:
        """Turn a policy decision into allow/deny, asking the approver for ``ask`` (step 5).

        Args:
            connector / tool: the connector name and the server's original tool name.
            decision: from :meth:`evaluate`.
            name: the canonical name shown to the approver.
            arguments: the call's arguments (redacted before the approver sees them).

        Never raises for an approver failure: it becomes a denial. Cancellation propagates.
        """
        resolution = self.resolve_now(connector, tool, decision, kind=kind)
        if resolution is not None:
            return resolution
        return await self.ask(connector, tool, decision, name=name, arguments=arguments, kind=kind)

    async def ask(
        self,
        connector: str,
        tool: str,
        decision: Decision,
        *,
        name: str,
        arguments: dict[str, Any] | None = None,
        kind: GrantKind = "tool",
        policy: str = "",
    ) -> Resolution:
        """Ask the attached approver (headless: deny ``approval_unavailable``); ``kind`` says which
        key space an ``allow_session`` answer is remembered in; ``policy`` is passed on as
        :attr:`ApprovalRequest.policy`."""
        if self.approver is None:
            return Resolution("deny", "runtime", "approval_unavailable", FailureReason.APPROVAL_UNAVAILABLE)
        request = ApprovalRequest(
            name=name,
            connector=connector,
            tool=tool,
            arguments=redact_value(dict(arguments or {})),
            risk=decision.risk,
            source=decision.source,
            session_id=self.session_id,
            kind=kind,
            arguments_digest=json_digest(dict(arguments or {})),
            policy=policy,
        )
        try:
            answer = await self.approver(request)
        except ApprovalExpiredError:
            return Resolution("deny", "runtime", "approval_expired", FailureReason.PERMISSION_DENIED)
        except ApprovalStaleError:  # the policy changed while it waited: a retry asks anew
            return Resolution("deny", "runtime", "approval_stale", FailureReason.PERMISSION_DENIED)
        except ApprovalPendingError as exc:  # still open: the identical retry takes the answer
            return Resolution(
                "deny", "runtime", "approval_pending", FailureReason.APPROVAL_PENDING, _signalled(exc.details)
            )
        except ApprovalUnavailableError as exc:
            return Resolution(
                "deny", "runtime", "approval_unavailable", FailureReason.APPROVAL_UNAVAILABLE, _signalled(exc.details)
            )
        except Exception:
            return Resolution("deny", "runtime", "approver_error", FailureReason.APPROVAL_UNAVAILABLE)
        if not isinstance(answer, str) or answer not in _ANSWERS:
            return Resolution("deny", "runtime", "invalid_answer", FailureReason.PERMISSION_DENIED)
        if answer == "deny":
            return Resolution("deny", "user", "user_deny", FailureReason.PERMISSION_DENIED)
        if answer == "allow_session":
            self._session_allowed.add((kind, connector, tool))
            return Resolution("allow", "user", "user_allow_session")
        return Resolution("allow", "user", "user_allow_once")
