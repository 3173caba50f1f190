"""Canary values in every secret shape, driven through every path that writes or returns text.

Seed 003 §14.3 (audit and redaction), seed 000 §10. Each canary is a unique value in one of the
shapes :mod:`patchbay.core.redaction` masks, inside text that names it (``Authorization: Bearer
...``, ``token=...``, a callback URL ...), plus a "known credential" with no recognisable shape that
only its exact value can catch (registered the way a credential resolver registers a resolved
value, or passed to a probe as a connector env binding). The paths: the session events of real
runtime calls and the event file on disk; ``ToolCallError`` messages and details; the approver's
view of the arguments; probe diagnostics; the CLI's stdout and stderr, text and ``--json``; Python
log records with ``PATCHBAY_DEBUG=1``. No canary value may appear anywhere; the names stay visible.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from typer.testing import CliRunner

from patchbay import ApprovalRequest, Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.control.probe import Prober
from patchbay.core.models import Connector, StdioTarget
from patchbay.core.redaction import REDACTED, register_secret
from patchbay.interfaces.cli import app, configure_logging
from patchbay.runtime import read_events
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.anyio

RECORDING = FIXTURES / "recording_server.py"

# name -> (text that carries the canary, the secret values in it, the name that must stay visible)
CANARIES: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "authorization": ("Authorization: Bearer cnryBEARERa1b2c3d4e5", ("cnryBEARERa1b2c3d4e5",), "Authorization: Bearer"),
    "proxy_authorization": (
        "Proxy-Authorization: Basic Y25yeVBST1hZOmIyYzNkNGU1",
        ("Y25yeVBST1hZOmIyYzNkNGU1",),
        "Proxy-Authorization",
    ),
    "cookie": ("Cookie: sid=cnryCOOKIEa1b2c3; theme=dark", ("cnryCOOKIEa1b2c3",), "Cookie"),
    "set_cookie": ("Set-Cookie: id=cnrySETCOOKIEa1b2; Path=/; HttpOnly", ("cnrySETCOOKIEa1b2",), "Set-Cookie"),
    "json_cookie": ('{"Cookie": "cnryJSONCOOKIEa1b2"}', ("cnryJSONCOOKIEa1b2",), "Cookie"),
    "openai_key": ("key sk-cnrySKa1b2c3d4e5f6g7h8", ("sk-cnrySKa1b2c3d4e5f6g7h8",), None),
    "github_token": ("gh ghp_cnryGHPa1b2c3d4e5f6g7h8i9j0k1l2m3", ("ghp_cnryGHPa1b2c3d4e5f6g7h8i9j0k1l2m3",), None),
    "github_pat": (
        "pat github_pat_11CNRYPAT0a1b2c3d4e5f6_g7h8i9j0k1l2m3n4o5p6q7r8",
        ("github_pat_11CNRYPAT0a1b2c3d4e5f6_g7h8i9j0k1l2m3n4o5p6q7r8",),
        None,
    ),
    "aws_access_key": ("aws AKIACNRYA1B2C3D4E5F6", ("AKIACNRYA1B2C3D4E5F6",), None),
    "jwt": (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJjbnJ5IjoiSldUIn0.Y25yeUpXVHNpZ25hdHVyZQ",
        ("eyJhbGciOiJIUzI1NiJ9.eyJjbnJ5IjoiSldUIn0.Y25yeUpXVHNpZ25hdHVyZQ",),
        None,
    ),
    "slack": ("slack xoxb-5851234567-cnrySLACKa1b2c3", ("xoxb-5851234567-cnrySLACKa1b2c3",), None),
    "token": ("token=cnryTOKENa1b2c3", ("cnryTOKENa1b2c3",), "token="),
    "client_secret": ('"client_secret": "cnry SECRET a1b2"', ("cnry SECRET a1b2",), "client_secret"),
    "password": ("password: cnryPASSWORDa1b2", ("cnryPASSWORDa1b2",), "password:"),
    "api_key_query": (
        "https://api.example.com/v1/items?api_key=cnryAPIKEYa1b2&page=2",
        ("cnryAPIKEYa1b2",),
        "api_key=",
    ),
    "access_token_query": (
        "https://api.example.com/v1?access_token=cnryACCESSa1b2",
        ("cnryACCESSa1b2",),
        "access_token=",
    ),
    "userinfo": ("https://cnryuser:cnryUSERINFOa1b2@example.com/repo.git", ("cnryUSERINFOa1b2",), "@example.com"),
    "oauth_callback": (
        "http://127.0.0.1:8765/callback?code=cnryOAUTHCODEa1b2&state=cnryOAUTHSTATEa1b2",
        ("cnryOAUTHCODEa1b2", "cnryOAUTHSTATEa1b2"),
        "?code=",
    ),
}

KNOWN_CREDENTIAL = "kc!cnryKNOWN/a1b2 c3"
"""A credential value with no recognisable shape: only its exact value can catch it."""

CANARY_TEXT = "\n".join(text for text, _, _ in CANARIES.values()) + f"\nresolved credential {KNOWN_CREDENTIAL}\n"
SECRETS = (*(secret for _, secrets, _ in CANARIES.values() for secret in secrets), KNOWN_CREDENTIAL)
NAMES = tuple(name for _, _, name in CANARIES.values() if name)
CANARY_ARGS = {
    "text": CANARY_TEXT,
    "token": "cnryARGTOKENa1b2",
    "headers": {"Authorization": "Bearer cnryARGBEARERa1b2", "Cookie": "sid=cnryARGCOOKIEa1b2"},
    "api_key": KNOWN_CREDENTIAL,
}
ARG_SECRETS = ("cnryARGTOKENa1b2", "cnryARGBEARERa1b2", "cnryARGCOOKIEa1b2")


def leaks(text: str, *, known: bool = True) -> list[str]:
    """Every canary value (or URL-encoded form of one) found in ``text``; ``known=False`` leaves
    out the known credential (for a process that was never told it)."""
    candidates = SECRETS + ARG_SECRETS if known else tuple(s for s in SECRETS + ARG_SECRETS if s != KNOWN_CREDENTIAL)
    return [secret for secret in candidates if secret in text or quote(secret, safe="") in text]


def assert_clean(text: str, where: str, *, known: bool = True) -> None:
    assert leaks(text, known=known) == [], f"canaries leaked through {where}:\n{text[:4000]}"


def assert_names_visible(text: str, where: str) -> None:
    missing = [name for name in NAMES if name not in text]
    assert missing == [], f"names lost in {where}: {missing}\n{text[:4000]}"


@pytest.fixture(autouse=True)
def _known_credential() -> None:
    # What a credential resolver does with a value it resolved (seed 003 §11).
    register_secret(KNOWN_CREDENTIAL)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "canaries.txt").write_text(CANARY_TEXT)
    return path


def noisy_target(then: str) -> StdioTarget:
    """A stdio command that writes every canary to stderr (from a file in its workspace, so the
    connector's own arguments carry no secret), then runs ``then``."""
    return StdioTarget(command="sh", args=("-c", f"cat canaries.txt >&2; {then}"))


def recording_server() -> str:
    return f"exec {shlex.join([sys.executable, str(RECORDING)])}"


def runtime_config(workspace: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(workspace), servers=servers)


def error_text(exc: ToolCallError) -> str:
    return "\n".join([str(exc), exc.message, json.dumps(exc.to_dict(), ensure_ascii=False), repr(exc.details)])


# --- runtime: events, the event file, errors, the approver ---------------------------------------


async def test_call_arguments_and_results_leave_no_canary_in_the_events_or_the_event_file(
    tmp_path: Path, workspace: Path
) -> None:
    settings = Settings(home=tmp_path / "home", result_preview_chars=8000)
    server = RuntimeServer(
        connector_id="id-rec",
        name="rec",
        target=StdioTarget(command=sys.executable, args=(str(RECORDING),)),
        global_grants={"echo": "allow", "fail": "allow"},
    )
    with anyio.fail_after(30):
        async with Runtime(runtime_config(workspace, server), settings=settings, session_id="ses_canary") as runtime:
            result = await runtime.call("mcp.rec.echo", CANARY_ARGS)
            with pytest.raises(ToolCallError) as failed:
                await runtime.call("mcp.rec.fail", CANARY_ARGS)
    assert result.text == CANARY_TEXT  # the tool's own result goes back to the caller as it is
    assert_clean(error_text(failed.value), "the ToolCallError of the fail tool")
    on_disk = runtime.event_log_path.read_text()
    assert_clean(on_disk, "the event file")
    assert_names_visible(on_disk, "the event file")
    events = read_events(runtime.event_log_path)
    requested = [e["payload"] for e in events if e["type"] == "model.tool_call_requested"]
    assert requested[0]["args"]["token"] == REDACTED and requested[0]["args"]["headers"]["Authorization"] == REDACTED
    completed = next(e["payload"] for e in events if e["type"] == "tool.completed")
    assert "Authorization: Bearer [REDACTED]" in completed["resultPreview"]
    assert any(e["type"] == "tool.failed" and e["payload"]["tool"] == "mcp.rec.fail" for e in events)


async def test_a_cut_result_preview_leaves_no_piece_of_a_secret(tmp_path: Path, workspace: Path) -> None:
    # The preview is cut at result_preview_chars; a cut through a key must not leave a piece of
    # it that no rule recognises any more (redact, then cut).
    settings = Settings(home=tmp_path / "home", result_preview_chars=40)
    key = "sk-cnrySKa1b2c3d4e5f6g7h8"
    server = RuntimeServer(
        connector_id="id-rec",
        name="rec",
        target=StdioTarget(command=sys.executable, args=(str(RECORDING),)),
        global_grants={"echo": "allow"},
    )
    with anyio.fail_after(30):
        async with Runtime(runtime_config(workspace, server), settings=settings) as runtime:
            await runtime.call("mcp.rec.echo", {"text": "x" * 30 + " " + key})
    preview = next(e for e in read_events(runtime.event_log_path) if e["type"] == "tool.completed")["payload"]
    assert "sk-cnry" not in preview["resultPreview"], preview


async def test_the_approver_sees_no_canary(tmp_path: Path, workspace: Path) -> None:
    seen: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> str:
        seen.append(request)
        return "allow_once"

    server = RuntimeServer(
        connector_id="id-rec", name="rec", target=StdioTarget(command=sys.executable, args=(str(RECORDING),))
    )
    with anyio.fail_after(30):
        async with Runtime(
            runtime_config(workspace, server), settings=Settings(home=tmp_path / "h"), approver=approver
        ) as rt:
            await rt.call("mcp.rec.echo", CANARY_ARGS)
    assert len(seen) == 1
    shown = json.dumps(seen[0].arguments, ensure_ascii=False)
    assert_clean(shown, "the approval request")
    assert_names_visible(shown, "the approval request")


async def test_a_server_that_prints_canaries_and_dies_leaves_none_in_the_error_or_events(
    tmp_path: Path, workspace: Path
) -> None:
    server = RuntimeServer(
        connector_id="id-bad", name="bad", target=noisy_target("exit 3"), global_grants={"echo": "allow"}
    )
    with anyio.fail_after(30):
        async with Runtime(runtime_config(workspace, server), settings=Settings(home=tmp_path / "h")) as runtime:
            with pytest.raises(ToolCallError) as failed:
                await runtime.call("mcp.bad.echo", CANARY_ARGS)
    assert failed.value.reason == "mcp_server_unavailable"
    tail = str(failed.value.details.get("stderrTail", ""))
    assert "Authorization: Bearer [REDACTED]" in tail  # the tail is there, redacted
    assert_clean(error_text(failed.value), "the ToolCallError of a server that died")
    assert_clean(runtime.event_log_path.read_text(), "the event file")


def _explode(**arguments: Any) -> None:
    raise RuntimeError(f"upstream said: {CANARY_TEXT}")


def _report_error(**arguments: Any) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=CANARY_TEXT)], is_error=True)


