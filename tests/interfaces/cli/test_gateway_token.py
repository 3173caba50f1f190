"""``patchbay gateway token [--rotate]`` and what ``patchbay serve --allow-remote`` does about the
gateway token: made on first need and shown once, later only said to exist; a rotation applies
to a running serve at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from typer.testing import CliRunner

from patchbay.adapters.credentials import CREDENTIALS_FILE, CredentialStore
from patchbay.control.gateway_token import GATEWAY_TOKEN_PREFIX, GatewayTokens
from patchbay.interfaces.cli import app
from tests.support.serve import serve_process

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _invoke(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, ["--home", str(home), *args])
    assert result.exit_code == 0, result.output
    return result


def _accepts(home: Path, token: str) -> bool:
    return GatewayTokens(CredentialStore(home)).accepts(token)


def test_rotate_json_prints_a_new_token_once_and_the_old_one_stops_working(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert json.loads(_invoke(home, "gateway", "token", "--json").stdout) == {"exists": False, "created_at": None}
    first = json.loads(_invoke(home, "gateway", "token", "--rotate", "--json").stdout)
    assert set(first) == {"exists", "created_at", "token", "header", "replaced"}
    assert first["token"].startswith(GATEWAY_TOKEN_PREFIX) and first["replaced"] is False and first["exists"] is True
    assert first["header"] == f"Authorization: Bearer {first['token']}"
    assert _accepts(home, first["token"])
    assert first["token"] not in (home / CREDENTIALS_FILE).read_text()  # a digest only
    # never shown again: the status says when it was made, not what it is
    status = _invoke(home, "gateway", "token", "--json")
    assert json.loads(status.stdout) == {"exists": True, "created_at": first["created_at"]}
    text = _invoke(home, "gateway", "token")
    assert first["token"] not in text.stdout and "The gateway token exists (made " in text.stdout
    assert "`patchbay gateway token --rotate` makes a new one" in text.stdout
    second = json.loads(_invoke(home, "gateway", "token", "--rotate", "--json").stdout)
    assert second["replaced"] is True and second["token"] != first["token"]
    assert not _accepts(home, first["token"]) and _accepts(home, second["token"])
    shown = _invoke(home, "gateway", "token", "--rotate")  # text: the token and its header, this once
    token = shown.stdout.splitlines()[0].removeprefix("Gateway token: ")
    assert shown.stdout.splitlines()[1] == f"Header: Authorization: Bearer {token}"
    assert "the one before it stops working now" in shown.stdout and _accepts(home, token)
    assert not _accepts(home, second["token"])


def _start(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    """``serve --port 0 ARGS`` up to the point it would serve (uvicorn's run does nothing)."""
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    return _invoke(home, "serve", "--host", "127.0.0.1", "--port", "0", *args)


def test_serve_allow_remote_makes_the_token_once_and_later_says_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    plain = json.loads(_start(home, monkeypatch, "--json").stdout)
    assert plain["gateway_token"] is None and plain["gateway_token_created_at"] is None  # nothing made
    made = _start(home, monkeypatch, "--allow-remote", "--json")
    first = json.loads(made.stdout)
    assert first["gateway_token"].startswith(GATEWAY_TOKEN_PREFIX) and _accepts(home, first["gateway_token"])
    assert first["gateway_url"] == first["url"] + "/mcp" and isinstance(first["gateway_token_created_at"], int)
    assert "made the gateway token for /mcp" in made.stderr and first["gateway_token"] not in made.stderr
    again = _start(home, monkeypatch, "--allow-remote", "--json")
    later = json.loads(again.stdout)
    assert later["gateway_token"] is None and later["gateway_token_created_at"] == first["gateway_token_created_at"]
    assert "The gateway token for /mcp exists (made " in again.stderr
    assert "`patchbay gateway token --rotate` makes a new one" in again.stderr
    assert first["gateway_token"] not in again.stdout + again.stderr and _accepts(home, first["gateway_token"])
    text = _start(tmp_path / "fresh", monkeypatch, "--allow-remote")  # text output: one stderr line
    [line] = [line for line in text.stderr.splitlines() if line.startswith("Gateway token (for /mcp only")]
    token = line.rsplit(" ", 1)[1]
    assert _accepts(tmp_path / "fresh", token) and token not in text.stdout


def test_a_rotation_applies_to_a_running_serve_at_once(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    with serve_process(home, workspace, "--allow-remote") as served:
        first = served.info["gateway_token"]
        assert first is not None
        url = f"{served.url}/mcp?mode=direct"

        def initialize(token: str) -> requests.Response:
            return requests.post(
                url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}"}, timeout=60
            )

        opened = initialize(first)
        assert opened.status_code == 200 and '"serverInfo"' in opened.text
        refused = requests.get(
            f"{served.url}/api/mcp/connectors", headers={"Authorization": f"Bearer {first}"}, timeout=30
        )
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        second = json.loads(_invoke(home, "gateway", "token", "--rotate", "--json").stdout)["token"]
        old = initialize(first)
        assert old.status_code == 401 and old.headers["www-authenticate"] == "Bearer"
        assert initialize(second).status_code == 200
    assert served.process.returncode == 0


def test_from_stdin_gives_a_second_instance_the_same_token_without_printing_it(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    token = json.loads(_invoke(first, "gateway", "token", "--rotate", "--json").stdout)["token"]
    result = CliRunner().invoke(
        app, ["--home", str(second), "gateway", "token", "--from-stdin", "--json"], input=token + "\n"
    )
    assert result.exit_code == 0, result.output
    adopted = json.loads(result.stdout)
    assert adopted == {"exists": True, "created_at": adopted["created_at"], "replaced": False}
    assert adopted["created_at"] == GatewayTokens(CredentialStore(second)).status()
    assert token not in result.output and _accepts(second, token)
    bad = CliRunner().invoke(app, ["--home", str(second), "gateway", "token", "--from-stdin"], input="not-a-token\n")
    assert bad.exit_code == 1 and bad.stderr.startswith("error[validation_error]: that is not a gateway token")
    both = CliRunner().invoke(app, ["--home", str(second), "gateway", "token", "--rotate", "--from-stdin"], input=token)
    assert both.exit_code == 1 and "error[validation_error]" in both.stderr
    assert _accepts(second, token)
