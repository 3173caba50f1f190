"""patchbay.runtime.sessions.host, the SessionHost.

Sections, in this order:

- Session runtimes and their reload: Long-lived session runtimes and their reload after a committed
  change (seed 003 §10.5, §15), driven through the real control plane (ConnectorService → projection
  → on_committed → SessionHost) against a real stdio fixture server
  (tests/fixtures/lifecycle_server.py).
- The boundary with the control plane: The boundary between the control plane and hosted session
  runtimes: a workspace writer cannot change what a session runs (in-memory projection, or a
  verified snapshot), changes committed by another control plane reach open sessions before their
  next call (the store's change counter), and the connectors' lifecycle survives the projection.
  Against tests/fixtures/lifecycle_server.py."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import psutil
import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, ErrorCode, FailureReason, NotFoundError, PatchbayError, ToolCallError
from patchbay.core.models import Project
from patchbay.runtime import snapshot as snapshot_module
from patchbay.runtime.calls.permissions import ApprovalRequest
from patchbay.runtime.events.log import read_events, session_log_path
from patchbay.runtime.sessions import SessionHost, collect_reloads
from patchbay.runtime.snapshot import snapshot_path
from tests.support.paths import FIXTURES
from tests.support.processes import assert_group_gone
from tests.support.snapshots import rogue_server, write_sealed_snapshot
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


# --- Session runtimes and their reload ---

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")


def add_server(service: ConnectorService, name: str, workspace: Path, *args: str, **kwargs: Any) -> None:
    target = service.stdio_target(sys.executable, [LIFECYCLE, *args], cwd=None, workspace=workspace)
    service.add(name, target, **kwargs)
    service.update_settings(name, approval_mode="allow_all")


def host_for(service: ConnectorService, **kwargs: Any) -> SessionHost:
    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    return SessionHost(service.settings, resolve=resolve, **kwargs)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def tool_names(host: SessionHost, session: str) -> set[str]:
    return {tool.name for tool in await host.list_tools(session)}


async def pid_of(host: SessionHost, session: str, connector: str = "life") -> int:
    return int((await host.call(session, f"mcp.{connector}.pid")).text)


# -- idle: rebuilt at once ------------------------------------------------------------------


async def test_an_idle_session_is_rebuilt_at_once_from_the_new_snapshot(
    service: ConnectorService, workspace: Path
) -> None:
    add_server(service, "life", workspace)
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)
            assert {"mcp.life.echo", "mcp.life.pid"} <= await tool_names(host, session)
            first = await pid_of(host, session)

            with collect_reloads() as reloads:
                service.grant("life", "echo", "deny")  # committed → re-projected → reloaded
            outcome = await reloads.wait()
            assert [(s.session_id, s.status, s.error) for s in outcome.sessions] == [(session, "reloaded", None)]
            assert (
                outcome.code is None and outcome.sessions[0].project_id == service.queries.project(workspace).project_id
            )
            assert host.session(session).state == "ready" and host.session(session).builds == 2
            await wait_until(lambda: gone(first))  # the old runtime's server stopped with it

            names = await tool_names(host, session)
            assert "mcp.life.echo" not in names and "mcp.life.pid" in names
            with pytest.raises(ToolCallError) as denied:
                await host.call(session, "mcp.life.echo", {"text": "hi"})
            assert denied.value.reason is FailureReason.UNKNOWN_TOOL
            assert await pid_of(host, session) != first

            with collect_reloads() as reloads:
                add_server(service, "second", workspace)  # two mutations: add, then settings
            assert [s.status for s in (await reloads.wait()).sessions] == ["reloaded"]
            assert "mcp.second.echo" in await tool_names(host, session)
            assert (await host.call(session, "mcp.second.echo", {"text": "new"})).text == "new"
    # One event log across the rebuilds, seq strictly increasing from 1.
    seqs = [e["seq"] for e in read_events(session_log_path(service.settings.sessions_dir, session))]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 10


async def test_a_project_grant_reloads_only_that_projects_sessions(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    add_server(service, "life", workspace)
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            mine, theirs = await host.open(workspace), await host.open(other)
            with collect_reloads() as reloads:
                service.grant("life", "echo", "deny", project=workspace)
            outcome = await reloads.wait()
            assert [(s.session_id, s.status) for s in outcome.sessions] == [(mine, "reloaded")]
            assert (host.session(mine).builds, host.session(theirs).builds) == (2, 1)
            assert "mcp.life.echo" not in await tool_names(host, mine)
            assert "mcp.life.echo" in await tool_names(host, theirs)


# -- busy: restart_pending, rebuilt when the call ends --------------------------------------


async def test_a_busy_session_is_marked_restart_pending_and_rebuilt_when_its_call_ends(
    service: ConnectorService, workspace: Path
) -> None:
    add_server(service, "life", workspace)
    service.grant("life", "echo", "ask")
    asked, release = anyio.Event(), anyio.Event()

    async def approver(request: ApprovalRequest) -> str:
        asked.set()
        await release.wait()  # the call stays in flight until the test lets it go
        return "allow_once"

    outcomes: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace, approver=approver)
            first = await pid_of(host, session)

            async def held() -> None:
                outcomes["held"] = await host.call(session, "mcp.life.echo", {"text": "held"})

            async def after() -> None:
                outcomes["after"] = await pid_of(host, session)

            async with anyio.create_task_group() as group:
                group.start_soon(held)
                await asked.wait()
                assert host.session(session).in_flight == 1

                with collect_reloads() as reloads:
                    service.grant("life", "echo", "deny")
                outcome = await reloads.wait()
                assert [(s.session_id, s.status) for s in outcome.sessions] == [(session, "pending")]
                assert outcome.code is None
                info = host.session(session)
                assert (info.state, info.builds) == ("restart_pending", 1)
                assert not gone(first)  # not interrupted: the old runtime still runs

                group.start_soon(after)  # a call made now waits for the rebuild
                await anyio.wait_all_tasks_blocked()
                assert "after" not in outcomes
                release.set()

            # The held call completed on the old runtime (which still allowed echo) ...
            assert outcomes["held"].text == "held"
            # ... then the session was rebuilt: the waiting call ran on the new one.
            assert outcomes["after"] != first
            assert (host.session(session).state, host.session(session).builds) == ("ready", 2)
            await wait_until(lambda: gone(first))
            with pytest.raises(ToolCallError) as denied:
                await host.call(session, "mcp.life.echo", {"text": "again"})
            assert denied.value.reason is FailureReason.UNKNOWN_TOOL
    failed = [
        e for e in read_events(session_log_path(service.settings.sessions_dir, session)) if e["type"] == "tool.failed"
    ]
    assert [e["payload"]["reason"] for e in failed] == ["unknown_tool"]  # the held call never failed


async def test_a_call_running_in_the_server_is_not_interrupted_by_a_reload(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "record.jsonl"
    add_server(service, "life", workspace, "--record", str(log))
    outcomes: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)

            async def slow() -> None:
                outcomes["slow"] = await host.call(session, "mcp.life.sleep", {"seconds": 3, "tag": "busy"})

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await wait_until(lambda: {"started": "busy"} in records(log))
                with collect_reloads() as reloads:
                    service.update_settings("life", exclude_tools=["sleep"])
                assert [s.status for s in (await reloads.wait()).sessions] == ["pending"]
            assert outcomes["slow"].text == "slept"
            assert {"cancelled": "busy"} not in records(log)
            launches = [entry["launch"] for entry in records(log) if "launch" in entry]
            await wait_until(lambda: host.session(session).builds == 2)
            assert "mcp.life.sleep" not in await tool_names(host, session)
            assert len([entry for entry in records(log) if "launch" in entry]) == len(launches) + 1


# -- failed: the change stays committed, the session serves nothing -------------------------


async def test_a_failed_rebuild_keeps_the_committed_state_and_reports_runtime_reload_failed(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    add_server(service, "life", workspace)
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)
            first = await pid_of(host, session)
            # The workspace's .patchbay becomes a symlink: the projection refuses to write through
            # it, so the snapshot would be stale.
            elsewhere = tmp_path / "elsewhere"
            shutil.move(workspace / ".patchbay", elsewhere)
            os.symlink(elsewhere, workspace / ".patchbay")

            with collect_reloads() as reloads:
                service.update_settings("life", exclude_tools=["echo"])
            outcome = await reloads.wait()
            assert outcome.code == ErrorCode.RUNTIME_RELOAD_FAILED
            assert [(s.session_id, s.status) for s in outcome.failed] == [(session, "failed")]
            assert outcome.failed[0].error["code"] == "invalid_config"
            assert outcome.to_dict()["code"] == "runtime_reload_failed"
            # Committed all the same (seed 003 §10.5 step 7, §15): nothing was rolled back.
            assert service.get("life").settings.exclude_tools == ("echo",)
            # Fail closed: the old runtime (which still exposed echo) no longer serves.
            assert host.session(session).state == "failed"
            await wait_until(lambda: gone(first))
            with pytest.raises(ToolCallError) as failure:
                await host.call(session, "mcp.life.echo", {"text": "stale?"})
            assert failure.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
            assert failure.value.details["code"] == "runtime_reload_failed"

            # Repaired: the next committed change re-projects and the session serves again.
            os.unlink(workspace / ".patchbay")
            with collect_reloads() as reloads:
                service.grant("life", "pid", "allow")
            assert [s.status for s in (await reloads.wait()).sessions] == ["reloaded"]
            assert host.session(session).state == "ready"
            names = await tool_names(host, session)
            assert "mcp.life.pid" in names and "mcp.life.echo" not in names


@pytest.mark.parametrize("damage", ["another project", "older file put back", "unsigned rewrite"])
async def test_a_snapshot_that_cannot_be_loaded_fails_the_rebuild(
    service: ConnectorService, workspace: Path, damage: str
) -> None:
    add_server(service, "life", workspace)
    with anyio.fail_after(60):
        async with host_for(service) as host:
            session = await host.open(workspace)
            document = json.loads(snapshot_path(workspace).read_text())
            project_id = service.queries.project(workspace).project_id
            if damage == "unsigned rewrite":  # what a workspace writer without the key can do
                document.pop("mac")
                snapshot_path(workspace).write_text(json.dumps(document))
            elif damage == "older file put back":  # sealed, but from before a later projection
                older = snapshot_path(workspace).read_bytes()
                service.grant("life", "echo", "deny")
                snapshot_path(workspace).write_bytes(older)
            else:
                document["project_id"] = "prj_0000000000000000"
                write_sealed_snapshot(workspace, document, home=service.settings.home, project_id=project_id)

            outcome = await host.reload()
            assert [(s.session_id, s.status) for s in outcome.sessions] == [(session, "failed")]
            assert outcome.code == ErrorCode.RUNTIME_RELOAD_FAILED
            error = outcome.sessions[0].error
            assert error["code"] == "invalid_config"
            expected = {
                "another project": "project_id",
                "older file put back": "snapshot",
                "unsigned rewrite": "snapshot",
            }
            assert error["details"]["field"] == expected[damage]
            assert host.session(session).error == error
            with pytest.raises(ToolCallError):
                await host.call(session, "mcp.life.pid")

            service.projector.project(service.queries.project(workspace))  # a good snapshot again
            assert [
                s.status for s in (await host.reload([service.queries.project(workspace).project_id])).sessions
            ] == ["reloaded"]
            assert await pid_of(host, session) > 0


async def test_opening_a_workspace_without_a_usable_snapshot_fails_and_leaves_no_session(
    service: ConnectorService, workspace: Path
) -> None:
    host = SessionHost(service.settings, resolve=service.queries.project)  # resolves, never projects
    with anyio.fail_after(30):
        async with host:
            with pytest.raises(NotFoundError):
                await host.open(workspace)
            assert host.sessions() == []


# -- closing ------------------------------------------------------------------------------------


async def test_closing_a_session_cancels_its_call_and_closing_the_host_leaves_no_process(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    log = tmp_path / "record.jsonl"
    add_server(
        service, "life", workspace, "--spawn-child", "--record", str(log), runtime_options={"lifecycle": "eager"}
    )
    outcomes: dict[str, BaseException] = {}
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            first, second = await host.open(workspace), await host.open(other)
            groups = [os.getpgid(await pid_of(host, s)) for s in (first, second)]

            async def doomed() -> None:
                with pytest.raises(ToolCallError) as info:
                    await host.call(first, "mcp.life.sleep", {"seconds": 60, "tag": "doomed"})
                outcomes["doomed"] = info.value

            async with anyio.create_task_group() as group:
                group.start_soon(doomed)
                await wait_until(lambda: {"started": "doomed"} in records(log))
                await host.close(first)
            assert outcomes["doomed"].reason is FailureReason.CANCELLED
            assert [s.session_id for s in host.sessions()] == [second]
            with pytest.raises(NotFoundError):
                await host.call(first, "mcp.life.pid")
            assert_group_gone(groups[0])
        # host closed: the remaining session's server and its grandchild are gone too
        assert_group_gone(groups[1])
        assert host.sessions() == []
        # A change committed after the host closed reloads nothing and breaks nothing.
        with collect_reloads() as reloads:
            service.grant("life", "echo", "deny")
        assert reloads.result().sessions == ()


async def test_a_reload_from_a_worker_thread_waits_for_the_result(service: ConnectorService, workspace: Path) -> None:
    """The API's sync routes mutate in worker threads: the listener schedules the reload on the
    host's loop, and the route blocks on the result."""
    add_server(service, "life", workspace)
    with anyio.fail_after(60):
        async with host_for(service) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)

            def route() -> Any:
                with collect_reloads() as reloads:
                    service.update_settings("life", exclude_tools=["echo"])
                return reloads.result(timeout=30)

            outcome = await anyio.to_thread.run_sync(route)
            assert [(s.session_id, s.status) for s in outcome.sessions] == [(session, "reloaded")]
            with pytest.raises(RuntimeError):  # blocking on the loop's own thread would deadlock
                with collect_reloads() as reloads:
                    service.update_settings("life", exclude_tools=[])
                reloads.result()
            assert [s.status for s in (await reloads.wait()).sessions] == ["reloaded"]


