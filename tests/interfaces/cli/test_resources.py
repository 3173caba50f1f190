"""``patchbay resource list|read`` on the recording fixture tests/fixtures/resources_server.py, and
resources and prompts of the real server-everything. Runtimes are built from the projected
snapshot, as for ``patchbay call``, so grants arrive as projected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.paths import FIXTURES
from tests.support.servers import everything_stdio_command

INCLUDE_CHAIN = ["mcp.resource.requested", "permission.requested", "permission.resolved", "mcp.resource.fetched"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


@pytest.fixture
def run(tmp_path: Path, workspace: Path, record: Path):
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str):
        return runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)

    added = invoke(
        "connector", "add", "res", "--", sys.executable, str(FIXTURES / "resources_server.py"), "--record", str(record)
    )
    assert added.exit_code == 0, added.output
    return invoke


def requests(path: Path, method: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["method"] == method]


def events_of(run, session_id: str) -> list[dict]:
    result = run("events", session_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["events"]


def test_resource_list_shows_every_page_and_reads_nothing(run, workspace: Path, record: Path) -> None:
    listed = run("resource", "list", "res", "--project", str(workspace), "--json")
    assert listed.exit_code == 0, listed.output
    body = json.loads(listed.stdout)
    assert body["connector"] == "res"
    assert [r["uri"] for r in body["resources"]] == [f"fixture://doc/{i}" for i in range(50)]
    assert body["resources"][0] == {
        "uri": "fixture://doc/0",
        "name": "doc-0",
        "title": None,
        "description": "Document 0.",
        "mimeType": "text/plain",
        "size": None,
    }
    text = run("resource", "list", "res", "--project", str(workspace))
    assert text.exit_code == 0 and "fixture://doc/49" in text.stdout and "res: 50 resources" in text.stderr
    templates = json.loads(run("resource", "list", "res", "--templates", "--project", str(workspace), "--json").stdout)
    assert [(t["uriTemplate"], t["variables"]) for t in templates["templates"]] == [
        ("fixture://item/{id}", ["id"]),
        ("fixture://blob/{id}", ["id"]),
    ]
    assert requests(record, "resources/read") == []


def test_resource_read_asks_like_call_headless_refuses_and_yes_reads(run, workspace: Path, record: Path) -> None:
    refused = run("resource", "read", "res", "fixture://doc/5", "--project", str(workspace), "--json")
    assert refused.exit_code == 1
    assert json.loads(refused.stdout)["error"]["code"] == "approval_unavailable"
    assert requests(record, "resources/read") == []

    read = run("resource", "read", "res", "fixture://doc/5", "--yes", "--project", str(workspace), "--json")
    assert read.exit_code == 0, read.output
    body = json.loads(read.stdout)
    assert body["contents"] == [{"uri": "fixture://doc/5", "mimeType": "text/plain", "text": "Document 5"}]
    assert body["source"] == {"mcp": {"server": "res", "uri": "fixture://doc/5"}}
    assert body["size_bytes"] == 10 and body["content_hash"].startswith("sha256:")
    events = events_of(run, body["session_id"])
    chain = [e for e in events if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in chain] == INCLUDE_CHAIN
    assert chain[1]["payload"]["sourcedFrom"] == "user_explicit_include"
    assert chain[2]["payload"]["sourcedFrom"] == "user_allow_once"
    assert chain[3]["payload"]["contentHash"] == body["content_hash"]

    text = run("resource", "read", "res", "fixture://doc/6", "--yes", "--project", str(workspace))
    assert text.exit_code == 0 and text.stdout.strip() == "Document 6"
    assert "[mcp:res:fixture://doc/6] 10 bytes sha256:" in text.stderr
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == ["fixture://doc/5", "fixture://doc/6"]


def test_resource_read_expands_a_template_with_percent_encoding(run, workspace: Path, record: Path) -> None:
    read = run(
        "resource", "read", "res", "fixture://item/{id}", "--var", "id=a b/c", "--yes",
        "--project", str(workspace), "--json",
    )  # fmt: skip
    assert read.exit_code == 0, read.output
    assert json.loads(read.stdout)["uri"] == "fixture://item/a%20b%2Fc"
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == ["fixture://item/a%20b%2Fc"]
    unexpanded = run("resource", "read", "res", "fixture://item/{id}", "--yes", "--project", str(workspace))
    assert unexpanded.exit_code == 1 and "error[validation_error]" in unexpanded.stderr
    assert "URI template" in unexpanded.stderr


def test_resource_grants_decide_includes(run, workspace: Path, record: Path) -> None:
    granted = run("grant", "res", "--resources", "deny", "--json")
    assert granted.exit_code == 0, granted.output
    assert json.loads(granted.stdout) == {
        "connector": "res",
        "kind": "resource",
        "tool": "*",
        "decision": "deny",
        "scope": "global",
        "project_id": None,
    }
    denied = run("resource", "read", "res", "fixture://doc/1", "--yes", "--project", str(workspace), "--json")
    assert denied.exit_code == 1
    assert json.loads(denied.stdout)["error"]["code"] == "permission_denied"
    assert requests(record, "resources/read") == []

    assert run("grant", "res", "--resources", "allow").stdout.strip() == "res resources: allow (global)"
    allowed = run("resource", "read", "res", "fixture://doc/1", "--project", str(workspace), "--json")  # headless
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout)["contents"][0]["text"] == "Document 1"

    cleared = run("grant", "res", "--resources", "--clear")
    assert cleared.stdout.strip() == "res resources: cleared (global)"
    asked = run("resource", "read", "res", "fixture://doc/2", "--project", str(workspace), "--json")  # headless
    assert json.loads(asked.stdout)["error"]["code"] == "approval_unavailable"


def test_the_old_resource_grant_spelling_is_refused_with_a_hint(run, workspace: Path, record: Path) -> None:
    refused = run("grant", "res", "resources/read", "allow")
    assert refused.exit_code == 1
    assert "error[invalid_config]" in refused.stderr and "--resources" in refused.stderr
    assert run("grant", "res", "resources/read", "--clear").exit_code == 1
    asked = run("resource", "read", "res", "fixture://doc/1", "--project", str(workspace), "--json")  # headless
    assert json.loads(asked.stdout)["error"]["code"] == "approval_unavailable"
    assert requests(record, "resources/read") == []


def test_a_disabled_connector_says_how_to_enable_it(run, workspace: Path) -> None:
    assert run("connector", "disable", "res").exit_code == 0
    result = run("resource", "list", "res", "--project", str(workspace), "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "not_found" and "patchbay connector enable res" in error["message"]


def test_server_everything_from_the_cli(run, workspace: Path) -> None:
    assert run("connector", "add", "everything", "--", *everything_stdio_command()).exit_code == 0
    listed = json.loads(run("resource", "list", "everything", "--project", str(workspace), "--json").stdout)
    assert len(listed["resources"]) == 7
    read = run(
        "resource", "read", "everything", "demo://resource/dynamic/text/{resourceId}", "--var", "resourceId=3",
        "--yes", "--project", str(workspace),
    )  # fmt: skip
    assert read.exit_code == 0, read.output
    assert read.stdout.startswith("Resource 3:")
    got = run(
        "prompt", "get", "everything", "args-prompt", "city=San Francisco", "state=CA", "--project", str(workspace)
    )
    assert got.exit_code == 0, got.output
    assert got.stdout.strip() == "user: What's weather in San Francisco, CA?"


def test_resource_read_on_a_terminal_asks_and_a_denial_reads_nothing(tmp_path: Path, record: Path) -> None:
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "tty-home"), "COLUMNS": "200", "TERM": "dumb"}
    server = [sys.executable, str(FIXTURES / "resources_server.py"), "--record", str(record)]
    subprocess.run(["patchbay", "connector", "add", "res", "--", *server], env=env, check=True, capture_output=True)

    def spawn() -> pexpect.spawn:
        return pexpect.spawn(
            "patchbay",
            ["resource", "read", "res", "fixture://doc/9"],
            env=env,
            cwd=str(tmp_path),
            encoding="utf-8",
            timeout=60,
        )

    child = spawn()
    child.expect(r"Include resource fixture://doc/9 from res \(risk: read\)\?")
    child.expect(r"Allow\? \[o\]nce, for this \[s\]ession \(any resource of res\), \[d\]eny")
    child.sendline("d")
    child.expect(r"error\[permission_denied\]")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and requests(record, "resources/read") == []

    child = spawn()
    child.expect(r"Allow\?")
    child.sendline("o")
    child.expect("Document 9")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == ["fixture://doc/9"]
