"""patchbay.interfaces.cli.serve, the ``patchbay serve`` command.

Sections, in this order:

- Starting serve: ``patchbay serve``: the README's quick start, what it prints, loopback by default,
  the refusal of other addresses without ``--allow-remote``, and a store it cannot use (503, not a
  crash).
- Stopping serve (Linux only): Stopping ``patchbay serve``: SIGTERM cancels a hung call within
  ``shutdown_grace`` (answered ``cancelled``) and stops every server; SIGKILL of serve still takes
  its stdio servers with it (``PR_SET_PDEATHSIG`` through the launcher). A real serve process and a
  real fixture server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
from typer.testing import CliRunner

from patchbay.adapters.transports.rlimit_exec import launcher_argv
from patchbay.control.connectors import ConnectorService
from patchbay.interfaces.cli import app, serve
from tests.support.paths import FIXTURES, REPO
from tests.support.serve import Served, serve_process

# --- Starting serve ---


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
        if line.startswith("Settings page: "):  # the last line
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
        # the last line, the one that shows the token: the login URL, which lands on the settings page
        assert start["Settings page"] == f"{url}/login?token={token}"
        with requests.Session() as browser:  # opening it logs in and lands on the settings page
            page = browser.get(start["Settings page"], timeout=30)
        assert page.status_code == 200 and page.url == f"{url}/ui" and 'id="connectors-page"' in page.text
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
        assert set(served.info) == {
            "url",
            "openapi",
            "home",
            "database",
            "coordination",
            "instance",
            "token",
            "login_url",
            "gateway_url",
            "gateway_token",
            "gateway_token_created_at",
        }
        # without --allow-remote no gateway token is made (tests/interfaces/cli/test_gateway_token.py)
        assert served.info["gateway_url"] == served.url + "/mcp" and served.info["gateway_token"] is None
        assert served.info["coordination"] == "in process (no PATCHBAY_REDIS_URL)"
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


@contextlib.contextmanager
def _sleeper(*prefix: str) -> Any:
    """A process that waits until the block ends (``prefix`` runs it as someone else), yielded once
    it runs the interpreter (it said so)."""
    script = "import sys; print('ready', flush=True); sys.stdin.read()"
    process = subprocess.Popen(
        [*prefix, sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def _write_serves(home: Path, serves: list[dict[str, Any]]) -> None:
    home.mkdir(exist_ok=True)
    (home / serve.SERVING_FILE).write_text(json.dumps({"serves": serves}))


def test_stopping_one_of_two_serves_keeps_the_other_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with _sleeper() as other:
        started = psutil.Process(other.pid).create_time()
        _write_serves(home, [{"url": "http://127.0.0.1:4001", "pid": other.pid, "started": started}])
        serve._record_serving(home, "http://127.0.0.1:4002")  # this process: the newest
        assert serve.running_url(home) == "http://127.0.0.1:4002"
        serve._forget_serving(home)  # this one stops; the other goes on
        assert serve.running_url(home) == "http://127.0.0.1:4001"
    serve._record_serving(home, "http://127.0.0.1:4003")  # the other is gone: its record too
    assert [s["url"] for s in json.loads((home / serve.SERVING_FILE).read_text())["serves"]] == [
        "http://127.0.0.1:4003"
    ]
    serve._forget_serving(home)
    assert not (home / serve.SERVING_FILE).exists() and serve.running_url(home) is None


def test_a_serving_record_of_another_users_or_a_reused_pid_is_not_a_running_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    own = psutil.Process(os.getpid()).create_time()
    _write_serves(home, [{"url": "http://127.0.0.1:4001", "pid": os.getpid(), "started": own - 3600}])
    assert serve.running_url(home) is None  # the pid now names a process started later
    _write_serves(home, [{"url": "http://127.0.0.1:4001", "pid": os.getpid(), "started": own}])
    assert serve.running_url(home) == "http://127.0.0.1:4001"
    if os.getuid() != 0:
        foreign = psutil.Process(1)  # init: root's
        _write_serves(home, [{"url": "http://127.0.0.1:4001", "pid": 1, "started": foreign.create_time()}])
        assert serve.running_url(home) is None
        return
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to run a process as another user")
    with _sleeper("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups") as other:
        foreign = psutil.Process(other.pid)  # setpriv execs in place: the same pid
        assert foreign.uids().real == 65534
        _write_serves(home, [{"url": "http://127.0.0.1:4001", "pid": other.pid, "started": foreign.create_time()}])
        assert serve.running_url(home) is None


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
        url, login = start["Patchbay API"].split()[0], start["Settings page"]
        token = login.partition("?token=")[2]  # the data home cannot hold the token: a one-time one
        response = requests.get(f"{url}/api/mcp/connectors", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code == 503 and response.json()["error"]["code"] == "canonical_state_unavailable"
    finally:
        process.send_signal(2)
        _, err = process.communicate(timeout=30)
    assert "warning: database" in err and "API routes answer 503 until it can be used" in err
    assert "this run uses a one-time token" in err


# --- Stopping serve (Linux only) ---

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(predicate: Any, within: float = 60.0) -> None:
    """A bounded poll of a condition another process makes true (no event to wait on)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the condition did not hold in time")
        time.sleep(0.05)