async def test_a_failing_listener_never_undoes_the_committed_change(service: ConnectorService, workspace: Path) -> None:
    add_server(service, "life", workspace)

    def broken(project_id: str | None, report: object) -> None:
        raise PatchbayError("listener exploded")

    remove = service.on_committed(broken)
    service.grant("life", "echo", "deny")
    assert service.repository.grants.list_global(service.get("life").connector_id)[0].decision == "deny"
    remove()
    assert service._committed == []


# --- The boundary with the control plane ---

LOADERS = ["in memory", "verified file"]


def served_host_for(service: ConnectorService, loader: str = "in memory", **kwargs: Any) -> SessionHost:
    """A host as ``serve`` builds it (``in memory``), or one that loads the workspace file."""

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    if loader == "in memory":
        kwargs.setdefault("load", service.projector.runtime_config)
    return SessionHost(service.settings, resolve=resolve, **kwargs)


def launches(path: Path) -> list[int]:
    return [entry["launch"] for entry in records(path) if "launch" in entry]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def tamper(workspace: Path, marker: Path) -> None:
    """What a workspace writer does (it has no key): lift the deny of ``echo`` and add a server,
    keeping the control plane's old ``mac`` member."""
    document = json.loads(snapshot_path(workspace).read_bytes())
    document["servers"]["life"]["exclude_tools"] = []
    document["servers"]["life"]["allowed_tools"] = ["echo"]
    document["servers"]["rogue"] = rogue_server(marker)
    document["mac"] = document.pop("mac")  # still the last member
    snapshot_path(workspace).write_text(json.dumps(document, indent=2) + "\n")


