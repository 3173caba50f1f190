"""Leases in the machine's Redis, shared by two stores as two instances would share them; one
store used from one event loop after another keeps at most one client open."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import anyio.from_thread
import pytest
import redis

from patchbay.adapters.leases import held
from patchbay.adapters.leases.redis_store import RedisLeases
from patchbay.core.instance import instance_id
from tests.support.coordination import MACHINE_REDIS, machine_keys, unique_prefix

pytestmark = pytest.mark.anyio


@pytest.fixture
async def instances() -> AsyncIterator[tuple[RedisLeases, RedisLeases, str]]:
    """Two stores on one Redis and one prefix: instance A and instance B."""
    with unique_prefix() as prefix:
        a, b = RedisLeases(MACHINE_REDIS, prefix=prefix), RedisLeases(MACHINE_REDIS, prefix=prefix)
        try:
            yield a, b, prefix
        finally:
            await a.aclose()
            await b.aclose()


def raw() -> redis.Redis:
    return redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)


async def test_a_lease_is_one_key_holding_its_owner_with_a_ttl_and_release_deletes_it(
    instances: tuple[RedisLeases, RedisLeases, str],
) -> None:
    a, b, prefix = instances
    lease = await a.acquire("probe:conn-1", "instance-a/1", ttl=30)
    assert lease is not None and lease.backend == "redis"
    client = raw()
    try:
        assert client.get(f"{prefix}probe:conn-1") == "instance-a/1"
        assert 0 < client.pttl(f"{prefix}probe:conn-1") <= 30_000
        assert await b.acquire("probe:conn-1", "instance-b/1", ttl=30) is None
        assert await b.release(lease.__class__("probe:conn-1", "instance-b/1", 30, backend="redis")) is False
        assert client.get(f"{prefix}probe:conn-1") == "instance-a/1"
    finally:
        client.close()
    assert await a.release(lease) is True
    assert machine_keys(prefix) == []


async def test_the_global_limit_counts_the_holders_of_both_instances(
    instances: tuple[RedisLeases, RedisLeases, str],
) -> None:
    a, b, prefix = instances
    mine = [await a.acquire_slot("probe:slots", f"a/{n}", ttl=30, limit=4) for n in range(3)]
    theirs = await b.acquire_slot("probe:slots", "b/0", ttl=30, limit=4)
    assert all(mine) and theirs is not None
    assert await a.acquire_slot("probe:slots", "a/3", ttl=30, limit=4) is None
    assert await b.acquire_slot("probe:slots", "b/1", ttl=30, limit=4) is None
    client = raw()
    try:
        holders = client.zrange(f"{prefix}probe:slots", 0, -1)
        assert sorted(holders) == ["a/0", "a/1", "a/2", "b/0"]
    finally:
        client.close()
    assert await b.release(theirs) is True
    assert await a.acquire_slot("probe:slots", "a/3", ttl=30, limit=4) is not None


async def test_held_renews_in_the_background_and_a_killed_holder_s_lease_is_taken_over(
    instances: tuple[RedisLeases, RedisLeases, str],
) -> None:
    a, b, prefix = instances
    # A holds for longer than three ttls: its background renewals keep B out all along.
    inside = anyio.Event()
    b_got_it = anyio.Event()
    done = anyio.Event()

    async def b_waits() -> None:
        await inside.wait()
        async with held(b, "probe:conn-1", "instance-b/1", ttl=0.3):
            b_got_it.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(b_waits)
            async with held(a, "probe:conn-1", "instance-a/1", ttl=0.3):
                inside.set()
                until = anyio.current_time() + 1.0
                while anyio.current_time() < until:  # watch the lease for a second
                    assert raw_get(prefix) == "instance-a/1"
                    assert not b_got_it.is_set()
                    await anyio.sleep(0.05)
            await b_got_it.wait()  # A released on the way out: B takes it at once
            done.set()
    assert done.is_set() and machine_keys(prefix) == []

    # A "killed" holder: it took the lease and never renews nor releases it.
    assert await a.acquire("probe:conn-2", "killed-instance/1", ttl=0.3) is not None
    with anyio.fail_after(5):
        async with held(b, "probe:conn-2", "instance-b/2", ttl=30) as lease:
            assert lease.owner == "instance-b/2"
            assert raw_get(prefix, "probe:conn-2") == "instance-b/2"


def raw_get(prefix: str, key: str = "probe:conn-1") -> str | None:
    client = raw()
    try:
        value = client.get(f"{prefix}{key}")
        return value if isinstance(value, str) else None
    finally:
        client.close()


async def test_racing_acquisitions_from_two_instances_have_exactly_one_winner_and_the_limit_holds(
    instances: tuple[RedisLeases, RedisLeases, str],
) -> None:
    a, b, _ = instances
    won: list[str] = []
    placed: list[str] = []

    async def take(store: RedisLeases, owner: str) -> None:
        if await store.acquire("probe:contended", owner, ttl=30) is not None:
            won.append(owner)
        if await store.acquire_slot("probe:slots", owner, ttl=30, limit=4) is not None:
            placed.append(owner)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for n in range(20):
                group.start_soon(take, a if n % 2 else b, f"owner-{n}")
    assert len(won) == 1 and len(placed) == 4


async def test_the_store_s_connection_is_named_for_its_instance_and_closing_ends_it() -> None:
    name = f"patchbay-lease-{instance_id()}"
    client = raw()

    def connections() -> int:
        return sum(1 for c in client.client_list() if c.get("name") == name)

    try:
        with unique_prefix() as prefix:
            before = connections()
            for n in range(3):
                store = RedisLeases(MACHINE_REDIS, prefix=prefix)
                lease = await store.acquire(f"probe:conn-{n}", f"owner/{n}", ttl=30)
                assert lease is not None and await store.release(lease) is True
                await store.ping()
                assert connections() == before + 1  # one connection, reused by every call
                await store.aclose()
                assert connections() == before
            assert machine_keys(prefix) == []
    finally:
        client.close()


def lease_connections(client: redis.Redis) -> int:
    """This process's lease-store connections that Redis lists (``CLIENT LIST`` by name)."""
    name = f"patchbay-lease-{instance_id()}"
    return sum(1 for c in client.client_list() if c.get("name") == name)