@pytest.mark.parametrize("tool", [_explode, _report_error], ids=["raises", "returns_is_error"])
async def test_tool_failures_carry_no_canary_in_their_errors(tmp_path: Path, workspace: Path, tool: Any) -> None:
    # A tool's own failure text (an exception, an isError result) becomes the ToolCallError message.
    settings = Settings(home=tmp_path / "h")
    async with Runtime(runtime_config(workspace), settings=settings, local_tools={"leaky": tool}) as runtime:
        with pytest.raises(ToolCallError) as failed:
            await runtime.call("leaky", {})
    assert failed.value.reason == "tool_error"
    assert_clean(error_text(failed.value), "the ToolCallError of a failing tool")
    assert_clean(runtime.event_log_path.read_text(), "the event file")


# --- probe diagnostics ---------------------------------------------------------------------------


def probe_connector(target: StdioTarget) -> Connector:
    return Connector(connector_id="id-noisy", name="noisy", display_name="noisy", target=target)


async def test_probe_diagnostics_of_a_failing_server_carry_no_canary(tmp_path: Path, workspace: Path) -> None:
    # The env binding is how a connector's credential reaches a stdio server today.
    target = StdioTarget(command="sh", args=("-c", 'cat canaries.txt >&2; echo "connecting as $PB_BOUND" >&2; exit 3'))
    bound = "bnd-cnryBOUNDa1b2"
    with anyio.fail_after(30):
        result = await Prober(Settings(home=tmp_path / "h")).probe(
            probe_connector(target), workspace=workspace, env={"PB_BOUND": bound}
        )
    assert (result.state, result.code) == ("error", "server_closed")
    dumped = result.model_dump_json()
    assert bound not in dumped
    assert "connecting as [REDACTED]" in (result.stderr_tail or "")
    assert_clean(dumped, "the ProbeResult")
    assert_names_visible(result.stderr_tail or "", "the probe's stderr tail")


