"""The lease contract, kept alike by the in-process store and the Redis store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from patchbay.adapters.leases import CoordinatedLeases, Lease, Leases, LocalLeases
from patchbay.adapters.leases.redis_store import RedisLeases
from tests.support.coordination import MACHINE_REDIS, unique_prefix

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["local", "redis", "coordinated"])
async def leases(request: pytest.FixtureRequest) -> AsyncIterator[Leases]:
    """Each store: in process, in Redis, and Redis behind the in-process fallback."""
    if request.param == "local":
        yield LocalLeases()
        return
    with unique_prefix() as prefix:
        redis_store = RedisLeases(MACHINE_REDIS, prefix=prefix)
        store: Leases = redis_store if request.param == "redis" else CoordinatedLeases(redis_store)
        try:
            yield store
        finally:
            await store.aclose()


async def until_acquired(leases: Leases, key: str, owner: str, ttl: float) -> Lease:
    """Poll the store until ``owner`` gets ``key`` (the previous holder's lease must expire)."""
    with anyio.fail_after(5):
        while (lease := await leases.acquire(key, owner, ttl)) is None:
            await anyio.sleep(0.02)
    return lease


async def test_a_held_key_is_refused_to_anyone_else_until_its_owner_releases_it(leases: Leases) -> None:
    mine = await leases.acquire("probe:a", "instance-a", ttl=30)
    assert mine is not None and (mine.key, mine.owner, mine.ttl, mine.limit) == ("probe:a", "instance-a", 30, None)
    assert await leases.acquire("probe:a", "instance-b", ttl=30) is None
    assert await leases.acquire("probe:a", "instance-a", ttl=30) is None  # not re-entrant either
    assert await leases.acquire("probe:other", "instance-b", ttl=30) is not None

    assert mine is not None and await leases.release(mine) is True
    assert await leases.release(mine) is False  # released once
    assert await leases.acquire("probe:a", "instance-b", ttl=30) is not None


async def test_only_the_owner_can_release_or_renew(leases: Leases) -> None:
    mine = await leases.acquire("probe:a", "instance-a", ttl=30)
    assert mine is not None
    forged = Lease("probe:a", "instance-b", 30, backend=mine.backend)
    assert await leases.release(forged) is False
    assert await leases.renew(forged) is False
    assert await leases.acquire("probe:a", "instance-b", ttl=30) is None  # still held by a
    assert await leases.renew(mine) is True
    assert await leases.release(mine) is True


async def test_an_expired_lease_is_taken_over_and_its_old_owner_can_neither_renew_nor_release_it(
    leases: Leases,
) -> None:
    dead = await leases.acquire("probe:a", "killed", ttl=0.2)
    assert dead is not None
    taker = await until_acquired(leases, "probe:a", "survivor", ttl=30)
    assert taker.owner == "survivor"
    assert await leases.renew(dead) is False
    assert await leases.release(dead) is False
    assert await leases.acquire("probe:a", "killed", ttl=30) is None  # the survivor's now
    assert await leases.release(taker) is True


async def test_renewing_keeps_a_lease_past_its_first_ttl(leases: Leases) -> None:
    lease = await leases.acquire("probe:a", "holder", ttl=0.3)
    assert lease is not None
    with anyio.fail_after(5):
        deadline = anyio.current_time() + 0.9  # three ttls, renewed every tenth of a second
        while anyio.current_time() < deadline:
            assert await leases.renew(lease) is True
            assert await leases.acquire("probe:a", "rival", ttl=30) is None
            await anyio.sleep(0.1)
    assert await leases.release(lease) is True


async def test_an_expired_lease_is_not_revived_by_a_late_renewal(leases: Leases) -> None:
    lease = await leases.acquire("probe:a", "stalled", ttl=0.1)
    assert lease is not None
    with anyio.fail_after(5):  # wait until it is gone: another owner could take it now
        while (probe := await leases.acquire("probe:a", "checker", ttl=0.05)) is None:
            await anyio.sleep(0.02)
    await leases.release(probe)
    assert await leases.renew(lease) is False
    assert await leases.acquire("probe:a", "next", ttl=30) is not None


async def test_a_slot_limit_admits_at_most_limit_live_holders(leases: Leases) -> None:
    held = [await leases.acquire_slot("probe:slots", f"probe-{n}", ttl=30, limit=4) for n in range(4)]
    assert all(lease is not None and lease.limit == 4 for lease in held)
    assert await leases.acquire_slot("probe:slots", "probe-5", ttl=30, limit=4) is None
    again = await leases.acquire_slot("probe:slots", "probe-0", ttl=30, limit=4)  # a holder keeps its place
    assert again is not None

    first = held[0]
    assert first is not None
    assert await leases.release(Lease("probe:slots", "probe-5", 30, limit=4, backend=first.backend)) is False
    assert await leases.release(first) is True
    assert await leases.release(first) is False
    fifth = await leases.acquire_slot("probe:slots", "probe-5", ttl=30, limit=4)
    assert fifth is not None
    assert await leases.renew(fifth) is True
    assert await leases.renew(first) is False  # released: not taken back by a renewal


async def test_an_expired_slot_is_freed_for_a_waiter(leases: Leases) -> None:
    dead = await leases.acquire_slot("probe:slots", "killed", ttl=0.2, limit=1)
    assert dead is not None
    assert await leases.acquire_slot("probe:slots", "waiter", ttl=30, limit=1) is None
    with anyio.fail_after(5):
        while (mine := await leases.acquire_slot("probe:slots", "waiter", ttl=30, limit=1)) is None:
            await anyio.sleep(0.02)
    assert await leases.renew(dead) is False
    assert await leases.release(mine) is True
