"""The governed call path end to end, against real stdio servers: the recording fixture server
(tests/fixtures/recording_server.py) and the real ``mcp-server-time``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from patchbay import Runtime, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason, PatchbayError
from patchbay.core.models import ConnectorSettings, StdioTarget
from patchbay.core.redaction import redact_value
from patchbay.runtime import read_events
from tests.support.approvals import ScriptedApprover
from tests.support.events import CALL_CHAIN as CHAIN
from tests.support.recording import config, recording, records, types_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


async def test_an_explicitly_denied_call_never_reaches_the_server(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "rec.jsonl"
    server = recording(
        "rec", record, global_grants={"echo": "deny", "read_thing": "allow"}, project_grants={"echo": "allow"}
    )
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings, approver=ScriptedApprover()) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.echo", {"text": "nope"})
            await runtime.call("mcp.rec.read_thing")
    assert info.value.reason is FailureReason.PERMISSION_DENIED
    assert records(record) == [{"tool": "read_thing", "args": {}}]
    events = read_events(runtime.event_log_path)
    denied = [event for event in events if event["payload"].get("toolCallId") == info.value.details["toolCallId"]]
    assert types_of(denied) == [
        "model.tool_call_requested",
        "permission.requested",
        "permission.resolved",
        "tool.failed",
    ]
    assert denied[2]["payload"]["decision"] == "deny"
    assert denied[2]["payload"]["sourcedFrom"] == "global_deny"
    assert denied[3]["payload"]["reason"] == "permission_denied"


async def test_a_headless_ask_is_denied_and_never_reaches_the_server(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "rec.jsonl"
    server = recording("rec", record, global_grants={"read_thing": "allow"})
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.delete_everything")
            await runtime.call("mcp.rec.read_thing")
    assert info.value.reason is FailureReason.APPROVAL_UNAVAILABLE
    assert records(record) == [{"tool": "read_thing", "args": {}}]
    resolved = [
        event["payload"] for event in read_events(runtime.event_log_path) if event["type"] == "permission.resolved"
    ]
    assert resolved[0] == {
        "tool": "mcp.rec.delete_everything",
        "toolCallId": "tc_1",
        "decision": "deny",
        "actor": "runtime",
        "sourcedFrom": "approval_unavailable",
        "reason": "approval_unavailable",
    }


async def test_the_approver_decides_once_for_the_session_or_per_call(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "rec.jsonl"
    approver = ScriptedApprover("allow_once", "allow_once", "allow_session", "deny")
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, recording("rec", record)), settings=settings, approver=approver) as runtime:
            await runtime.call("mcp.rec.echo", {"text": "1", "api_key": "sk-live-123456"})
            await runtime.call("mcp.rec.echo", {"text": "2"})
            await runtime.call("mcp.rec.read_thing")
            await runtime.call("mcp.rec.read_thing")
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.delete_everything")
    assert [request.tool for request in approver.requests] == ["echo", "echo", "read_thing", "delete_everything"]
    assert approver.requests[0].arguments == {"text": "1", "api_key": "[REDACTED]"}
    assert (approver.requests[2].risk, approver.requests[3].risk) == ("read", "destructive")
    assert info.value.reason is FailureReason.PERMISSION_DENIED
    assert [entry["tool"] for entry in records(record)] == ["echo", "echo", "read_thing", "read_thing"]
    resolved = [
        event["payload"] for event in read_events(runtime.event_log_path) if event["type"] == "permission.resolved"
    ]
    assert [(p["actor"], p["sourcedFrom"]) for p in resolved] == [
        ("user", "user_allow_once"),
        ("user", "user_allow_once"),
        ("user", "user_allow_session"),
        ("user", "session_allow"),
        ("user", "user_deny"),
    ]


async def test_the_time_server_answers_for_asia_tokyo(tmp_path: Path, settings: Settings) -> None:
    server = RuntimeServer(
        connector_id="id-time",
        name="time",
        target=StdioTarget(command="mcp-server-time"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            result = await runtime.call("mcp.time.get_current_time", {"timezone": "Asia/Tokyo"})
    assert json.loads(result.text)["timezone"] == "Asia/Tokyo"
    assert "+09:00" in json.loads(result.text)["datetime"]
    completed = [event for event in read_events(runtime.event_log_path) if event["type"] == "tool.completed"]
    assert "Asia/Tokyo" in completed[0]["payload"]["resultPreview"]


async def test_two_connectors_exposing_echo_are_both_callable(tmp_path: Path, settings: Settings) -> None:
    first = recording("alpha", tmp_path / "alpha.jsonl", global_grants={"echo": "allow"})
    second = recording("beta", tmp_path / "beta.jsonl", global_grants={"echo": "allow"})
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, first, second), settings=settings) as runtime:
            a = await runtime.call("mcp.alpha.echo", {"text": "to alpha"})
            b = await runtime.call("mcp.beta.echo", {"text": "to beta"})
    assert (a.text, b.text) == ("to alpha", "to beta")
    assert records(tmp_path / "alpha.jsonl") == [{"tool": "echo", "args": {"text": "to alpha"}}]
    assert records(tmp_path / "beta.jsonl") == [{"tool": "echo", "args": {"text": "to beta"}}]


async def test_no_child_process_remains_after_the_runtime_exits(tmp_path: Path, settings: Settings) -> None:
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    first = recording("alpha", global_grants={"echo": "allow"})
    second = recording("beta", global_grants={"echo": "allow"})
    with anyio.fail_after(15):
        async with Runtime(config(tmp_path, first, second), settings=settings) as runtime:
            await runtime.call("mcp.alpha.echo", {"text": "x"})
            await runtime.call("mcp.beta.echo", {"text": "y"})
            spawned = {child.pid for child in me.children(recursive=True)} - before
            assert len(spawned) >= 2
    left = {child.pid for child in me.children(recursive=True)} - before
    assert left == set()
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in spawned)


async def test_a_connector_that_cannot_start_fails_calls_fast_with_its_probe_code(
    tmp_path: Path, settings: Settings
) -> None:
    broken = RuntimeServer(
        connector_id="id-broken",
        name="broken",
        target=StdioTarget(command="patchbay-no-such-command-xyz"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, broken), settings=settings) as runtime:
            for _ in range(2):
                with pytest.raises(ToolCallError) as info:
                    await runtime.call("mcp.broken.anything")
                assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
                assert info.value.details["code"] == "command_not_found"
    assert types_of(read_events(runtime.event_log_path)) == ["model.tool_call_requested", "tool.failed"] * 2


async def test_list_tools_shows_visible_tools_with_decision_risk_and_wire_name(
    tmp_path: Path, settings: Settings
) -> None:
    server = recording(
        "rec",
        page_size=1,
        settings=ConnectorSettings(approval_mode="allow_all", exclude_tools=("die", "slow")),
        global_grants={"fail": "deny"},
    )
    off = recording("off", settings=ConnectorSettings(enabled=False))
    with anyio.fail_after(10):
        async with Runtime(
            config(tmp_path, server, off), settings=settings, local_tools={"shout": str.upper}
        ) as runtime:
            tools = await runtime.list_tools()
            by_wire = await runtime.call("mcp__rec__echo", {"text": "via wire name"})
    listed = {(t.name, t.wire_name, t.connector, t.tool, t.decision, t.risk) for t in tools}
    assert listed == {
        ("shout", "shout", None, "shout", "allow", "local"),
        ("mcp.rec.echo", "mcp__rec__echo", "rec", "echo", "allow", "network"),
        ("mcp.rec.delete_everything", "mcp__rec__delete_everything", "rec", "delete_everything", "ask", "destructive"),
        ("mcp.rec.read_thing", "mcp__rec__read_thing", "rec", "read_thing", "allow", "read"),
        ("mcp.rec.fail", "mcp__rec__fail", "rec", "fail", "deny", "network"),
    }
    assert by_wire.name == "mcp.rec.echo" and by_wire.text == "via wire name"


async def test_local_tools_run_governed_and_a_clashing_bare_name_is_refused(tmp_path: Path, settings: Settings) -> None:
    async def echo(text: str) -> str:
        return f"local {text}"

    server = recording("rec", tmp_path / "rec.jsonl", global_grants={"echo": "allow"})
    local = {"echo": echo, "count": lambda items: {"count": len(items)}}
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings, local_tools=local) as runtime:
            assert (await runtime.call("echo", {"text": "a"})).text == "local a"
            counted = await runtime.call("count", {"items": [1, 2, 3]})
            await runtime.call("mcp.rec.echo", {"text": "b"})  # the live catalog now lists echo too
            with pytest.raises(ToolCallError) as info:
                await runtime.call("echo", {"text": "c"})
    assert counted.structured_content == {"count": 3}
    assert info.value.reason is FailureReason.AMBIGUOUS_CALL
    events = read_events(runtime.event_log_path)
    assert types_of(events)[:5] == [*CHAIN[:3], "tool.started", "tool.completed"]
    assert events[1]["payload"]["riskAtDecision"] == "local"
    ambiguous = [event["payload"] for event in events if event["type"] == "tool.ambiguous_call"]
    assert ambiguous[0]["candidates"] == ["echo", "mcp.rec.echo"]
    assert types_of(events)[-3:] == ["tool.ambiguous_call", "tool.failed", "mcp.server.shutdown"]
    assert records(tmp_path / "rec.jsonl") == [{"tool": "echo", "args": {"text": "b"}}]


async def test_every_logged_payload_is_already_redacted(tmp_path: Path, settings: Settings) -> None:
    secret = "sk-" + "z" * 24
    server = recording("rec", settings=ConnectorSettings(approval_mode="allow_all"))
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            await runtime.call("mcp.rec.echo", {"text": f"token={secret}", "password": "hunter22"})
            with pytest.raises(ToolCallError):
                await runtime.call(f"mcp.rec.{secret}")
    text = runtime.event_log_path.read_text()
    assert secret not in text and "hunter22" not in text
    for event in read_events(runtime.event_log_path):
        assert redact_value(event["payload"]) == event["payload"], event["type"]


async def test_a_session_resumed_by_id_continues_its_log(tmp_path: Path, settings: Settings) -> None:
    server = recording("rec", global_grants={"echo": "allow"})
    ids = []
    with anyio.fail_after(15):
        for run in range(2):
            async with Runtime(config(tmp_path, server), settings=settings, session_id="ses_resume") as runtime:
                ids.append((await runtime.call("mcp.rec.echo", {"text": str(run)})).tool_call_id)
    events = read_events(runtime.event_log_path)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert ids[0] != ids[1]


async def test_a_runtime_refuses_reentry_and_calls_outside_its_context(tmp_path: Path, settings: Settings) -> None:
    runtime = Runtime(config(tmp_path), settings=settings)
    with pytest.raises(RuntimeError):
        await runtime.call("anything")
    async with runtime:
        with pytest.raises(RuntimeError):
            await runtime.__aenter__()
    with pytest.raises(RuntimeError):
        await runtime.call("anything")


@pytest.mark.parametrize(
    ("servers", "local_tools", "code"),
    [
        ((recording("dup"), recording("dup")), None, "invalid_config"),
        ((recording("Bad.Name"),), None, "invalid_config"),
        ((), {"mcp.rec.echo": str.upper}, "validation_error"),
    ],
)
def test_a_bad_connector_name_or_local_tool_name_is_refused_up_front(
    tmp_path: Path, settings: Settings, servers: tuple[RuntimeServer, ...], local_tools: Any, code: str
) -> None:
    with pytest.raises(PatchbayError) as info:
        Runtime(config(tmp_path, *servers), settings=settings, local_tools=local_tools)
    assert info.value.code == code


def test_a_bad_session_id_is_refused_up_front(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(PatchbayError) as info:
        Runtime(config(tmp_path), settings=settings, session_id="../../etc/passwd")
    assert info.value.code == "validation_error"


async def test_reproject_takes_a_policy_change_in_place_and_refuses_a_structural_one(tmp_path: Path) -> None:
    """Grants and include/exclude apply to the open runtime (its connection stays connected);
    a connector added or a changed target needs a new runtime, and nothing changes."""
    settings = ConnectorSettings(approval_mode="allow_all")
    before = config(tmp_path, recording("rec", settings=settings))
    with anyio.fail_after(30):
        async with Runtime(before, settings=Settings(home=tmp_path / "home")) as runtime:
            seen: list[str] = []
            runtime.add_catalog_listener(seen.append)
            assert {t.name for t in await runtime.list_tools()} >= {"mcp.rec.echo", "mcp.rec.read_thing"}
            seen.clear()
            denied = config(tmp_path, recording("rec", settings=settings, global_grants={"echo": "deny"}))
            assert runtime.reproject(denied) is True
            assert seen == ["rec"] and runtime.server_states() == {"rec": "connected"}
            decisions = {t.tool: t.decision for t in runtime.cached_tools()}
            assert decisions["echo"] == "deny" and decisions["read_thing"] == "allow"
            narrowed = settings.model_copy(update={"include_tools": ("read_*",)})
            assert runtime.reproject(config(tmp_path, recording("rec", settings=narrowed))) is True
            assert [t.tool for t in runtime.cached_tools()] == ["read_thing"]

            added = config(tmp_path, recording("rec", settings=narrowed), recording("more", settings=settings))
            moved = config(tmp_path, recording("rec", tmp_path / "calls.jsonl", settings=narrowed))
            disabled = config(tmp_path, recording("rec", settings=narrowed.model_copy(update={"enabled": False})))
            for structural in (added, moved, disabled):
                assert runtime.reproject(structural) is False
            assert [t.tool for t in runtime.cached_tools()] == ["read_thing"] and runtime.config.servers[
                0
            ].settings == narrowed
