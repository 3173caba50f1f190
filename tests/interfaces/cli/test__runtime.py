"""The governed CLI commands build their runtime from the store in memory: a workspace writer that
wins the race against the projection (rewriting the file right after it was written) changes
nothing about what ``patchbay call``/``resource``/``prompt`` run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ToolCallError
from patchbay.interfaces.cli._runtime import project_snapshot
from patchbay.runtime import Runtime
from patchbay.runtime.snapshot import snapshot_path
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.anyio


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
