from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, Settings, ToolCallError
from patchbay.core.digest import json_digest
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, RuntimeServer, StdioTarget, ToolSummary
from patchbay.core.redaction import REDACTED
from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest, PermissionEngine
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio

DESTRUCTIVE = {"destructiveHint": True}
READ_ONLY = {"readOnlyHint": True}


def _server(**overrides: Any) -> RuntimeServer:
    settings = overrides.pop("settings", ConnectorSettings())
    return RuntimeServer(
        connector_id="c1",
        name="jira",
        target=StdioTarget(command="jira-mcp"),
        settings=settings,
        tools=(
            ToolSummary(name="get_issue", annotations=READ_ONLY),
            ToolSummary(name="delete_project", annotations=DESTRUCTIVE),
            ToolSummary(name="comment"),
        ),
        **overrides,
    )


class Approver:
    """Answers from a script and records what it was asked."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def _resolve(engine: PermissionEngine, server: RuntimeServer, tool: str, arguments: dict | None = None):
    decision = engine.evaluate(server, tool)
    return await engine.resolve(server.name, tool, decision, name=f"mcp.{server.name}.{tool}", arguments=arguments)


def test_a_disabled_connector_makes_every_tool_invisible() -> None:
    decision = PermissionEngine(session_id="s").evaluate(_server(settings=ConnectorSettings(enabled=False)), "comment")
    assert (decision.visible, decision.decision, decision.source) == (False, "deny", "disabled")


def test_excluded_and_not_included_tools_are_invisible() -> None:
    engine = PermissionEngine(session_id="s")
    server = _server(settings=ConnectorSettings(include_tools=("get_*", "comment"), exclude_tools=("comment",)))
    assert engine.evaluate(server, "comment").source == "excluded"
    assert engine.evaluate(server, "delete_project").source == "not_included"
    assert engine.evaluate(server, "get_issue").visible


async def test_a_global_deny_is_not_lifted_by_a_project_allow_or_allow_all() -> None:
    engine = PermissionEngine(session_id="s", approver=Approver("allow_session"))
    server = _server(
        settings=ConnectorSettings(approval_mode="allow_all"),
        global_grants={"comment": "deny"},
        project_grants={"comment": "allow"},
    )
    resolution = await _resolve(engine, server, "comment")
    assert (resolution.decision, resolution.actor, resolution.sourced_from) == ("deny", "policy", "global_deny")
    assert resolution.reason is FailureReason.PERMISSION_DENIED


async def test_a_project_grant_wins_over_a_global_grant() -> None:
    engine = PermissionEngine(session_id="s")
    server = _server(global_grants={"comment": "allow"}, project_grants={"comment": "ask"})
    decision = engine.evaluate(server, "comment")
    assert (decision.decision, decision.source) == ("ask", "project_grant")
    resolution = await _resolve(
        engine, _server(global_grants={"comment": "ask"}, project_grants={"comment": "allow"}), "comment"
    )
    assert (resolution.decision, resolution.sourced_from) == ("allow", "project_grant")


async def test_a_global_grant_applies_without_a_project_grant() -> None:
    resolution = await _resolve(
        PermissionEngine(session_id="s"), _server(global_grants={"comment": "allow"}), "comment"
    )
    assert (resolution.decision, resolution.actor, resolution.sourced_from) == ("allow", "policy", "global_grant")


async def test_allow_all_allows_but_a_destructive_tool_stays_ask_unless_granted() -> None:
    engine = PermissionEngine(session_id="s")
    allow_all = ConnectorSettings(approval_mode="allow_all")
    assert engine.evaluate(_server(settings=allow_all), "comment").decision == "allow"
    destructive = engine.evaluate(_server(settings=allow_all), "delete_project")
    assert (destructive.decision, destructive.source, destructive.risk) == ("ask", "destructive_default", "destructive")
    resolution = await _resolve(engine, _server(settings=allow_all), "delete_project")
    assert (resolution.decision, resolution.reason) == ("deny", FailureReason.APPROVAL_UNAVAILABLE)
    granted = engine.evaluate(_server(settings=allow_all, project_grants={"delete_project": "allow"}), "delete_project")
    assert granted.decision == "allow"


@pytest.mark.parametrize("mode", ["ask", "custom"])
def test_ask_and_custom_modes_ask(mode: str) -> None:
    decision = PermissionEngine(session_id="s").evaluate(
        _server(settings=ConnectorSettings(approval_mode=mode)), "comment"
    )
    assert (decision.decision, decision.source, decision.risk) == ("ask", "approval_mode", "network")


def test_live_annotations_are_used_before_the_cached_ones() -> None:
    engine = PermissionEngine(session_id="s")
    server = _server(settings=ConnectorSettings(approval_mode="allow_all"))
    assert engine.evaluate(server, "get_issue").risk == "read"
    live = ToolSummary(name="get_issue", annotations=DESTRUCTIVE)
    assert engine.evaluate(server, "get_issue", live).decision == "ask"
    assert engine.evaluate(server, "unknown_to_cache").risk == "network"


async def test_headless_ask_is_denied_with_approval_unavailable() -> None:
    resolution = await _resolve(PermissionEngine(session_id="s"), _server(), "comment")
    assert (resolution.decision, resolution.actor, resolution.sourced_from) == (
        "deny",
        "runtime",
        "approval_unavailable",
    )
    assert resolution.reason is FailureReason.APPROVAL_UNAVAILABLE


async def test_the_approver_sees_redacted_arguments_risk_source_and_session() -> None:
    approver = Approver("allow_once")
    engine = PermissionEngine(session_id="ses_1", approver=approver)
    resolution = await _resolve(engine, _server(), "get_issue", {"key": "PROJ-1", "api_token": "abcd1234"})
    assert (resolution.decision, resolution.actor, resolution.sourced_from) == ("allow", "user", "user_allow_once")
    assert approver.requests == [
        ApprovalRequest(
            name="mcp.jira.get_issue",
            connector="jira",
            tool="get_issue",
            arguments={"key": "PROJ-1", "api_token": REDACTED},
            risk="read",
            source="approval_mode",
            session_id="ses_1",
            arguments_digest=json_digest({"key": "PROJ-1", "api_token": "abcd1234"}),  # of the real ones
        )
    ]


async def test_allow_once_is_asked_again_but_allow_session_is_remembered() -> None:
    approver = Approver("allow_once", "allow_session", "deny")
    engine = PermissionEngine(session_id="s", approver=approver)
    server = _server()
    await _resolve(engine, server, "comment")
    assert not engine.session_allowed("jira", "comment")
    second = await _resolve(engine, server, "comment")
    assert second.sourced_from == "user_allow_session"
    third = await _resolve(engine, server, "comment")
    assert (third.decision, third.actor, third.sourced_from) == ("allow", "user", "session_allow")
    assert engine.requested_source("jira", "comment", engine.evaluate(server, "comment")) == "session_allow"
    assert len(approver.requests) == 2
    # Remembered per tool: another tool of the same connector is asked again.
    assert (await _resolve(engine, server, "get_issue")).sourced_from == "user_deny"
    assert [request.tool for request in approver.requests] == ["comment", "comment", "get_issue"]


async def test_a_remembered_session_allow_never_lifts_a_deny() -> None:
    engine = PermissionEngine(session_id="s", approver=Approver("allow_session"))
    await _resolve(engine, _server(), "comment")
    resolution = await _resolve(engine, _server(global_grants={"comment": "deny"}), "comment")
    assert resolution.decision == "deny"


@pytest.mark.parametrize(
    ("answer", "source", "reason"),
    [
        ("deny", "user_deny", FailureReason.PERMISSION_DENIED),
        ("yes please", "invalid_answer", FailureReason.PERMISSION_DENIED),
        (RuntimeError("ui crashed"), "approver_error", FailureReason.APPROVAL_UNAVAILABLE),
    ],
)
async def test_a_deny_a_bad_answer_or_a_failing_approver_denies(
    answer: Any, source: str, reason: FailureReason
) -> None:
    resolution = await _resolve(PermissionEngine(session_id="s", approver=Approver(answer)), _server(), "comment")
    assert (resolution.decision, resolution.sourced_from, resolution.reason) == ("deny", source, reason)


# -- key spaces: resource reads and prompts are no tool names -----------------------------------


def test_a_tool_named_like_the_resource_method_gets_nothing_from_the_resource_grant() -> None:
    engine = PermissionEngine(session_id="s")
    server = _server(global_resource_grant="allow", project_resource_grant="allow")
    tool = engine.evaluate(server, "resources/read")
    assert (tool.decision, tool.source, tool.risk) == ("ask", "approval_mode", "network")
    reads = engine.evaluate_resource_read(server)
    assert (reads.decision, reads.source, reads.risk) == ("allow", "project_grant", "read")


def test_a_tool_grant_named_like_the_resource_method_does_not_govern_resource_reads() -> None:
    engine = PermissionEngine(session_id="s")
    server = _server(global_grants={"resources/read": "allow"}, project_grants={"resources/read": "allow"})
    assert engine.evaluate_resource_read(server).decision == "ask"
    denied = _server(global_grants={"resources/read": "deny"}, settings=ConnectorSettings(exclude_tools=("*",)))
    assert engine.evaluate_resource_read(denied).decision == "ask"


async def test_allow_for_the_session_of_resource_reads_does_not_allow_a_tool_of_that_name() -> None:
    approver = Approver("allow_session", "deny")
    engine = PermissionEngine(session_id="s", approver=approver)
    server = _server()
    reads = engine.evaluate_resource_read(server)
    resolved = await engine.resolve(
        "jira", "resources/read", reads, name="mcp.jira.resources/read", arguments={"uri": "x://1"}, kind="resource"
    )
    assert resolved.sourced_from == "user_allow_session"
    assert engine.resolve_now("jira", "resources/read", reads, kind="resource") is not None  # remembered

    tool = await _resolve(engine, server, "resources/read")
    assert (tool.decision, tool.sourced_from) == ("deny", "user_deny")
    assert [r.kind for r in approver.requests] == ["resource", "tool"]


async def test_a_server_tool_named_resources_read_still_asks_with_the_resource_grant_allowing(
    tmp_path: Path,
) -> None:
    server = RuntimeServer(
        connector_id="id-evil",
        name="evil",
        target=fixture_server("dynamic_server.py", "--initial", "resources/read"),
        global_resource_grant="allow",
    )
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(server,))
    with anyio.fail_after(30):
        async with Runtime(config, settings=Settings(home=tmp_path / "home")) as runtime:
            with pytest.raises(ToolCallError) as headless:
                await runtime.call("mcp.evil.resources/read", {})
        approver = Approver("allow_once")
        async with Runtime(config, settings=Settings(home=tmp_path / "home"), approver=approver) as runtime:
            listed = {t.tool: t for t in await runtime.list_tools()}
            result = await runtime.call("mcp.evil.resources/read", {})
    assert headless.value.reason == FailureReason.APPROVAL_UNAVAILABLE
    assert result.text.endswith("dynamic:resources/read")
    assert [(r.kind, r.tool, r.risk) for r in approver.requests] == [("tool", "resources/read", "network")]
    assert (listed["resources/read"].decision, listed["add_tool"].name_flag) == ("ask", None)
    assert listed["resources/read"].name_flag == "contains '/' (U+002F SOLIDUS), outside MCP's [A-Za-z0-9_.-]"
