"""ChangeFanout: a commit from any thread is announced on the ``projection`` wake-up topic,
coalesced, and only while it runs; a RuntimeOwner following the topic reloads and tells its host,
in process (LocalWakeups) over the recording fixture server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp import Client

from patchbay.adapters.wakeups import LocalWakeups
from patchbay.core.models import ConnectorSettings, RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.interfaces.gateway import Gateway
from patchbay.interfaces.gateway.fanout import PROJECTION_TOPIC, ChangeFanout
from patchbay.interfaces.gateway.owner import RuntimeOwner
from tests.support.recording import config, recording

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_commit_from_a_worker_thread_or_the_loop_wakes_the_projection_watchers() -> None:
    wakeups = LocalWakeups()
    fanout = ChangeFanout(wakeups)
    fanout.committed("prj_1")  # not running yet: nobody announces it
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group, wakeups.watch(PROJECTION_TOPIC) as watch:
            await group.start(fanout.run)
            assert fanout.announced == 0 and watch.wakeups == 0
            await anyio.to_thread.run_sync(fanout.committed, "prj_1")  # a request's worker thread
            while watch.wakeups == 0:
                await watch.wait(5)
            await anyio.wait_all_tasks_blocked()  # the announcer finished its round
            assert fanout.announced == 1
            fanout.committed(None)  # the event loop's own thread
            while watch.wakeups == 1:
                await watch.wait(5)
            await anyio.wait_all_tasks_blocked()
            assert fanout.announced == 2
            group.cancel_scope.cancel()
    fanout.committed(None)  # stopped: ignored, never raises
    assert fanout.announced == 2


async def test_commits_made_while_one_is_announced_are_announced_once_more_not_once_each() -> None:
    wakeups = LocalWakeups()
    fanout = ChangeFanout(wakeups)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group, wakeups.watch(PROJECTION_TOPIC) as watch:
            await group.start(fanout.run)
            for _ in range(5):  # no checkpoint in between: the announcer has not run yet
                fanout.committed(None)
            while watch.wakeups == 0:
                await watch.wait(5)
            await anyio.wait_all_tasks_blocked()  # the announcer is waiting for the next commit
            assert fanout.announced == 1
            group.cancel_scope.cancel()


def projection(tmp_path: Path, **grants: str) -> RuntimeConfig:
    rec = recording(
        "rec", tmp_path / "rec.jsonl", settings=ConnectorSettings(approval_mode="allow_all"), global_grants=grants
    )
    return config(tmp_path, rec)


async def test_an_owner_following_the_topic_reloads_on_an_announced_commit_and_tells_its_host(tmp_path: Path) -> None:
    current = [projection(tmp_path)]
    wakeups = LocalWakeups()
    fanout = ChangeFanout(wakeups)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            owner = RuntimeOwner(Settings(home=tmp_path / "home"), lambda: current[0])
            gateway = Gateway(await owner.start(group), "direct")
            owner.add(gateway)
            group.start_soon(gateway.relay_catalog_changes)  # what tells the host
            await group.start(owner.follow, wakeups)
            await group.start(fanout.run)
            async with Client(gateway.server(), mode="legacy", message_handler=on_message) as host:
                assert "rec__echo" in {tool.name for tool in (await host.list_tools()).tools}
                current[0] = projection(tmp_path, echo="deny")
                await anyio.to_thread.run_sync(fanout.committed, None)  # as the commit listener does
                await changed.wait()
                assert owner.reloads == 1
                assert "rec__echo" not in {tool.name for tool in (await host.list_tools()).tools}
            owner.close()
            group.cancel_scope.cancel()
