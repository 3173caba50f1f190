"""Import preview (seed 003 §12.2, §16.3 "import preview 不执行 command/helper", §19.10): what it
reports per entry, and that it starts, runs, opens and writes nothing."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchbay.control.connectors import ConnectorService
from patchbay.control.importer import ImportPreview, preview_import
from patchbay.core.errors import ConfigError
from patchbay.core.redaction import is_secret_key

CANARIES = (
    "ghp_cnryDESKTOPaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "cnryDESKTOPplain-5e6f7a8b",
    "cnryCLAUDEaccount-0badc0de",
    "cnryDEFAULTsecret-77aa88bb",
    "cnryPROJECTkey-4c3b2a19",
)


def by_name(report: ImportPreview) -> dict[str, list]:
    out: dict[str, list] = {}
    for entry in report.entries:
        out.setdefault(entry.name, []).append(entry)
    return out


def test_preview_starts_no_command_runs_no_helper_and_opens_no_connection(
    service: ConnectorService, workspace: Path, home: Path, tmp_path: Path
) -> None:
    ran, helped = tmp_path / "command-ran", tmp_path / "helper-ran"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    unix_path = tmp_path / "mcp.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_path))
    unix.listen(8)
    unix.setblocking(False)
    try:
        port = listener.getsockname()[1]
        (workspace / ".mcp.json").write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "writer": {"command": sys.executable, "args": ["-c", f"open({str(ran)!r}, 'w')"]},
                        "helper": {
                            "command": sys.executable,
                            "env": {"TOKEN": f"!{sys.executable} -c \"open({str(helped)!r}, 'w')\""},
                        },
                        "remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
                        "events": {"url": f"http://127.0.0.1:{port}/sse"},
                        "sock": {"socket": str(unix_path)},
                    }
                }
            )
        )
        report = preview_import(service, workspace=workspace, home=home)
        entries = by_name(report)
        assert set(entries) == {"writer", "helper", "remote", "events", "sock"}
        [helper] = entries["helper"]
        assert [(h.field, h.program, h.run) for h in helper.helpers] == [("env.TOKEN", sys.executable, False)]
        assert not helper.importable and helper.problems[0].code == "helper_not_run"
        assert not ran.exists() and not helped.exists()
        for server in (listener, unix):
            with pytest.raises(BlockingIOError):
                server.accept()  # nobody connected
    finally:
        listener.close()
        unix.close()
    assert service.list_connectors() == [] and service.repository.projects.list_all() == []  # nothing written
    assert not (service.settings.home / "credentials.json").exists()


def test_each_entry_reports_source_precedence_transport_and_a_normalised_diff(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("vscode_mcp.json", workspace / ".vscode/mcp.json")
    place("project_mcp.json", workspace / ".mcp.json")
    (workspace / ".env").write_text("A=1\n")
    (workspace / "tools").mkdir()
    report = preview_import(service, workspace=workspace, home=home)
    assert report.ok
    entries = {e.name: e for e in report.entries}
    assert list(entries) == ["api", "plain", "perplexity", "fetch", "with-env-file"]
    fetch = entries["fetch"]
    assert (fetch.source.path, fetch.source.root_key, fetch.source.precedence) == (
        str(workspace / ".vscode/mcp.json"),
        "servers",
        2,
    )
    assert (fetch.transport, fetch.transport_spelling, fetch.lossless, fetch.importable) == (
        "streamable_http",
        'type: "streamableHttp"',
        True,
        True,
    )
    assert '-  "type": "streamableHttp",' in fetch.diff and '+  "transport": "streamable_http",' in fetch.diff
    api = entries["api"]
    assert api.source.precedence == 1 and api.source.root_key == "mcpServers"
    assert api.lossless and api.importable  # the default is kept with the reference
    assert [(b.delivery, b.variable) for b in api.bindings] == [("bearer", "API_TOKEN"), ("header", "TENANT_ID")]
    assert [(b.has_default, b.default_mode, b.default) for b in api.bindings] == [
        (True, "unset_or_empty", None),  # a secret default is never shown
        (False, None, None),
    ]
    assert any(line.startswith('+    "bearer": "@env:API_TOKEN:') for line in api.diff)
    plain = entries["plain"]
    assert [s.field for s in plain.plaintext] == ["env.SERVICE_API_KEY"]
    assert all(s.configured is True for s in plain.plaintext)
    assert plain.enabled is False
    assert entries["perplexity"].needs_input and not entries["perplexity"].importable
    assert entries["with-env-file"].target == {"command": "uvx", "args": ["my-server"], "cwd": "tools"}


def test_no_secret_value_appears_anywhere_in_a_preview(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("claude_desktop_config.json", home / ".config/Claude/claude_desktop_config.json")
    place("claude.json", home / ".claude.json")
    place("project_mcp.json", workspace / ".mcp.json")
    documents = [
        preview_import(service, workspace=workspace, home=home, paths=["claude-desktop", "claude-code"]),
        preview_import(service, workspace=workspace, home=home),
    ]
    text = "".join(json.dumps(d.model_dump(mode="json")) for d in documents)
    assert documents[0].entries and documents[1].entries
    for canary in CANARIES:
        assert canary not in text
    github = next(e for e in documents[0].entries if e.name == "GitHub")
    assert github.import_name == "github"
    # a long random-looking value is a suspected secret even under a plain name: stored, never shown
    assert [s.field for s in github.plaintext] == ["env.GITHUB_PERSONAL_ACCESS_TOKEN", "env.GITHUB_HOST"]
    assert [(b.name, b.source, b.sensitive) for b in github.bindings] == [
        ("GITHUB_PERSONAL_ACCESS_TOKEN", "managed", True),
        ("GITHUB_HOST", "managed", True),
    ]


def test_public_field_names_survive_output_redaction() -> None:
    """The CLI and API redact values of secret-named keys; no report key may be one."""

    def keys(schema: dict) -> set[str]:
        found = set(schema.get("properties", {}))
        for definition in schema.get("$defs", {}).values():
            found |= keys(definition)
        return found

    names = keys(ImportPreview.model_json_schema())
    assert {"plaintext", "sensitive", "masked", "helpers", "diff"} <= names
    assert [n for n in names if is_secret_key(n)] == []


def test_a_malformed_file_is_reported_with_its_position_and_never_rewritten(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    bad = place("malformed.json", workspace / ".mcp.json")
    good = place("cursor_mcp.json", workspace / ".cursor/mcp.json")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (bad, good)}
    report = preview_import(service, workspace=workspace, home=home)
    assert not report.ok
    files = {f.path: f for f in report.files}
    malformed = files[str(bad)]
    assert malformed.status == "malformed" and malformed.entries == 0
    assert malformed.error is not None and malformed.error["code"] == "invalid_config"
    assert (malformed.error["details"]["line"], malformed.error["details"]["column"]) == (4, 5)
    assert files[str(good)].status == "ok" and {e.name for e in report.entries} == {
        "legacy-events",
        "docs",
        "local-tools",
    }
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (bad, good)} == before


def test_host_files_are_read_only_when_named(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("cursor_mcp.json", home / ".cursor/mcp.json")
    place("claude_desktop_config.json", home / "Library/Application Support/Claude/claude_desktop_config.json")
    place("claude.json", home / ".claude.json")
    place("vscode_mcp.json", home / ".config/Code/User/mcp.json")
    assert preview_import(service, workspace=workspace, home=home).entries == []
    named = preview_import(
        service, workspace=workspace, home=home, paths=["cursor", "claude-desktop", "claude-code", "vscode"]
    )
    assert [f.host for f in named.files] == ["cursor", "claude_desktop", "claude_code", "vscode"]
    assert {e.source.host for e in named.entries} == {"cursor", "claude_desktop", "claude_code", "vscode"}


def test_precedence_shadowing_and_claude_code_scopes(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("claude.json", home / ".claude.json")
    report = preview_import(service, workspace=workspace, home=home, paths=["claude-code"])
    times = by_name(report)["time"]
    assert [(t.source.scope, t.source.precedence, t.effective) for t in times] == [
        ("local", 1, True),
        ("user", 2, False),
    ]
    assert times[1].shadowed_by == times[0].source and not times[1].importable
    assert times[0].target == {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "cwd": ""}
    [notes] = by_name(report)["notes"]
    assert (notes.source.scope, notes.transport, notes.effective) == ("project:/elsewhere/other-project", "sse", True)
    [search] = by_name(report)["search"]
    assert [(b.delivery, b.variable) for b in search.bindings] == [("bearer", "SEARCH_TOKEN")]

    (workspace / ".mcp.json").write_text('{"mcpServers": {"Time": {"command": "a"}}}')
    (home / ".agents").mkdir()
    (home / ".agents/mcp.json").write_text('{"mcpServers": {"time": {"command": "b"}}}')
    standard = by_name(preview_import(service, workspace=workspace, home=home))
    assert standard["Time"][0].effective and standard["Time"][0].import_name == "time"
    assert standard["time"][0].shadowed_by is not None and standard["time"][0].shadowed_by.precedence == 1


def test_conflicts_with_existing_connectors_and_rename(service: ConnectorService, workspace: Path, home: Path) -> None:
    service.add("fetch", service.remote_target("https://fetch.example.com/mcp"))
    service.add("time", service.stdio_target("other-binary", [], cwd=None, workspace=workspace))
    (workspace / ".mcp.json").write_text(
        '{"mcpServers": {"Fetch": {"url": "https://fetch.example.com/mcp"}, "time": {"command": "mcp-server-time"}}}'
    )
    entries = {e.name: e for e in preview_import(service, workspace=workspace, home=home).entries}
    assert entries["Fetch"].conflict is not None and entries["Fetch"].conflict.same_target is True
    assert entries["time"].conflict is not None and entries["time"].conflict.same_target is False
    assert not entries["Fetch"].importable and not entries["time"].importable
    renamed = {
        e.name: e for e in preview_import(service, workspace=workspace, home=home, renames={"time": "time-2"}).entries
    }
    assert renamed["time"].import_name == "time-2" and renamed["time"].conflict is None and renamed["time"].importable
    with pytest.raises(ConfigError) as info:
        preview_import(service, workspace=workspace, home=home, renames={"nope": "x"})
    assert info.value.field == "rename"
    with pytest.raises(ConfigError):
        preview_import(service, workspace=workspace, home=home, renames={"time": "Bad Name"})


def test_a_workspace_that_is_no_directory_is_refused(service: ConnectorService, tmp_path: Path, home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        preview_import(service, workspace=tmp_path / "missing", home=home)
    assert info.value.field == "project"


def test_a_misspelt_keyword_is_refused_as_before(service: ConnectorService, workspace: Path, home: Path) -> None:
    with pytest.raises(TypeError, match="'path'"):
        preview_import(service, workspace=workspace, home=home, path=["cursor"])  # type: ignore[call-arg]


def test_pasted_text_is_previewed_after_the_named_files_and_instead_of_the_standard_ones(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("cursor_mcp.json", workspace / ".cursor/mcp.json")
    pasted = '{"pasted": {"url": "https://mcp.example.com/mcp"}}'
    alone = preview_import(service, workspace=workspace, home=home, text=pasted)
    assert [(f.label, f.origin, f.status, f.entries) for f in alone.files] == [("pasted text", "pasted", "ok", 1)]
    [entry] = alone.entries
    assert (entry.name, entry.source.origin, entry.source.root_key, entry.transport) == (
        "pasted",
        "pasted",
        "mcpServers",
        "streamable_http",
    )
    both = preview_import(
        service, workspace=workspace, home=home, paths=[str(workspace / ".cursor/mcp.json")], text=pasted
    )
    assert [f.origin for f in both.files] == ["named", "pasted"]
    assert both.entries[-1].name == "pasted" and both.entries[-1].source.precedence == 2
    broken = preview_import(service, workspace=workspace, home=home, text='{"a": {"command": "x"}')
    assert not broken.ok and broken.entries == []
    [file] = broken.files
    assert file.status == "malformed" and file.error is not None and file.error["code"] == "invalid_config"
    assert (file.error["details"]["line"], file.error["details"]["column"]) == (1, 23)
