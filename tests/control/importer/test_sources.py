"""The files an import can read, listed for the settings page's picker: the standard locations,
then the host files, each with whether it exists; nothing is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbay.control.importer import list_sources
from patchbay.core.errors import ConfigError


def test_every_standard_location_then_every_host_file_is_listed_with_whether_it_exists(
    workspace: Path, home: Path
) -> None:
    (workspace / ".mcp.json").write_text("not even json")  # listed, never read
    (home / ".claude.json").write_text("{}")
    listed = list_sources(workspace=workspace, home=home)
    assert listed.workspace == str(workspace)
    standard = [f for f in listed.files if f.kind == "standard"]
    hosts = {f.select: f for f in listed.files if f.kind == "host"}
    assert [f.path for f in standard][:2] == [str(workspace / ".mcp.json"), str(workspace / ".pi/mcp.json")]
    assert [f.exists for f in standard] == [True, False, False, False, False, False, False]
    assert all(f.select == f.path for f in standard)
    assert set(hosts) == {"claude-desktop", "claude-code", "cursor", "vscode"}
    assert hosts["claude-code"].exists and hosts["claude-code"].path == str(home / ".claude.json")
    assert hosts["claude-code"].host == "claude_code" and not hosts["cursor"].exists


def test_a_directory_or_a_fifo_is_not_a_file_that_exists(workspace: Path, home: Path) -> None:
    (workspace / ".mcp.json").mkdir()
    os.mkfifo(home / ".claude.json")
    listed = {f.select: f for f in list_sources(workspace=workspace, home=home).files}
    assert not listed[str(workspace / ".mcp.json")].exists and not listed["claude-code"].exists


def test_a_host_file_that_is_also_a_standard_location_is_listed_once(home: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor/mcp.json").write_text("{}")
    files = list_sources(workspace=home, home=home).files
    assert [f.kind for f in files if f.path == str(home / ".cursor/mcp.json")] == ["standard"]
    assert "cursor" not in {f.select for f in files}


def test_a_workspace_that_is_no_directory_is_refused(tmp_path: Path, home: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        list_sources(workspace=tmp_path / "nowhere", home=home)
    assert caught.value.details["field"] == "project"
