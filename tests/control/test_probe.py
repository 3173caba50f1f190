"""The bounded real connect probe against real peers and fixture servers."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

import patchbay.adapters.transports.connect as connect_module
import patchbay.adapters.transports.egress as egress_module
from patchbay.adapters.transports import StdioLink
from patchbay.control.probe import Prober
from patchbay.core.models import Connector, ConnectorTarget, HttpTarget, ProbeResult, StdioTarget
from patchbay.core.redaction import REDACTED
from patchbay.core.settings import Settings
from tests.support.egress import AUDIT_KEYS, audit_lines, http_fixture, http_response, listening, recorded_requests
from tests.support.paths import FIXTURES
from tests.support.processes import assert_group_gone, group_members
from tests.support.servers import everything_http, everything_stdio_command, fixture_server, free_port

pytestmark = pytest.mark.anyio

FAKE_SECRET = "sk-live-abcdef0123456789abcdef"
EVERYTHING_BASE_TOOLS = {"echo", "get-sum", "get-env", "get-tiny-image", "trigger-long-running-operation"}


# --- helpers -------------------------------------------------------------------------------------


def connector(target: ConnectorTarget, name: str = "probe-me", **runtime_config: Any) -> Connector:
    return Connector(
        connector_id=f"id-{name}", name=name, display_name=name, target=target, runtime_config=runtime_config
    )


def local(target: ConnectorTarget, name: str = "probe-me") -> Connector:
    """A remote connector on this machine: loopback is reachable only with ``allow_private``."""
    return connector(target, name, allow_private=True)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def spy_on_links(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], anyio.Event]:
    """Make the prober's transport report each link it opens; the event fires on the first."""
    seen: list[Any] = []
    appeared = anyio.Event()
    real_open_client = connect_module.open_client

    @asynccontextmanager
    async def open_client(target: ConnectorTarget, **kwargs: Any) -> AsyncIterator[Any]:
        holder = kwargs["link_holder"]

        class Tee(list):  # type: ignore[type-arg]
            def append(self, link: Any) -> None:
                holder.append(link)
                seen.append(link)
                appeared.set()

        kwargs["link_holder"] = Tee()
        async with real_open_client(target, **kwargs) as connection:
            yield connection

    monkeypatch.setattr(connect_module, "open_client", open_client)
    return seen, appeared


@asynccontextmanager
async def html_page_server() -> AsyncIterator[int]:
    """A plain HTTP server on 127.0.0.1 answering every request with a 200 ``text/html`` page."""
    body = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )

    async def answer(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            received = b""
            try:
                while b"\r\n\r\n" not in received:
                    received += await stream.receive()
                await stream.send(response)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        try:
            yield int(listener.extra(anyio.abc.SocketAttribute.local_port))
        finally:
            tg.cancel_scope.cancel()


def assert_ready(result: ProbeResult) -> None:
    assert result.state == "ready", (result.code, result.message, result.stderr_tail)
    assert result.code is None
    assert result.tool_count == len(result.tools)
    assert result.resource_count == len(result.resources)
    assert result.duration_ms > 0


# --- real peers ----------------------------------------------------------------------------------


async def test_plain_binding_values_need_no_credential_store(settings: Settings, tmp_path: Path) -> None:
    plain = [{"delivery": "env", "name": "REGION", "value": "eu-west"}]
    with anyio.fail_after(30):
        result = await Prober(settings).probe(
            connector(StdioTarget(command="mcp-server-time"), bindings=plain), workspace=tmp_path
        )
    assert_ready(result)


async def test_mcp_server_time_is_ready_with_its_tools(settings: Settings, tmp_path: Path) -> None:
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(StdioTarget(command="mcp-server-time")), workspace=tmp_path)
    assert_ready(result)
    assert {tool.name for tool in result.tools} == {"get_current_time", "convert_time"}
    current = next(tool for tool in result.tools if tool.name == "get_current_time")
    assert current.input_schema["required"] == ["timezone"]
    assert current.output_schema is not None
    assert current.annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert current.read_only
    assert result.server_info is not None and result.server_info["name"] == "mcp-time"
    assert set(result.server_info) == {"name", "version"}
    assert result.protocol_version


