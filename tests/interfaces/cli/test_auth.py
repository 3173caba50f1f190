"""`patchbay auth configure | login | status | logout` against a real authorization server + MCP
server (tests/fixtures/oauth_server.py): secrets by reference, the authorization URL on stderr with
``--no-browser``, and no token or secret in any output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.credentials import files_under
from tests.support.oauth import HeadlessBrowser, control_plane, oauth_server

pytestmark = pytest.mark.anyio

PATCHBAY = Path(sys.executable).parent / "patchbay"
NAME = "svc"
SECRET = "cnryAUTHsecret-8e1f2a3b4c5d"
ENV_SECRET = "cnryAUTHenv-6d7c8b9a0f1e"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def run(home: Path):
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True):
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        for value in (SECRET, ENV_SECRET):
            assert value not in result.stdout and value not in result.stderr, (args, result.output)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return invoke


def add_remote(run, url: str) -> None:
    run("connector", "add", NAME, "--url", url, "--allow-private", "--json")


async def login_in_a_process(
    home: Path, workspace: Path, browser: HeadlessBrowser, *, login_seconds: int = 30
) -> tuple[int, str, str]:
    """Run ``patchbay auth login NAME --no-browser --json`` as a process; play the browser with the
    URL it prints on stderr. Returns ``(exit status, stdout, stderr)``."""
    argv = [str(PATCHBAY), "--home", str(home), "auth", "login", NAME, "--no-browser", "--timeout", str(login_seconds)]
    argv += ["--project", str(workspace), "--json"]
    env = {**os.environ, "COLUMNS": "80", "BROWSER": "false"}
    lines: list[str] = []
    buffered = b""
    stdout = b""
    with anyio.fail_after(90):
        async with await anyio.open_process(argv, env=env) as process:
            assert process.stderr is not None and process.stdout is not None
            while not any(line.startswith("http") for line in lines):
                buffered += await process.stderr.receive()
                *done, buffered = buffered.split(b"\n")
                lines += [line.decode() for line in done]
            url = next(line for line in lines if line.startswith("http"))  # one unbroken line
            await browser(url)
            async for chunk in process.stdout:
                stdout += chunk
            async for chunk in process.stderr:
                buffered += chunk
            await process.wait()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), "\n".join(lines) + "\n" + buffered.decode()


def test_configure_client_credentials_stores_secret_references_and_prints_no_value(
    run, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PB_AUTH_CLI_SECRET", ENV_SECRET)
    add_remote(run, "https://mcp.example.com/mcp")
    shown = json.loads(
        run(
            "auth",
            "configure",
            NAME,
            "--grant",
            "client_credentials",
            "--client-id",
            "m2m",
            "--client-secret",
            "@env:PB_AUTH_CLI_SECRET",
            "--json",
        ).stdout
    )
    assert (shown["grant"], shown["configured"], shown["state"]) == ("client_credentials", True, "not_authorized")
    items = json.loads(run("credential", "list", "--json").stdout)["items"]
    assert len(items) == 1
    reference = items[0]
    assert (reference["source"], reference["variable"], reference["owner"]) == (
        "environment",
        "PB_AUTH_CLI_SECRET",
        NAME,
    )
    config = control_plane(home).service.get(NAME).runtime_config["oauth"]
    assert config == {
        "grant": "client_credentials",
        "client_id": "m2m",
        "client_secret_ref": reference["id"],
        "signing_algorithm": "RS256",
    }

    # A literal secret becomes a managed credential the connector owns; the old reference goes.
    run("auth", "configure", NAME, "--grant", "client_credentials", "--client-id", "m2m", "--client-secret", SECRET)
    items = json.loads(run("credential", "list", "--json").stdout)["items"]
    assert [(item["source"], item["owner"], item["configured"]) for item in items] == [("managed", NAME, True)]
    assert run("credential", "show", items[0]["id"]).stdout
    holding = [p.name for p in files_under(home) if SECRET.encode() in p.read_bytes()]
    assert holding == ["credentials.json"]
    assert all(ENV_SECRET.encode() not in p.read_bytes() for p in files_under(home))


def test_configure_refuses_what_it_cannot_use(run) -> None:
    add_remote(run, "https://mcp.example.com/mcp")
    missing = run("auth", "configure", NAME, "--grant", "client_credentials", "--json", ok=False)
    assert missing.exit_code == 1
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "invalid_config" and "client_id" in error["message"]
    unknown = run("auth", "status", "nosuch", "--json", ok=False)
    assert unknown.exit_code == 1 and json.loads(unknown.stdout)["error"]["code"] == "not_found"
    assert json.loads(run("auth", "status", NAME, "--json").stdout)["state"] == "not_configured"


async def test_login_no_browser_prints_the_url_and_completes_through_the_loopback_callback(
    run, home: Path, workspace: Path
) -> None:
    with oauth_server(separate_as=True) as fixture:
        add_remote(run, fixture.url)
        run("auth", "configure", NAME)
        assert json.loads(run("auth", "status", NAME, "--json").stdout)["state"] == "not_authorized"

        browser = HeadlessBrowser()
        status_code, stdout, stderr = await login_in_a_process(home, workspace, browser)
        assert browser.urls[0].startswith(fixture.issuer("main") + "/authorize?")
        assert status_code == 0, stderr
        answer = json.loads(stdout)
        assert answer["probe"]["state"] == "ready" and answer["probe"]["tool_count"] == 1
        assert answer["status"]["state"] == "authorized"
        assert browser.pages[0][0] == 200

        tokens = control_plane(home).bundle(NAME).tokens
        for token in (tokens["access_token"], tokens["refresh_token"]):
            assert token.encode() in (home / "credentials.json").read_bytes()
            assert token not in stdout and token not in stderr


async def test_status_and_logout_show_the_grant_but_never_a_token(run, home: Path, workspace: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        add_remote(run, fixture.url)
        run("auth", "configure", NAME)
        plane = control_plane(home)  # the same data home, logged in through the library
        result, _ = await plane.oauth.login(NAME, authorizer=HeadlessBrowser(), workspace=workspace, login_timeout=20)
        assert result.state == "ready", result.message
        tokens = plane.bundle(NAME).tokens
        values = [tokens["access_token"], tokens["refresh_token"]]

        status = run("auth", "status", NAME, "--json").stdout
        view = json.loads(status)
        assert (view["state"], view["issuer"], view["scope"]) == ("authorized", fixture.issuer("main"), "mcp")
        assert view["has_refresh_token"] is True  # a yes/no is no secret
        text = run("auth", "status", NAME).stdout
        assert f"{NAME}: authorized" in text and fixture.issuer("main") in text
        assert "[REDACTED]" not in text  # nothing secret to hide in a status
        listed = json.loads(run("credential", "list", "--json").stdout)["items"]
        assert [item["kind"] for item in listed if item["owner"] == NAME] == ["oauth_token_bundle"]
        shown = status + text + json.dumps(listed)

        # logout runs its own event loop: from a worker thread, as from a shell.
        out = (await anyio.to_thread.run_sync(lambda: run("auth", "logout", NAME, "--json"))).stdout
        assert json.loads(out) == {
            "connector": NAME,
            "revoked": ["refresh_token", "access_token"],
            "revocation": "done",
            "deleted": True,
        }
        assert all(token not in shown + out for token in values)
        assert fixture.counts("main")["revoke"] == 2
        assert json.loads(run("auth", "status", NAME, "--json").stdout)["state"] == "not_authorized"
        assert "no stored grant" in (await anyio.to_thread.run_sync(lambda: run("auth", "logout", NAME))).stdout


async def test_a_failed_login_exits_non_zero_with_its_code(run, home: Path, workspace: Path) -> None:
    with oauth_server() as fixture:
        add_remote(run, fixture.url)
        run("auth", "configure", NAME)
        fixture.control(authorize="access_denied")
        status_code, stdout, stderr = await login_in_a_process(home, workspace, HeadlessBrowser(), login_seconds=15)
        assert status_code == 1, stderr
        answer = json.loads(stdout)
        assert (answer["probe"]["state"], answer["probe"]["code"]) == ("error", "auth_required")
        assert "access_denied" in answer["probe"]["message"]  # the user's refusal, not a timeout
        assert answer["status"]["state"] == "not_authorized"
