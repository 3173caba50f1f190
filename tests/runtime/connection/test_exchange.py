"""Timeouts and cancellation of tool calls, against tests/fixtures/lifecycle_server.py, whose
``sleep`` tool records when it is cancelled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import ApprovalRequest, Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings
from patchbay.runtime import read_events
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


def server(record: Path, *, approval: str = "allow_all", **options: Any) -> RuntimeServer:
    return RuntimeServer(
        connector_id="id-s",
        name="s",
        target=fixture_server("lifecycle_server.py", "--record", str(record)),
        settings=ConnectorSettings(approval_mode=approval),  # type: ignore[arg-type]
        runtime_config=options,
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_timed_out_call_is_cancelled_on_the_server_and_the_connection_stays_usable(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server(log, request_timeout=0.5)), settings=settings) as runtime:
            pid = (await runtime.call("mcp.s.pid")).text
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.s.sleep", {"seconds": 30, "tag": "slow"})
            assert info.value.reason is FailureReason.TIMEOUT
            assert info.value.details["timeoutSeconds"] == 0.5 and info.value.details["capped"] is False
            # notifications/cancelled reached the server: its handler was cancelled.
            await wait_until(lambda: {"cancelled": "slow"} in records(log))
            assert (await runtime.call("mcp.s.echo", {"text": "still here"})).text == "still here"
            assert (await runtime.call("mcp.s.pid")).text == pid
    failed = [event["payload"] for event in read_events(runtime.event_log_path) if event["type"] == "tool.failed"]
    assert [payload["reason"] for payload in failed] == ["timeout"]


async def test_a_caller_cancellation_cancels_the_request_and_logs_cancelled(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server(log)), settings=settings) as runtime:
            pid = (await runtime.call("mcp.s.pid")).text
            with anyio.CancelScope() as scope:

                async def cancel_when_started() -> None:
                    await wait_until(lambda: {"started": "user"} in records(log))
                    scope.cancel()

                async with anyio.create_task_group() as group:
                    group.start_soon(cancel_when_started)
                    await runtime.call("mcp.s.sleep", {"seconds": 30, "tag": "user"})
            assert scope.cancelled_caught
            await wait_until(lambda: {"cancelled": "user"} in records(log))
            assert (await runtime.call("mcp.s.pid")).text == pid
    events = read_events(runtime.event_log_path)
    assert [event["payload"]["reason"] for event in events if event["type"] == "tool.failed"] == ["cancelled"]
    assert [event["payload"]["reason"] for event in events if event["type"] == "mcp.call.failed"] == ["cancelled"]


async def test_progress_notifications_reset_the_idle_timeout(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(20):
        async with Runtime(
            config(tmp_path, server(tmp_path / "s.jsonl", request_timeout=0.8)), settings=settings
        ) as runtime:
            # 8 steps 0.2 s apart: 1.6 s in all, twice the idle timeout, never 0.8 s without progress.
            result = await runtime.call("mcp.s.progress", {"steps": 8, "interval": 0.2})
            assert result.text == "done"


async def test_progress_never_extends_a_call_past_the_hard_cap(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    options = {"request_timeout": 0.8, "max_call_seconds": 1.0}
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server(tmp_path / "s.jsonl", **options)), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.s.progress", {"steps": 200, "interval": 0.1})
            assert info.value.reason is FailureReason.TIMEOUT
            assert (info.value.details["timeoutSeconds"], info.value.details["capped"]) == (1.0, True)
            assert (await runtime.call("mcp.s.echo", {"text": "ok"})).text == "ok"


async def test_waiting_for_approval_does_not_count_against_the_timeout(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    approved = anyio.Event()

    async def slow_user(request: ApprovalRequest) -> str:
        # The user takes longer to answer than the call may take.
        with anyio.move_on_after(1.0):
            await approved.wait()
        return "allow_once"

    with anyio.fail_after(20):
        async with Runtime(
            config(tmp_path, server(tmp_path / "s.jsonl", approval="ask", request_timeout=0.5)),
            settings=settings,
            approver=slow_user,
        ) as runtime:
            assert (await runtime.call("mcp.s.echo", {"text": "worth the wait"})).text == "worth the wait"


# -- a server that stops answering is restarted after N timeouts in a row ---------------------


async def test_after_n_timeouts_in_a_row_the_server_is_restarted_as_unresponsive(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    settings = Settings(home=tmp_path / "home", unresponsive_timeouts=5)
    options = {"request_timeout": 2, "unresponsive_timeouts": 2, "restart": {"base_delay": 0.1}}
    freezable = server(log, **options).model_copy(
        update={"target": fixture_server("lifecycle_server.py", "--record", str(log), "--freezable")}
    )
    with anyio.fail_after(90):
        async with Runtime(config(tmp_path, freezable), settings=settings) as runtime:
            first = (await runtime.call("mcp.s.pid")).text
            with pytest.raises(ToolCallError) as frozen:
                await runtime.call("mcp.s.freeze")
            assert frozen.value.reason is FailureReason.TIMEOUT
            assert runtime.server_states()["s"] == "connected"  # one timeout is no verdict yet
            with pytest.raises(ToolCallError) as second:
                await runtime.call("mcp.s.echo", {"text": "anyone there?"})
            assert second.value.reason is FailureReason.TIMEOUT

            def connected_again() -> bool:
                return any(
                    event["type"] == "mcp.server.connected" and event["payload"]["restarts"] == 1
                    for event in read_events(runtime.event_log_path)
                )

            await wait_until(connected_again, within=60)
            fresh = (await runtime.call("mcp.s.pid")).text
    assert fresh != first
    assert [entry["launch"] for entry in records(log) if "launch" in entry] == [int(first), int(fresh)]
    crashed = [
        event["payload"] for event in read_events(runtime.event_log_path) if event["type"] == "mcp.server.crashed"
    ]
    assert [(payload["reason"], payload["willRestart"]) for payload in crashed] == [("unresponsive", True)]
    types = [event["type"] for event in read_events(runtime.event_log_path)]
    assert types.index("mcp.server.restarting") > types.index("mcp.server.crashed")


async def test_an_answer_between_timeouts_resets_the_count_and_zero_never_restarts(tmp_path: Path) -> None:
    for unresponsive, interleave in ((2, True), (0, False)):
        log = tmp_path / f"s-{unresponsive}.jsonl"
        settings = Settings(home=tmp_path / "home", unresponsive_timeouts=unresponsive)
        with anyio.fail_after(90):
            async with Runtime(config(tmp_path, server(log, request_timeout=2)), settings=settings) as runtime:
                pid = (await runtime.call("mcp.s.pid")).text
                for round in range(3):
                    with pytest.raises(ToolCallError) as info:
                        await runtime.call("mcp.s.sleep", {"seconds": 60, "tag": f"slow-{round}"})
                    assert info.value.reason is FailureReason.TIMEOUT
                    if interleave:
                        assert (await runtime.call("mcp.s.pid")).text == pid
                assert (await runtime.call("mcp.s.pid")).text == pid
        types = [event["type"] for event in read_events(runtime.event_log_path)]
        assert "mcp.server.crashed" not in types
