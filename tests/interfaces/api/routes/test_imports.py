"""Legacy config import routes (seed 003 §8.2, §12, §19 point 10): a preview that starts, runs and
connects nothing and shows secrets only as configured; a commit of the selected entries only, all
or nothing; their errors in the one error shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.api import Api, error_of

pytestmark = pytest.mark.anyio

PLAIN = "pbapi-import-plaintext-7c1d"


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home directory for the serving user (``~/.config/mcp/mcp.json`` and friends)."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _write(api: Api, servers: dict, name: str = ".mcp.json") -> Path:
    path = api.workspace / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_preview_reports_entries_and_runs_nothing(api: Api, user_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "helper-ran"
    _write(
        api,
        {
            "clock": {"command": "mcp-server-time", "env": {"TZ_KEY": "${TZ_VAR}"}},
            "remote": {
                "type": "streamableHttp",
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": f"Bearer {PLAIN}"},
            },
            "helper": {"command": "mcp-server-time", "env": {"KEY": f"!touch {marker}"}},
        },
    )
    response = await api.client.post("/api/mcp/import/preview", json={})
    assert response.status_code == 200, response.text
    assert PLAIN not in response.text
    report = response.json()
    assert report["ok"] is True and report["workspace"] == str(api.workspace)
    entries = {e["name"]: e for e in report["entries"]}
    assert set(entries) == {"clock", "remote", "helper"}
    assert entries["clock"]["importable"] and entries["clock"]["transport"] == "stdio"
    assert entries["clock"]["bindings"][0]["source"] == "environment"
    assert entries["remote"]["transport"] == "streamable_http"
    assert entries["remote"]["plaintext"] == [{"field": "headers.Authorization", "configured": True}]
    assert entries["helper"]["helpers"][0]["run"] is False and not marker.exists()
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}  # nothing written


async def test_a_malformed_file_is_reported_with_its_position_and_stops_a_commit(api: Api, user_home: Path) -> None:
    path = api.workspace / ".mcp.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",}\n    oops\n}\n')
    preview = (await api.client.post("/api/mcp/import/preview", json={})).json()
    assert preview["ok"] is False
    [broken] = [f for f in preview["files"] if f["status"] == "malformed"]
    assert broken["error"]["details"]["line"] == 4
    commit = await api.client.post("/api/mcp/import/commit", json={"select": ["a"]})
    assert commit.status_code == 422
    error = error_of(commit)
    assert error["code"] == "validation_error" and error["details"]["line"] == 4
    assert path.read_text().endswith("oops\n}\n")  # never rewritten


async def test_commit_imports_the_selection_only_with_credentials_by_reference(api: Api, user_home: Path) -> None:
    _write(
        api,
        {
            "clock": {"command": "mcp-server-time", "env": {"TZ_KEY": "${TZ_VAR}"}},
            "remote": {
                "type": "http",
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": f"Bearer {PLAIN}"},
            },
            "left": {"command": "mcp-server-time"},
        },
    )
    response = await api.client.post(
        "/api/mcp/import/commit", json={"select": ["clock", "remote"], "renames": {"remote": "far"}}
    )
    assert response.status_code == 200, response.text
    assert PLAIN not in response.text
    imported = {i["connector"]: i for i in response.json()["imported"]}
    assert set(imported) == {"clock", "far"}
    listed = {c["name"]: c for c in (await api.client.get("/api/mcp/connectors")).json()["connectors"]}
    assert set(listed) == {"clock", "far"} and listed["far"]["source"] == "imported"
    far = (await api.client.get("/api/mcp/connectors/far")).json()
    assert [(b["delivery"], b["source"]) for b in far["bindings"]] == [("bearer", "managed")]
    assert PLAIN in (api.home / "credentials.json").read_text()

    again = await api.client.post("/api/mcp/import/commit", json={"select": ["clock"]})
    assert again.status_code == 422 and error_of(again)["details"]["field"] == "select"  # conflicts now
    unknown = await api.client.post("/api/mcp/import/commit", json={"select": ["nowhere"]})
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "not_found"


async def test_references_only_refuses_plaintext_and_keeps_nothing(api: Api, user_home: Path) -> None:
    _write(api, {"remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"X-Key": PLAIN}}})
    response = await api.client.post("/api/mcp/import/commit", json={"select": ["remote"], "references_only": True})
    assert response.status_code == 422 and PLAIN not in response.text
    assert error_of(response)["details"]["field"] == "references_only"
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}
    assert not (api.home / "credentials.json").exists() or PLAIN not in (api.home / "credentials.json").read_text()


async def test_import_request_errors(api: Api, user_home: Path, tmp_path: Path) -> None:
    empty = await api.client.post("/api/mcp/import/commit", json={"select": []})
    assert empty.status_code == 422 and error_of(empty)["details"]["field"] == "body.select"
    elsewhere = await api.client.post("/api/mcp/import/preview", params={"cwd": str(tmp_path / "no")}, json={})
    assert elsewhere.status_code == 422 and error_of(elsewhere)["details"]["field"] == "project"
    named = await api.client.post("/api/mcp/import/preview", json={"paths": ["missing.json"]})
    assert named.status_code == 200
    assert [f["status"] for f in named.json()["files"]] == ["missing"]


async def test_preview_of_a_file_that_is_no_config_quotes_none_of_it(api: Api, user_home: Path) -> None:
    secret_file = api.workspace / "shadow"
    secret_file.write_text("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n")
    response = await api.client.post("/api/mcp/import/preview", json={"paths": [str(secret_file)]})
    assert response.status_code == 200, response.text
    [named] = [f for f in response.json()["files"] if f["path"] == str(secret_file)]
    assert named["status"] == "malformed"
    assert (named["error"]["details"]["line"], named["error"]["details"]["column"]) == (1, 1)
    for quoted in ("'root'", '\\"root\\"', "root:", "saltsalt"):  # (the tmp path itself may hold "root")
        assert quoted not in response.text, quoted


async def test_an_env_file_a_config_points_at_is_never_quoted_nor_located(api: Api, user_home: Path) -> None:
    target = api.workspace / "not-dotenv"
    target.write_text("FIRST=1\nroot:$6$saltsalt$hash:19000\n")
    _write(api, {"leaky": {"type": "stdio", "command": "s", "envFile": str(target)}})
    response = await api.client.post("/api/mcp/import/preview", json={})
    assert response.status_code == 200, response.text
    assert "saltsalt" not in response.text and "root:" not in response.text
    assert f"{target}:2" not in response.text  # which line is no assignment says something about the file


async def test_sources_lists_the_files_an_import_can_read_and_reads_none(api: Api, user_home: Path) -> None:
    (api.workspace / ".mcp.json").write_text("not json at all")
    (user_home / ".claude.json").write_text("{}")
    response = await api.client.get("/api/mcp/import/sources")
    assert response.status_code == 200, response.text
    listed = response.json()
    assert listed["workspace"] == str(api.workspace)
    files = {f["select"]: f for f in listed["files"]}
    project = files[str(api.workspace / ".mcp.json")]
    assert (project["kind"], project["exists"], project["label"]) == ("standard", True, "workspace .mcp.json")
    assert files["claude-code"]["exists"] and files["claude-code"]["path"] == str(user_home / ".claude.json")
    assert not files["cursor"]["exists"] and files["cursor"]["kind"] == "host"
    elsewhere = await api.client.get("/api/mcp/import/sources", params={"cwd": str(user_home / "no")})
    assert elsewhere.status_code == 422 and error_of(elsewhere)["details"]["field"] == "project"


async def test_a_pasted_snippet_is_previewed_and_committed_without_a_file(api: Api, user_home: Path) -> None:
    _write(api, {"on-disk": {"command": "mcp-server-time"}})
    pasted = (
        '{\n  // from a README\n  "mcpServers": {\n'
        f'    "clock": {{"command": "mcp-server-time", "env": {{"API_TOKEN": "{PLAIN}"}}}},\n'
        '    "far": {"url": "https://mcp.example.com/mcp"},\n  },\n}\n'
    )
    preview = await api.client.post("/api/mcp/import/preview", json={"text": pasted})
    assert preview.status_code == 200, preview.text
    assert PLAIN not in preview.text
    report = preview.json()
    assert [(f["origin"], f["status"], f["entries"]) for f in report["files"]] == [("pasted", "ok", 2)]
    entries = {e["name"]: e for e in report["entries"]}
    assert set(entries) == {"clock", "far"}  # the workspace's .mcp.json is not read
    assert entries["clock"]["plaintext"] == [{"field": "env.API_TOKEN", "configured": True}]
    commit = await api.client.post(
        "/api/mcp/import/commit", json={"text": pasted, "select": ["clock"], "enabled": False}
    )
    assert commit.status_code == 200, commit.text
    assert PLAIN not in commit.text
    assert [(i["connector"], i["source"]) for i in commit.json()["imported"]] == [("clock", "pasted text")]
    listed = (await api.client.get("/api/mcp/connectors")).json()["connectors"]
    assert [(c["name"], c["source"], c["settings"]["enabled"]) for c in listed] == [("clock", "imported", False)]


async def test_a_pasted_snippet_that_is_no_jsonc_is_reported_with_its_position(api: Api, user_home: Path) -> None:
    preview = await api.client.post(
        "/api/mcp/import/preview", json={"text": '{"mcpServers": {\n  "a": {"command": "x"}\n'}
    )
    assert preview.status_code == 200, preview.text
    [file] = preview.json()["files"]
    assert file["status"] == "malformed" and file["error"]["code"] == "invalid_config"
    assert file["error"]["details"]["line"] == 3
    commit = await api.client.post("/api/mcp/import/commit", json={"text": "[1]", "select": ["a"]})
    assert commit.status_code == 422 and error_of(commit)["details"]["field"] == "text"
    huge = await api.client.post("/api/mcp/import/preview", json={"text": " " * 1_000_001})
    assert huge.status_code == 422 and error_of(huge)["details"]["field"] == "body.text"


async def test_preview_takes_renames_so_a_conflicting_entry_can_be_imported_beside_the_existing_one(
    api: Api, user_home: Path
) -> None:
    created = await api.client.post(
        "/api/mcp/connectors", json={"name": "clock", "target": {"transport": "stdio", "command": "mcp-server-time"}}
    )
    assert created.status_code == 201, created.text
    pasted = '{"clock": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}'
    plain = (await api.client.post("/api/mcp/import/preview", json={"text": pasted})).json()["entries"][0]
    assert (plain["import_name"], plain["conflict"]["connector"], plain["importable"]) == ("clock", "clock", False)

    renamed = await api.client.post("/api/mcp/import/preview", json={"text": pasted, "renames": {"clock": "clock-2"}})
    assert renamed.status_code == 200, renamed.text
    entry = renamed.json()["entries"][0]
    assert (entry["name"], entry["import_name"], entry["conflict"], entry["importable"]) == (
        "clock",
        "clock-2",
        None,
        True,
    )
    taken = await api.client.post("/api/mcp/import/preview", json={"text": pasted, "renames": {"clock": "CLOCK"}})
    assert taken.status_code == 422  # not a connector name (lower case only)
    assert error_of(taken)["details"]["field"] == "rename"
    assert error_of(taken)["message"].startswith("rename: clock=CLOCK: ")
    unused = await api.client.post("/api/mcp/import/preview", json={"text": pasted, "renames": {"nowhere": "x"}})
    assert unused.status_code == 422 and error_of(unused)["details"]["field"] == "rename"

    commit = await api.client.post(
        "/api/mcp/import/commit", json={"text": pasted, "select": ["clock-2"], "renames": {"clock": "clock-2"}}
    )
    assert commit.status_code == 200, commit.text
    listed = (await api.client.get("/api/mcp/connectors")).json()["connectors"]
    assert sorted(c["name"] for c in listed) == ["clock", "clock-2"]