@pytest.mark.parametrize("loader", LOADERS)
async def test_an_entry_that_fails_its_checks_is_left_out_with_a_warning_and_the_others_run(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    add_server(service, "life", workspace)
    add_server(service, "bad", workspace, "--marked")
    real = snapshot_module.validate_stdio_target

    def stricter(command: str, args: Any, cwd: Any) -> Any:  # a rule added after "bad" was stored
        if "--marked" in args:
            raise ConfigError("args", "an argument looks like a secret")
        return real(command, args, cwd)

    monkeypatch.setattr(snapshot_module, "validate_stdio_target", stricter)
    with anyio.fail_after(60):
        async with served_host_for(service, loader) as host:
            session = await host.open(workspace)
            assert "mcp.life.echo" in await tool_names(host, session)
            assert host.session(session).warnings == (
                {"server": "bad", "field": "servers.bad.args", "message": "an argument looks like a secret"},
            )
    events = read_events(session_log_path(service.settings.sessions_dir, session))
    (rejected,) = [e for e in events if e["type"] == "mcp.server.permanently_failed"]
    assert rejected["payload"] == {
        "server": "bad",
        "reason": "invalid_config",
        "field": "servers.bad.args",
        "message": "an argument looks like a secret",
    }


# -- a workspace writer ------------------------------------------------------------------------


@pytest.mark.parametrize("loader", LOADERS)
async def test_a_snapshot_rewritten_during_a_pending_rebuild_lifts_no_deny_and_starts_no_server(
    service: ConnectorService, workspace: Path, tmp_path: Path, loader: str
) -> None:
    """The attack sequence: a global deny; a call in flight; an unrelated change (the session is
    restart_pending); the workspace file rewritten once; the call ends and the session rebuilds."""
    log, marker = tmp_path / "record.jsonl", tmp_path / "ROGUE_RAN"
    add_server(service, "life", workspace, "--record", str(log))
    service.grant("life", "echo", "deny")
    outcomes: dict[str, Any] = {}
    with anyio.fail_after(90):
        async with served_host_for(service, loader) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)
            assert "mcp.life.echo" not in await tool_names(host, session)

            async def slow() -> None:
                outcomes["slow"] = await host.call(session, "mcp.life.sleep", {"seconds": 2, "tag": "busy"})

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await wait_until(lambda: {"started": "busy"} in records(log))
                with collect_reloads() as reloads:
                    service.grant("life", "pid", "allow")  # unrelated: re-projects, pending
                assert [s.status for s in (await reloads.wait()).sessions] == ["pending"]
                tamper(workspace, marker)
            assert outcomes["slow"].text == "slept"
            await wait_until(lambda: host.session(session).builds == 2 or host.session(session).state == "failed")

            if loader == "in memory":  # the file is never read: the session serves what was committed
                assert host.session(session).state == "ready"
                names = await tool_names(host, session)
                assert "mcp.life.pid" in names and "mcp.life.echo" not in names
                assert not any(name.startswith("mcp.rogue.") for name in names)
                for tool in ("mcp.life.echo", "mcp.rogue.echo"):
                    with pytest.raises(ToolCallError) as refused:
                        await host.call(session, tool, {"text": "hi"})
                    assert refused.value.reason is FailureReason.UNKNOWN_TOOL
            else:  # the file does not verify: the rebuild fails closed, nothing in it starts
                info = host.session(session)
                assert info.state == "failed" and info.error is not None
                assert (info.error["code"], info.error["details"]["field"]) == ("invalid_config", "snapshot")
                with pytest.raises(ToolCallError) as refused:
                    await host.call(session, "mcp.life.echo", {"text": "hi"})
                assert refused.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert not marker.exists()


