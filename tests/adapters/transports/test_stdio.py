"""patchbay.adapters.transports.stdio, the stdio transport.

Sections, in this order:

- Process handling: The stdio transport: stderr tail, no pipe deadlock, process-group cleanup, spawn
  errors, banners.
- The child's environment: A stdio child sees a small system whitelist, never Patchbay's own
  environment (seed 003, 2026-09-04)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from mcp.client.stdio import get_default_environment

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.adapters.transports import StderrTail, StdioLink, open_client, open_link
from patchbay.core.errors import ErrorCode, ProbeError
from patchbay.core.models import ResourceLimits, StdioTarget
from patchbay.core.redaction import REDACTED
from tests.support.paths import FIXTURES
from tests.support.processes import assert_group_gone
from tests.support.servers import everything_stdio_command, fixture_server

pytestmark = pytest.mark.anyio


# --- Process handling ---

FAKE_SECRET = "sk-live-abcdef0123456789abcdef"


def test_the_stderr_tail_keeps_only_the_last_bytes_and_drops_the_cut_first_line() -> None:
    tail = StderrTail(limit=64)
    tail.feed(b"starting with token=" + FAKE_SECRET.encode() + b"\n")
    assert tail.text() == f"starting with token={REDACTED}\n"
    tail.feed(b"x" * 30 + b" secret_part_" + FAKE_SECRET[12:].encode() + b"\nlast line api_key=" + FAKE_SECRET.encode())
    text = tail.text()
    assert tail.total_bytes > 64
    assert len(text.encode()) <= 64
    # The first line was cut mid-way (its recognisable prefix is gone), so it is dropped entirely.
    assert FAKE_SECRET[12:] not in text
    assert text == f"last line api_key={REDACTED}"


def test_the_stderr_tail_redacts_known_secret_values() -> None:
    tail = StderrTail(limit=1024)
    tail.feed(b"connecting with canary-value-42\n")
    assert tail.text(known_secrets=("canary-value-42",)) == f"connecting with {REDACTED}\n"


async def test_a_256_kib_stderr_flood_during_a_call_does_not_block_and_the_tail_stays_bounded(tmp_path: Path) -> None:
    links: list[object] = []
    with anyio.fail_after(20):
        async with open_client(
            fixture_server("stderr_flood_server.py"), workspace=tmp_path, stderr_tail_bytes=4096, link_holder=links
        ) as connection:
            result = await connection.client.call_tool("flood", {})
            assert not result.is_error
            assert result.content[0].text == "ok"  # type: ignore[union-attr]
    link = links[0]
    assert isinstance(link, StdioLink)
    assert link.stderr.total_bytes >= 256 * 1024
    text = link.stderr.text()
    assert len(text.encode()) <= 4096
    assert text.endswith(f"flood: done, token={REDACTED}\n")
    assert FAKE_SECRET not in text and "sk-live" not in text


async def test_banner_and_progress_lines_on_stdout_are_tolerated(tmp_path: Path) -> None:
    with anyio.fail_after(15):
        async with open_client(fixture_server("banner_server.py"), workspace=tmp_path) as connection:
            tools = await connection.client.list_tools()
            assert [tool.name for tool in tools.tools] == ["echo"]
            result = await connection.client.call_tool("echo", {"text": "hello"})
            assert result.content[0].text == "hello"  # type: ignore[union-attr]
            again = await connection.client.call_tool("echo", {"text": "again"})
            assert again.content[0].text == "again"  # type: ignore[union-attr]


async def test_no_process_of_the_server_group_remains_after_the_connection_closes(tmp_path: Path) -> None:
    with anyio.fail_after(15):
        async with open_client(fixture_server("banner_server.py"), workspace=tmp_path) as connection:
            link = connection.link
            assert isinstance(link, StdioLink) and link.pgid is not None
            pgid = link.pgid
            assert os.getpgid(pgid) == pgid  # the server leads its own process group
            assert pgid != os.getpgid(0)
    assert_group_gone(pgid)


async def test_a_grandchild_left_by_a_shell_wrapper_is_killed_with_the_group(tmp_path: Path) -> None:
    server = shlex.join([sys.executable, str(FIXTURES / "banner_server.py")])
    target = StdioTarget(command="sh", args=("-c", f"sleep 300 & exec {server}"))
    with anyio.fail_after(20):
        async with open_client(target, workspace=tmp_path) as connection:
            link = connection.link
            assert isinstance(link, StdioLink) and link.pgid is not None
            pgid = link.pgid
            # sh forked the sleep before it exec'd the server, so the grandchild exists by now.
            sleepers = [child for child in psutil.Process(pgid).children() if child.name() == "sleep"]
            assert len(sleepers) == 1
            assert os.getpgid(sleepers[0].pid) == pgid
            assert (await connection.client.list_tools()).tools[0].name == "echo"
    assert_group_gone(pgid)
    assert not sleepers[0].is_running()


async def test_a_server_that_ignores_sigterm_and_eof_is_killed_with_its_grandchild(tmp_path: Path) -> None:
    target = fixture_server("hang_server.py", "--ignore-term", "--spawn-child")
    with anyio.fail_after(20):
        async with open_link(target, workspace=tmp_path) as link:
            assert isinstance(link, StdioLink) and link.pgid is not None
            pgid = link.pgid
    assert_group_gone(pgid)


async def test_a_missing_command_is_command_not_found_and_spawns_nothing(tmp_path: Path) -> None:
    before = {child.pid for child in psutil.Process().children()}
    for command in ("patchbay-no-such-command", str(tmp_path / "missing" / "server")):
        with pytest.raises(ProbeError) as caught:
            async with open_link(StdioTarget(command=command), workspace=tmp_path):
                pytest.fail("the link must not open")
        assert caught.value.code == ErrorCode.COMMAND_NOT_FOUND
        assert command in caught.value.message
    assert {child.pid for child in psutil.Process().children()} <= before


async def test_a_file_that_is_not_executable_is_spawn_failed(tmp_path: Path) -> None:
    script = tmp_path / "server.txt"
    script.write_text("not a program\n")
    with pytest.raises(ProbeError) as caught:
        async with open_link(StdioTarget(command=str(script)), workspace=tmp_path):
            pytest.fail("the link must not open")
    assert caught.value.code == ErrorCode.SPAWN_FAILED


async def test_a_cwd_that_became_a_symlink_out_of_the_workspace_is_refused_at_spawn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink("/tmp", workspace / "work")  # validated as a directory earlier, swapped for a link since
    with pytest.raises(ProbeError) as exc:
        async with open_client(StdioTarget(command="true", cwd="work"), workspace=workspace):
            pass
    assert exc.value.code == "invalid_config"


async def test_a_relative_command_path_is_found_in_the_server_working_directory(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "server.sh"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {FIXTURES / 'banner_server.py'}\n")
    script.chmod(0o755)
    with anyio.fail_after(20):
        async with open_client(StdioTarget(command="./bin/server.sh"), workspace=tmp_path) as connection:
            assert [t.name for t in (await connection.client.list_tools()).tools] == ["echo"]


# --- The child's environment ---

CANARY = "pb-canary-7f3e9d1c0a"


@pytest.mark.peers
async def test_a_canary_in_the_parent_environment_never_reaches_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHBAY_TEST_CANARY_SECRET", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    command, *args = everything_stdio_command()
    server = RuntimeServer(
        connector_id="con_everything",
        name="everything",
        target=StdioTarget(command=command, args=tuple(args)),
        global_grants={"get-env": "allow"},
    )
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=(server,))
    with anyio.fail_after(30):
        async with Runtime(config, settings=Settings(home=tmp_path / "home")) as runtime:
            result = await runtime.call("mcp.everything.get-env", {})
    assert CANARY not in result.text
    assert "PATCHBAY_TEST_CANARY_SECRET" not in result.text and "OPENAI_API_KEY" not in result.text
    assert '"PATH"' in result.text and '"HOME"' in result.text


LITERAL_BINDINGS = {
    "PB_BRACED": "${HOME}",
    "PB_BARE": "$HOME",
    "PB_BANG": "!echo pwned",
    "PB_SUBSHELL": "$(id)",
    "PB_BACKTICK": "`id`",
    "PB_TILDE": "~/notes",
    "PB_PARENT": "${PATCHBAY_TEST_CANARY_SECRET}",
    "PB_SHELLISH": "a; b && c | d > /tmp/x",
}


@pytest.mark.peers
@pytest.mark.parametrize("limits", [None, ResourceLimits(open_files=4096)], ids=["direct", "launcher"])
async def test_binding_values_reach_the_child_literally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: ResourceLimits | None
) -> None:
    # Seed 003 addendum 2026-09-04: no `!command` execution, no `${VAR}` re-expansion, with or
    # without the resource-limit launcher in between.
    monkeypatch.setenv("PATCHBAY_TEST_CANARY_SECRET", CANARY)
    command, *args = everything_stdio_command()
    target = StdioTarget(command=command, args=tuple(args))
    with anyio.fail_after(30):
        async with open_client(target, workspace=tmp_path, env=LITERAL_BINDINGS, limits=limits) as connection:
            result = await connection.client.call_tool("get-env", {})
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert {name: seen.get(name) for name in LITERAL_BINDINGS} == LITERAL_BINDINGS
    assert CANARY not in result.content[0].text  # type: ignore[union-attr]
    assert seen == get_default_environment() | LITERAL_BINDINGS
