"""patchbay.runtime.connection.server_connection, one connection to a connector.

Sections, in this order:

- Lifecycle and restart policy: Server lifecycle and the restart policy (seed 000 §3, §3.1), against
  a fixture server that really crashes (tests/fixtures/lifecycle_server.py).
- Egress guard and audit lines: The runtime's connections behind the egress guard, and their audit
  lines (seed 003 §14.2): ``mcp_connect`` per connect attempt and ``mcp_tool_call`` per call,
  metadata only; stdio and socket connectors are recorded as ``runtime_call_audit: "unavailable"``.
- Faults stay inside one connection: An unexpected exception inside one connection fails that
  connector only: the other connectors of the runtime, the other sessions of a SessionHost and the
  runtime itself keep answering (real stdio fixture servers; the faults are hooks made to raise,
  since real servers cannot produce them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

import patchbay.adapters.transports.egress as egress_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, FailureReason
from patchbay.core.models import ConnectorSettings, HttpTarget, Project, RestartPolicy, StdioTarget
from patchbay.runtime import read_events
from patchbay.runtime.connection.access import ConnectorAccess
from patchbay.runtime.connection.catalog_refresh import CatalogRefresh
from patchbay.runtime.connection.exchange import RequestExchange
from patchbay.runtime.connection.server_connection import ServerConnection
from patchbay.runtime.events.log import EventLog
from patchbay.runtime.sessions import SessionHost
from tests.support.egress import AUDIT_KEYS, audit_lines, http_fixture, http_response, listening, recorded_requests
from tests.support.paths import FIXTURES
from tests.support.processes import assert_group_gone
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


# --- Lifecycle and restart policy ---

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


async def test_lazy_keep_alive_waits_for_the_first_use_then_is_never_closed_for_idleness(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", idle_timeout=0.3)
    kept_log, lazy_log = tmp_path / "kept.jsonl", tmp_path / "lazy.jsonl"
    servers = (lifecycle("kept", kept_log, lifecycle="lazy_keep_alive"), lifecycle("lazy", lazy_log))
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, *servers), settings=settings) as runtime:
            assert launches(kept_log) == [] and runtime.server_states()["kept"] == "idle"
            kept = await _pid(runtime, "kept")
            lazy = await _pid(runtime, "lazy")
            await wait_until(lambda: runtime.server_states()["lazy"] == "idle")  # closed after 0.3 s ...
            await wait_until(lambda: not psutil.pid_exists(lazy) or psutil.Process(lazy).status() == "zombie")
            assert runtime.server_states()["kept"] == "connected"  # ... over which this one stayed
            assert await _pid(runtime, "kept") == kept and len(launches(kept_log)) == 1


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


# --- Egress guard and audit lines ---

ARGUMENT = "arg-cnry-4669"


def remote(url: str, **options: Any) -> RuntimeServer:
    return RuntimeServer(
        connector_id="id-remote",
        name="remote",
        target=HttpTarget(url=url),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config=options,
    )


@pytest.mark.parametrize("options", [{}, {"allow_private": False}, {"allow_private": "yes"}, {"allow_private": 1}])
async def test_a_remote_connector_on_loopback_is_blocked_unless_it_allows_private(
    tmp_path: Path, settings: Settings, options: dict[str, Any]
) -> None:
    async with listening() as listener:
        server = remote(f"{listener.origin}/mcp", **options)
        with anyio.fail_after(20):
            async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                with pytest.raises(ToolCallError) as info:
                    await runtime.call("mcp.remote.echo", {"text": ARGUMENT})
        assert listener.connections == 0
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "network_blocked"
    (line,) = audit_lines(settings.home)
    assert set(line) == AUDIT_KEYS
    assert (line["note"], line["origin"], line["approved"]) == ("mcp_connect", listener.origin, False)


async def test_connect_and_every_call_leave_one_metadata_only_line(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port:
        server = remote(f"http://127.0.0.1:{port}/mcp?key=qry-cnry-7", allow_private=True)
        with anyio.fail_after(30):
            async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                for _ in range(2):
                    assert (await runtime.call("mcp.remote.echo", {"text": ARGUMENT})).text == ARGUMENT
    assert recorded_requests(record)
    lines = audit_lines(settings.home)
    assert [(line["note"], line["approved"]) for line in lines] == [
        ("mcp_connect", True),
        ("mcp_tool_call", True),
        ("mcp_tool_call", True),
    ]
    assert all(set(line) == AUDIT_KEYS for line in lines)
    assert {(line["connector_id"], line["origin"]) for line in lines} == {("id-remote", f"http://127.0.0.1:{port}")}
    text = (settings.home / "egress-audit.jsonl").read_text()
    for leak in (ARGUMENT, "qry-cnry-7", "key=", "/mcp", "echo"):
        assert leak not in text


async def test_stdio_connectors_are_recorded_as_unguardable(tmp_path: Path, settings: Settings) -> None:
    server = RuntimeServer(
        connector_id="id-local",
        name="local",
        target=StdioTarget(command=sys.executable, args=(str(FIXTURES / "recording_server.py"),)),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            assert (await runtime.call("mcp.local.echo", {"text": ARGUMENT})).text == ARGUMENT
    lines = audit_lines(settings.home)
    assert [line["note"] for line in lines] == ["mcp_connect", "mcp_tool_call"]
    for line in lines:
        assert (line["origin"], line["runtime_call_audit"], line["approved"]) == (None, "unavailable", True)
    assert ARGUMENT not in (settings.home / "egress-audit.jsonl").read_text()


async def test_a_connection_names_its_project_in_every_line(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            connection = ServerConnection(
                remote(f"http://127.0.0.1:{port}/mcp", allow_private=True),
                workspace=tmp_path,
                settings=settings,
                task_group=group,
                project_id="prj_named",
            )
            await connection.ensure_connected()
            result = await connection.call_tool("echo", {"text": ARGUMENT})
            assert result.content[0].text == ARGUMENT  # type: ignore[union-attr]
            connection.request_stop()
            await connection.wait_closed()
    assert [(line["note"], line["project_id"]) for line in audit_lines(settings.home)] == [
        ("mcp_connect", "prj_named"),
        ("mcp_tool_call", "prj_named"),
    ]


async def test_a_cross_origin_sse_endpoint_is_network_blocked_naming_the_origin(
    tmp_path: Path, settings: Settings
) -> None:
    async with listening() as elsewhere:
        body = f"event: endpoint\ndata: {elsewhere.origin}/messages\n\n".encode()
        answer = http_response(200, body, {"Content-Type": "text/event-stream"})
        async with listening(lambda method, path: answer) as sse:
            server = remote(f"{sse.origin}/sse", allow_private=True).model_copy(
                update={"target": HttpTarget(url=f"{sse.origin}/sse", transport="sse")}
            )
            with anyio.fail_after(20):
                async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                    with pytest.raises(ToolCallError) as info:
                        await runtime.call("mcp.remote.echo", {"text": ARGUMENT})
        assert elsewhere.connections == 0
    assert info.value.details["code"] == "network_blocked"
    assert elsewhere.origin in info.value.message


# --- Faults stay inside one connection ---

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")


def stdio(name: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"con_{name}",
        name=name,
        target=fixture_server("lifecycle_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )


def inject(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Make one hook raise for the connector named ``bad`` only."""
    if kind == "audit":
        original_audit = ConnectorAccess.audit

        def audit(self: ConnectorAccess, note: Any, since: int) -> None:
            if self._server.name == "bad":
                raise ValueError("an egress audit origin is scheme://host:port and nothing else")
            original_audit(self, note, since)

        monkeypatch.setattr(ConnectorAccess, "audit", audit)
    elif kind == "catalog":
        original_catalog = Runtime._catalog_changed

        def catalog_changed(self: Runtime, name: str, tools: Any) -> None:
            if name == "bad" and tools is not None:
                raise RuntimeError("the router refused the catalog")
            original_catalog(self, name, tools)

        monkeypatch.setattr(Runtime, "_catalog_changed", catalog_changed)
    elif kind == "watcher":
        original_run = CatalogRefresh.run

        async def run(self: CatalogRefresh, client: Any, generation: int) -> None:
            if self.name == "bad":
                raise KeyError("a watcher bug")
            await original_run(self, client, generation)

        monkeypatch.setattr(CatalogRefresh, "run", run)
    elif kind == "call":
        original_check = RequestExchange._check_output

        async def check(self: RequestExchange, tool: str, result: Any) -> None:
            if self.name == "bad":
                raise KeyError("an output check bug")
            await original_check(self, tool, result)

        monkeypatch.setattr(RequestExchange, "_check_output", check)
    elif kind == "emit":
        original_append = EventLog.append

        def append(self: EventLog, type: str, payload: Any = None, **kwargs: Any) -> int:
            if type.startswith("mcp.server.") and (payload or {}).get("server") == "bad":
                raise OSError("the event log is on a full disk")
            return original_append(self, type, payload, **kwargs)

        monkeypatch.setattr(EventLog, "append", append)
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["audit", "catalog", "watcher", "call", "emit"])
async def test_a_fault_inside_one_connection_fails_that_connector_and_the_others_keep_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    inject(monkeypatch, kind)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("good"), stdio("bad")), settings=settings) as runtime:
            assert (await runtime.call("mcp.good.echo", {"text": "before"})).text == "before"
            for _ in range(2):  # the second call meets whatever the first one left behind
                try:
                    result = await runtime.call("mcp.bad.echo", {"text": "x"})
                except ToolCallError as exc:
                    assert exc.reason in {
                        FailureReason.MCP_SERVER_UNAVAILABLE,
                        FailureReason.MCP_SERVER_RESTARTED,
                        FailureReason.MCP_SERVER_UNSTABLE,
                    }, exc
                    assert exc.details.get("code"), exc.details
                else:
                    assert kind in ("watcher", "emit"), "only these faults leave calls possible"
                    assert result.text == "x"
            assert (await runtime.call("mcp.good.echo", {"text": "after"})).text == "after"
            assert runtime.server_states()["good"] == "connected"
        # leaving the runtime raised nothing: the fault never reached its task group