async def test_probe_stderr_of_a_ready_server_carries_no_canary(tmp_path: Path, workspace: Path) -> None:
    with anyio.fail_after(30):
        result = await Prober(Settings(home=tmp_path / "h")).probe(
            probe_connector(noisy_target(recording_server())), workspace=workspace
        )
    assert result.state == "ready", result.message
    assert_clean(result.model_dump_json(), "the ProbeResult")
    assert_names_visible(result.stderr_tail or "", "the probe's stderr tail")


# --- the CLI -------------------------------------------------------------------------------------


@pytest.fixture
def cli(tmp_path: Path):
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str):
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        assert_clean(result.stdout, f"stdout of patchbay {' '.join(args[:2])}")
        assert_clean(result.stderr, f"stderr of patchbay {' '.join(args[:2])}")
        return result

    return invoke


def session_of(stderr: str) -> str:
    return stderr.split("patchbay events ")[-1].split()[0]


def test_cli_call_events_and_probe_print_no_canary_text_or_json(cli, workspace: Path) -> None:
    ws = str(workspace)
    assert cli("connector", "add", "rec", "--", sys.executable, str(RECORDING)).exit_code == 0
    assert cli("probe", "rec", "--project", ws).exit_code == 0
    assert cli("grant", "rec", "echo", "allow").exit_code == 0
    arguments = json.dumps(CANARY_ARGS)

    call = cli("call", "mcp.rec.echo", arguments, "--project", ws)
    assert call.exit_code == 0, call.output
    assert_names_visible(call.stdout, "patchbay call")
    call_json = cli("call", "mcp.rec.echo", arguments, "--project", ws, "--json")
    assert call_json.exit_code == 0, call_json.output
    body = json.loads(call_json.stdout)
    assert body["session_id"] and "Authorization: Bearer [REDACTED]" in body["content"][0]["text"]

    for session in (session_of(call.stderr), body["session_id"]):
        events = cli("events", session)
        assert events.exit_code == 0 and "tool.completed" in events.stdout
        events_json = cli("events", session, "--json")
        assert events_json.exit_code == 0
        payloads = json.dumps([e["payload"] for e in json.loads(events_json.stdout)["events"]])
        assert_names_visible(payloads, "patchbay events --json")

    failed = cli("call", "mcp.rec.fail", arguments, "--yes", "--project", ws)
    assert failed.exit_code == 1 and "error[tool_error]" in failed.stderr
    failed_json = cli("call", "mcp.rec.fail", arguments, "--yes", "--project", ws, "--json")
    assert json.loads(failed_json.stdout)["error"]["code"] == "tool_error"


