"""Client faults real servers produce, each from a small fixture server."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, HttpTarget, StdioTarget
from tests.support.egress import http_fixture, recorded_requests
from tests.support.servers import fixture_server, free_port

pytestmark = pytest.mark.anyio


def server(name: str, script: str, *args: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"con_{name}",
        name=name,
        target=fixture_server(script, *args),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )


def runtime_for(tmp_path: Path, *servers: RuntimeServer) -> Runtime:
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=servers)
    return Runtime(config, settings=Settings(home=tmp_path / "home"))


async def test_banner_and_progress_lines_on_stdout_do_not_break_listing_or_calls(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, server("banner", "banner_server.py")) as runtime:
            assert [t.name for t in await runtime.list_tools()] == ["mcp.banner.echo"]
            result = await runtime.call("mcp.banner.echo", {"text": "still works"})
            assert result.text == "still works"
            assert (await runtime.call("mcp.banner.echo", {"text": "twice"})).text == "twice"


async def test_a_256_kib_stderr_flood_during_a_call_does_not_block_it(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, server("flood", "stderr_flood_server.py")) as runtime:
            result = await runtime.call("mcp.flood.flood", {})
            assert result.text == "ok"


async def test_all_44_tools_of_a_20_20_4_paged_list_are_listed_and_the_last_is_callable(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, server("paged", "paging_server.py")) as runtime:
            names = [t.name for t in await runtime.list_tools()]
            assert len(names) == 44 and names[-1] == "mcp.paged.t43"
            assert (await runtime.call("mcp.paged.t43", {})).text == "t43"


async def test_a_resources_only_server_is_connected_with_no_tools(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(
            tmp_path, server("docs", "resources_only_server.py"), server("banner", "banner_server.py")
        ) as runtime:
            names = [t.name for t in await runtime.list_tools()]
            assert names == ["mcp.banner.echo"]
            events = (tmp_path / "home" / "sessions" / f"{runtime.session_id}.jsonl").read_text()
            assert '"server":"docs","toolCount":0' in events.replace(" ", "")


async def test_tool_definitions_give_unique_wire_names_that_call_back_to_the_tool(tmp_path: Path) -> None:
    import re

    with anyio.fail_after(20):
        async with runtime_for(
            tmp_path, server("paged", "paging_server.py"), server("banner", "banner_server.py")
        ) as runtime:
            definitions = await runtime.tool_definitions()
            names = [d["name"] for d in definitions]
            assert len(names) == len(set(names)) == 45
            assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in names)
            echo = next(d for d in definitions if d["name"] == "mcp__banner__echo")
            assert echo["input_schema"]["required"] == ["text"]
            assert (await runtime.call("mcp__banner__echo", {"text": "by wire"})).text == "by wire"
            assert (await runtime.call("mcp__paged__t43", {})).text == "t43"


async def test_tool_definitions_are_the_same_on_every_run(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        with anyio.fail_after(20):
            async with runtime_for(tmp_path, server("paged", "paging_server.py")) as runtime:
                runs.append(await runtime.tool_definitions())
    assert runs[0] == runs[1]


async def connect_failure(tmp_path: Path, server: RuntimeServer) -> ToolCallError:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, server) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call(f"mcp.{server.name}.anything", {})
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE, info.value.message
    return info.value


async def test_a_refused_connection_names_host_and_port(tmp_path: Path) -> None:
    port = free_port()
    remote = RuntimeServer(
        connector_id="con_remote",
        name="remote",
        target=HttpTarget(url=f"http://127.0.0.1:{port}/mcp"),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"allow_private": True},
    )
    failure = await connect_failure(tmp_path, remote)
    assert failure.details["code"] == "server_closed"
    assert f"could not connect to 127.0.0.1:{port}: connection refused" in failure.message


async def test_a_name_that_does_not_resolve_is_named(tmp_path: Path) -> None:
    remote = RuntimeServer(
        connector_id="con_remote",
        name="remote",
        target=HttpTarget(url="http://patchbay-runtime.invalid:3001/mcp"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    failure = await connect_failure(tmp_path, remote)
    assert failure.details["code"] == "server_closed"
    assert "the name 'patchbay-runtime.invalid' does not resolve" in failure.message
    assert "[Errno" not in failure.message


async def test_a_command_that_exits_at_once_reports_its_exit_status(tmp_path: Path) -> None:
    quits = RuntimeServer(
        connector_id="con_quits",
        name="quits",
        target=StdioTarget(command="/bin/false"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    failure = await connect_failure(tmp_path, quits)
    assert failure.details["code"] == "server_closed"
    assert "the server exited with status 1 before the MCP handshake completed" in failure.message


async def test_a_server_exiting_3_reports_the_status_and_its_redacted_stderr(tmp_path: Path) -> None:
    failure = await connect_failure(tmp_path, server("exits", "exit_server.py"))
    assert failure.details["code"] == "server_closed"
    assert "the server exited with status 3 before the MCP handshake completed; stderr: " in failure.message
    assert "exit-server: fatal: api_key=" in failure.message
    assert "sk-live-abcdef0123456789abcdef" not in failure.message


def streamable(port: int) -> RuntimeServer:
    return RuntimeServer(
        connector_id="con_remote",
        name="remote",
        target=HttpTarget(url=f"http://127.0.0.1:{port}/mcp"),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"allow_private": True},
    )


async def test_a_governed_call_after_the_server_forgot_the_session_succeeds_on_a_new_one(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        async with runtime_for(tmp_path, streamable(port)) as runtime:
            assert (await runtime.call("mcp.remote.echo", {"text": "before"})).text == "before"
            await forget_sessions(port)
            assert (await runtime.call("mcp.remote.echo", {"text": "after"})).text == "after"
            assert (await runtime.call("mcp.remote.echo", {"text": "again"})).text == "again"
    initializes = [
        r for r in recorded_requests(record) if (r["method"], r["path"], r["session"]) == ("POST", "/mcp", None)
    ]
    assert len(initializes) == 2


async def test_a_governed_call_to_a_server_answering_404_twice_fails_clearly(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        async with runtime_for(tmp_path, streamable(port)) as runtime:
            assert (await runtime.call("mcp.remote.echo", {"text": "before"})).text == "before"
            await forget_sessions(port, always=True)
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.remote.echo", {"text": "lost"})
    assert "the server forgot the new session too (HTTP 404 twice)" in info.value.message


async def forget_sessions(port: int, *, always: bool = False) -> None:
    """Make the fixture server forget its sessions (``POST /forget``)."""
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"http://127.0.0.1:{port}/forget{'?always=1' if always else ''}")
        response.raise_for_status()


@pytest.mark.parametrize(("mode", "kept"), [("repeat", 40), ("cycle", 44), ("endless-empty", 44), ("duplicates", 44)])
async def test_misbehaving_pagination_keeps_every_list_the_server_gave(tmp_path: Path, mode: str, kept: int) -> None:
    paged = server("paged", "paging_server.py", "--all-lists", "--misbehave", mode)
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=(paged,))
    with anyio.fail_after(60):
        async with Runtime(config, settings=Settings(home=tmp_path / "home", probe_max_pages=10)) as runtime:
            tools = [t.name for t in await runtime.list_tools()]
            resources = [r.uri for r in await runtime.list_resources("paged")]
            templates = [t.uri_template for t in await runtime.list_resource_templates("paged")]
            prompts = await runtime.list_prompts("paged")
            assert (await runtime.call("mcp.paged.t1", {})).text == "t1"
    assert tools == [f"mcp.paged.t{i}" for i in range(kept)]
    assert resources == [f"page://r{i}" for i in range(kept)]
    assert templates == [f"page://t{i}/{{id}}" for i in range(kept)]
    assert [p.name for p in prompts] == [f"p{i}" for i in range(kept)]
    assert prompts[0].description == "Prompt number 0."  # the first listing wins
