"""DESIGN.md "Permissions": the decision order, step by step."""

from __future__ import annotations

from patchbay.core.models import ConnectorSettings
from patchbay.core.policy import decide, decide_prompt, decide_resource_read, risk_of, risk_reason

DESTRUCTIVE = {"destructiveHint": True}
READ_ONLY = {"readOnlyHint": True}


def test_a_disabled_connector_exposes_nothing() -> None:
    decision = decide("t", enabled=False, global_grant="allow", approval_mode="allow_all")
    assert (decision.visible, decision.decision, decision.source) == (False, "deny", "disabled")


def test_exclude_globs_hide_a_tool_even_when_it_is_granted() -> None:
    decision = decide("delete_repo", exclude_tools=("delete_*",), global_grant="allow")
    assert (decision.visible, decision.source) == (False, "excluded")


def test_a_non_empty_include_list_hides_everything_it_does_not_match() -> None:
    assert decide("git_status", include_tools=("git_*",)).visible
    hidden = decide("rm", include_tools=("git_*",), project_grant="allow")
    assert (hidden.visible, hidden.source) == (False, "not_included")


def test_a_global_deny_is_never_lifted_by_a_project_allow() -> None:
    decision = decide("t", global_grant="deny", project_grant="allow", approval_mode="allow_all")
    assert (decision.decision, decision.source) == ("deny", "global_deny")


def test_a_project_grant_wins_over_a_global_allow_or_ask() -> None:
    assert decide("t", global_grant="allow", project_grant="ask").decision == "ask"
    assert decide("t", global_grant="ask", project_grant="allow").decision == "allow"
    assert decide("t", global_grant="ask", project_grant="deny").decision == "deny"
    assert decide("t", global_grant="ask", project_grant="deny").source == "project_grant"


def test_a_global_grant_applies_when_the_project_has_none() -> None:
    decision = decide("t", global_grant="allow")
    assert (decision.decision, decision.source) == ("allow", "global_grant")


def test_allow_all_allows_but_destructive_tools_still_ask() -> None:
    assert decide("t", approval_mode="allow_all").decision == "allow"
    destructive = decide("t", approval_mode="allow_all", annotations=DESTRUCTIVE)
    assert (destructive.decision, destructive.source) == ("ask", "destructive_default")


def test_an_explicit_grant_lets_a_destructive_tool_run_under_allow_all() -> None:
    assert decide("t", approval_mode="allow_all", annotations=DESTRUCTIVE, global_grant="allow").decision == "allow"


def test_ask_and_custom_modes_ask_without_grants() -> None:
    assert decide("t", approval_mode="ask").decision == "ask"
    assert decide("t", approval_mode="custom").decision == "ask"


def test_risk_comes_from_annotations_and_defaults_to_network() -> None:
    assert risk_of(READ_ONLY) == "read"
    assert risk_of(DESTRUCTIVE) == "destructive"
    assert risk_of(None) == "network"
    assert decide("t", annotations=READ_ONLY).risk == "read"


def test_resource_reads_are_decided_by_their_own_grants_not_by_tool_patterns() -> None:
    excluding = ConnectorSettings(include_tools=("git_*",), exclude_tools=("*",))
    assert decide_resource_read(excluding, global_grant=None, project_grant=None).decision == "ask"
    allowed = decide_resource_read(excluding, global_grant="allow", project_grant=None)
    assert (allowed.decision, allowed.source, allowed.risk) == ("allow", "global_grant", "read")
    lifted = decide_resource_read(ConnectorSettings(), global_grant="deny", project_grant="allow")
    assert (lifted.decision, lifted.source) == ("deny", "global_deny")
    assert decide_resource_read(ConnectorSettings(), global_grant="allow", project_grant="ask").decision == "ask"
    everything = ConnectorSettings(approval_mode="allow_all")
    assert decide_resource_read(everything, global_grant=None, project_grant=None).decision == "allow"
    assert not decide_resource_read(ConnectorSettings(enabled=False), global_grant="allow", project_grant=None).visible


def test_prompts_are_user_triggered_and_only_a_deny_grant_refuses_them() -> None:
    plain = ConnectorSettings(exclude_tools=("*",))
    assert decide_prompt(plain, "p1", global_grants={}, project_grants={}).decision == "allow"
    denied = decide_prompt(plain, "p1", global_grants={"*": "deny"}, project_grants={"p1": "allow"})
    assert (denied.decision, denied.source) == ("deny", "global_deny")
    assert decide_prompt(plain, "p2", global_grants={"p1": "deny"}, project_grants={}).decision == "allow"
    reopened = decide_prompt(plain, "p1", global_grants={}, project_grants={"*": "deny", "p1": "allow"})
    assert (reopened.decision, reopened.source) == ("allow", "project_grant")
    assert decide_prompt(plain, "p2", global_grants={}, project_grants={"*": "deny", "p1": "allow"}).decision == "deny"
    assert decide_prompt(plain, "p1", global_grants={"p1": "ask"}, project_grants={}).decision == "deny"
    assert not decide_prompt(ConnectorSettings(enabled=False), "p1", global_grants={}, project_grants={}).visible


def test_the_risk_reason_says_which_annotation_decided_or_that_none_did() -> None:
    assert risk_reason(READ_ONLY) == "annotated readOnlyHint"
    assert risk_reason(DESTRUCTIVE) == "annotated destructiveHint"
    assert risk_reason(None) == risk_reason({"readOnlyHint": False}) == "no annotation says otherwise"