def test_cli_probe_and_call_of_a_noisy_failing_server_print_no_canary(cli, workspace: Path) -> None:
    ws = str(workspace)
    target = noisy_target("exit 3")
    assert cli("connector", "add", "noisy", "--", target.command, *target.args).exit_code == 0
    probe = cli("probe", "noisy", "--project", ws)
    assert probe.exit_code == 1 and "stderr (tail):" in probe.stdout
    assert_names_visible(probe.stdout, "patchbay probe")
    probe_json = cli("probe", "noisy", "--project", ws, "--json")
    assert json.loads(probe_json.stdout)["code"] == "server_closed"
    assert_names_visible(json.loads(probe_json.stdout)["stderr_tail"], "patchbay probe --json")

    call = cli("call", "mcp.noisy.echo", json.dumps(CANARY_ARGS), "--yes", "--project", ws)
    assert call.exit_code == 1 and "error[mcp_server_unavailable]" in call.stderr
    assert "server stderr (tail):" in call.stderr
    call_json = cli("call", "mcp.noisy.echo", json.dumps(CANARY_ARGS), "--yes", "--project", ws, "--json")
    assert json.loads(call_json.stdout)["error"]["code"] == "mcp_server_unavailable"


def test_cli_error_lines_carry_no_canary(cli, workspace: Path) -> None:
    # User input quoted back in an error message: an unknown tool named after a key.
    for extra in ((), ("--json",)):
        result = cli("call", "mcp.nope.sk-cnrySKa1b2c3d4e5f6g7h8", "--project", str(workspace), *extra)
        assert result.exit_code == 1 and "unknown_tool" in result.output
    bad = cli("call", "mcp.nope.tool", '{"token": "cnryARGTOKENa1b2"', "--project", str(workspace))
    assert bad.exit_code == 1 and "error[validation_error]" in bad.stderr


