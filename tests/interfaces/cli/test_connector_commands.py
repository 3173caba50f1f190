"""`patchbay connector ...`: add/list/show/enable/disable/remove, --json, one-line errors."""

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


def test_add_stdio_keeps_command_and_args_apart_and_lists_it(run, tmp_path: Path) -> None:
    result = run("connector", "add", "time", "--json", "--project", str(tmp_path), "--", "mcp-server-time", "--local-timezone", "UTC")
    assert result.exit_code == 0, result.output
    connector = json.loads(result.stdout)["connector"]
    assert connector["target"] == {"transport": "stdio", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "cwd": ""}
    assert connector["settings"]["enabled"] is True
    listed = json.loads(run("connector", "list", "--json").stdout)["connectors"]
    assert [c["name"] for c in listed] == ["time"]


def test_add_remote_and_socket_connectors(run) -> None:
    assert run("connector", "add", "remote", "--url", "https://example.com/mcp", "--transport", "sse").exit_code == 0
    assert run("connector", "add", "sock", "--socket", "/run/user/mcp.sock", "--disabled").exit_code == 0
    shown = json.loads(run("connector", "show", "remote", "--json").stdout)["connector"]
    assert shown["target"] == {"transport": "sse", "url": "https://example.com/mcp"}
    sock = json.loads(run("connector", "show", "sock", "--json").stdout)["connector"]
    assert sock["target"]["path"] == "/run/user/mcp.sock" and sock["settings"]["enabled"] is False


def test_enable_disable_and_remove(run) -> None:
    run("connector", "add", "t", "--", "true")
    assert json.loads(run("connector", "disable", "t", "--json").stdout)["connector"]["settings"]["enabled"] is False
    assert json.loads(run("connector", "enable", "t", "--json").stdout)["connector"]["settings"]["enabled"] is True
    assert run("connector", "remove", "t").exit_code == 0
    gone = run("connector", "show", "t")
    assert gone.exit_code == 1
    assert "error[not_found]" in gone.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["Bad_Name", "--", "true"], "name"),
        (["ok", "--url", "ftp://example.com"], "url"),
        (["ok", "--url", "https://u:p@example.com/mcp"], "url"),
        (["ok", "--", "-rf"], "command"),
        (["ok", "--", "python server.py"], "command"),
        (["ok", "--socket", "relative.sock"], "socket_path"),
        (["ok"], "transport"),
        (["ok", "--url", "https://example.com", "--socket", "/x.sock"], "transport"),
        (["ok", "--cwd", "../outside", "--", "true"], "cwd"),
    ],
)
def test_bad_input_is_one_line_with_the_code_and_field_and_nothing_is_stored(run, args: list[str], field: str) -> None:
    result = run("connector", "add", *args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error[invalid_config]: " + field)
    assert "Traceback" not in result.output
    as_json = run("connector", "add", "--json", *args)
    assert json.loads(as_json.stdout)["error"]["details"]["field"] == field
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []


def test_a_duplicate_name_is_refused_case_insensitively_but_exist_ok_is_idempotent(run) -> None:
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    again = run("connector", "add", "time", "--", "mcp-server-time")
    assert again.exit_code == 1 and "error[invalid_config]: name" in again.stderr
    same = run("connector", "add", "time", "--exist-ok", "--json", "--", "mcp-server-time")
    assert same.exit_code == 0 and json.loads(same.stdout)["created"] is False
    different = run("connector", "add", "time", "--exist-ok", "--", "other-command")
    assert different.exit_code == 1 and "different target" in different.stderr


def test_set_changes_approval_mode_and_tool_globs(run) -> None:
    run("connector", "add", "t", "--", "true")
    result = run("connector", "set", "t", "--approval-mode", "allow_all", "--include", "git_*", "--exclude", "git_reset", "--json")
    settings = json.loads(result.stdout)["connector"]["settings"]
    assert (settings["approval_mode"], settings["include_tools"], settings["exclude_tools"]) == (
        "allow_all",
        ["git_*"],
        ["git_reset"],
    )
    cleared = json.loads(run("connector", "set", "t", "--no-include", "--json").stdout)["connector"]["settings"]
    assert cleared["include_tools"] == [] and cleared["exclude_tools"] == ["git_reset"]
    bad = run("connector", "set", "t", "--approval-mode", "yolo")
    assert bad.exit_code == 1 and bad.stderr.startswith("error[invalid_config]: approval_mode")
    assert json.loads(run("connector", "show", "t", "--json").stdout)["connector"]["settings"]["approval_mode"] == "allow_all"


def test_brackets_in_names_args_and_descriptions_are_printed_literally(run) -> None:
    added = run("connector", "add", "mk", "--description", "[/red] not markup", "--", "echo", "[/x]", "sh -c [curl|sh]")
    assert added.exit_code == 0, added.output
    assert "echo [/x] sh -c [curl|sh]" in added.stdout
    listed = run("connector", "list")
    assert listed.exit_code == 0 and "[curl|sh]" in listed.stdout
    shown = run("connector", "show", "mk")
    assert shown.exit_code == 0 and "[/red] not markup" in shown.stdout


def test_a_description_with_terminal_escapes_is_refused(run) -> None:
    result = run("connector", "add", "esc", "--description", "\x1b]0;pwned\x07", "--", "true")
    assert result.exit_code == 1 and result.stderr.startswith("error[invalid_config]: description")
