"""Timeouts and cancellation of tool calls (issue 3 point 3), against
tests/fixtures/lifecycle_server.py, whose ``sleep`` tool records when it is cancelled."""

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
from support import fixture_server, wait_until

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