def settle(client: redis.Redis, expected: int) -> int:
    """Redis's count of this process's lease connections once it equals ``expected``, or the
    last count after 10 s: Redis drops a closed socket on its own schedule, and no event
    crosses the process boundary to wait on."""
    deadline = time.monotonic() + 10
    while (count := lease_connections(client)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)  # bounded by the deadline
    return count


def test_a_store_used_from_one_event_loop_after_another_keeps_at_most_one_client_open() -> None:
    client = raw()
    try:
        with unique_prefix() as prefix:
            store = RedisLeases(MACHINE_REDIS, prefix=prefix)
            before = lease_connections(client)
            for n in range(3):  # as the CLI and tests do: one event loop after another, each closed after
                lease = anyio.run(store.acquire, f"probe:conn-{n}", f"owner/{n}", 30.0, backend="asyncio")
                assert lease is not None
                # the previous loop's client was shut down: only this loop's is open
                assert settle(client, before + 1) == before + 1
                assert anyio.run(store.release, lease, backend="asyncio") is True
            anyio.run(store.aclose, backend="asyncio")
            assert settle(client, before) == before
            assert machine_keys(prefix) == []
    finally:
        client.close()


def test_a_client_whose_event_loop_still_runs_in_another_thread_is_closed_on_that_loop() -> None:
    client = raw()
    try:
        with unique_prefix() as prefix:
            store = RedisLeases(MACHINE_REDIS, prefix=prefix)
            before = lease_connections(client)
            with anyio.from_thread.start_blocking_portal("asyncio") as portal:
                portal.call(store.ping)  # a client on the portal's loop, which keeps running
                assert settle(client, before + 1) == before + 1

                async def take() -> bool:
                    lease = await store.acquire("probe:conn-1", "owner/1", ttl=30)
                    return lease is not None and await store.release(lease)

                assert anyio.run(take, backend="asyncio") is True  # a new loop: a new client
                portal.call(anyio.wait_all_tasks_blocked)  # the old client's aclose ran on its loop
                # the portal's client is gone; the one of the run that just ended is the one open
                assert settle(client, before + 1) == before + 1
            anyio.run(store.aclose, backend="asyncio")  # from a third loop: that client is shut down
            assert settle(client, before) == before
    finally:
        client.close()
