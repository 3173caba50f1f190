"""The live status registry shared through Redis: two registries on the machine's Redis under one
prefix behave as two instances; a Redis of the test's own that stops degrades it to this
instance's sources and it catches up when Redis is back."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
import redis

from patchbay.adapters.redis_status import RedisStatusRegistry, decode_entry, encode_entry
from patchbay.core.instance import instance_id
from patchbay.core.live_status import LIVE_TTL, ConnectorLive
from tests.support.coordination import MACHINE_REDIS, OwnRedis, machine_keys, unique_prefix
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def instances() -> AsyncIterator[tuple[RedisStatusRegistry, RedisStatusRegistry, str]]:
    """Two registries on one Redis and one prefix: instance A and instance B."""
    with unique_prefix() as prefix:
        a, b = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix), RedisStatusRegistry(MACHINE_REDIS, prefix=prefix)
        try:
            yield a, b, prefix
        finally:
            await a.aclose()
            await b.aclose()


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def raw() -> redis.Redis:
    return redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)


async def test_a_source_published_on_one_instance_is_read_on_the_other_and_aggregated(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    a, b, _ = instances
    a.publish("rt-a", [ConnectorLive("con_x", "connected", tool_count=3, in_flight=1)])
    b.publish("rt-b", [ConnectorLive("con_x", "cached", tool_count=2), ConnectorLive("con_y", "failed", failed_at=1.0)])
    assert b.read("con_x").sessions == 1  # type: ignore[union-attr]  # nothing synced yet
    assert await a.sync() == "ok" and await b.sync() == "ok"
    await a.sync()  # A reads what B wrote after A's first sync
    for registry in (a, b):
        status = registry.read("con_x")
        assert status is not None
        assert (status.state, status.sessions, status.tool_count, status.in_flight) == ("connected", 2, 3, 1)
        assert set(registry.read_all()) == {"con_x", "con_y"}
        assert registry.read("con_y").state == "failed"  # type: ignore[union-attr]
        assert registry.state() == "ok"


async def test_each_source_is_one_hash_with_the_ttl_as_its_redis_expiry_holding_only_the_status_fields(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    a, _, prefix = instances
    a.publish("rt-a", [ConnectorLive("con_x", "needs-auth", tool_count=1, resource_count=4, failed_at=7.5)])
    await a.sync()
    assert machine_keys(prefix) == [f"{prefix}source:rt-a", f"{prefix}sources"]
    client = raw()
    try:
        assert 0 < client.pttl(f"{prefix}source:rt-a") <= LIVE_TTL * 1000
        assert 0 < client.pttl(f"{prefix}sources") <= LIVE_TTL * 1000
        stored = client.hgetall(f"{prefix}source:rt-a")
        assert set(stored) == {"con_x"}
        value = json.loads(stored["con_x"])
        assert set(value) == {f.name for f in dataclasses.fields(ConnectorLive)}
        assert (value["state"], value["resource_count"], value["failed_at"]) == ("needs-auth", 4, 7.5)
        assert client.smembers(f"{prefix}sources") == {"rt-a"}
    finally:
        client.close()


async def test_a_heartbeat_rewrites_the_source_and_a_withdrawal_deletes_it_everywhere(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    _, b, prefix = instances
    clock = Clock()
    a = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix, clock=clock)
    try:
        a.publish("rt-a", [ConnectorLive("con_x", "connected")])
        await a.sync()
        await b.sync()
        first = b.read("con_x")
        assert first is not None and first.updated_at == clock.now
        clock.now += 30
        a.touch("rt-a")
        await a.sync()
        await b.sync()
        assert b.read("con_x").updated_at == clock.now  # type: ignore[union-attr]
        a.withdraw("rt-a")
        assert a.read("con_x") is None  # at once on its own instance
        await a.sync()
        assert machine_keys(prefix) == []
        await b.sync()
        assert b.read("con_x") is None and b.read_all() == {}
    finally:
        await a.aclose()


async def test_a_source_whose_hash_expired_in_redis_is_gone_and_leaves_the_index(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    a, b, prefix = instances
    a.publish("rt-a", [ConnectorLive("con_x", "connected")])
    await a.sync()
    client = raw()
    try:
        client.delete(f"{prefix}source:rt-a")  # what Redis does once the TTL passed without a write
        await b.sync()
        assert b.read("con_x") is None
        assert client.smembers(f"{prefix}sources") == set()
    finally:
        client.close()


async def test_an_entry_not_updated_within_the_ttl_reads_as_unknown_on_the_other_instance(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    _, _, prefix = instances
    clock_a, clock_b = Clock(), Clock()
    a = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix, clock=clock_a)
    b = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix, clock=clock_b)
    try:
        a.publish("rt-a", [ConnectorLive("con_x", "connected")])
        await a.sync()
        clock_b.now += LIVE_TTL + 1
        await b.sync()
        status = b.read("con_x")
        assert status is not None and status.state == "unknown" and not status.fresh
    finally:
        await a.aclose()
        await b.aclose()


async def test_values_in_redis_that_are_not_status_entries_are_ignored(
    instances: tuple[RedisStatusRegistry, RedisStatusRegistry, str],
) -> None:
    _, b, prefix = instances
    good = ConnectorLive("con_ok", "cached", tool_count=2, updated_at=5.0)
    assert decode_entry(encode_entry(good)) == good
    bad = {
        "con_a": "not json",
        "con_b": json.dumps({**dataclasses.asdict(good), "connector_id": "con_b", "state": "pwned"}),
        "con_c": json.dumps({**dataclasses.asdict(good), "connector_id": "con_c", "url": "https://x.example/"}),
        "con_d": json.dumps({**dataclasses.asdict(good), "connector_id": "con_d", "tool_count": "2"}),
        "con_e": json.dumps({**dataclasses.asdict(good), "connector_id": "con_e", "in_flight": -1}),
        "con_f": encode_entry(good),  # an entry filed under another connector's id
        "con_ok": encode_entry(good),
    }
    client = raw()
    try:
        client.hset(f"{prefix}source:rt-z", mapping=bad)
        client.sadd(f"{prefix}sources", "rt-z")
    finally:
        client.close()
    assert await b.sync() == "ok"
    assert set(b.read_all()) == {"con_ok"}


async def test_redis_stopped_degrades_to_this_instances_sources_without_hanging_and_catches_up(
    own_redis: OwnRedis,
) -> None:
    a = RedisStatusRegistry(own_redis.url, prefix="t:", timeout=0.3)
    b = RedisStatusRegistry(own_redis.url, prefix="t:", timeout=0.3)
    try:
        a.publish("rt-a", [ConnectorLive("con_x", "connected")])
        b.publish("rt-b", [ConnectorLive("con_y", "cached")])
        for registry in (a, b, a):
            assert await registry.sync() == "ok"
        assert set(a.read_all()) == set(b.read_all()) == {"con_x", "con_y"}

        own_redis.stop()
        with anyio.fail_after(3):  # no sync waits on a Redis that is gone
            assert await a.sync() == "degraded" and a.state() == "degraded"
            assert await a.check() == "degraded"
        assert set(a.read_all()) == {"con_x"}  # its own sources only, as in process
        a.publish("rt-a2", [ConnectorLive("con_z", "connecting")])  # still answered at once
        assert a.read("con_z").state == "connecting"  # type: ignore[union-attr]

        own_redis.start()  # an empty Redis: what A had written is lost
        with anyio.fail_after(5):
            assert await a.sync() == "ok" and a.state() == "ok"
            assert await b.sync() == "ok"
        assert set(b.read_all()) == {"con_x", "con_y", "con_z"}  # A wrote all of its sources again
    finally:
        await a.aclose()
        await b.aclose()


async def test_an_unreachable_redis_from_the_start_is_degraded_and_reads_stay_local() -> None:
    registry = RedisStatusRegistry(f"redis://127.0.0.1:{free_port()}/0", timeout=0.3)
    try:
        registry.publish("rt", [ConnectorLive("con_x", "connected")])
        with anyio.fail_after(3):
            assert await registry.sync() == "degraded"
        assert registry.read("con_x").state == "connected"  # type: ignore[union-attr]
    finally:
        with anyio.fail_after(3):
            await registry.aclose()


async def test_repeated_syncs_and_closes_leave_no_connection_of_the_registry_open() -> None:
    name = f"patchbay-status-{instance_id()}"
    client = raw()

    def connections() -> int:
        return sum(1 for c in client.client_list() if c.get("name") == name)

    try:
        with unique_prefix() as prefix:
            before = connections()
            for n in range(5):
                registry = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix)
                registry.publish(f"rt-{n}", [ConnectorLive("con_x", "connected")])
                await registry.sync()
                await registry.sync()
                assert connections() == before + 1  # one connection, reused by every sync
                registry.withdraw(f"rt-{n}")
                await registry.aclose()
                assert connections() == before
            assert machine_keys(prefix) == []  # the last write of aclose deleted the withdrawn
    finally:
        client.close()


async def test_a_url_redis_cannot_use_degrades_instead_of_raising() -> None:
    registry = RedisStatusRegistry("http://127.0.0.1:6379/0")
    registry.publish("rt", [ConnectorLive("con_x", "connected")])
    assert await registry.sync() == "degraded" and await registry.check() == "degraded"
    assert registry.read("con_x").state == "connected"  # type: ignore[union-attr]
    await registry.aclose()


def _status_connections(client: redis.Redis, expected: int) -> int:
    """This process's status-registry connections Redis lists once they number ``expected`` (or
    after 10 s): Redis drops a closed socket on its own schedule, no event crosses to wait on."""
    name = f"patchbay-status-{instance_id()}"
    deadline = time.monotonic() + 10
    while (count := sum(1 for c in client.client_list() if c.get("name") == name)) != expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)  # bounded by the deadline
    return count


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
def test_a_registry_used_from_one_event_loop_after_another_keeps_at_most_one_client_open(anyio_backend: str) -> None:
    client = raw()
    try:
        with unique_prefix() as prefix:
            registry = RedisStatusRegistry(MACHINE_REDIS, prefix=prefix)
            before = _status_connections(client, 0)
            for _ in range(3):  # one event loop after another, each closed after its sync
                assert anyio.run(registry.sync, backend=anyio_backend) == "ok"
                assert _status_connections(client, before + 1) == before + 1  # the old loop's went
            anyio.run(registry.aclose, backend=anyio_backend)
            assert _status_connections(client, before) == before
    finally:
        client.close()
