"""``patchbay serve``: the README's quick start, what it prints, loopback by default, the refusal
of other addresses without ``--allow-remote``, and a store it cannot use (503, not a crash)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
from typer.testing import CliRunner

from patchbay.interfaces.cli import app, serve
from tests.support.paths import REPO
from tests.support.serve import serve_process


def quickstart_serve_step() -> list[str]:
    """The README's first quick-start command, its last step (``.venv/bin/patchbay serve``), as argv."""
    readme = (REPO / "README.md").read_text()
    first = re.findall(r"```bash\n(.*?)```", readme.split("## Quick start", 1)[1], re.S)[0].strip()
    assert first.count("\n") == 0, "the quick start is one command"
    steps = [step.strip() for step in first.split("&&")]
    assert steps[0].startswith("python3 -m venv .venv") and "pip install" in steps[1]
    return steps[-1].split()


def _text_start(process: subprocess.Popen[str]) -> dict[str, str]:
    """The lines ``serve`` prints at start (without ``--json``), by their label."""
    assert process.stdout is not None
    lines = {}
    for line in process.stdout:
        label, _, value = line.partition(": ")
        lines[label] = value.strip()
        if line.startswith("Press Ctrl-C"):
            return lines
    raise AssertionError(f"serve stopped early: {lines}")


def test_the_readme_quick_start_serves_the_api_and_prints_url_and_data_home(tmp_path: Path) -> None:
    argv = quickstart_serve_step()
    assert argv[0] == ".venv/bin/patchbay" and argv[1:] == ["serve"]
    home = tmp_path / "home"
    env = {**os.environ, "PATCHBAY_HOME": str(home), "PATCHBAY_API_PORT": "0"}  # 8765 may be taken here
    process = subprocess.Popen(
        ["patchbay", *argv[1:]], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        start = _text_start(process)
        url = start["Patchbay API"].split()[0]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        assert start["Data home"] == str(home) and start["Database"] == str(home / "patchbay.db")
        token = (home / "api-token").read_text().strip()
        assert start["Login URL"] == f"{url}/login?token={token}"  # the one line that shows the token
        headers = {"Authorization": f"Bearer {token}"}
        assert requests.get(f"{url}/api/mcp/connectors", headers=headers, timeout=30).json() == {"connectors": []}
        assert requests.get(f"{url}/openapi.json", headers=headers, timeout=30).json()["info"]["title"] == "Patchbay"
    finally:
        process.send_signal(2)  # Ctrl-C
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    # Start-up progress only (a clean stop adds nothing), step by step with the time since start.
    steps = [re.sub(r"^patchbay serve: \[ *\d+\.\d+s\] ", "", line) for line in err.splitlines()]
    assert all(line.startswith("patchbay serve: [") for line in err.splitlines()), err
    assert [step.split(" ", 1)[0] for step in steps] == ["loading", "opening", "starting"], err
    assert f"opening the store ({home / 'patchbay.db'};" in err and "the session host" in steps[-1]


def test_serve_json_prints_one_start_document_and_serves_until_interrupted(tmp_path: Path) -> None:
    with serve_process(tmp_path / "home", tmp_path) as served:
        assert set(served.info) == {"url", "openapi", "home", "database", "token", "login_url"}
        assert served.info["token"] == (tmp_path / "home" / "api-token").read_text().strip()
        assert served.info["login_url"] == f"{served.url}/login?token={served.info['token']}"
        assert served.info["home"] == str(tmp_path / "home") and served.info["openapi"] == served.url + "/openapi.json"
        created = served.session.post(
            f"{served.url}/api/mcp/connectors",
            json={"name": "time", "target": {"transport": "stdio", "command": "mcp-server-time"}},
            timeout=30,
        )
        assert created.status_code == 201
        foreign = served.session.get(f"{served.url}/api/mcp/connectors", headers={"Host": "rebind.example"}, timeout=30)
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "origin_refused"
    assert served.process.returncode == 0
    assert (tmp_path / "home" / "patchbay.db").exists()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_a_non_loopback_address_is_refused_without_allow_remote(
    tmp_path: Path, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bind(*args: object) -> None:
        raise AssertionError("nothing may be bound")

    monkeypatch.setattr(serve, "_bind", bind)
    result = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "serve", "--host", host, "--port", "0"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error[invalid_config]: host: ") and "--allow-remote" in result.stderr
    env_set = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "serve"], env={"PATCHBAY_API_HOST": host})
    assert env_set.exit_code == 1 and "--allow-remote" in env_set.stderr  # the setting is held to it too


def test_allow_remote_warns_and_answers_any_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}
    real_bind = serve._bind

    def bind_loopback(host: str, port: int) -> Any:  # no test listens beyond 127.0.0.1
        served["host"] = host
        return real_bind("127.0.0.1", port)

    def run(self: Any, sockets: Any = None) -> None:
        served["app"] = self.config.app

    import uvicorn

    monkeypatch.setattr(serve, "_bind", bind_loopback)
    monkeypatch.setattr(uvicorn.Server, "run", run)
    result = CliRunner().invoke(
        app, ["--home", str(tmp_path / "home"), "serve", "--host", "0.0.0.0", "--port", "0", "--allow-remote"]
    )
    assert result.exit_code == 0, result.output
    assert served["host"] == "0.0.0.0"
    assert "warning: serving on 0.0.0.0, beyond this machine: anyone who can reach it and holds the API token" in (
        result.stderr
    )
    middleware = [m for m in served["app"].user_middleware if m.cls.__name__ == "LocalOnlyMiddleware"]
    assert middleware[0].kwargs["allowed_hosts"] is None


def test_loopback_names() -> None:
    assert all(serve.is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(serve.is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com", "localhost.evil"))


def test_a_store_it_cannot_use_is_a_warning_and_503_not_a_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("not a directory")
    process = subprocess.Popen(
        ["patchbay", "--home", str(blocker), "serve", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        start = _text_start(process)
        url, login = start["Patchbay API"].split()[0], start["Login URL"]
        token = login.partition("?token=")[2]  # the data home cannot hold the token: a one-time one
        response = requests.get(f"{url}/api/mcp/connectors", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code == 503 and response.json()["error"]["code"] == "canonical_state_unavailable"
    finally:
        process.send_signal(2)
        _, err = process.communicate(timeout=30)
    assert "warning: database" in err and "API routes answer 503 until it can be used" in err
    assert "this run uses a one-time token" in err
