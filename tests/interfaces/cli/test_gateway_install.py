"""``patchbay gateway install|uninstall``: preview, confirmation, backup, JSON output, and an entry
that really starts the governed gateway when a host spawns it (the official SDK client as host, a
real ``mcp-server-time`` behind it)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from patchbay.control.gateway_install import GATEWAY_HOSTS
from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.interfaces.cli import app
from patchbay.interfaces.cli.gateway_install import _HOST_HELP

ORIGINAL = """{
  // the servers I had before
  "servers": {
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
  },
  "inputs": []
}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / ".vscode").mkdir(parents=True)
    (path / ".vscode" / "mcp.json").write_text(ORIGINAL)
    return path


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    monkeypatch.setenv("PATCHBAY_BUILTINS", "off")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--home", str(tmp_path / "home"), *args], catch_exceptions=False)

    return run


def test_the_help_names_every_host() -> None:
    assert _HOST_HELP == f"The MCP host: {', '.join(GATEWAY_HOSTS)}."


def test_without_yes_the_change_is_previewed_and_refused_and_dry_run_writes_nothing(
    invoke: Callable[..., Any], workspace: Path
) -> None:
    refused = invoke("gateway", "install", "vscode", "--project", str(workspace))
    assert refused.exit_code == 1
    assert "validation_error" in refused.output and "--yes" in refused.output
    assert '+    "patchbay": {' in refused.output  # the diff was shown
    dry = invoke("gateway", "install", "vscode", "--project", str(workspace), "--dry-run")
    assert dry.exit_code == 0 and "dry run: nothing written" in dry.output
    assert (workspace / ".vscode" / "mcp.json").read_text() == ORIGINAL
    assert list((workspace / ".vscode").iterdir()) == [workspace / ".vscode" / "mcp.json"]


