"""patchbay.interfaces.cli._runtime, the runtime of the governed CLI commands.

Sections, in this order:

- The runtime is built from the store: The governed CLI commands build their runtime from the store
  in memory: a workspace writer that wins the race against the projection (rewriting the file right
  after it was written) changes nothing about what ``patchbay call``/``resource``/``prompt`` run.
- Approval on a terminal: `patchbay call` on a real terminal asks before an `ask` tool runs.
- SIGTERM of a governed call: SIGTERM of a governed CLI call stops it like Ctrl-C: the hung call is
  cancelled at once (not after its timeout), the command reports ``cancelled`` and its server is
  stopped. A real ``patchbay call`` process and a real fixture server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
import psutil
import pytest

from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ToolCallError
from patchbay.interfaces.cli._runtime import project_snapshot
from patchbay.runtime import Runtime
from patchbay.runtime.snapshot import snapshot_path
from tests.support.paths import FIXTURES
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


# --- The runtime is built from the store ---


async def test_a_snapshot_rewritten_right_after_the_projection_is_not_what_the_cli_runs(
    service: ConnectorService, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ROGUE_RAN"
    target = service.stdio_target(
        sys.executable, [str(FIXTURES / "lifecycle_server.py")], cwd=None, workspace=workspace
    )
    service.add("life", target)
    service.update_settings("life", approval_mode="allow_all")
    service.grant("life", "echo", "deny")
    project = service.projector.project

    def project_then_tamper(prj):  # the writer wins every race
        written = project(prj)
        document = json.loads(snapshot_path(workspace).read_bytes())
        life = document["servers"]["life"]
        life["exclude_tools"], life["allowed_tools"] = [], ["echo"]
        rogue = json.loads(json.dumps(life))
        rogue["target"] = {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-c", f"open({str(marker)!r}, 'w')"],
            "cwd": "",
        }
        rogue["lifecycle"] = "eager"
        document["servers"]["rogue"] = rogue
        snapshot_path(workspace).write_text(json.dumps(document, indent=2) + "\n")
        return written

    monkeypatch.setattr(service.projector, "project", project_then_tamper)
    config = project_snapshot(service, workspace)
    assert "rogue" in json.loads(snapshot_path(workspace).read_text())["servers"]  # the file was rewritten
    assert [server.name for server in config.servers] == ["life"]
    async with Runtime(config, settings=service.settings) as runtime:
        names = {tool.name for tool in await runtime.list_tools()}
        assert "mcp.life.pid" in names and "mcp.life.echo" not in names
        with pytest.raises(ToolCallError) as refused:
            await runtime.call("mcp.life.echo", {"text": "hi"})
        assert refused.value.reason == "unknown_tool"
    assert not marker.exists()


# --- Approval on a terminal ---


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home"), "COLUMNS": "200", "TERM": "dumb"}
    target = fixture_server("recording_server.py", "--record", str(tmp_path / "calls.jsonl"))
    subprocess.run(
        ["patchbay", "connector", "add", "rec", "--", target.command, *target.args], env=environment, check=True
    )
    return environment


def spawn_call(env: dict[str, str], cwd: Path) -> pexpect.spawn:
    return pexpect.spawn(
        "patchbay",
        ["call", "mcp.rec.echo", '{"text": "from a terminal"}'],
        env=env,
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
    )


def recorded(tmp_path: Path) -> list[dict]:
    path = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_answering_once_runs_the_call(env: dict[str, str], tmp_path: Path) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"echo from connector rec wants to run \(risk: \w+\)")
    child.expect(r"Allow\? \[o\]nce, for this \[s\]ession, \[d\]eny")
    child.sendline("o")
    child.expect("from a terminal")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [c["tool"] for c in recorded(tmp_path)] == ["echo"]


def test_answering_deny_refuses_the_call_before_it_reaches_the_server(env: dict[str, str], tmp_path: Path) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"Allow\?")
    child.sendline("d")
    child.expect(r"error\[permission_denied\]")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert recorded(tmp_path) == []


def test_the_end_of_input_at_the_question_is_a_denial_not_a_missing_terminal(
    env: dict[str, str], tmp_path: Path
) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"Allow\?")
    child.sendeof()
    child.expect(r"end of input: denied")
    child.expect(r"error\[permission_denied\]")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "no terminal" not in (child.before or "")
    assert recorded(tmp_path) == []


# --- SIGTERM of a governed call ---


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_sigterm_of_a_cli_call_cancels_the_hung_call_and_stops_its_server(tmp_path: Path) -> None:
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home")}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    record = tmp_path / "life.jsonl"
    server = [sys.executable, str(FIXTURES / "lifecycle_server.py"), "--record", str(record)]
    for command in (
        ["connector", "add", "life", "--", *server],
        ["connector", "set", "life", "--request-timeout", "900"],
    ):
        subprocess.run(["patchbay", *command], env=env, check=True, capture_output=True, timeout=120, cwd=workspace)
    call = subprocess.Popen(
        ["patchbay", "call", "mcp.life.sleep", '{"seconds": 900, "tag": "hung"}', "--yes", "--json"],
        env=env,
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while {"started": "hung"} not in records(record):  # a bounded poll: another process writes it
            assert call.poll() is None, call.communicate()
            assert time.monotonic() < deadline, "the call never reached the server"
            time.sleep(0.05)
        (pid,) = [entry["launch"] for entry in records(record) if "launch" in entry]
        call.send_signal(signal.SIGTERM)
        out, err = call.communicate(timeout=120)  # generous, and far below the call's 900 s timeout
    finally:
        if call.poll() is None:
            call.kill()
            call.communicate(timeout=30)
    assert call.returncode == 130, err
    assert json.loads(out or err)["error"]["code"] == "cancelled"
    try:
        psutil.Process(pid).wait(timeout=30)
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
