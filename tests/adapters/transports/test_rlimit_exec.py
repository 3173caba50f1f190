"""Per-connector resource limits on a stdio server (seed 003 addendum 2026-09-04).

The limits are applied by the ``rlimit_exec`` launcher in the server process before exec; a server
a limit stops is named by :meth:`StdioLink.limit_exceeded`; the launcher changes nothing else: the
environment, stdin/stdout, the exit status and the process group are the server's own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports import StdioLink, open_client
from patchbay.adapters.transports.rlimit_exec import launcher_argv, limit_from_marker
from patchbay.core.models import ResourceLimits
from patchbay.core.redaction import REDACTED
from tests.support.processes import assert_group_gone
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio

HOG = fixture_server("hog_server.py")
CANARY = "pb-canary-limits-41c7"
GIB = 1 << 30
# The fixture needs ~1-1.6 s of CPU to import the SDK and start; 4 s leaves room on a busy box.
CPU_LIMIT = 4


def _launch(command: list[str], **limits: int) -> subprocess.CompletedProcess[str]:
    """Run ``command`` through the launcher directly (no MCP), as the SDK would spawn it."""
    return subprocess.run(
        launcher_argv(command[0], command[1:], **limits),
        input="hello launcher\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=get_default_environment(),
        start_new_session=True,
    )


def _last_line(text: str) -> str:
    return [line for line in text.splitlines() if line.strip()][-1]


def _server_pid(link: StdioLink) -> int:
    """The MCP server under the launcher: the launcher's only child."""
    assert link.pgid is not None
    (server,) = psutil.Process(link.pgid).children()
    return server.pid


# -- the launcher on its own --------------------------------------------------------------------


def test_the_launcher_passes_stdin_stdout_stderr_and_the_exit_status_through() -> None:
    script = "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.stderr.write('note\\n'); sys.exit(3)"
    done = _launch([sys.executable, "-c", script], open_files=256, cpu_seconds=30)
    assert done.returncode == 3
    assert done.stdout == "HELLO LAUNCHER\n"
    assert done.stderr == "note\n"  # an exit no limit explains adds no marker


def test_a_cpu_burner_gets_sigxcpu_and_the_marker_names_cpu_seconds() -> None:
    done = _launch([sys.executable, "-c", "while True: pass"], cpu_seconds=1)
    assert done.returncode == 128 + signal.SIGXCPU
    assert _last_line(done.stderr) == "patchbay: server stopped by its cpu_seconds limit (1 s)"
    assert limit_from_marker(done.stderr) == "cpu_seconds"


def test_a_cpu_burner_that_ignores_sigxcpu_is_killed_at_the_hard_limit_and_still_named() -> None:
    script = "import signal; signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass"
    done = _launch([sys.executable, "-c", script], cpu_seconds=1)
    assert done.returncode == 128 + signal.SIGKILL
    assert limit_from_marker(done.stderr) == "cpu_seconds"


def test_a_signal_no_limit_explains_is_passed_on_without_a_marker() -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    done = _launch([sys.executable, "-c", script], cpu_seconds=30, address_space_bytes=4 * GIB, open_files=256)
    assert done.returncode == 128 + signal.SIGTERM
    assert done.stderr == ""


def test_an_allocation_past_the_address_space_limit_is_named() -> None:
    done = _launch([sys.executable, "-c", "block = bytes(1 << 34)"], address_space_bytes=GIB)
    assert done.returncode == 1
    assert "MemoryError" in done.stderr
    assert _last_line(done.stderr) == f"patchbay: server stopped by its address_space_bytes limit ({GIB} bytes)"


def test_running_out_of_file_descriptors_is_named() -> None:
    script = "handles = [open('/dev/null') for _ in range(100)]"
    done = _launch([sys.executable, "-c", script], open_files=32)
    assert done.returncode == 1
    assert "Too many open files" in done.stderr
    assert _last_line(done.stderr) == "patchbay: server stopped by its open_files limit (32 files)"


def test_only_a_marker_on_the_last_line_counts() -> None:
    marker = "patchbay: server stopped by its open_files limit (32 files)"
    assert limit_from_marker(f"Traceback ...\n{marker}\n") == "open_files"
    assert limit_from_marker(f"{marker}\nthe server kept talking\n") is None
    assert limit_from_marker("patchbay: server stopped by its mood limit (1 s)\n") is None
    assert limit_from_marker("") is None


# -- a real MCP server under limits -------------------------------------------------------------


async def _stopped_by(tmp_path: Path, limits: ResourceLimits, tool: str) -> tuple[StdioLink, str | None]:
    """Connect to the hog fixture under ``limits``, call ``tool``, and see the connection drop."""
    links: list[object] = []
    with anyio.fail_after(90):
        async with open_client(HOG, workspace=tmp_path, limits=limits, link_holder=links) as connection:
            link = connection.link
            assert isinstance(link, StdioLink)
            with pytest.raises(MCPError, match="Connection closed"):
                await connection.client.call_tool(tool, {})
            named = await link.wait_limit_exceeded(grace=10)
    assert link.pgid is not None
    assert_group_gone(link.pgid)
    return link, named


async def test_a_server_burning_cpu_is_stopped_by_cpu_seconds(tmp_path: Path) -> None:
    link, named = await _stopped_by(tmp_path, ResourceLimits(cpu_seconds=CPU_LIMIT), "burn_cpu")
    assert named == "cpu_seconds"
    assert link.limit_exceeded() == "cpu_seconds"
    assert _last_line(link.stderr.text()) == f"patchbay: server stopped by its cpu_seconds limit ({CPU_LIMIT} s)"


