"""The boundary between the control plane and hosted session runtimes: a workspace writer cannot
change what a session runs (in-memory projection, or a verified snapshot), changes committed by
another control plane reach open sessions before their next call (the store's change counter),
and the connectors' lifecycle survives the projection. Against tests/fixtures/lifecycle_server.py."""

from __future__ import annotations

import json
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
from patchbay.core.errors import FailureReason, ToolCallError
from patchbay.core.models import Project
from patchbay.runtime.sessions import SessionHost, collect_reloads
from patchbay.runtime.snapshot import snapshot_path
from tests.support.paths import FIXTURES
from tests.support.snapshots import rogue_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")
LOADERS = ["in memory", "verified file"]


def add_server(service: ConnectorService, name: str, workspace: Path, *args: str, **kwargs: Any) -> None:
    target = service.stdio_target(sys.executable, [LIFECYCLE, *args], cwd=None, workspace=workspace)
    service.add(name, target, **kwargs)
    service.update_settings(name, approval_mode="allow_all")


def host_for(service: ConnectorService, loader: str = "in memory", **kwargs: Any) -> SessionHost:
    """A host as ``serve`` builds it (``in memory``), or one that loads the workspace file."""

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    if loader == "in memory":
        kwargs.setdefault("load", service.projector.runtime_config)
    return SessionHost(service.settings, resolve=resolve, **kwargs)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


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


async def tool_names(host: SessionHost, session: str) -> set[str]:
    return {tool.name for tool in await host.list_tools(session)}


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
        async with host_for(service, loader) as host:
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
        async with host_for(service, loader) as host:
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
            async with host_for(
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
        async with host_for(service) as host:
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
        async with host_for(service) as host:
            session = await host.open(workspace)
            await wait_until(lambda: len(launches(kept)) == 1)  # connected at start, no call yet
            assert launches(lazy) == []
            lazy_pid = int((await host.call(session, "mcp.lazy.pid")).text)
            kept_pid = int((await host.call(session, "mcp.kept.pid")).text)
            await wait_until(lambda: not alive(lazy_pid))  # the lazy one was closed for idleness ...
            assert alive(kept_pid)  # ... over the same idle time, the keep_alive one was not
            assert int((await host.call(session, "mcp.kept.pid")).text) == kept_pid
            assert launches(kept) == [kept_pid]
