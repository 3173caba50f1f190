"""Holding a lease around a block: waiting, background renewal, release on every path; and the
waiting acquisition alone."""

from __future__ import annotations

import anyio
import pytest

from patchbay.adapters.leases import LocalLeases, held, wait_for

pytestmark = pytest.mark.anyio


async def test_an_error_in_the_block_releases_the_lease_and_propagates_as_it_is() -> None:
    leases = LocalLeases()
    with pytest.raises(ValueError, match="boom"):  # not wrapped in an exception group
        async with held(leases, "probe:a", "me", ttl=30):
            raise ValueError("boom")
    assert await leases.acquire("probe:a", "next", ttl=30) is not None


async def test_a_waiter_cancelled_while_waiting_takes_nothing() -> None:
    leases = LocalLeases()
    theirs = await leases.acquire("probe:a", "other", ttl=30)
    assert theirs is not None
    with anyio.move_on_after(0.2) as scope:
        async with held(leases, "probe:a", "me", ttl=30):
            pytest.fail("entered while another owner held the lease")
    assert scope.cancelled_caught
    assert await leases.release(theirs) is True  # still the other owner's, untouched


async def test_a_block_longer_than_the_ttl_keeps_its_lease_through_renewals() -> None:
    leases = LocalLeases()
    with anyio.fail_after(5):
        async with held(leases, "probe:a", "me", ttl=0.2) as lease:
            until = anyio.current_time() + 0.7  # more than three ttls
            while anyio.current_time() < until:
                assert await leases.acquire("probe:a", "rival", ttl=30) is None
                await anyio.sleep(0.05)
    assert await leases.renew(lease) is False  # released on the way out


async def test_wait_for_takes_the_lease_once_its_holder_releases_it_and_does_not_renew_it() -> None:
    leases = LocalLeases()
    theirs = await leases.acquire("oauth-refresh:c", "other", ttl=30)
    assert theirs is not None
    taken: list[str] = []

    async def waiter() -> None:
        lease = await wait_for(leases, "oauth-refresh:c", "me", ttl=30)
        taken.append(lease.owner)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert taken == []  # still held by the other owner
            assert await leases.release(theirs) is True
    assert taken == ["me"]
    assert await leases.acquire("oauth-refresh:c", "third", ttl=30) is None  # mine now, until released