@pytest.mark.parametrize("loader", LOADERS)
async def test_a_racing_writer_never_gets_its_snapshot_used(
    service: ConnectorService, workspace: Path, tmp_path: Path, loader: str
) -> None:
    """A writer loop rewrites the file while committed changes rebuild the idle session again and
    again: each rebuild serves the committed state or (file) fails closed, never the writer's."""
    marker = tmp_path / "ROGUE_RAN"
    add_server(service, "life", workspace)
    service.grant("life", "echo", "deny")
    stop = threading.Event()
    rewrites = 0

    def writer() -> None:
        nonlocal rewrites
        while not stop.is_set():
            try:
                tamper(workspace, marker)
                rewrites += 1
            except (OSError, ValueError, KeyError):
                pass  # caught the file mid-replace by the projector: try again

    with anyio.fail_after(180):
        async with served_host_for(service, loader) as host:
            service.on_committed(host.committed)
            session = await host.open(workspace)
            thread = threading.Thread(target=writer, daemon=True)
            thread.start()
            try:
                statuses = []
                for round_ in range(12):
                    with collect_reloads() as reloads:
                        service.grant("life", "pid", "allow" if round_ % 2 else "ask")
                    (outcome,) = (await reloads.wait()).sessions
                    statuses.append(outcome.status)
                    if host.session(session).state == "ready":
                        names = await tool_names(host, session)
                        assert "mcp.life.echo" not in names and not any(n.startswith("mcp.rogue.") for n in names)
                        with pytest.raises(ToolCallError) as refused:
                            await host.call(session, "mcp.life.echo", {"text": "hi"})
                        assert refused.value.reason is FailureReason.UNKNOWN_TOOL
            finally:
                stop.set()
                thread.join(timeout=30)
            assert rewrites > 0
            if loader == "in memory":
                assert statuses == ["reloaded"] * 12
            else:
                assert set(statuses) <= {"reloaded", "failed"}
    assert not marker.exists()


