"""Server lifecycle and the restart policy (seed 000 §3, §3.1), against a fixture server that
really crashes (tests/fixtures/lifecycle_server.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, RestartPolicy, StdioTarget
from patchbay.runtime import read_events
from tests.support.processes import assert_group_gone
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

FAST = {"base_delay": 0.05, "max_delay": 0.2}


def lifecycle(name: str, record: Path | None = None, *args: str, **options: Any) -> RuntimeServer:
    extra = ["--record", str(record)] if record is not None else []
    return RuntimeServer(
        connector_id=f"id-{name}",
        name=name,
        target=fixture_server("lifecycle_server.py", *extra, *args),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config=options,
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def launches(path: Path) -> list[int]:
    return [entry["launch"] for entry in records(path) if "launch" in entry]


def events_of(runtime: Runtime, *types: str) -> list[dict[str, Any]]:
    return [event for event in read_events(runtime.event_log_path) if event["type"] in types]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


async def _pid(runtime: Runtime, name: str) -> int:
    return int((await runtime.call(f"mcp.{name}.pid")).text)


# -- lifecycle modes ---------------------------------------------------------------------------


async def test_lazy_connects_on_first_use_and_eager_at_start(tmp_path: Path, settings: Settings) -> None:
    lazy_log, eager_log = tmp_path / "lazy.jsonl", tmp_path / "eager.jsonl"
    servers = (lifecycle("lazy", lazy_log), lifecycle("eager", eager_log, lifecycle="eager"))
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, *servers), settings=settings) as runtime:
            await wait_until(lambda: runtime.server_states()["eager"] == "connected")
            assert len(launches(eager_log)) == 1
            assert launches(lazy_log) == [] and runtime.server_states()["lazy"] == "idle"
            assert (await runtime.call("mcp.lazy.echo", {"text": "hi"})).text == "hi"
            assert len(launches(lazy_log)) == 1


async def test_an_idle_lazy_connection_closes_and_reopens_while_keep_alive_stays(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", idle_timeout=0.3)
    lazy_log = tmp_path / "lazy.jsonl"
    servers = (lifecycle("lazy", lazy_log), lifecycle("kept", None, lifecycle="keep_alive"))
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, *servers), settings=settings) as runtime:
            first = await _pid(runtime, "lazy")
            kept = await _pid(runtime, "kept")
            await wait_until(lambda: runtime.server_states()["lazy"] == "idle")
            await wait_until(lambda: not psutil.pid_exists(first) or psutil.Process(first).status() == "zombie")
            assert runtime.server_states()["kept"] == "connected"
            assert await _pid(runtime, "kept") == kept
            second = await _pid(runtime, "lazy")
            assert second != first and len(launches(lazy_log)) == 2
    shutdowns = [event["payload"] for event in events_of(runtime, "mcp.server.shutdown")]
    assert {"server": "lazy", "reason": "idle"} in shutdowns
    assert not any(payload == {"server": "kept", "reason": "idle"} for payload in shutdowns)


async def test_a_call_in_flight_holds_off_the_idle_close(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", idle_timeout=0.2)
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, lifecycle("s")), settings=settings) as runtime:
            pid = await _pid(runtime, "s")
            assert (await runtime.call("mcp.s.sleep", {"seconds": 0.8})).text == "slept"
            assert await _pid(runtime, "s") == pid


# -- restart policy ----------------------------------------------------------------------------


async def test_restart_policy_restarts_three_times_then_fails_permanently(tmp_path: Path, settings: Settings) -> None:
    log = tmp_path / "s.jsonl"
    server = lifecycle("s", log, restart=FAST)
    reasons = []
    with anyio.fail_after(40):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            for crash in range(1, 5):
                if crash == 1:
                    await runtime.call("mcp.s.echo", {"text": "warm up"})
                await wait_until(lambda: runtime.server_states()["s"] == "connected")
                outcomes: dict[str, ToolCallError] = {}

                async def call(name: str, args: dict[str, Any], outcomes: dict[str, ToolCallError] = outcomes) -> None:
                    with pytest.raises(ToolCallError) as info:
                        await runtime.call(name, args)
                    outcomes[name] = info.value

                async with anyio.create_task_group() as group:
                    group.start_soon(call, "mcp.s.sleep", {"seconds": 30, "tag": f"in-flight-{crash}"})
                    await wait_until(lambda crash=crash: {"started": f"in-flight-{crash}"} in records(log))
                    group.start_soon(call, "mcp.s.crash", {})
                assert outcomes["mcp.s.sleep"].reason is outcomes["mcp.s.crash"].reason
                reasons.append(outcomes["mcp.s.sleep"].reason)
            assert runtime.server_states()["s"] == "permanently_failed"
            with pytest.raises(ToolCallError) as after:
                await runtime.call("mcp.s.echo", {"text": "anyone?"})
            assert after.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            assert after.value.details["state"] == "permanently_failed"
            assert [tool.name for tool in await runtime.list_tools()] == []
    assert reasons == [
        FailureReason.MCP_SERVER_RESTARTED,
        FailureReason.MCP_SERVER_UNSTABLE,
        FailureReason.MCP_SERVER_UNSTABLE,
        FailureReason.MCP_SERVER_UNSTABLE,
    ]
    assert len(launches(log)) == 4  # the first start and three restarts
    # No call was re-sent: each in-flight sleep started exactly once.
    started = [entry["started"] for entry in records(log) if "started" in entry]
    assert started == [f"in-flight-{n}" for n in range(1, 5)]
    lifecycle_events = events_of(
        runtime, "mcp.server.crashed", "mcp.server.restarting", "mcp.server.permanently_failed"
    )
    assert [
        (event["type"], event["payload"].get("crashCount", event["payload"].get("attempt")))
        for event in lifecycle_events
    ] == [
        ("mcp.server.crashed", 1),
        ("mcp.server.restarting", 1),
        ("mcp.server.crashed", 2),
        ("mcp.server.restarting", 2),
        ("mcp.server.crashed", 3),
        ("mcp.server.restarting", 3),
        ("mcp.server.crashed", 4),
        ("mcp.server.permanently_failed", 4),
    ]
    delays = [
        event["payload"]["delaySeconds"] for event in lifecycle_events if event["type"] == "mcp.server.restarting"
    ]
    assert delays == [0.05, 0.1, 0.2]
    failed = [event["payload"]["reason"] for event in events_of(runtime, "tool.failed")]
    assert failed[:2] == ["mcp_server_restarted"] * 2 and failed[2:8] == ["mcp_server_unstable"] * 6


async def test_the_default_backoff_starts_at_half_a_second(tmp_path: Path, settings: Settings) -> None:
    assert [RestartPolicy().delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, lifecycle("s")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as crashed:
                await runtime.call("mcp.s.crash")
            assert crashed.value.reason is FailureReason.MCP_SERVER_RESTARTED
            with pytest.raises(ToolCallError) as during_backoff:
                await runtime.call("mcp.s.echo", {"text": "too soon"})
            assert during_backoff.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            assert during_backoff.value.details["state"] in ("restarting", "connecting")
            await wait_until(lambda: runtime.server_states()["s"] == "connected")
            assert (await runtime.call("mcp.s.echo", {"text": "back"})).text == "back"
    restarting = events_of(runtime, "mcp.server.restarting")
    assert [event["payload"]["delaySeconds"] for event in restarting] == [0.5]


async def test_with_restarts_disabled_the_first_crash_is_permanent(tmp_path: Path, settings: Settings) -> None:
    log = tmp_path / "s.jsonl"
    with anyio.fail_after(20):
        async with Runtime(
            config(tmp_path, lifecycle("s", log, restart={"enabled": False})), settings=settings
        ) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.s.crash")
            assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            await wait_until(lambda: bool(events_of(runtime, "mcp.server.permanently_failed")))
    assert len(launches(log)) == 1


async def test_a_crash_with_no_call_in_flight_is_noticed_and_restarted(tmp_path: Path, settings: Settings) -> None:
    log = tmp_path / "s.jsonl"
    server = lifecycle("s", log, "--exit-after", "0.3", lifecycle="keep_alive", restart={**FAST, "max_restarts": 1})
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            await wait_until(lambda: runtime.server_states()["s"] == "permanently_failed")
    assert len(launches(log)) == 2
    crashed = [event["payload"] for event in events_of(runtime, "mcp.server.crashed")]
    assert [(payload["crashCount"], payload["willRestart"]) for payload in crashed] == [(1, True), (2, False)]


async def test_a_user_shutdown_emits_shutdown_and_never_restarts(tmp_path: Path, settings: Settings) -> None:
    log = tmp_path / "s.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, lifecycle("s", log)), settings=settings) as runtime:
            pid = await _pid(runtime, "s")
            pgid = os.getpgid(pid)
            await runtime.shutdown_server("s")
            assert_group_gone(pgid)
            assert runtime.server_states()["s"] == "closed"
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.s.echo", {"text": "still there?"})
            assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            assert await runtime.list_tools() == []
    assert len(launches(log)) == 1
    assert [event["payload"] for event in events_of(runtime, "mcp.server.shutdown")] == [
        {"server": "s", "reason": "requested"}
    ]
    assert events_of(runtime, "mcp.server.crashed", "mcp.server.restarting") == []


@pytest.mark.parametrize("wrapper", ["sh -c", "spawn-child"])
async def test_runtime_exit_leaves_no_process_of_the_group_behind(
    tmp_path: Path, settings: Settings, wrapper: str
) -> None:
    server = lifecycle("s", None, "--spawn-child")
    if wrapper == "sh -c":
        target = server.target
        assert isinstance(target, StdioTarget)
        command = " ".join([target.command, *target.args])
        server = server.model_copy(
            update={"target": StdioTarget(command="sh", args=("-c", f"sleep 300 & exec {command}"))}
        )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            pgid = os.getpgid(await _pid(runtime, "s"))
            await wait_until(lambda: len([p for p in psutil.process_iter(["name"]) if _in_group(p, pgid)]) >= 2)
    assert_group_gone(pgid)


def _in_group(process: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(process.pid) == pgid
    except (ProcessLookupError, PermissionError):
        return False


async def test_a_crash_looping_server_does_not_disturb_the_others(tmp_path: Path, settings: Settings) -> None:
    # The first launch connects and then dies; every restart after it fails at once (a cheap
    # `sh` exit, so the loop costs the machine little CPU and measures isolation, not load).
    marker = tmp_path / "launched-once"
    server = fixture_server("lifecycle_server.py", "--exit-after", "0.3")
    script = f'[ -e "{marker}" ] && exit 1; touch "{marker}"; exec {server.command} {" ".join(server.args)}'
    looping = RuntimeServer(
        connector_id="id-loop",
        name="loop",
        target=StdioTarget(command="sh", args=("-c", script)),
        runtime_config={
            "lifecycle": "keep_alive",
            "restart": {"base_delay": 0.02, "max_delay": 0.05, "max_restarts": 100},
        },
    )
    healthy = (lifecycle("a"), lifecycle("b"))
    answered: list[str] = []

    def crashes() -> int:
        return len(events_of(runtime, "mcp.server.crashed"))

    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, looping, *healthy), settings=settings) as runtime:
            await runtime.call("mcp.a.echo", {"text": "warm"})
            await runtime.call("mcp.b.echo", {"text": "warm"})
            await wait_until(lambda: crashes() >= 3)
            before = crashes()

            async def hammer(name: str) -> None:
                for n in range(15):
                    result = await runtime.call(f"mcp.{name}.echo", {"text": f"{name}{n}"})
                    answered.append(result.text)

            async with anyio.create_task_group() as group:
                for name in ("a", "b"):
                    for _ in range(3):
                        group.start_soon(hammer, name)
            during = crashes() - before
            assert runtime.server_states()["loop"] in ("restarting", "connecting")
    assert len(answered) == 90 and during >= 1
    crashed = {event["payload"]["server"] for event in events_of(runtime, "mcp.server.crashed")}
    assert crashed == {"loop"}


async def test_a_server_stopped_by_its_resource_limit_is_reported_crashed_with_the_limit(
    tmp_path: Path, settings: Settings
) -> None:
    server = RuntimeServer(
        connector_id="id-hog",
        name="hog",
        target=fixture_server("hog_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"limits": {"open_files": 64}, "restart": {"enabled": False}},
    )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            assert (await runtime.call("mcp.hog.echo", {"text": "fine"})).text == "fine"
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.hog.open_files")
            assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            await wait_until(lambda: runtime.server_states()["hog"] == "permanently_failed")
    crashed = [event["payload"] for event in events_of(runtime, "mcp.server.crashed")]
    assert len(crashed) == 1 and crashed[0]["limit"] == "open_files"
    assert "open_files limit" in crashed[0]["stderrTail"]


async def test_keep_alive_retries_a_failed_first_connect_in_the_background(tmp_path: Path, settings: Settings) -> None:
    marker = tmp_path / "failed-once"
    server = fixture_server("lifecycle_server.py")
    script = f'[ -e "{marker}" ] || {{ touch "{marker}"; exit 1; }}; exec {server.command} {" ".join(server.args)}'
    kept = RuntimeServer(
        connector_id="id-kept",
        name="kept",
        target=StdioTarget(command="sh", args=("-c", script)),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"lifecycle": "keep_alive", "restart": FAST},
    )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, kept), settings=settings) as runtime:
            await wait_until(lambda: runtime.server_states()["kept"] == "connected")
            assert marker.exists()
            assert (await runtime.call("mcp.kept.echo", {"text": "up"})).text == "up"
    assert events_of(runtime, "mcp.server.crashed") == []


async def test_a_server_that_cannot_start_under_its_limit_fails_to_connect_naming_the_limit(
    tmp_path: Path, settings: Settings
) -> None:
    server = lifecycle("small", None, limits={"open_files": 4})
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.small.echo", {"text": "hi"})
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert "stopped by its open_files limit" in info.value.message


@pytest.mark.parametrize("code", [-32000, -32001, -32603])
async def test_a_json_rpc_error_from_the_server_is_a_tool_error_not_a_crash(
    tmp_path: Path, settings: Settings, code: int
) -> None:
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, lifecycle("s")), settings=settings) as runtime:
            pid = await _pid(runtime, "s")
            for _ in range(5):  # more than max_restarts: a misread would make it permanent
                with pytest.raises(ToolCallError) as info:
                    await runtime.call("mcp.s.rpc_error", {"code": code})
                assert info.value.reason is FailureReason.TOOL_ERROR
                assert info.value.details["mcpCode"] == code
            assert await _pid(runtime, "s") == pid
    assert events_of(runtime, "mcp.server.crashed") == []


async def test_a_call_racing_an_idle_close_reconnects_instead_of_failing(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", idle_timeout=0.2)
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, lifecycle("s")), settings=settings) as runtime:
            for _ in range(3):
                await _pid(runtime, "s")
                await wait_until(lambda: runtime.server_states()["s"] in ("closing", "idle"))
                # Whether the close is under way or done, the next call just works.
                assert (await runtime.call("mcp.s.echo", {"text": "again"})).text == "again"
    assert events_of(runtime, "mcp.server.crashed") == []


async def test_an_approval_longer_than_the_idle_timeout_still_gets_its_call_through(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", idle_timeout=0.2)
    server = lifecycle("s").model_copy(update={"settings": ConnectorSettings(approval_mode="ask")})

    async def slow_user(request: Any) -> str:
        await wait_until(lambda: runtime.server_states()["s"] == "idle")
        return "allow_once"

    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings, approver=slow_user) as runtime:
            assert (await runtime.call("mcp.s.echo", {"text": "patience"})).text == "patience"
