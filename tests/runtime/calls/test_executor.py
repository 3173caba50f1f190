"""The executor: one tool call from its name to its result, its event chain in order, and the reason
each failure ends with (unknown tool, tool error, server gone, timeout, cancellation), through a
``Runtime`` over tests/fixtures/recording_server.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import ApprovalRequest, Runtime, Settings, ToolCallError, ToolCallResult
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings
from patchbay.runtime import read_events
from tests.support.events import CALL_CHAIN as CHAIN
from tests.support.recording import config, recording, records, types_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


async def test_an_allowed_call_leaves_the_full_event_chain_in_order(tmp_path: Path, settings: Settings) -> None:
    server = recording("rec", tmp_path / "rec.jsonl", global_grants={"echo": "allow"})
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings, session_id="ses_chain") as runtime:
            result = await runtime.call("mcp.rec.echo", {"text": "hello"})
    assert runtime.event_log_path == settings.sessions_dir / "ses_chain.jsonl"
    assert isinstance(result, ToolCallResult)
    assert (result.name, result.text, result.content, result.structured_content) == (
        "mcp.rec.echo",
        "hello",
        [{"type": "text", "text": "hello"}],
        None,
    )
    events = read_events(runtime.event_log_path)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert {event["sessionId"] for event in events} == {"ses_chain"}
    assert types_of(events) == [CHAIN[0], "mcp.server.connected", *CHAIN[1:], "mcp.server.shutdown"]
    by_type = {event["type"]: event["payload"] for event in events}
    call_id = result.tool_call_id
    assert call_id == "tc_1"  # the session's first call
    assert by_type["model.tool_call_requested"] == {
        "tool": "mcp.rec.echo",
        "args": {"text": "hello"},
        "toolCallId": call_id,
    }
    assert by_type["permission.requested"] == {
        "tool": "mcp.rec.echo",
        "toolCallId": call_id,
        "args": {"text": "hello"},
        "riskAtDecision": "network",
        "sourcedFrom": "global_grant",
    }
    assert by_type["permission.resolved"] == {
        "tool": "mcp.rec.echo",
        "toolCallId": call_id,
        "decision": "allow",
        "actor": "policy",
        "sourcedFrom": "global_grant",
    }
    assert by_type["mcp.call.started"] == {
        "server": "rec",
        "toolCallId": call_id,
        "method": "tools/call",
        "args": {"name": "echo", "arguments": {"text": "hello"}},
    }
    assert by_type["tool.started"] == {"tool": "mcp.rec.echo", "toolCallId": call_id}
    assert by_type["mcp.call.completed"]["server"] == "rec"
    assert by_type["mcp.call.completed"]["durationMs"] >= 0
    assert by_type["tool.completed"] == {
        "tool": "mcp.rec.echo",
        "toolCallId": call_id,
        "resultPreview": "hello",
        "resultSize": result.size_bytes,
    }
    assert by_type["mcp.server.connected"]["server"] == "rec"
    assert records(tmp_path / "rec.jsonl") == [{"tool": "echo", "args": {"text": "hello"}}]


async def test_an_is_error_result_fails_the_call_with_tool_error_and_the_result_attached(
    tmp_path: Path, settings: Settings
) -> None:
    server = recording("rec", global_grants={"fail": "allow"})
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.fail")
    assert info.value.reason is FailureReason.TOOL_ERROR
    assert info.value.result.is_error and info.value.result.text == "it failed"
    events = read_events(runtime.event_log_path)
    assert types_of(events)[-3:] == ["mcp.call.failed", "tool.failed", "mcp.server.shutdown"]
    assert events[-3]["payload"]["reason"] == "tool_error"
    assert events[-3]["payload"]["error"] == "it failed"
    assert events[-2]["payload"] == {
        "tool": "mcp.rec.fail",
        "toolCallId": info.value.result.tool_call_id,
        "reason": "tool_error",
    }


async def test_unknown_tools_fail_with_unknown_tool_and_never_reach_a_server(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "rec.jsonl"
    server = recording(
        "rec", record, settings=ConnectorSettings(approval_mode="allow_all", exclude_tools=("read_thing",))
    )
    off = recording("off", tmp_path / "off.jsonl", settings=ConnectorSettings(enabled=False, approval_mode="allow_all"))
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server, off), settings=settings) as runtime:
            for name in (
                "mcp__rec__echo",
                "mcp.rec.nope",
                "mcp.rec.read_thing",
                "mcp.off.echo",
                "mcp.ghost.echo",
                "echo",
                "mcp.rec",
            ):
                with pytest.raises(ToolCallError) as info:
                    await runtime.call(name, {"text": "x"})
                assert info.value.reason is FailureReason.UNKNOWN_TOOL, name
    # (a wire name is only known once the connector's catalog is: listed, cached or connected)
    assert records(record) == [] and records(tmp_path / "off.jsonl") == []
    failed = [event["payload"] for event in read_events(runtime.event_log_path) if event["type"] == "tool.failed"]
    assert {payload["reason"] for payload in failed} == {"unknown_tool"}
    assert len(failed) == 7


async def test_a_server_dying_mid_call_fails_that_call_and_later_ones_at_once(
    tmp_path: Path, settings: Settings
) -> None:
    server = recording("rec", settings=ConnectorSettings(approval_mode="allow_all"))
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.die")
            assert info.value.reason is FailureReason.MCP_SERVER_RESTARTED
            with pytest.raises(ToolCallError) as later:  # during the 0.5 s restart backoff
                await runtime.call("mcp.rec.echo", {"text": "anyone?"})
            assert (later.value.reason, later.value.details["code"]) == (
                FailureReason.MCP_SERVER_UNAVAILABLE,
                "server_closed",
            )
    events = read_events(runtime.event_log_path)
    assert "mcp.server.crashed" in types_of(events)
    failed = [event["payload"] for event in events if event["type"] == "mcp.call.failed"]
    assert failed[0]["reason"] == "mcp_server_restarted"


async def test_a_call_without_an_answer_in_time_fails_with_timeout(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", request_timeout=0.5)
    server = recording("rec", settings=ConnectorSettings(approval_mode="allow_all"))
    with anyio.fail_after(15):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.rec.slow", {"seconds": 30})
            assert info.value.reason is FailureReason.TIMEOUT
            assert (await runtime.call("mcp.rec.echo", {"text": "still here"})).text == "still here"


async def test_concurrent_calls_each_keep_their_own_chain_and_seq_stays_ordered(
    tmp_path: Path, settings: Settings
) -> None:
    server = recording("rec", global_grants={"echo": "allow"})
    results: dict[int, ToolCallResult] = {}
    with anyio.fail_after(10):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:

            async def one(i: int) -> None:
                results[i] = await runtime.call("mcp.rec.echo", {"text": f"n{i}"})

            async with anyio.create_task_group() as group:
                for i in range(8):
                    group.start_soon(one, i)
    assert {i: r.text for i, r in results.items()} == {i: f"n{i}" for i in range(8)}
    events = read_events(runtime.event_log_path)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    for result in results.values():
        own = [e for e in events if e["payload"].get("toolCallId") == result.tool_call_id]
        assert types_of(own) == CHAIN
    assert sorted(int(r.tool_call_id.removeprefix("tc_")) for r in results.values()) == list(range(1, 9))


async def test_a_cancelled_call_is_logged_as_cancelled(tmp_path: Path, settings: Settings) -> None:
    running = anyio.Event()

    async def hang() -> str:
        running.set()
        await anyio.sleep_forever()
        return "never"

    with anyio.fail_after(10):
        async with Runtime(config(tmp_path), settings=settings, local_tools={"hang": hang}) as runtime:
            async with anyio.create_task_group() as group:
                group.start_soon(runtime.call, "hang")
                await running.wait()
                group.cancel_scope.cancel()
    last = read_events(runtime.event_log_path)[-1]
    assert (last["type"], last["payload"]["reason"]) == ("tool.failed", "cancelled")


async def test_a_call_cancelled_while_waiting_for_approval_never_reaches_the_server(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "rec.jsonl"
    asked = anyio.Event()

    async def slow_approver(request: ApprovalRequest) -> Any:
        asked.set()
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with Runtime(
            config(tmp_path, recording("rec", record)), settings=settings, approver=slow_approver
        ) as runtime:
            async with anyio.create_task_group() as group:
                group.start_soon(runtime.call, "mcp.rec.echo", {"text": "x"})
                await asked.wait()
                group.cancel_scope.cancel()
    assert records(record) == []
    events = read_events(runtime.event_log_path)
    assert types_of(events)[-3:] == ["permission.requested", "tool.failed", "mcp.server.shutdown"]
    assert events[-2]["payload"]["reason"] == "cancelled"