def test_install_writes_one_entry_with_a_backup_and_uninstall_restores_the_file(
    invoke: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    written = invoke("gateway", "install", "vscode", "--project", str(workspace), "--yes", "--json")
    assert written.exit_code == 0, written.output
    report = json.loads(written.stdout)
    assert report["action"] == "add" and report["written"] is True and report["scope"] == "project"
    assert report["path"] == str(workspace / ".vscode" / "mcp.json")
    assert Path(report["backup"]).read_text() == ORIGINAL
    text = (workspace / ".vscode" / "mcp.json").read_text()
    assert "// the servers I had before" in text
    servers = parse_jsonc(text).value["servers"]
    assert list(servers) == ["time", "patchbay"]
    assert servers["patchbay"]["args"] == [
        "--home",
        str((tmp_path / "home").resolve()),
        "gateway",
        "--stdio",
        "--project",
        str(workspace.resolve()),
    ]
    again = json.loads(invoke("gateway", "install", "vscode", "--project", str(workspace), "--yes", "--json").stdout)
    assert again["action"] == "unchanged" and again["written"] is False
    removed = invoke("gateway", "uninstall", "vscode", "--project", str(workspace), "--yes")
    assert removed.exit_code == 0 and "wrote" in removed.output
    assert (workspace / ".vscode" / "mcp.json").read_text() == ORIGINAL


def test_user_level_cursor_entry_serves_the_open_workspace_and_claude_code_has_none(
    invoke: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    done = invoke("gateway", "install", "cursor", "--user", "--project", str(workspace), "--yes", "--mode", "proxy")
    assert done.exit_code == 0, done.output
    entry = json.loads((tmp_path / "user" / ".cursor" / "mcp.json").read_text())["mcpServers"]["patchbay"]
    assert entry["args"][-4:] == ["--project", "${workspaceFolder}", "--mode", "proxy"]
    refused = invoke("gateway", "install", "claude-code", "--user", "--yes")
    assert refused.exit_code == 1 and "invalid_config" in refused.output and "claude mcp add" in refused.output
    unknown = invoke("gateway", "install", "emacs", "--yes", "--json")
    assert unknown.exit_code == 1 and json.loads(unknown.stdout)["error"]["code"] == "invalid_config"


def test_the_written_entry_starts_the_governed_gateway_for_a_host(invoke: Callable[..., Any], workspace: Path) -> None:
    for args in (
        ("connector", "add", "time", "--", "mcp-server-time"),
        ("probe", "time", "--project", str(workspace)),
        ("grant", "time", "get_current_time", "allow"),
        ("grant", "time", "convert_time", "deny"),
        ("gateway", "install", "claude-code", "--project", str(workspace), "--mode", "direct", "--yes"),
    ):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    entry = json.loads((workspace / ".mcp.json").read_text())["mcpServers"]["patchbay"]
    assert entry["type"] == "stdio" and os.path.isabs(entry["command"])
    # the host spawns exactly what the entry says, with its own environment
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={"PATH": os.environ["PATH"], "PATCHBAY_BUILTINS": "off"}
    )

    async def host() -> tuple[list[str], Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                return names, await client.call_tool("time__get_current_time", {"timezone": "UTC"})

    names, result = anyio.run(host)
    assert "time__get_current_time" in names and "time__convert_time" not in names
    assert not result.is_error and "UTC" in json.dumps(result.model_dump(mode="json"))


def test_a_workspace_that_is_missing_or_not_utf8_is_refused_clearly(invoke: Callable[..., Any], tmp_path: Path) -> None:
    missing = invoke("gateway", "install", "cursor", "--project", str(tmp_path / "nope"), "--yes")
    assert missing.exit_code == 1 and "does not exist" in missing.output and "invalid_config" in missing.output
    raw = os.path.join(os.fsencode(tmp_path), b"p\xff")
    os.mkdir(raw)
    odd = invoke("gateway", "install", "cursor", "--project", os.fsdecode(raw), "--yes")
    assert odd.exit_code == 1 and "not a UTF-8 path" in odd.output and "Traceback" not in odd.output
    assert not os.listdir(raw)  # nothing written there


def test_a_host_in_any_case_is_shown_by_its_canonical_name_and_a_backup_can_be_restored(
    invoke: Callable[..., Any], workspace: Path
) -> None:
    host_file = workspace / ".vscode" / "mcp.json"
    written = invoke("gateway", "install", "VSCode", "--project", str(workspace), "--yes")
    assert written.exit_code == 0, written.output
    (backup,) = [p for p in (workspace / ".vscode").iterdir() if p != host_file]
    assert backup.name.startswith("mcp.json.patchbay-backup-")  # beside the host's file
    assert f"vscode: wrote {host_file}" in written.stdout
    assert f"backup of the previous file: {backup}" in written.stdout
    assert f"patchbay gateway restore vscode --project {workspace}" in written.stdout
    as_json = json.loads(invoke("gateway", "install", "VSCODE", "--project", str(workspace), "--json").stdout)
    assert as_json["host"] == "vscode" and as_json["action"] == "unchanged"

    refused = invoke("gateway", "restore", "vscode", "--project", str(workspace))  # no terminal, no --yes
    assert refused.exit_code == 1 and "validation_error" in refused.output
    assert host_file.read_text() != ORIGINAL
    restored = invoke("gateway", "restore", "Vscode", "--project", str(workspace), "--yes", "--json")
    assert restored.exit_code == 0, restored.output
    report = json.loads(restored.stdout)
    assert report["action"] == "restore" and report["written"] is True and report["host"] == "vscode"
    assert report["restored_from"] == str(backup)
    assert host_file.read_text() == ORIGINAL
    assert "patchbay" in parse_jsonc(Path(report["backup"]).read_text()).value["servers"]  # the replaced file

    stranger = workspace / "other.json"
    stranger.write_text("{}")
    wrong = invoke("gateway", "restore", "vscode", "--project", str(workspace), "--backup", str(stranger), "--yes")
    assert wrong.exit_code == 1 and "invalid_config" in wrong.output and "not a backup" in wrong.output
    none = invoke("gateway", "restore", "cursor", "--project", str(workspace), "--yes")
    assert none.exit_code == 1 and "not_found" in none.output and "has no backup" in none.output
