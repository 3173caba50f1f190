"""RuntimeOwner: the gateway's runtime, rebuilt only when the projection changes, in the same
event-log session, with the host told; in process, over the recording fixture server and the SDK
client connected to the gateway's server in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from patchbay.core.errors import CanonicalStateUnavailable
from patchbay.core.models import ConnectorSettings, RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.interfaces.gateway import Gateway
from patchbay.interfaces.gateway.owner import RuntimeOwner
from patchbay.runtime import Runtime
from tests.support.gateway import error_of
from tests.support.recording import config, recording

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def projection(tmp_path: Path, *extra: str, **grants: str) -> RuntimeConfig:
    """``rec`` (allow_all, ``grants``, recording to ``rec.jsonl``) and a recording server per ``extra``."""
    settings = ConnectorSettings(approval_mode="allow_all")
    rec = recording("rec", tmp_path / "rec.jsonl", settings=settings, global_grants=grants)
    return config(tmp_path, rec, *(recording(name, settings=settings) for name in extra))


def events(runtime: Runtime) -> list[dict[str, Any]]:
    return [json.loads(line) for line in runtime.event_log_path.read_text().splitlines()]


class Source:
    """A loader whose projection the test changes (or makes fail)."""

    def __init__(self, current: RuntimeConfig):
        self.current = current
        self.failing = False
        self.loads = 0

    def __call__(self) -> RuntimeConfig:
        self.loads += 1
        if self.failing:
            raise CanonicalStateUnavailable("the store is locked")
        return self.current


async def test_a_projection_change_switches_the_gateway_to_a_new_runtime_and_tells_the_host(tmp_path: Path) -> None:
    source = Source(projection(tmp_path))
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            owner = RuntimeOwner(Settings(home=tmp_path / "home"), source)
            first = await owner.start(group)
            gateway = Gateway(first, "direct")
            owner.add(gateway)
            relaying = anyio.CancelScope()

            async def relay() -> None:
                with relaying:
                    await gateway.relay_catalog_changes()

            group.start_soon(relay)
            async with Client(gateway.server(), mode="legacy", message_handler=on_message) as host:
                names = {tool.name for tool in (await host.list_tools()).tools}
                assert "rec__echo" in names
                assert not (await host.call_tool("rec__echo", {"text": "hi"})).is_error

                assert await owner.reload() is False  # the same projection: nothing restarts
                assert owner.runtime is first and owner.reloads == 0

                source.failing = True
                assert await owner.reload() is False  # kept serving the previous projection
                assert owner.runtime is first
                source.failing = False

                source.current = projection(tmp_path, echo="deny")
                owner.changed()  # as the commit listener does
                await changed.wait()
                # only policy changed: the same runtime took it in place, the connection stayed
                assert owner.reloads == 1 and owner.runtime is first and gateway.runtime is first
                assert first.server_states() == {"rec": "connected"}
                after = {tool.name for tool in (await host.list_tools()).tools}
                assert "rec__echo" not in after and "rec__read_thing" in after
                refused = await host.call_tool("rec__echo", {"text": "hi"})
                assert error_of(refused)["code"] == "permission_denied"

                changed = anyio.Event()
                source.current = projection(tmp_path, "more", echo="deny")  # a connector added
                owner.changed()
                await changed.wait()
                assert owner.reloads == 2 and owner.runtime is not first and gateway.runtime is owner.runtime
                assert owner.runtime.session_id == first.session_id  # one event-log session
                assert first.server_states() == {"rec": "closed"}  # the replaced runtime stopped its server
                names = {tool.name for tool in (await host.list_tools()).tools}
                assert "more__echo" in names and "rec__echo" not in names
                connected = [e["payload"]["server"] for e in events(first) if e["type"] == "mcp.server.connected"]
                assert sorted(connected) == ["more", "rec", "rec"]  # rec once per runtime, not per reload
            relaying.cancel()
            owner.close()  # the group then ends by itself: the owner tasks exit their runtimes
        last = owner.runtime
    assert set(last.server_states().values()) == {"closed"}
