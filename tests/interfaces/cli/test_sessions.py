"""`patchbay sessions`: recent sessions newest first, from the session logs of the data home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app


@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str):
        return runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)

    return invoke


def _session_of(stderr: str) -> str:
    return stderr.split("patchbay events ")[-1].split()[0]


def test_sessions_lists_each_calls_session_newest_first_with_its_workspace_and_calls(run, tmp_path: Path) -> None:
    empty = run("sessions")
    assert empty.exit_code == 0 and "no sessions yet" in empty.stdout
    assert json.loads(run("sessions", "--json").stdout) == {"sessions": []}

    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    assert run("probe", "time", "--project", str(workspace)).exit_code == 0
    first = run("call", "mcp.time.get_current_time", '{"timezone": "UTC"}', "--yes", "--project", str(workspace))
    assert first.exit_code == 0, first.output
    second = run("call", "mcp.time.no_such_tool", "{}", "--project", str(workspace))
    assert second.exit_code == 1
    older, newer = _session_of(first.stderr), _session_of(second.stderr)

    listed = json.loads(run("sessions", "--json").stdout)["sessions"]
    assert [s["session_id"] for s in listed] == [newer, older]
    top = listed[1]
    assert top["workspace"] == str(workspace.resolve()) and top["project_id"].startswith("prj_")
    assert top["calls"] == 1 and top["events"] >= 7
    assert top["started_at"] <= top["last_event_at"]
    events = json.loads(run("events", older, "--json").stdout)["events"]
    assert top["last_event_at"] == events[-1]["ts"] and top["events"] == events[-1]["seq"]

    assert [s["session_id"] for s in json.loads(run("sessions", "--limit", "1", "--json").stdout)["sessions"]] == [
        newer
    ]
    text = run("sessions").stdout
    assert older in text and newer in text and text.index(newer) < text.index(older)
    assert run("sessions", "--limit", "0").exit_code != 0