async def test_a_server_allocating_memory_is_stopped_by_address_space_bytes(tmp_path: Path) -> None:
    link, named = await _stopped_by(tmp_path, ResourceLimits(address_space_bytes=GIB), "allocate")
    assert named == "address_space_bytes"
    assert "MemoryError" in link.stderr.text()


async def test_a_server_opening_files_is_stopped_by_open_files(tmp_path: Path) -> None:
    link, named = await _stopped_by(tmp_path, ResourceLimits(open_files=64), "open_files")
    assert named == "open_files"
    assert "Too many open files" in link.stderr.text()


async def test_a_server_under_generous_limits_works_and_runs_with_them_applied(tmp_path: Path) -> None:
    limits = ResourceLimits(cpu_seconds=600, address_space_bytes=8 * GIB, open_files=512)
    with anyio.fail_after(60):
        async with open_client(HOG, workspace=tmp_path, limits=limits) as connection:
            link = connection.link
            assert isinstance(link, StdioLink) and link.pgid is not None
            tools = await connection.client.list_tools()
            assert {tool.name for tool in tools.tools} == {"echo", "env", "burn_cpu", "allocate", "open_files"}
            result = await connection.client.call_tool("echo", {"text": "still fine"})
            assert not result.is_error and result.content[0].text == "still fine"  # type: ignore[union-attr]

            # The launcher leads the group and the server is in it, with the limits applied to the
            # server only (soft and hard; the CPU hard limit one second above the soft one).
            launcher = psutil.Process(link.pgid)
            server = psutil.Process(_server_pid(link))
            assert launcher.cmdline()[3].endswith("rlimit_exec.py")
            assert os.getpgid(server.pid) == link.pgid == launcher.pid
            assert server.rlimit(psutil.RLIMIT_CPU) == (600, 601)
            assert server.rlimit(psutil.RLIMIT_AS) == (8 * GIB, 8 * GIB)
            assert server.rlimit(psutil.RLIMIT_NOFILE) == (512, 512)
            assert launcher.rlimit(psutil.RLIMIT_NOFILE) == psutil.Process().rlimit(psutil.RLIMIT_NOFILE)
            assert launcher.rlimit(psutil.RLIMIT_CPU) == psutil.Process().rlimit(psutil.RLIMIT_CPU)
            pgid = link.pgid
    assert link.limit_exceeded() is None
    with anyio.fail_after(2):  # a closed link has nothing left to wait for
        assert await link.wait_limit_exceeded(grace=30) is None
    assert_group_gone(pgid)


async def test_sigterm_sent_to_the_launcher_alone_is_forwarded_to_the_server(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with open_client(HOG, workspace=tmp_path, limits=ResourceLimits(open_files=512)) as connection:
            link = connection.link
            assert isinstance(link, StdioLink) and link.pgid is not None
            server = psutil.Process(_server_pid(link))
            os.kill(link.pgid, signal.SIGTERM)  # the launcher only, not the group
            await anyio.to_thread.run_sync(server.wait, 20)
            with pytest.raises(MCPError):
                await connection.client.call_tool("echo", {"text": "anyone?"})
            assert await link.wait_limit_exceeded(grace=10) is None
    assert_group_gone(link.pgid)


@pytest.mark.parametrize("limits", [None, ResourceLimits(open_files=512)], ids=["direct", "launcher"])
async def test_the_server_environment_is_exactly_the_whitelist_plus_the_bindings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: ResourceLimits | None
) -> None:
    monkeypatch.setenv("PATCHBAY_TEST_CANARY_SECRET", CANARY)
    bindings = {"PB_BOUND": "bound-value"}
    with anyio.fail_after(60):
        async with open_client(HOG, workspace=tmp_path, env=bindings, limits=limits) as connection:
            result = await connection.client.call_tool("env", {})
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    # No canary, no LC_CTYPE from the launcher's own locale coercion, nothing else.
    assert seen == get_default_environment() | bindings
    assert CANARY not in json.dumps(seen)


async def test_a_bound_lc_ctype_reaches_the_server_unchanged_through_the_launcher(tmp_path: Path) -> None:
    # Python coerces a "C" LC_CTYPE to C.UTF-8 in its own os.environ; the server must still get "C".
    bindings = {"LC_CTYPE": "C", "PB_BOUND": "x"}
    with anyio.fail_after(60):
        async with open_client(HOG, workspace=tmp_path, env=bindings, limits=ResourceLimits(open_files=512)) as c:
            result = await c.client.call_tool("env", {})
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert seen == get_default_environment() | bindings


async def test_a_stderr_flood_passes_through_the_launcher_without_blocking(tmp_path: Path) -> None:
    links: list[object] = []
    target = fixture_server("stderr_flood_server.py")
    with anyio.fail_after(60):
        async with open_client(
            target, workspace=tmp_path, limits=ResourceLimits(open_files=512), link_holder=links
        ) as connection:
            result = await connection.client.call_tool("flood", {})
            assert result.content[0].text == "ok"  # type: ignore[union-attr]
    link = links[0]
    assert isinstance(link, StdioLink)
    assert link.stderr.total_bytes >= 256 * 1024
    assert link.stderr.text().endswith(f"flood: done, token={REDACTED}\n")
    assert link.limit_exceeded() is None