# -- changes committed by another control plane -------------------------------------------------


async def test_a_change_committed_by_another_control_plane_reaches_the_session_before_its_next_call(
    service: ConnectorService, workspace: Path
) -> None:
    """The other control plane has its own engine and no listener into this host (as the CLI or
    a second ``serve``): the store's change counter is what tells the host."""
    add_server(service, "life", workspace)
    service.update_settings("life", approval_mode="ask")
    service.grant("life", "pid", "allow")
    other = ConnectorService(open_store(service.settings), service.settings)
    try:
        with anyio.fail_after(90):
            async with served_host_for(
                service, state_version=partial(anyio.to_thread.run_sync, service.repository.state_version)
            ) as host:
                service.on_committed(host.committed)
                session = await host.open(workspace)
                with pytest.raises(ToolCallError) as asked:  # ask, and no approver
                    await host.call(session, "mcp.life.echo", {"text": "hi"})
                assert asked.value.reason is FailureReason.APPROVAL_UNAVAILABLE

                other.grant("life", "echo", "allow")
                assert (await host.call(session, "mcp.life.echo", {"text": "allowed"})).text == "allowed"
                assert host.session(session).builds == 2

                other.grant("life", "echo", "deny")
                assert "mcp.life.echo" not in await tool_names(host, session)
                with pytest.raises(ToolCallError) as denied:
                    await host.call(session, "mcp.life.echo", {"text": "denied?"})
                assert denied.value.reason is FailureReason.UNKNOWN_TOOL
                builds = host.session(session).builds
                assert builds == 3
                await host.call(session, "mcp.life.pid")  # nothing changed since: no rebuild
                assert host.session(session).builds == builds

                other.remove("life")  # a delete moves the counter too
                with pytest.raises(ToolCallError) as removed:
                    await host.call(session, "mcp.life.pid")
                assert removed.value.reason is FailureReason.UNKNOWN_TOOL
    finally:
        other.repository.close()


