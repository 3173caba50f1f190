"""patchbay.runtime.connection.status_feed: a real runtime's connections in the live status
registry (fixture server tests/fixtures/lifecycle_server.py: it really sleeps and crashes)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.live_status import LIVE_TTL, ConnectorLive
from patchbay.core.models import ConnectorSettings, ToolSummary
from patchbay.runtime.connection.status_feed import StatusFeed
from patchbay.runtime.live_status import InProcessStatusRegistry
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

FAST = {"restart": {"base_delay": 0.05, "max_delay": 0.2}}


def server(name: str, **options: object) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"con_{name}",
        name=name,
        target=fixture_server("lifecycle_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={**FAST, **options},
    )


def state(registry: InProcessStatusRegistry, connector_id: str) -> str | None:
    status = registry.read(connector_id)
    return None if status is None else status.state


async def test_a_runtime_publishes_states_in_flight_calls_and_withdraws_on_exit(tmp_path: Path) -> None:
    registry = InProcessStatusRegistry()
    cached = server("cached").model_copy(update={"tools": (ToolSummary(name="echo", input_schema={}),)})
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(server("life"), cached))
    async with Runtime(config, settings=Settings(home=tmp_path / "home"), status=registry) as runtime:
        assert state(registry, "con_life") == "not-connected"  # lazy, nothing cached
        assert state(registry, "con_cached") == "cached"
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.call, "mcp.life.sleep", {"seconds": 0.5, "tag": "a"})
            await wait_until(lambda: (s := registry.read("con_life")) is not None and s.in_flight == 1)
        status = registry.read("con_life")
        assert status is not None
        assert (status.state, status.in_flight, status.restarts, status.sessions) == ("connected", 0, 0, 1)
        assert status.tool_count >= 5
        with pytest.raises(ToolCallError):
            await runtime.call("mcp.life.crash", {})
        status = registry.read("con_life")
        assert status is not None and status.state in ("failed", "connecting", "connected")
        assert status.restarts == 1
        await wait_until(lambda: state(registry, "con_life") == "connected")
    assert registry.read_all() == {}  # the runtime stopped: its entries are gone


async def test_a_runtime_without_a_registry_publishes_nothing(tmp_path: Path) -> None:
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(server("life"),))
    async with Runtime(config, settings=Settings(home=tmp_path / "home")) as runtime:
        assert (await runtime.call("mcp.life.echo", {"text": "hi"})).text == "hi"


async def test_the_heartbeat_keeps_the_source_fresh_until_closed() -> None:
    clock = [1000.0]
    touched = anyio.Event()

    class Recording(InProcessStatusRegistry):
        def touch(self, source: str) -> None:
            super().touch(source)
            touched.set()

    registry = Recording(clock=lambda: clock[0])
    feed = StatusFeed(registry, "ses_x", interval=0.01)
    registry.publish(feed.source, [ConnectorLive("con_a", "connected")])
    async with anyio.create_task_group() as tg:
        tg.start_soon(feed.run)
        clock[0] += LIVE_TTL + 5  # past the TTL: only a touch makes it fresh again
        with anyio.fail_after(5):
            await touched.wait()
        assert state(registry, "con_a") == "connected"
        feed.close()  # ends the heartbeat (so the task group can exit) and withdraws the source
    assert registry.read_all() == {}
    feed.publish([])  # a closed feed publishes nothing
    assert registry.read_all() == {}


async def test_the_resources_a_runtime_listed_are_counted_while_connected(tmp_path: Path) -> None:
    from patchbay.core.models import StdioTarget
    from tests.support.servers import everything_stdio_command

    command, *args = everything_stdio_command()
    everything = RuntimeServer(
        connector_id="con_every",
        name="every",
        target=StdioTarget(command=command, args=tuple(args)),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    registry = InProcessStatusRegistry()
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(everything,))
    with anyio.fail_after(60):
        async with Runtime(config, settings=Settings(home=tmp_path / "home"), status=registry) as runtime:
            await runtime.call("mcp.every.echo", {"message": "hi"})
            status = registry.read("con_every")
            assert status is not None and status.state == "connected" and status.resource_count is None
            listed = await runtime.list_resources("every")
            status = registry.read("con_every")
            assert status is not None and status.resource_count == len(listed) > 0
