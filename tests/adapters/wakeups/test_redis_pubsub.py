"""Wake-ups through Redis pub/sub: a notify on one instance wakes the watches of the other; Redis
stopped degrades to in-process wake-ups and the resubscription wakes everyone to re-read; one
subscribing connection per process, none left after close."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import pytest
import redis

from patchbay.adapters.wakeups.redis_pubsub import RedisWakeups
from tests.support.coordination import MACHINE_REDIS, OwnRedis
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def running(*instances: RedisWakeups) -> AsyncIterator[None]:
    """Run the instances' subscriptions for the block (each up before it starts); close them after."""
    try:
        async with anyio.create_task_group() as group:
            for wakeups in instances:
                group.start_soon(wakeups.run)
            with anyio.fail_after(5):
                for wakeups in instances:
                    await wakeups.subscribed.wait()
            yield
            group.cancel_scope.cancel()
    finally:
        for wakeups in instances:
            await wakeups.aclose()


def channel() -> str:
    return f"patchbay-test:{uuid.uuid4().hex}:wake"


async def test_a_notify_on_one_instance_wakes_the_watch_of_its_topic_on_the_other() -> None:
    name = channel()
    a, b = RedisWakeups(MACHINE_REDIS, channel=name), RedisWakeups(MACHINE_REDIS, channel=name)
    async with running(a, b), a.watch("approval:apr_1") as mine, a.watch("approval:apr_2") as other:
        assert mine.wakeups == 0  # the subscription's catch-up wake came before the watch
        await b.notify("approval:apr_1")
        with anyio.fail_after(5):
            assert await mine.wait(10) is True
        assert other.wakeups == 0 and a.state() == b.state() == "ok"


async def test_without_redis_a_notify_still_wakes_this_process_and_reports_degraded() -> None:
    wakeups = RedisWakeups(f"redis://127.0.0.1:{free_port()}/0", timeout=0.3)
    try:
        async with wakeups.watch("t") as watch:
            with anyio.fail_after(3):
                await wakeups.notify("t")
                assert await watch.wait(1) is True
        assert wakeups.state() == "degraded"
    finally:
        await wakeups.aclose()


async def test_redis_stopped_degrades_and_the_resubscription_wakes_every_watch_to_re_read(
    own_redis: OwnRedis,
) -> None:
    a = RedisWakeups(own_redis.url, channel="w", timeout=0.3, retry_after=0.1)
    b = RedisWakeups(own_redis.url, channel="w", timeout=0.3, retry_after=0.1)
    async with running(a, b), a.watch("approval:apr_1") as watch:
        own_redis.stop()
        with anyio.fail_after(3):
            await b.notify("approval:apr_1")  # lost for A; B's own watches would still wake
        assert b.state() == "degraded"
        own_redis.start()
        with anyio.fail_after(10):
            # A subscribes again and wakes its watches: what was published meanwhile was lost
            assert await watch.wait(20) is True
            await b.subscribed.wait()
            await b.notify("approval:apr_1")
            assert await watch.wait(20) is True
        assert a.state() == b.state() == "ok"


async def test_one_subscribing_connection_per_process_and_none_left_after_repeated_runs() -> None:
    client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)
    name = channel()

    def connections(wakeups: RedisWakeups) -> tuple[int, int]:
        mine = [c for c in client.client_list() if c.get("name") == wakeups.client_name]
        return len(mine), sum(1 for c in mine if int(c.get("sub", 0)) > 0)

    try:
        probe = RedisWakeups(MACHINE_REDIS, channel=name)
        before = connections(probe)
        for _ in range(5):
            wakeups = RedisWakeups(MACHINE_REDIS, channel=name)
            async with running(wakeups), wakeups.watch("t") as watch:
                await wakeups.notify("t")
                await wakeups.notify("t")
                with anyio.fail_after(5):
                    assert await watch.wait(10) is True
                total, subscribers = connections(wakeups)
                assert (total - before[0], subscribers - before[1]) == (2, 1)  # one subscriber, one publisher
            assert connections(wakeups) == before
    finally:
        client.close()


async def test_a_url_redis_cannot_use_degrades_the_notify_and_the_subscription_without_raising() -> None:
    wakeups = RedisWakeups("http://127.0.0.1:6379/0", retry_after=60)
    async with wakeups.watch("t") as watch:
        await wakeups.notify("t")
        assert await watch.wait(1) is True and wakeups.state() == "degraded"
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(wakeups.run)  # fails to subscribe, then waits retry_after: no crash
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
    assert not wakeups.subscribed.is_set()
    await wakeups.aclose()