# --- Python log records (PATCHBAY_DEBUG=1) -------------------------------------------------------


@pytest.fixture
def logging_state() -> Iterator[None]:
    """Undo what configure_logging does to the process's loggers."""
    names = ("", "mcp", "httpx2", "httpcore2", "patchbay")
    saved = {
        name: (logging.getLogger(name).handlers[:], logging.getLogger(name).level, logging.getLogger(name).propagate)
        for name in names
    }
    yield
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def test_log_records_with_debug_on_are_redacted(logging_state: None, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(debug=True)
    logger = logging.getLogger("mcp.client.stdio")
    logger.debug("sending %s with %r", CANARY_TEXT, CANARY_ARGS)
    try:
        raise ValueError(f"bad line: {CANARY_TEXT}")
    except ValueError:
        logger.exception("Failed to parse JSONRPC message from server: %s", "Cookie: sid=cnryCOOKIEa1b2c3")
    logging.getLogger("patchbay.test").warning("credential %s", KNOWN_CREDENTIAL)
    err = capsys.readouterr().err
    assert "Failed to parse JSONRPC message" in err and "Traceback" in err and "ValueError" in err
    assert_clean(err, "log records on stderr")
    assert_names_visible(err, "log records on stderr")


def test_debug_tracebacks_of_unexpected_errors_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from patchbay.interfaces.cli._context import handle_errors

    @handle_errors
    def broken() -> None:
        raise RuntimeError(f"unexpected: {CANARY_TEXT}")

    monkeypatch.setenv("PATCHBAY_DEBUG", "1")
    crash = typer.Typer()
    crash.command()(broken)
    result = CliRunner().invoke(crash, [], catch_exceptions=False)
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "RuntimeError" in result.stderr
    assert_clean(result.stderr, "a debug traceback")
    assert_names_visible(result.stderr, "a debug traceback")


def test_with_patchbay_debug_the_cli_prints_no_canary_from_sdk_logs(tmp_path: Path, workspace: Path) -> None:
    # A server that prints canaries on stdout: the SDK logs each non-JSON line with a traceback
    # quoting it, and PATCHBAY_DEBUG=1 lets those records through to stderr, redacted.
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home"), "PATCHBAY_DEBUG": "1"}
    script = f"cat canaries.txt; {recording_server()}"
    add = ["patchbay", "connector", "add", "chatty", "--", "sh", "-c", script]
    subprocess.run(add, env=env, check=True, capture_output=True, timeout=60)
    subprocess.run(
        ["patchbay", "grant", "chatty", "echo", "allow"], env=env, check=True, capture_output=True, timeout=60
    )
    runs = [
        ["patchbay", "probe", "chatty", "--project", str(workspace)],
        ["patchbay", "call", "mcp.chatty.echo", json.dumps(CANARY_ARGS), "--project", str(workspace)],
    ]
    for argv in runs:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=workspace)
        assert done.returncode == 0, done.stderr
        assert "Failed to parse JSONRPC message" in done.stderr  # the SDK's records do come through
        # This process was never told the known credential (no resolver runs in it).
        assert_clean(done.stdout, f"stdout of {argv[1]}", known=False)
        assert_clean(done.stderr, f"stderr of {argv[1]} with PATCHBAY_DEBUG=1", known=False)