async def test_a_fault_during_a_call_answers_mcp_server_unavailable_with_code_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "call")
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "unknown"
    events = [event["type"] for event in read_events(runtime.event_log_path)]
    assert events[-3:] == ["mcp.call.failed", "tool.failed", "mcp.server.shutdown"]


async def test_a_fault_in_the_watcher_is_a_crash_that_the_restart_policy_handles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "watcher")
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})

            def types() -> list[str]:
                return [event["type"] for event in read_events(runtime.event_log_path)]

            await wait_until(lambda: "mcp.server.restarting" in types())
    assert info.value.reason is FailureReason.MCP_SERVER_RESTARTED
    (crashed,) = [event for event in read_events(runtime.event_log_path) if event["type"] == "mcp.server.crashed"][:1]
    assert crashed["payload"]["willRestart"] is True


async def test_a_connect_fault_is_logged_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original_audit = ConnectorAccess.audit

    def audit(self: ConnectorAccess, note: Any, since: int) -> None:
        if note == "mcp_connect":
            raise ValueError("origin Authorization: Bearer sk-live-0123456789abcdefghij refused")
        original_audit(self, note, since)

    monkeypatch.setattr(ConnectorAccess, "audit", audit)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})
            assert runtime.server_states()["bad"] == "failed"
    assert info.value.details["code"] == "unknown"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "internal error" in logged and "ValueError" in logged
    assert "sk-live-0123456789abcdefghij" not in logged


