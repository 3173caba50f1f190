"""Stopping ``patchbay serve``: SIGTERM cancels a hung call within ``shutdown_grace`` (answered
``cancelled``) and stops every server; SIGKILL of serve still takes its stdio servers with it
(``PR_SET_PDEATHSIG`` through the launcher). A real serve process and a real fixture server."""

from __future__ import annotations

import contextlib
import json
import os
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

from patchbay.adapters.transports.rlimit_exec import launcher_argv
from patchbay.control.connectors import ConnectorService
from tests.support.paths import FIXTURES
from tests.support.serve import Served, serve_process

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")


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


def test_a_server_whose_parent_is_already_gone_does_not_start(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = f"open({str(marker)!r}, 'w').close()"
    # A parent pid that is not our parent: the launcher must refuse before exec.
    argv = launcher_argv(sys.executable, ["-c", script], parent_pid=1 if os.getppid() != 1 else 2)
    finished = subprocess.run(argv, capture_output=True, timeout=60)
    assert finished.returncode == 125
    assert not marker.exists()
