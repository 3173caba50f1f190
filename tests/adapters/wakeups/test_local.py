"""In-process wake-ups: a notify wakes the watches of its topic only, and a wake-up that came
while nobody waited is kept for the next wait."""

from __future__ import annotations

import anyio
import pytest

from patchbay.adapters.wakeups import LocalWakeups, open_wakeups
from patchbay.adapters.wakeups.redis_pubsub import RedisWakeups
from patchbay.core.settings import Settings

pytestmark = pytest.mark.anyio


async def test_a_notify_wakes_the_watches_of_its_topic_only_and_is_kept_until_waited_for() -> None:
    wakeups = LocalWakeups()
    async with (
        wakeups.watch("approval:1") as one,
        wakeups.watch("approval:1") as same,
        wakeups.watch("approval:2") as other,
    ):
        await wakeups.notify("approval:1")
        with anyio.fail_after(1):
            assert await one.wait(5) is True and await same.wait(5) is True
        assert other.wakeups == 0
        # woken once: the next wait waits again (here until its bound: nothing notifies)
        assert await one.wait(0.01) is False
    assert wakeups.state() == "ok"


async def test_a_waiter_woken_while_it_waits_returns_at_once() -> None:
    wakeups = LocalWakeups()
    async with wakeups.watch("t") as watch:
        results: list[bool] = []

        async def waiter() -> None:
            results.append(await watch.wait(30))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(waiter)
                await anyio.wait_all_tasks_blocked()
                await wakeups.notify("t")
        assert results == [True]


def test_the_settings_choose_the_implementation() -> None:
    assert isinstance(open_wakeups(Settings()), LocalWakeups)
    shared = open_wakeups(Settings(redis_url="redis://:pw-123@127.0.0.1:6379/0", redis_prefix="p:"))  # type: ignore[arg-type]
    assert isinstance(shared, RedisWakeups) and shared.channel == "p:wake"
    assert "pw-123" not in shared.display_url
