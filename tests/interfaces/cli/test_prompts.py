"""``patchbay prompt list|get`` on the recording fixture tests/fixtures/resources_server.py: local
argument checks, prompt grants, and the events of an expansion."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.paths import FIXTURES


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


def test_a_prompt_deny_grant_hides_the_prompt_from_list_and_get(run, workspace: Path, record: Path) -> None:
    assert run("grant", "res", "--prompt", "greet", "ask").exit_code == 1  # a person triggers a prompt
    assert run("grant", "res", "--prompt", "greet", "deny").stdout.strip() == "res prompt greet: deny (global)"
    listed = json.loads(run("prompt", "list", "res", "--project", str(workspace), "--json").stdout)
    assert [p["name"] for p in listed["prompts"]] == ["review", "plain", "broken"]
    refused = run("prompt", "get", "res", "greet", "name=Ada", "--project", str(workspace), "--json")
    assert refused.exit_code == 1 and json.loads(refused.stdout)["error"]["code"] == "permission_denied"
    assert requests(record, "prompts/get") == []

    assert run("grant", "res", "--prompt", "greet", "--clear").exit_code == 0
    again = run("prompt", "get", "res", "greet", "name=Ada", "--project", str(workspace), "--json")
    assert again.exit_code == 0, again.output
    assert [r["params"]["name"] for r in requests(record, "prompts/get")] == ["greet"]


def test_prompt_list_and_get_with_local_argument_checks(run, workspace: Path, record: Path) -> None:
    listed = json.loads(run("prompt", "list", "res", "--project", str(workspace), "--json").stdout)
    assert [p["name"] for p in listed["prompts"]] == ["greet", "review", "plain", "broken"]
    assert [(a["name"], a["required"]) for a in listed["prompts"][0]["arguments"]] == [("name", True), ("style", False)]

    got = run(
        "prompt", "get", "res", "greet", "name=Ada Lovelace", "style=very formal", "--project", str(workspace), "--json"
    )
    assert got.exit_code == 0, got.output
    body = json.loads(got.stdout)
    assert body["arguments"] == {"name": "Ada Lovelace", "style": "very formal"}
    assert [(m["role"], m["server_role"]) for m in body["messages"]] == [("user", "user"), ("user", "assistant")]
    assert body["messages"][0]["source"] == {"mcp": {"server": "res", "prompt": "greet"}}
    assert requests(record, "prompts/get")[0]["params"]["arguments"] == {"name": "Ada Lovelace", "style": "very formal"}
    events = events_of(run, body["session_id"])
    assert [e["type"] for e in events if e["type"].startswith("mcp.prompt.")] == [
        "mcp.prompt.invoked",
        "mcp.prompt.expanded",
    ]

    text = run("prompt", "get", "res", "greet", "name=Ada", "--project", str(workspace))
    assert text.exit_code == 0 and "user: greet name='Ada' style=None" in text.stdout
    assert "expanded from [mcp:res:greet]" in text.stderr

    missing = run("prompt", "get", "res", "greet", "style=x", "--project", str(workspace), "--json")
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"] == {
        "code": "validation_error",
        "message": "argument 'name' is required",
        "details": {"field": "arguments", "argument": "name"},
    }
    unknown = run("prompt", "get", "res", "greet", "name=x", "mood=y", "--project", str(workspace))
    assert unknown.exit_code == 1 and "has no argument 'mood'" in unknown.stderr
    malformed = run("prompt", "get", "res", "greet", "name", "--project", str(workspace))
    assert malformed.exit_code == 1 and "expected key=value" in malformed.stderr
    assert len(requests(record, "prompts/get")) == 2  # the refused ones never reached the server
