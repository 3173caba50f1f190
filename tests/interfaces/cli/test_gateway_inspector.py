"""The MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``, ``--cli``) as the host of
``patchbay gateway --stdio`` (both modes) and of ``/mcp`` on a real ``patchbay serve``, in front of
real ``mcp-server-time`` peers: what a third-party host sees and gets through the governed path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.paths import INSPECTOR, NODE22
from tests.support.serve import Served, serve_process

pytestmark = pytest.mark.peers

PATCHBAY = str(Path(sys.executable).parent / "patchbay")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def governed_home(home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``time``: get_current_time allowed, convert_time denied; ``clock``: both ask (the default)."""
    monkeypatch.setenv("PATCHBAY_BUILTINS", "off")
    runner = CliRunner()
    for args in (
        ("connector", "add", "time", "--", "mcp-server-time"),
        ("connector", "add", "clock", "--", "mcp-server-time"),
        ("probe", "time", "--project", str(workspace)),
        ("probe", "clock", "--project", str(workspace)),
        ("grant", "time", "get_current_time", "allow"),
        ("grant", "time", "convert_time", "deny"),
    ):
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output


@pytest.fixture
def inspector(home: Path, workspace: Path, tmp_path: Path) -> Callable[..., Any]:
    """``inspector(mode, --method ..., ...)``: one Inspector CLI run against a freshly spawned
    gateway; returns its JSON answer."""
    (tmp_path / "user").mkdir()
    env = {
        "PATH": os.pathsep.join([str(NODE22.parent), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "HOME": str(tmp_path / "user"),  # the Inspector's own catalog and settings stay in the test
    }

    def run(mode: str, *args: str, refused: bool = False) -> Any:
        gateway = [PATCHBAY, "--home", str(home), "gateway", "--stdio", "--project", str(workspace), "--mode", mode]
        done = subprocess.run(
            [str(NODE22), str(INSPECTOR), "--cli", "-e", "PATCHBAY_BUILTINS=off", *gateway, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        # 0, or 5 for a tool result with isError (the Inspector prints the result all the same)
        # or for a call it refuses itself (its error then goes to stderr)
        assert done.returncode in (0, 5), done.stdout + done.stderr
        if refused:
            assert done.returncode == 5 and not done.stdout.strip(), done.stdout
            return json.loads(done.stderr.strip().splitlines()[-1])
        answer, _ = json.JSONDecoder().raw_decode(done.stdout)
        assert (done.returncode == 5) == (answer.get("isError") is True), done.stdout + done.stderr
        return answer

    return run


@pytest.mark.usefixtures("governed_home")
def test_direct_mode_through_the_inspector(inspector: Callable[..., Any]) -> None:
    tools = {tool["name"]: tool for tool in inspector("direct", "--method", "tools/list")["tools"]}
    assert set(tools) == {"time__get_current_time", "clock__get_current_time", "clock__convert_time"}
    assert tools["time__get_current_time"]["annotations"]["readOnlyHint"] is True
    called = inspector(
        "direct", "--method", "tools/call", "--tool-name", "time__get_current_time", "--tool-arg", "timezone=Asia/Tokyo"
    )
    assert called["isError"] is False and called["structuredContent"]["timezone"] == "Asia/Tokyo"
    asked = inspector(
        "direct", "--method", "tools/call", "--tool-name", "clock__get_current_time", "--tool-arg", "timezone=UTC"
    )
    assert asked["isError"] is True and asked["_meta"]["patchbay/error"]["code"] == "approval_unavailable"
    assert "structuredContent" not in asked  # the tool has an outputSchema the Inspector checks
    denied = inspector(
        "direct",
        "--method",
        "tools/call",
        "--tool-name",
        "time__convert_time",
        "--tool-arg",
        "source_timezone=UTC",
        "time=12:00",
        "target_timezone=Asia/Tokyo",
        refused=True,
    )
    assert denied["error"]["code"] == "tool_not_found"  # not listed, so the Inspector will not call it


@pytest.mark.usefixtures("governed_home")
def test_proxy_mode_through_the_inspector(inspector: Callable[..., Any]) -> None:
    tools = inspector("proxy", "--method", "tools/list")["tools"]
    assert [tool["name"] for tool in tools] == ["mcp"]
    assert "governs" in tools[0]["description"]
    found = inspector(
        "proxy", "--method", "tools/call", "--tool-name", "mcp", "--tool-arg", "action=search", "query=time"
    )
    assert found["isError"] is False
    names = [tool["name"] for tool in found["structuredContent"]["tools"]]
    current = next(name for name in names if name.endswith("time__get_current_time"))
    assert not any(name.endswith("time__convert_time") and "clock" not in name for name in names)  # denied
    called = inspector(
        "proxy",
        "--method",
        "tools/call",
        "--tool-name",
        "mcp",
        "--tool-arg",
        "action=call",
        f"tool={current}",
        'arguments={"timezone": "UTC"}',
    )
    assert called["isError"] is False and '"timezone": "UTC"' in json.dumps(called["structuredContent"])


@pytest.fixture
def served(governed_home: None, home: Path, workspace: Path) -> Iterator[Served]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with serve_process(home, workspace, env=env) as serving:
        yield serving


def test_over_http_the_inspector_reaches_mcp_on_serve_with_the_token(
    served: Served, workspace: Path, tmp_path: Path
) -> None:
    env = {"PATH": os.pathsep.join([str(NODE22.parent), os.environ["PATH"]]), "HOME": str(tmp_path / "user")}
    (tmp_path / "user").mkdir(exist_ok=True)
    url = f"{served.url}/mcp?cwd={workspace}&mode=direct"

    def inspect(*args: str, token: bool = True) -> subprocess.CompletedProcess[str]:
        auth = ["--header", f"Authorization: Bearer {served.info['token']}"] if token else ["--stored-auth-only"]
        return subprocess.run(
            [str(NODE22), str(INSPECTOR), "--cli", url, "--transport", "http", *auth, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    listed = inspect("--method", "tools/list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert names == {"time__get_current_time", "clock__get_current_time", "clock__convert_time"}
    called = inspect("--method", "tools/call", "--tool-name", "time__get_current_time", "--tool-arg", "timezone=UTC")
    assert called.returncode == 0, called.stdout + called.stderr
    assert json.loads(called.stdout)["structuredContent"]["timezone"] == "UTC"
    refused = inspect("--method", "tools/list", token=False)  # 401: the Inspector wants a login
    assert (
        refused.returncode != 0
        and json.loads(refused.stderr.strip().splitlines()[-1])["error"]["code"] == "auth_required"
    )
