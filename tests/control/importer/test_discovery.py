"""Discovery (seed 003 §12.1): the standard locations, host files only when named, bounded and
read-only loading, Claude Code's scopes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from patchbay.control.importer import discovery
from patchbay.control.importer.discovery import (
    PASTED_LABEL,
    load_source,
    load_text,
    named_sources,
    scopes_of,
    standard_sources,
)
from patchbay.core.errors import ConfigError


def test_standard_locations_are_the_workspace_files_then_the_user_files(workspace: Path, home: Path) -> None:
    paths = [s.path for s in standard_sources(workspace, home)]
    assert paths == [
        workspace / ".mcp.json",
        workspace / ".pi/mcp.json",
        workspace / ".cursor/mcp.json",
        workspace / ".vscode/mcp.json",
        home / ".config/mcp/mcp.json",
        home / ".agents/mcp.json",
        home / ".agents/mcp/mcp.json",
    ]
    assert all(s.origin == "standard" for s in standard_sources(workspace, home))


def test_host_keywords_resolve_under_the_given_home_only(home: Path, tmp_path: Path) -> None:
    (home / ".config/Claude").mkdir(parents=True)
    (home / ".config/Claude/claude_desktop_config.json").write_text("{}")
    sources = named_sources(["claude-desktop", "claude-code", "cursor", "vscode"], home=home, cwd=tmp_path)
    assert [(s.host, s.path) for s in sources] == [
        ("claude_desktop", home / ".config/Claude/claude_desktop_config.json"),  # the one that exists
        ("claude_code", home / ".claude.json"),
        ("cursor", home / ".cursor/mcp.json"),
        ("vscode", home / ".config/Code/User/mcp.json"),  # none exists: this platform's (Linux here)
    ]
    assert [load_source(s).status for s in sources] == ["ok", "missing", "missing", "missing"]


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("linux", ".config/Claude/claude_desktop_config.json"),
        ("darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "AppData/Roaming/Claude/claude_desktop_config.json"),
    ],
)
def test_a_missing_host_file_is_looked_for_where_this_platform_keeps_it(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str, expected: str
) -> None:
    monkeypatch.setattr(discovery.sys, "platform", platform)
    (source,) = named_sources(["claude-desktop"], home=home, cwd=tmp_path)
    assert source.path == home / expected and load_source(source).status == "missing"


def test_named_paths_are_relative_to_cwd_and_tilde_is_the_given_home(home: Path, tmp_path: Path) -> None:
    sources = named_sources(["conf/mcp.json", "~/.cursor/mcp.json", "/abs/.vscode/mcp.json"], home=home, cwd=tmp_path)
    assert [(s.path, s.host) for s in sources] == [
        (tmp_path / "conf/mcp.json", "generic"),
        (home / ".cursor/mcp.json", "cursor"),
        (Path("/abs/.vscode/mcp.json"), "vscode"),
    ]
    with pytest.raises(ConfigError) as info:
        named_sources(["a.json", "./a.json"], home=home, cwd=tmp_path)
    assert info.value.field == "paths"


def test_statuses_absent_missing_malformed_invalid_unreadable(tmp_path: Path, workspace: Path, home: Path) -> None:
    (workspace / ".mcp.json").write_text('{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}\n')
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor/mcp.json").write_text("[1, 2]")
    (workspace / ".vscode").mkdir()
    os.mkfifo(workspace / ".vscode/mcp.json")  # opening a FIFO would block: it is refused unopened
    loaded = {s.path: load_source(s) for s in standard_sources(workspace, home)}
    malformed = loaded[workspace / ".mcp.json"]
    assert malformed.status == "malformed"
    assert (malformed.error.details["line"], malformed.error.details["column"]) == (4, 5)  # type: ignore[union-attr]
    assert loaded[workspace / ".cursor/mcp.json"].status == "invalid"
    assert loaded[workspace / ".vscode/mcp.json"].status == "unreadable"
    assert loaded[workspace / ".pi/mcp.json"].status == "absent"
    [missing] = [load_source(s) for s in named_sources(["nope.json"], home=home, cwd=tmp_path)]
    assert missing.status == "missing" and missing.error is not None and missing.error.code == "not_found"


def test_a_file_over_the_size_bound_is_unreadable(monkeypatch: pytest.MonkeyPatch, workspace: Path, home: Path) -> None:
    monkeypatch.setattr(discovery, "MAX_FILE_BYTES", 64)
    (workspace / ".mcp.json").write_text('{"mcpServers": {}, "pad": "' + "x" * 100 + '"}')
    loaded = load_source(standard_sources(workspace, home)[0])
    assert loaded.status == "unreadable" and "larger than 64 bytes" in loaded.error.message  # type: ignore[union-attr]


def test_claude_code_user_and_project_scopes(place: Callable[[str, Path], Path], workspace: Path, home: Path) -> None:
    place("claude.json", home / ".claude.json")
    [source] = named_sources(["claude-code"], home=home, cwd=home)
    scopes, warnings = scopes_of(load_source(source), workspace)
    assert warnings == []
    assert [(s.scope, s.root_key, sorted(s.servers)) for s in scopes] == [
        ("local", f"projects[{workspace}].mcpServers", ["time"]),
        ("user", "mcpServers", ["search", "time"]),
        ("project:/elsewhere/other-project", "projects[/elsewhere/other-project].mcpServers", ["notes"]),
    ]


def test_vscode_inputs_and_both_root_keys(place: Callable[[str, Path], Path], workspace: Path, home: Path) -> None:
    place("vscode_mcp.json", workspace / ".vscode/mcp.json")
    loaded = load_source(standard_sources(workspace, home)[3])
    [scope], _ = scopes_of(loaded, workspace)
    assert scope.root_key == "servers" and sorted(scope.servers) == ["fetch", "perplexity", "with-env-file"]
    assert scope.inputs["perplexity-key"]["password"] is True
    settings = home / "settings.json"
    settings.write_text('{"mcp": {"servers": {"s": {"command": "x"}}}, "mcpServers": {"t": {"command": "y"}}}')
    [source] = named_sources([str(settings)], home=home, cwd=home)
    scopes, _ = scopes_of(load_source(source), workspace)
    assert [(s.root_key, list(s.servers)) for s in scopes] == [("mcpServers", ["t"]), ("mcp.servers", ["s"])]


def test_pasted_text_is_read_as_a_file_is_and_a_bare_server_map_as_mcp_servers() -> None:
    wrapped = load_text('{"mcpServers": {"a": {"command": "x"}}}')
    assert wrapped.status == "ok" and wrapped.source.origin == "pasted" and wrapped.document is not None
    assert wrapped.source.label == PASTED_LABEL and wrapped.document["mcpServers"] == {"a": {"command": "x"}}
    bare = load_text('// from a README\n{"a": {"command": "x"},}')
    assert bare.status == "ok" and bare.document == {"mcpServers": {"a": {"command": "x"}}}
    vscode = load_text('{"servers": {"b": {"type": "stdio", "command": "y"}}, "inputs": []}')
    assert vscode.document is not None and set(vscode.document) == {"servers", "inputs"}


def test_pasted_text_that_is_no_jsonc_object_is_malformed_or_invalid_with_its_position() -> None:
    broken = load_text('{\n  "a": {"command": "x"}\n  oops\n}')
    assert broken.status == "malformed" and broken.error is not None
    assert broken.error.details["line"] == 3 and broken.error.details["column"] == 3
    assert "oops" not in broken.error.message
    listed = load_text('["a"]')
    assert listed.status == "invalid" and listed.error is not None and listed.error.details["field"] == "text"