async def test_mcp_server_git_is_ready_for_a_repository_the_test_made(settings: Settings, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await anyio.run_process(["git", "init", "-q", str(repo)])
    target = StdioTarget(command="mcp-server-git", args=("--repository", str(repo)))
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert_ready(result)
    assert {"git_status", "git_log", "git_diff", "git_commit"} <= {tool.name for tool in result.tools}
    assert result.server_info is not None and result.server_info["name"] == "mcp-git"


@pytest.mark.peers
async def test_server_everything_over_stdio_is_ready_with_tools_and_resources(
    settings: Settings, tmp_path: Path
) -> None:
    command, *args = everything_stdio_command()
    target = StdioTarget(command=command, args=tuple(args))
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert_ready(result)
    assert EVERYTHING_BASE_TOOLS <= {tool.name for tool in result.tools}
    assert result.resource_count == 7
    assert all(resource.uri.startswith("demo://resource/static/") for resource in result.resources)
    assert result.server_info == {"name": "mcp-servers/everything", "version": "2.0.0"}
    assert "Starting default (STDIO) server" in result.stderr_tail


@pytest.mark.peers
@pytest.mark.parametrize(
    ("mode", "transport", "path"), [("streamableHttp", "streamable_http", "/mcp"), ("sse", "sse", "/sse")]
)
async def test_server_everything_over_http_is_ready_with_tools_and_resources(
    settings: Settings, tmp_path: Path, mode: str, transport: str, path: str
) -> None:
    with everything_http(mode) as url:
        assert url.endswith(path)
        target = HttpTarget(url=url, transport=transport)  # type: ignore[arg-type]
        with anyio.fail_after(30):
            result = await Prober(settings).probe(local(target), workspace=tmp_path)
    assert_ready(result)
    assert EVERYTHING_BASE_TOOLS <= {tool.name for tool in result.tools}
    assert result.resource_count == 7
    assert result.stderr_tail == ""


# --- lists and bounds ----------------------------------------------------------------------------


async def test_every_page_of_a_paged_tool_list_is_followed(settings: Settings, tmp_path: Path) -> None:
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("paging_server.py")), workspace=tmp_path)
    assert_ready(result)
    assert result.tool_count == 44
    assert [tool.name for tool in result.tools] == [f"t{i}" for i in range(44)]


LOOKALIKES = ["danger", "danger ", "d\u0430nger", "danger\u200b", "mcp.evil.danger", "resources/read", "x.y"]


async def test_tool_names_outside_the_mcp_rule_are_kept_and_each_gets_a_diagnostic(
    settings: Settings, tmp_path: Path
) -> None:
    args = [arg for name in LOOKALIKES for arg in ("--initial", name)]
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("dynamic_server.py", *args)), workspace=tmp_path)
    assert_ready(result)
    assert set(LOOKALIKES) <= {tool.name for tool in result.tools}  # flagged, not left out
    flagged = {d["tool"]: d for d in result.diagnostics if d["problem"] == "name"}
    assert list(flagged) == ["danger ", "d\u0430nger", "danger\u200b", "mcp.evil.danger", "resources/read"]
    assert (
        flagged["danger "]["message"] == "tool 'danger ' kept but flagged: its name contains whitespace (U+0020 SPACE)"
    )
    assert "U+0430 CYRILLIC SMALL LETTER A" in flagged["d\u0430nger"]["message"]
    assert "'danger\\u200b'" in flagged["danger\u200b"]["message"]  # the invisible character shows escaped
    assert "ZERO WIDTH SPACE" in flagged["danger\u200b"]["message"]
    assert "mcp." in flagged["mcp.evil.danger"]["message"]
    assert [d["problem"] for d in result.diagnostics] == ["name"] * 5