def private_remote(url: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id="con_remote",
        name="remote",
        target=HttpTarget(url=url),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"allow_private": True},
    )


def docker_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve the Docker Compose service name ``mcp_server`` to 127.0.0.1, and no other name."""

    async def resolver(host: str, port: int) -> list[str]:
        if host == "mcp_server":
            return ["127.0.0.1"]
        raise OSError(f"{host} does not resolve in this test")

    monkeypatch.setattr(egress_module, "system_resolver", resolver)


async def test_an_underscore_host_connects_and_is_audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docker_names(monkeypatch)
    settings = Settings(home=tmp_path / "home")
    with http_fixture(tmp_path / "requests.jsonl") as port, anyio.fail_after(60):
        async with Runtime(
            config(tmp_path, private_remote(f"http://mcp_server:{port}/mcp")), settings=settings
        ) as runtime:
            assert (await runtime.call("mcp.remote.echo", {"text": "via a service name"})).text == "via a service name"
    assert {line["origin"] for line in audit_lines(settings.home)} == {f"http://mcp_server:{port}"}


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]:8080/mcp", "http://%31%32%37.0.0.1:18001/mcp"])
async def test_a_stored_url_with_a_zone_id_or_escaped_host_fails_its_connector_with_a_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    docker_names(monkeypatch)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("good"), private_remote(url)), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.remote.echo", {"text": "x"})
            assert (await runtime.call("mcp.good.echo", {"text": "still"})).text == "still"
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "network_blocked"


# -- one session's fault never reaches another session of the host --------------------------


def add_server(service: ConnectorService, name: str, workspace: Path) -> None:
    service.add(name, service.stdio_target(sys.executable, [LIFECYCLE], cwd=None, workspace=workspace))
    service.update_settings(name, approval_mode="allow_all")


async def test_a_connection_fault_in_one_session_leaves_other_sessions_of_the_host_serving(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "audit")
    first, second = tmp_path / "ws-a", tmp_path / "ws-b"
    first.mkdir()
    second.mkdir()
    add_server(service, "good", first)
    add_server(service, "bad", first)

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    with anyio.fail_after(90):
        async with SessionHost(service.settings, resolve=resolve) as host:
            a = await host.open(first.resolve())
            b = await host.open(second.resolve())
            assert (await host.call(b, "mcp.good.echo", {"text": "b1"})).text == "b1"
            with pytest.raises(ToolCallError) as info:
                await host.call(a, "mcp.bad.echo", {"text": "x"})
            assert info.value.details["code"] == "unknown"
            assert (await host.call(b, "mcp.good.echo", {"text": "b2"})).text == "b2"
            assert (await host.call(a, "mcp.good.echo", {"text": "a1"})).text == "a1"
            assert {info.session_id for info in host.sessions()} == {a, b}


async def test_a_hosted_session_reaches_an_underscore_host_and_the_other_forms_are_refused_at_add(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker_names(monkeypatch)
    workspace = tmp_path / "ws-docker"
    workspace.mkdir()
    for url in ("http://[fe80::1%25eth0]:8080/mcp", "http://%31%32%37.0.0.1:18001/mcp"):
        with pytest.raises(ConfigError) as refused:
            service.add("odd", service.remote_target(url))
        assert refused.value.code == "invalid_config"

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    with http_fixture(tmp_path / "requests.jsonl") as port:
        service.add(
            "docker",
            service.remote_target(f"http://mcp_server:{port}/mcp"),
            runtime_options={"allow_private": True},
        )
        service.update_settings("docker", approval_mode="allow_all")
        with anyio.fail_after(60):
            async with SessionHost(service.settings, resolve=resolve) as host:
                session = await host.open(workspace.resolve())
                assert (await host.call(session, "mcp.docker.echo", {"text": "hi"})).text == "hi"