# -- lifecycle ----------------------------------------------------------------------------------


async def test_an_eager_connector_is_connected_when_the_session_opens(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "record.jsonl"
    add_server(service, "life", workspace, "--record", str(log), runtime_options={"lifecycle": "eager"})
    with anyio.fail_after(60):
        async with served_host_for(service) as host:
            session = await host.open(workspace)
            await wait_until(lambda: len(launches(log)) == 1)  # before any call
            (pid,) = launches(log)
            assert int((await host.call(session, "mcp.life.pid")).text) == pid


async def test_a_keep_alive_connection_is_not_closed_for_idleness(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    kept, lazy = tmp_path / "kept.jsonl", tmp_path / "lazy.jsonl"
    idle = {"idle_timeout": 0.2}
    add_server(service, "kept", workspace, "--record", str(kept), runtime_options={"lifecycle": "keep_alive", **idle})
    add_server(service, "lazy", workspace, "--record", str(lazy), runtime_options=idle)
    with anyio.fail_after(60):
        async with served_host_for(service) as host:
            session = await host.open(workspace)
            await wait_until(lambda: len(launches(kept)) == 1)  # connected at start, no call yet
            assert launches(lazy) == []
            lazy_pid = int((await host.call(session, "mcp.lazy.pid")).text)
            kept_pid = int((await host.call(session, "mcp.kept.pid")).text)
            await wait_until(lambda: not alive(lazy_pid))  # the lazy one was closed for idleness ...
            assert alive(kept_pid)  # ... over the same idle time, the keep_alive one was not
            assert int((await host.call(session, "mcp.kept.pid")).text) == kept_pid
            assert launches(kept) == [kept_pid]