async def test_more_pages_than_the_cap_keeps_the_pages_read_with_a_warning(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", probe_max_pages=2)
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("paging_server.py")), workspace=tmp_path)
    assert_ready(result)
    assert [tool.name for tool in result.tools] == [f"t{i}" for i in range(40)]
    (warning,) = result.diagnostics
    assert (warning["tool"], warning["problem"], warning["limit"], warning["list"]) == (
        None,
        "page_limit",
        2,
        "tools/list",
    )
    assert "2 list pages" in warning["message"]


@pytest.mark.parametrize(
    ("mode", "kept", "problem"),
    [("repeat", 40, "repeated_cursor"), ("cycle", 44, "repeated_cursor"), ("endless-empty", 44, "page_limit")],
)
async def test_misbehaving_pagination_keeps_what_was_listed_and_warns(
    tmp_path: Path, mode: str, kept: int, problem: str
) -> None:
    settings = Settings(home=tmp_path / "home", probe_max_pages=10)
    target = fixture_server("paging_server.py", "--misbehave", mode)
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert_ready(result)
    assert [tool.name for tool in result.tools] == [f"t{i}" for i in range(kept)]
    assert [(d["problem"], d["list"]) for d in result.diagnostics] == [(problem, "tools/list")]


async def test_a_name_listed_twice_keeps_its_first_listing_with_a_warning(settings: Settings, tmp_path: Path) -> None:
    target = fixture_server("paging_server.py", "--misbehave", "duplicates", "--all-lists")
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert_ready(result)
    assert [tool.name for tool in result.tools] == [f"t{i}" for i in range(44)]
    assert result.tools[0].description == "Tool number 0."
    assert [r.uri for r in result.resources] == [f"page://r{i}" for i in range(44)]
    assert result.resources[0].name == "r0"
    warnings = {d["list"]: d for d in result.diagnostics}
    assert set(warnings) == {"tools/list", "resources/list"}
    assert warnings["tools/list"]["problem"] == "duplicate_names" and "t0, t1" in warnings["tools/list"]["message"]


async def test_a_resources_only_server_is_ready_with_no_tools_and_its_resources(
    settings: Settings, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("resources_only_server.py")), workspace=tmp_path)
    assert_ready(result)
    assert result.tool_count == 0
    assert {(r.uri, r.name, r.mime_type) for r in result.resources} == {
        ("memo://readme", "readme", "text/markdown"),
        ("memo://licence", "licence", "text/plain"),
    }


async def test_tool_metadata_over_two_mib_is_tool_list_failed(settings: Settings, tmp_path: Path) -> None:
    assert settings.probe_max_metadata_bytes == 2 * 1024 * 1024
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("big_metadata_server.py")), workspace=tmp_path)
    assert result.state == "error"
    assert result.code == "tool_list_failed"
    assert result.message is not None and "2097152 bytes" in result.message and "2 MiB" in result.message
    assert result.tools == ()


# --- failures ------------------------------------------------------------------------------------


async def test_a_missing_command_is_command_not_found(settings: Settings, tmp_path: Path) -> None:
    result = await Prober(settings).probe(connector(StdioTarget(command="patchbay-no-such-server")), workspace=tmp_path)
    assert result.state == "error"
    assert result.code == "command_not_found"
    assert result.message is not None and "patchbay-no-such-server" in result.message


async def test_a_shell_line_as_command_is_invalid_config(settings: Settings, tmp_path: Path) -> None:
    result = await Prober(settings).probe(connector(StdioTarget(command="npx -y some-server")), workspace=tmp_path)
    assert (result.state, result.code) == ("error", "invalid_config")


async def test_a_url_with_userinfo_is_invalid_config(settings: Settings, tmp_path: Path) -> None:
    target = HttpTarget(url="http://bob:hunter2@127.0.0.1:9/mcp")
    result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert (result.state, result.code) == ("error", "invalid_config")
    assert "hunter2" not in (result.message or "")


