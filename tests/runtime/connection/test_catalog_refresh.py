"""list_changed: a live connection re-lists when the server says its tools changed, and the
runtime's router, visibility and grants follow. Against the fixture server
tests/fixtures/dynamic_server.py (paged tools/list, notifications before or after a result) and the
real server-everything, which sends tools/list_changed right after initialize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, StdioTarget, ToolSummary
from patchbay.runtime import read_events
from patchbay.runtime.connection.catalog_refresh import wire_connector
from patchbay.runtime.connection.hooks import HostHooks
from patchbay.runtime.connection.server_connection import ServerConnection
from tests.support.servers import everything_stdio_command, fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

ORDERS = ["before", "after"]


def dynamic(*args: str, name: str = "dyn", **settings: Any) -> RuntimeServer:
    grants = settings.pop("grants", {})
    return RuntimeServer(
        connector_id=f"id-{name}",
        name=name,
        target=fixture_server("dynamic_server.py", *args),
        settings=ConnectorSettings(approval_mode="allow_all", **settings),
        global_grants=grants,
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def runtime_for(tmp_path: Path, settings: Settings, *servers: RuntimeServer, **kwargs: Any) -> Runtime:
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)
    return Runtime(config, settings=settings, **kwargs)


def changes(runtime: Runtime) -> list[dict[str, Any]]:
    return [e["payload"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.server.tools_changed"]


async def listings(runtime: Runtime) -> int:
    result = await runtime.call("mcp.dyn.list_requests")
    return json.loads(result.text)["listings"]


@pytest.mark.parametrize("order", ORDERS)
async def test_a_tool_added_at_runtime_is_callable_right_after_the_call_that_added_it(
    tmp_path: Path, settings: Settings, order: str
) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, dynamic("--page-size", "2")) as runtime:
            names = {tool.name for tool in await runtime.list_tools()}
            assert "mcp.dyn.fresh" not in names
            await runtime.call("mcp.dyn.add_tool", {"name": "fresh", "notify": order})
            result = await runtime.call("mcp.dyn.fresh")
            assert result.text == "dynamic:fresh"
            # By its wire name too (the name a model API uses), for a tool added later still.
            await runtime.call("mcp.dyn.add_tool", {"name": "fresh2", "notify": order})
            assert (await runtime.call("mcp__dyn__fresh2")).text == "dynamic:fresh2"
            names = {tool.name for tool in await runtime.list_tools()}
            assert {"mcp.dyn.fresh", "mcp.dyn.fresh2"} <= names
            await wait_until(lambda: len(changes(runtime)) >= 2)
    first = changes(runtime)[0]
    assert first["server"] == "dyn"
    assert (first["added"], first["removed"], first["changed"]) == (["fresh"], [], [])
    assert first["toolCount"] == 6  # five fixed tools + fresh, listed over three pages of two


@pytest.mark.parametrize("order", ORDERS)
async def test_a_removed_tool_leaves_the_router_and_then_fails_with_unknown_tool(
    tmp_path: Path, settings: Settings, order: str
) -> None:
    server = dynamic("--initial", "old_tool")
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, server) as runtime:
            assert (await runtime.call("mcp.dyn.old_tool")).text == "dynamic:old_tool"
            await runtime.call("mcp.dyn.remove_tool", {"name": "old_tool", "notify": order})
            await wait_until(lambda: any(change["removed"] == ["old_tool"] for change in changes(runtime)))
            with pytest.raises(ToolCallError) as caught:
                await runtime.call("mcp.dyn.old_tool")
            assert caught.value.reason is FailureReason.UNKNOWN_TOOL
            assert "mcp.dyn.old_tool" not in {tool.name for tool in await runtime.list_tools()}
    failed = [e for e in read_events(runtime.event_log_path) if e["type"] == "tool.failed"]
    assert [e["payload"]["reason"] for e in failed] == ["unknown_tool"]
    # The refused call never reached the server: no mcp.call.started for it.
    started = [
        e["payload"]["args"]["name"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.call.started"
    ]
    assert started == ["old_tool", "remove_tool"]


async def test_a_new_tool_matching_an_exclude_pattern_stays_invisible(tmp_path: Path, settings: Settings) -> None:
    server = dynamic(exclude_tools=("hidden_*",))
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, server) as runtime:
            await runtime.call("mcp.dyn.add_tool", {"name": "hidden_x", "notify": "after"})
            await runtime.call("mcp.dyn.add_tool", {"name": "shown", "notify": "after"})
            assert (await runtime.call("mcp.dyn.shown")).text == "dynamic:shown"
            for name in ("mcp.dyn.hidden_x", "mcp__dyn__hidden_x"):
                with pytest.raises(ToolCallError) as caught:
                    await runtime.call(name)
                assert caught.value.reason is FailureReason.UNKNOWN_TOOL
            names = {tool.name for tool in await runtime.list_tools()}
    assert "mcp.dyn.shown" in names
    assert not any("hidden" in name for name in names)


async def test_a_new_tool_denied_by_a_global_grant_stays_denied(tmp_path: Path, settings: Settings) -> None:
    server = dynamic(grants={"danger": "deny"})
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, server) as runtime:
            await runtime.call("mcp.dyn.add_tool", {"name": "danger", "notify": "before"})
            with pytest.raises(ToolCallError) as caught:
                await runtime.call("mcp.dyn.danger")
            assert caught.value.reason is FailureReason.PERMISSION_DENIED
            listed = {tool.name: tool.decision for tool in await runtime.list_tools()}
            definitions = [d["name"] for d in await runtime.tool_definitions()]
    assert listed["mcp.dyn.danger"] == "deny"
    assert "mcp__dyn__danger" not in definitions
    started = [
        e["payload"]["args"]["name"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.call.started"
    ]
    assert "danger" not in started  # a denial never reaches the server


async def test_a_burst_of_twenty_notifications_costs_a_bounded_number_of_relists(
    tmp_path: Path, settings: Settings
) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, dynamic("--page-size", "2")) as runtime:
            before = await listings(runtime)
            await runtime.call("mcp.dyn.burst", {"count": 20, "add": "late"})
            assert (await runtime.call("mcp.dyn.late")).text == "dynamic:late"
            await wait_until(lambda: any(change["added"] == ["late"] for change in changes(runtime)))
            # Resolving a name waits for any re-list still queued or in flight: the count is final.
            after = await listings(runtime)
    assert before == 1
    assert 1 <= after - before <= 3, f"{after - before} re-lists for 20 notifications"


async def test_a_connection_relists_every_page_and_counts_notifications(tmp_path: Path, settings: Settings) -> None:
    published: list[dict[str, ToolSummary] | None] = []
    heard: list[tuple[str, str]] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            connection = ServerConnection(
                dynamic("--page-size", "1"),
                workspace=tmp_path,
                settings=settings,
                task_group=group,
                on_catalog=lambda name, tools: published.append(tools),
            )
            unsubscribe = connection.refresh.subscribe(lambda name, kind: heard.append((name, kind)))
            await connection.ensure_connected()
            versions = {kind: connection.refresh.version(kind) for kind in ("tools", "resources", "prompts")}
            await connection.call_tool("add_tool", {"name": "paged", "notify": "before"})
            await wait_until(lambda: len(published) == 2 and not connection.refresh.busy)
            await connection.call_tool("notify_lists", {"kinds": ["resources", "prompts"]})
            await wait_until(lambda: connection.refresh.notifications["prompts"] == 1)
            unsubscribe()
            await connection.call_tool("notify_lists", {"kinds": ["resources"]})
            await wait_until(lambda: connection.refresh.notifications["resources"] == 2)
            connection.request_stop()
            await connection.wait_closed()
    assert published[1] is not None and list(published[1]) == [
        "add_tool",
        "remove_tool",
        "burst",
        "list_requests",
        "notify_lists",
        "paged",
    ]
    assert connection.refresh.version("tools") == versions["tools"] + 1
    assert connection.refresh.version("resources") == versions["resources"] + 2
    assert connection.refresh.version("prompts") == versions["prompts"] + 1
    # Listeners hear every bump until they unsubscribe: the connect bumps all three, then the
    # applied re-list bumps tools, then one resources and one prompts notification.
    kinds = [kind for name, kind in heard]
    assert {name for name, kind in heard} == {"dyn"}
    assert kinds == ["tools", "resources", "prompts", "tools", "resources", "prompts"]


async def test_a_relist_over_the_page_cap_keeps_what_the_pages_within_it_list(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", probe_max_pages=6)
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, dynamic("--page-size", "1")) as runtime:
            connection = runtime._connections["dyn"]  # the live connection, to read its refresh state
            await runtime.call("mcp.dyn.add_tool", {"name": "sixth", "notify": "before"})
            assert (await runtime.call("mcp.dyn.sixth")).text == "dynamic:sixth"  # six pages: at the cap
            await runtime.call("mcp.dyn.add_tool", {"name": "seventh", "notify": "before"})
            with pytest.raises(ToolCallError) as caught:
                await runtime.call("mcp.dyn.seventh")
            assert caught.value.reason is FailureReason.UNKNOWN_TOOL  # on the seventh page: not listed
            assert connection.refresh.last_error is None
            assert connection.state == "connected"
            assert (await runtime.call("mcp.dyn.sixth")).text == "dynamic:sixth"  # the six pages listed stay
    assert [change["added"] for change in changes(runtime)] == [["sixth"]]


async def test_a_call_to_an_unknown_name_relists_at_most_once_per_call_made(tmp_path: Path, settings: Settings) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, settings, dynamic()) as runtime:
            before = await listings(runtime)
            for _ in range(3):
                with pytest.raises(ToolCallError) as caught:
                    await runtime.call("mcp.dyn.no_such_tool")
                assert caught.value.reason is FailureReason.UNKNOWN_TOOL
            after = await listings(runtime)
    # list_requests finished after the first listing: the first unknown name re-lists once; the
    # next two find no call finished since, so they fail at once.
    assert after - before == 1


async def test_a_2026_connection_gets_list_changed_on_a_listen_stream(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", protocol_mode="auto")
    published: list[dict[str, ToolSummary] | None] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            connection = ServerConnection(
                dynamic("--modern"),
                workspace=tmp_path,
                settings=settings,
                task_group=group,
                on_catalog=lambda name, tools: published.append(tools),
            )
            await connection.ensure_connected()
            assert connection.protocol_version == "2026-07-28"
            await wait_until(lambda: connection.refresh.listening)  # the stream is acknowledged
            await connection.call_tool("add_tool", {"name": "modern", "notify": "before"})
            await wait_until(lambda: published[-1] is not None and "modern" in published[-1])
            await connection.call_tool("notify_lists", {"kinds": ["prompts"]})
            await wait_until(lambda: connection.refresh.notifications["prompts"] >= 1)
            connection.request_stop()
            await connection.wait_closed()
    # Each event is counted once, though the SDK also tees it to the message handler.
    assert connection.refresh.notifications["tools"] == 1
    assert connection.refresh.notifications["prompts"] == 1


async def test_server_everythings_list_changed_after_initialize_is_handled(tmp_path: Path, settings: Settings) -> None:
    command = everything_stdio_command()
    server = RuntimeServer(
        connector_id="id-everything",
        name="everything",
        target=StdioTarget(command=command[0], args=tuple(command[1:])),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )

    async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            connection = ServerConnection(
                server,
                workspace=tmp_path,
                settings=settings,
                task_group=group,
                hooks=HostHooks(elicitation=decline),
            )
            await connection.ensure_connected()
            # It registers its capability-dependent tools after initialized and says so.
            await wait_until(lambda: connection.refresh.notifications["tools"] >= 1 and not connection.refresh.busy)
            assert connection.state == "connected"
            assert 1 <= connection.refresh.relists <= connection.refresh.notifications["tools"]
            assert connection.refresh.last_error is None
            assert "trigger-elicitation-request" in connection.tools
            result = await connection.call_tool("echo", {"message": "still fine"})
            assert result.content[0].text == "Echo: still fine"  # type: ignore[union-attr]
            connection.request_stop()
            await connection.wait_closed()
    assert connection.crashes == 0


def test_a_wire_name_of_an_unregistered_tool_names_its_connector_by_prefix() -> None:
    connectors = {"dyn": object(), "my-server": object()}
    assert wire_connector("mcp__dyn__fresh", connectors) == "dyn"
    assert wire_connector("mcp__my-server__a__b", connectors) == "my-server"
    assert wire_connector("mcp__other__fresh", connectors) is None
    assert wire_connector("mcp__dyn", connectors) is None
    assert wire_connector("dyn__fresh", connectors) is None
