"""Planning and writing the gateway's entry in each host's file: the right file and shape, a
backup, the file's mode kept, and nothing written over a file that changed since the preview."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from patchbay.control.gateway_install import (
    WORKSPACE_FOLDER,
    apply_plan,
    backups_of,
    canonical_host,
    gateway_entry,
    host_config_file,
    plan_install,
    plan_restore,
    plan_uninstall,
)
from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.core.errors import ConfigError, ErrorCode, NotFoundError

COMMAND = ["/venv/bin/patchbay"]


def test_each_host_has_its_file_root_key_and_entry_shape(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    code = host_config_file("claude-code", project=ws, home=home)
    assert (code.path, code.root_key, code.scope) == (ws / ".mcp.json", "mcpServers", "project")
    assert gateway_entry(code, COMMAND, project=ws) == {
        "type": "stdio",
        "command": "/venv/bin/patchbay",
        "args": ["gateway", "--stdio", "--project", str(ws)],
    }
    cursor = host_config_file("cursor", project=ws, home=home)
    assert cursor.path == ws / ".cursor" / "mcp.json"
    assert "type" not in gateway_entry(cursor, COMMAND, project=ws)
    vscode = host_config_file("vscode", project=ws, home=home)
    assert (vscode.path, vscode.root_key) == (ws / ".vscode" / "mcp.json", "servers")
    desktop = host_config_file("claude-desktop", project=ws, home=home)
    assert desktop.scope == "user" and desktop.path.name == "claude_desktop_config.json"
    assert str(desktop.path).startswith(str(home))
    if sys.platform.startswith("linux"):
        assert desktop.path == home / ".config/Claude/claude_desktop_config.json"
        assert host_config_file("vscode", project=ws, home=home, user=True).path == home / ".config/Code/User/mcp.json"


def test_a_user_level_entry_of_cursor_or_vscode_serves_the_open_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for host in ("cursor", "vscode"):
        file = host_config_file(host, project=ws, home=tmp_path, user=True)
        args = gateway_entry(file, COMMAND, project=ws, mode="proxy", data_home=tmp_path / "data")["args"]
        assert args == [
            "--home",
            str(tmp_path / "data"),
            "gateway",
            "--stdio",
            "--project",
            WORKSPACE_FOLDER,
            "--mode",
            "proxy",
        ]
    desktop = host_config_file("claude-desktop", project=ws, home=tmp_path)
    assert gateway_entry(desktop, COMMAND, project=ws)["args"][-1] == str(ws)  # Claude Desktop has no workspace


def test_unknown_hosts_and_claude_code_user_scope_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        host_config_file("emacs", project=tmp_path, home=tmp_path)
    assert raised.value.code == ErrorCode.INVALID_CONFIG and raised.value.details["field"] == "host"
    with pytest.raises(ConfigError) as raised:
        host_config_file("claude-code", project=tmp_path, home=tmp_path, user=True)
    assert raised.value.details["field"] == "user" and "claude mcp add" in str(raised.value)


def test_a_new_file_is_created_private_and_without_backup(tmp_path: Path) -> None:
    file = host_config_file("cursor", project=tmp_path, home=tmp_path)
    entry = gateway_entry(file, COMMAND, project=tmp_path)
    plan = plan_install(file, entry)
    assert plan.action == "add" and plan.before is None and plan.diff().startswith("--- /dev/null")
    assert apply_plan(plan) is None
    assert json.loads(file.path.read_text()) == {"mcpServers": {"patchbay": entry}}
    assert oct(file.path.stat().st_mode & 0o777) == "0o600"
    assert plan_install(file, entry).action == "unchanged"


def test_an_existing_file_is_backed_up_keeps_its_mode_and_uninstall_restores_it(tmp_path: Path) -> None:
    file = host_config_file("claude-code", project=tmp_path, home=tmp_path)
    original = '{\n  "mcpServers": {\n    "time": {"command": "uvx", "args": ["mcp-server-time"]} // mine\n  }\n}\n'
    file.path.write_text(original)
    os.chmod(file.path, 0o644)
    plan = plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    backup = apply_plan(plan, now=datetime(2026, 12, 4, 1, 2, 3, tzinfo=UTC))
    assert backup == tmp_path / ".mcp.json.patchbay-backup-20261204T010203Z"
    assert backup.read_text() == original
    assert oct(file.path.stat().st_mode & 0o777) == "0o644"
    assert set(parse_jsonc(file.path.read_text()).value["mcpServers"]) == {"time", "patchbay"}
    removal = plan_uninstall(file)
    assert removal.action == "remove"
    second = apply_plan(removal, now=datetime(2026, 12, 4, 1, 2, 3, tzinfo=UTC))  # same second: a free name
    assert second == tmp_path / ".mcp.json.patchbay-backup-20261204T010203Z-1"
    assert file.path.read_text() == original
    assert plan_uninstall(file).action == "unchanged"


def test_a_file_changed_since_the_preview_is_not_written(tmp_path: Path) -> None:
    file = host_config_file("cursor", project=tmp_path, home=tmp_path)
    file.path.parent.mkdir()
    file.path.write_text('{"mcpServers": {}}')
    plan = plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    file.path.write_text('{"mcpServers": {"other": {}}}')
    with pytest.raises(ConfigError) as raised:
        apply_plan(plan)
    assert "changed since the preview" in str(raised.value)
    assert file.path.read_text() == '{"mcpServers": {"other": {}}}'
    assert list(tmp_path.glob(".cursor/*backup*")) == []


def test_a_file_that_is_not_utf8_or_not_jsonc_is_refused_untouched(tmp_path: Path) -> None:
    file = host_config_file("cursor", project=tmp_path, home=tmp_path)
    file.path.parent.mkdir()
    file.path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError) as raised:
        plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    assert "not UTF-8" in str(raised.value)
    file.path.write_text('{"mcpServers": ')
    with pytest.raises(Exception) as broken:
        plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    assert getattr(broken.value, "code", None) == ErrorCode.INVALID_CONFIG
    assert file.path.read_text() == '{"mcpServers": '


def test_a_symlinked_host_file_is_edited_at_its_target(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}')
    (tmp_path / ".mcp.json").symlink_to(real)
    file = host_config_file("claude-code", project=tmp_path, home=tmp_path)
    plan = plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    assert plan.file.path == real
    apply_plan(plan)
    assert (tmp_path / ".mcp.json").is_symlink()
    assert "patchbay" in parse_jsonc(real.read_text()).value["mcpServers"]


@pytest.mark.parametrize("given", ["Claude-Desktop", "CLAUDE-DESKTOP", " claude-desktop "])
def test_a_host_name_is_taken_in_any_case_and_the_file_names_it_canonically(tmp_path: Path, given: str) -> None:
    assert canonical_host(given) == "claude-desktop"
    assert host_config_file(given, project=tmp_path, home=tmp_path).host == "claude-desktop"
    assert host_config_file("VSCode", project=tmp_path, home=tmp_path).path == tmp_path / ".vscode" / "mcp.json"
    with pytest.raises(ConfigError) as raised:
        canonical_host("Claude_Desktop ")
    assert raised.value.details["field"] == "host" and raised.value.details["suggestions"][0] == "claude-desktop"


def test_restore_puts_the_newest_backup_back_and_backs_up_the_file_it_replaces(tmp_path: Path) -> None:
    file = host_config_file("cursor", project=tmp_path, home=tmp_path)
    with pytest.raises(NotFoundError):
        plan_restore(file)  # no file, no backup
    file.path.parent.mkdir()
    original = '{"mcpServers": {"mine": {"command": "x"}}}\n'
    file.path.write_text(original)
    installed = plan_install(file, gateway_entry(file, COMMAND, project=tmp_path))
    first = apply_plan(installed, now=datetime(2026, 12, 4, 1, 2, 3, tzinfo=UTC))
    with_entry = file.path.read_text()
    file.path.write_text(with_entry.replace('"x"', '"edited"'))  # an edit made by hand since
    assert backups_of(file) == [first]

    plan = plan_restore(file)
    assert plan.action == "restore" and plan.source == first and plan.after == original
    assert '-{"mcpServers": {"mine": {"command": "edited"}' in plan.diff()  # the diff shows what is undone
    second = apply_plan(plan, now=datetime(2026, 12, 4, 1, 2, 3, tzinfo=UTC))
    assert file.path.read_text() == original
    assert second is not None and second.read_text() == with_entry.replace('"x"', '"edited"')
    assert backups_of(file) == [first, second]  # -1 sorts after the same second's first backup

    assert plan_restore(file, first).action == "unchanged"
    undo = plan_restore(file)  # the newest backup is the file the restore replaced
    assert undo.source == second and undo.after == second.read_text()
    stranger = tmp_path / "other.json"
    stranger.write_text("{}")
    with pytest.raises(ConfigError) as refused:
        plan_restore(file, stranger)
    assert refused.value.details["field"] == "backup"