async def test_a_server_that_never_answers_is_timeout_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links, _ = spy_on_links(monkeypatch)
    settings = Settings(home=tmp_path / "home", probe_connect_timeout=1.5)
    with anyio.fail_after(20):
        result = await Prober(settings).probe(connector(fixture_server("hang_server.py")), workspace=tmp_path)
    assert result.state == "error"
    assert result.code == "timeout"
    assert result.duration_ms >= 1500
    assert "hang-server" in result.stderr_tail  # the tail survives a failed handshake
    assert isinstance(links[0], StdioLink) and links[0].pgid is not None
    assert_group_gone(links[0].pgid)


async def test_a_timed_out_server_that_ignores_sigterm_and_has_a_grandchild_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links, _ = spy_on_links(monkeypatch)
    settings = Settings(home=tmp_path / "home", probe_connect_timeout=1.5)
    target = fixture_server("hang_server.py", "--ignore-term", "--spawn-child")
    with anyio.fail_after(20):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path)
    assert (result.state, result.code) == ("error", "timeout")
    assert_group_gone(links[0].pgid)


async def test_cancelling_a_probe_from_outside_tears_the_server_down(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links, appeared = spy_on_links(monkeypatch)
    target = fixture_server("hang_server.py", "--ignore-term", "--spawn-child")
    results: list[ProbeResult] = []
    probe_scope = anyio.CancelScope()

    async def probe() -> None:
        with probe_scope:
            results.append(await Prober(settings).probe(connector(target), workspace=tmp_path))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            await appeared.wait()  # the server process exists now
            pgid = links[0].pgid
            assert pgid is not None and group_members(pgid)
            probe_scope.cancel()
    assert results == []
    assert probe_scope.cancelled_caught
    assert_group_gone(pgid)


async def test_an_html_page_instead_of_an_mcp_endpoint_is_protocol_error(settings: Settings, tmp_path: Path) -> None:
    async with html_page_server() as port:
        for transport in ("streamable_http", "sse"):
            target = HttpTarget(url=f"http://127.0.0.1:{port}/mcp", transport=transport)  # type: ignore[arg-type]
            with anyio.fail_after(20):
                result = await Prober(settings).probe(local(target), workspace=tmp_path)
            assert (result.state, result.code) == ("error", "protocol_error"), (transport, result.message)
            assert result.message is not None and "text/html" in result.message


async def test_a_closed_port_is_server_closed(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    for transport in ("streamable_http", "sse"):
        target = HttpTarget(url=f"http://127.0.0.1:{port}/mcp", transport=transport)  # type: ignore[arg-type]
        with anyio.fail_after(20):
            result = await Prober(settings).probe(local(target), workspace=tmp_path)
        assert (result.state, result.code) == ("error", "server_closed"), (transport, result.message)
        assert (
            result.message is not None
            and f"could not connect to 127.0.0.1:{port}: connection refused" in result.message
        )


async def test_a_name_that_does_not_resolve_is_server_closed_naming_it(settings: Settings, tmp_path: Path) -> None:
    for transport in ("streamable_http", "sse"):
        target = HttpTarget(url="http://patchbay-probe.invalid:3001/mcp", transport=transport)  # type: ignore[arg-type]
        with anyio.fail_after(20):
            result = await Prober(settings).probe(connector(target), workspace=tmp_path)
        assert (result.state, result.code) == ("error", "server_closed"), (transport, result.message)
        assert result.message is not None and result.message.startswith(
            "the name 'patchbay-probe.invalid' does not resolve"
        )
        assert "[Errno" not in result.message


async def test_a_command_that_exits_at_once_is_server_closed_with_its_exit_status(
    settings: Settings, tmp_path: Path
) -> None:
    with anyio.fail_after(20):
        result = await Prober(settings).probe(connector(StdioTarget(command="/bin/false")), workspace=tmp_path)
    assert (result.state, result.code) == ("error", "server_closed"), result.message
    assert (
        result.message
        == "the server exited with status 1 before the MCP handshake completed (it wrote nothing to stderr)"
    )


async def test_a_server_that_exits_3_reports_the_status_and_its_redacted_stderr(
    settings: Settings, tmp_path: Path
) -> None:
    with anyio.fail_after(20):
        result = await Prober(settings).probe(connector(fixture_server("exit_server.py")), workspace=tmp_path)
    assert (result.state, result.code) == ("error", "server_closed"), result.message
    assert result.message is not None
    assert result.message.startswith("the server exited with status 3 before the MCP handshake completed; stderr: ")
    assert "exit-server: reading the configuration | exit-server: fatal: api_key=" in result.message
    assert FAKE_SECRET not in result.message and FAKE_SECRET not in result.stderr_tail
    assert "exit-server: fatal" in result.stderr_tail


# --- stderr tail ---------------------------------------------------------------------------------


async def test_the_stderr_tail_is_kept_and_redacted(settings: Settings, tmp_path: Path) -> None:
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(fixture_server("stderr_flood_server.py")), workspace=tmp_path)
    assert_ready(result)
    assert f"stderr-flood starting, api_key={REDACTED}" in result.stderr_tail
    assert FAKE_SECRET not in result.stderr_tail


async def test_resolved_env_values_are_redacted_from_the_stderr_tail(settings: Settings, tmp_path: Path) -> None:
    server = shlex.join([sys.executable, str(FIXTURES / "paging_server.py")])
    target = StdioTarget(command="sh", args=("-c", f'echo "connecting as $PB_CANARY" >&2; exec {server}'))
    with anyio.fail_after(30):
        result = await Prober(settings).probe(
            connector(target), workspace=tmp_path, env={"PB_CANARY": "canary-value-0042"}
        )
    assert_ready(result)
    assert f"connecting as {REDACTED}" in result.stderr_tail
    assert "canary-value-0042" not in result.stderr_tail


# --- concurrency ---------------------------------------------------------------------------------


def gate_open_client(monkeypatch: pytest.MonkeyPatch, key: Callable[[ConnectorTarget], str]) -> dict[str, Any]:
    """Hold every probe at the transport until ``state["release"]`` is set; record who is inside."""
    real_open_client = connect_module.open_client
    state: dict[str, Any] = {
        "inside": {},
        "peak": 0,
        "peak_per_key": {},
        "entered": [],
        "release": anyio.Event(),
        "arrivals": {},
    }

    @asynccontextmanager
    async def open_client(target: ConnectorTarget, **kwargs: Any) -> AsyncIterator[Any]:
        name = key(target)
        inside: dict[str, int] = state["inside"]
        inside[name] = inside.get(name, 0) + 1
        state["entered"].append(name)
        state["peak"] = max(state["peak"], sum(inside.values()))
        state["peak_per_key"][name] = max(state["peak_per_key"].get(name, 0), inside[name])
        arrival = state["arrivals"].get(len(state["entered"]))
        if arrival is not None:
            arrival.set()
        try:
            await state["release"].wait()
            async with real_open_client(target, **kwargs) as connection:
                yield connection
        finally:
            inside[name] -= 1

    monkeypatch.setattr(connect_module, "open_client", open_client)
    return state


async def test_at_most_four_probes_run_at_once(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert settings.probe_concurrency == 4
    state = gate_open_client(monkeypatch, key=lambda target: target.args[-1])  # type: ignore[union-attr]
    four_inside = state["arrivals"][4] = anyio.Event()
    prober = Prober(settings)
    results: list[ProbeResult] = []

    async def probe(index: int) -> None:
        target = fixture_server("resources_only_server.py", f"--copy-{index}")
        results.append(await prober.probe(connector(target, name=f"c{index}"), workspace=tmp_path))

    with anyio.fail_after(40):
        async with anyio.create_task_group() as tg:
            for index in range(5):
                tg.start_soon(probe, index)
            await four_inside.wait()
            await anyio.wait_all_tasks_blocked()  # the fifth is parked at the limit, not at the gate
            assert sum(state["inside"].values()) == 4
            state["release"].set()
    assert state["peak"] == 4
    assert len(state["entered"]) == 5
    assert [result.state for result in results] == ["ready"] * 5


async def test_probes_of_one_connector_run_one_at_a_time_while_others_proceed(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = gate_open_client(monkeypatch, key=lambda target: Path(target.args[0]).stem)  # type: ignore[union-attr]
    first_inside = state["arrivals"][1] = anyio.Event()
    second_inside = state["arrivals"][2] = anyio.Event()
    prober = Prober(settings)
    alpha = connector(fixture_server("paging_server.py"), name="alpha")
    beta = connector(fixture_server("resources_only_server.py"), name="beta")
    results: list[ProbeResult] = []

    async def probe(which: Connector) -> None:
        results.append(await prober.probe(which, workspace=tmp_path))

    with anyio.fail_after(40):
        async with anyio.create_task_group() as tg:
            tg.start_soon(probe, alpha)
            await first_inside.wait()
            tg.start_soon(probe, alpha)
            tg.start_soon(probe, beta)
            await second_inside.wait()
            await anyio.wait_all_tasks_blocked()  # the second alpha waits for the first, beta does not
            assert state["inside"] == {"paging_server": 1, "resources_only_server": 1}
            state["release"].set()
    assert state["entered"] == ["paging_server", "resources_only_server", "paging_server"]
    assert state["peak_per_key"]["paging_server"] == 1
    assert sorted((result.connector, result.state) for result in results) == [
        ("alpha", "ready"),
        ("alpha", "ready"),
        ("beta", "ready"),
    ]


async def test_a_unix_socket_server_is_ready_with_its_tools(settings: Settings, tmp_path: Path) -> None:
    from patchbay.core.validation import validate_socket_path
    from tests.support.servers import socket_server

    with socket_server() as path, anyio.fail_after(30):
        result = await Prober(settings).probe(connector(validate_socket_path(path)), workspace=tmp_path)
    assert_ready(result)
    assert [tool.name for tool in result.tools] == ["echo"]


# --- credentials echoed into the catalog ---------------------------------------------------------

ECHOING_SERVER = '''
"""A stdio MCP server that puts its PB_BOUND credential into its name and its tool's metadata."""
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

BOUND = os.environ["PB_BOUND"]
TOOL = types.Tool(
    name="whoami",
    description=f"Acts as {BOUND}.",
    input_schema={"type": "object", "properties": {"as": {"type": "string", "default": BOUND}}},
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def main() -> None:
    server = Server(f"echoing-{BOUND}", version="1.0.0", on_list_tools=list_tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
'''


async def test_bound_env_values_a_server_echoes_into_its_catalog_are_masked(settings: Settings, tmp_path: Path) -> None:
    # The catalog is cached in the store, which never holds a credential value.
    script = tmp_path / "echoing_server.py"
    script.write_text(ECHOING_SERVER)
    bound = "bound-cnry-3141"
    target = StdioTarget(command=sys.executable, args=(str(script),))
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(target), workspace=tmp_path, env={"PB_BOUND": bound})
    assert_ready(result)
    assert bound not in result.model_dump_json()
    (tool,) = result.tools
    assert tool.name == "whoami" and tool.description == f"Acts as {REDACTED}."
    assert tool.input_schema["properties"]["as"]["default"] == REDACTED
    assert result.server_info is not None and result.server_info["name"] == f"echoing-{REDACTED}"


# --- egress guard and audit -----------------------------------------------------


async def test_a_loopback_server_is_network_blocked_without_allow_private_and_never_contacted(
    settings: Settings, tmp_path: Path
) -> None:
    async with listening() as listener:
        for transport in ("streamable_http", "sse"):
            target = HttpTarget(url=f"{listener.origin}/mcp", transport=transport)  # type: ignore[arg-type]
            with anyio.fail_after(20):
                result = await Prober(settings).probe(connector(target), workspace=tmp_path, project_id="prj_egress")
            assert (result.state, result.code) == ("error", "network_blocked"), result.message
            assert "loopback" in (result.message or "") and "allow_private" in (result.message or "")
        assert listener.connections == 0
    lines = audit_lines(settings.home)
    assert [(line["note"], line["origin"], line["approved"], line["project_id"]) for line in lines] == [
        ("mcp_probe", listener.origin, False, "prj_egress")
    ] * 2
    assert {line["connector_id"] for line in lines} == {"id-probe-me"}


async def test_a_probe_leaves_one_metadata_only_audit_line(settings: Settings, tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    header_value, query_value = "hdr-cnry-2718", "qry-cnry-1618"
    with http_fixture(record) as port:
        target = HttpTarget(url=f"http://127.0.0.1:{port}/mcp?tenant={query_value}")
        with anyio.fail_after(30):
            result = await Prober(settings).probe(
                local(target), workspace=tmp_path, headers={"X-Api-Key": header_value}, project_id="prj_audit"
            )
    assert_ready(result)
    assert [tool.name for tool in result.tools] == ["echo"]
    assert recorded_requests(record)  # the probe really went out
    (line,) = audit_lines(settings.home)
    assert set(line) == AUDIT_KEYS
    assert line["note"] == "mcp_probe" and line["approved"] is True
    assert (line["origin"], line["project_id"]) == (f"http://127.0.0.1:{port}", "prj_audit")
    text = (settings.home / "egress-audit.jsonl").read_text()
    for leak in ("/mcp", "tenant", query_value, header_value, "X-Api-Key", "echo"):
        assert leak not in text


async def test_a_stdio_probe_is_audited_as_unguardable(settings: Settings, tmp_path: Path) -> None:
    with anyio.fail_after(30):
        result = await Prober(settings).probe(connector(StdioTarget(command="mcp-server-time")), workspace=tmp_path)
    assert_ready(result)
    (line,) = audit_lines(settings.home)
    assert line["note"] == "mcp_probe" and line["approved"] is True
    assert (line["origin"], line["runtime_call_audit"], line["project_id"]) == (None, "unavailable", None)


async def test_a_probe_refused_by_validation_never_reaches_the_guard_or_the_audit(
    settings: Settings, tmp_path: Path
) -> None:
    result = await Prober(settings).probe(
        connector(HttpTarget(url="ftp://127.0.0.1/mcp"), allow_private=True), workspace=tmp_path
    )
    assert (result.state, result.code) == ("error", "invalid_config")
    assert audit_lines(settings.home) == []


async def test_a_cross_origin_sse_endpoint_is_network_blocked_at_once(settings: Settings, tmp_path: Path) -> None:
    async with listening() as elsewhere:
        body = f"event: endpoint\ndata: {elsewhere.origin}/messages\n\n".encode()
        answer = http_response(200, body, {"Content-Type": "text/event-stream"})
        async with listening(lambda method, path: answer) as server:
            target = HttpTarget(url=f"{server.origin}/sse", transport="sse")
            with anyio.fail_after(10):  # before the change: `timeout` after the 15 s probe deadline
                result = await Prober(settings).probe(local(target), workspace=tmp_path)
        assert (result.state, result.code) == ("error", "network_blocked"), result.message
        assert result.message is not None and elsewhere.origin in result.message
        assert elsewhere.connections == 0


async def test_an_underscore_host_probes_ready_and_a_zone_id_or_escaped_host_is_invalid_config(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        if host == "mcp_server":  # a Docker Compose service name, here on this machine
            return ["127.0.0.1"]
        raise OSError(f"{host} does not resolve in this test")

    monkeypatch.setattr(egress_module, "system_resolver", resolver)
    with http_fixture(tmp_path / "requests.jsonl") as port, anyio.fail_after(60):
        ready = await Prober(settings).probe(local(HttpTarget(url=f"http://mcp_server:{port}/mcp")), workspace=tmp_path)
        zoned = await Prober(settings).probe(
            local(HttpTarget(url="http://[fe80::1%25eth0]:8080/mcp")), workspace=tmp_path
        )
        escaped = await Prober(settings).probe(
            local(HttpTarget(url=f"http://%31%32%37.0.0.1:{port}/mcp")), workspace=tmp_path
        )
    assert (ready.state, [tool.name for tool in ready.tools]) == ("ready", ["echo"]), ready.message
    for result in (zoned, escaped):
        assert (result.state, result.code) == ("error", "invalid_config"), result.message
    assert [line["origin"] for line in audit_lines(settings.home)] == [f"http://mcp_server:{port}"]