def add_life(service: ConnectorService, workspace: Path, record: Path) -> None:
    target = service.stdio_target(
        sys.executable, [LIFECYCLE, "--record", str(record), "--freezable"], cwd=None, workspace=workspace
    )
    # A request timeout far beyond the grace: only the shutdown can end the hung call in time.
    service.add("life", target, runtime_options={"request_timeout": 900, "max_call_seconds": 900})
    service.update_settings("life", approval_mode="allow_all")


def open_session(served: Served, workspace: Path) -> str:
    answer = requests.post(
        f"{served.url}/api/sessions", json={"cwd": str(workspace)}, headers=served.headers, timeout=60
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["session_id"]


def call(served: Served, session: str, tool: str, arguments: dict[str, Any]) -> requests.Response:
    body = {"tool": tool, "arguments": arguments}
    return requests.post(f"{served.url}/api/sessions/{session}/call", json=body, headers=served.headers, timeout=300)


def server_pids(record: Path) -> list[int]:
    return [entry["launch"] for entry in records(record) if "launch" in entry]


@linux_only
def test_sigterm_cancels_a_hung_call_within_the_grace_and_stops_every_server(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    record = tmp_path / "life.jsonl"
    add_life(service, workspace, record)
    env = {**os.environ, "PATCHBAY_SHUTDOWN_GRACE": "1"}
    answers: list[requests.Response] = []
    with serve_process(service.settings.home, workspace, env=env) as served:
        session = open_session(served, workspace)
        caller = threading.Thread(
            target=lambda: answers.append(call(served, session, "mcp.life.sleep", {"seconds": 900, "tag": "hung"}))
        )
        caller.start()
        wait_for(lambda: {"started": "hung"} in records(record))
        (pid,) = server_pids(record)
        served.process.send_signal(signal.SIGTERM)
        # Generous against a loaded machine, and still far below the call's 900 s timeout.
        served.process.wait(timeout=120)
        caller.join(timeout=60)
    assert served.process.returncode == 0
    (answer,) = answers
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "cancelled"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@linux_only
def test_sigkill_of_serve_takes_its_stdio_servers_with_it(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    record = tmp_path / "life.jsonl"
    add_life(service, workspace, record)
    with serve_process(service.settings.home, workspace) as served:
        session = open_session(served, workspace)
        answer = call(served, session, "mcp.life.pid", {})
        assert answer.status_code == 200, answer.text
        (pid,) = server_pids(record)
        server = psutil.Process(pid)
        assert server.ppid() == served.process.pid  # the launcher exec'd the server in place

        # Frozen, the server will not notice its stdin closing: only the death signal can end it.
        def freeze() -> None:
            with contextlib.suppress(requests.ConnectionError):  # serve dies under it
                call(served, session, "mcp.life.freeze", {})

        caller = threading.Thread(target=freeze, daemon=True)
        caller.start()
        wait_for(lambda: {"frozen": pid} in records(record))
        served.process.kill()
        served.process.wait(timeout=60)
        try:
            server.wait(timeout=60)  # bounded; it is no child of ours, psutil polls
        except psutil.NoSuchProcess:
            pass
        finally:
            with contextlib.suppress(psutil.NoSuchProcess):
                server.kill()  # never leave it behind, even when the assertion below fails
        caller.join(timeout=60)
    assert not server.is_running()


@linux_only
def test_a_server_whose_parent_is_already_gone_does_not_start(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = f"open({str(marker)!r}, 'w').close()"
    # A parent pid that is not our parent: the launcher must refuse before exec.
    argv = launcher_argv(sys.executable, ["-c", script], parent_pid=1 if os.getppid() != 1 else 2)
    finished = subprocess.run(argv, capture_output=True, timeout=60)
    assert finished.returncode == 125
    assert not marker.exists()
