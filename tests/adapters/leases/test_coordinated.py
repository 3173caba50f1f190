"""Redis leases with the in-process fallback: a Redis that stops degrades coordination without
hanging anyone, and coordination recovers when it is back."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from patchbay.adapters.leases import CoordinatedLeases, LocalLeases, open_leases
from patchbay.adapters.leases.redis_store import RedisLeases
from patchbay.core.settings import Settings
from tests.support.coordination import OwnRedis
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


async def test_redis_stopped_mid_test_degrades_without_hanging_and_recovers_when_it_returns(
    own_redis: OwnRedis,
) -> None:
    leases = CoordinatedLeases(RedisLeases(own_redis.url, prefix="t:", timeout=0.3), retry_after=0.2)
    try:
        assert await leases.check() == "ok"
        shared = await leases.acquire("probe:a", "owner-1", ttl=30)
        assert shared is not None and shared.backend == "redis" and leases.state() == "ok"

        own_redis.stop()
        with anyio.fail_after(3):  # no call waits on a Redis that is gone
            local = await leases.acquire("probe:b", "owner-1", ttl=30)
            assert local is not None and local.backend == "local"
            assert leases.state() == "degraded"
            assert await leases.acquire("probe:b", "owner-2", ttl=30) is None  # still serialised here
            assert await leases.renew(shared) is False  # cannot be renewed: counts as lost
            assert await leases.release(shared) is False
            assert await leases.check() == "degraded"
            slot = await leases.acquire_slot("probe:slots", "owner-1", ttl=30, limit=1)
            assert slot is not None and slot.backend == "local"

        own_redis.start()
        with anyio.fail_after(5):
            while await leases.check() != "ok":
                await anyio.sleep(0.05)
            again = await leases.acquire("probe:c", "owner-1", ttl=30)
            assert again is not None and again.backend == "redis"
            # a lease taken in process during the outage is released in process
            assert await leases.release(local) is True
            assert await leases.release(slot) is True
            assert await leases.release(again) is True
    finally:
        await leases.aclose()


async def test_an_unreachable_redis_from_the_start_is_degraded_and_answers_quickly() -> None:
    leases = CoordinatedLeases(RedisLeases(f"redis://127.0.0.1:{free_port()}/0", timeout=0.3), retry_after=60)
    try:
        with anyio.fail_after(3):
            first = await leases.acquire("probe:a", "owner-1", ttl=30)
            assert first is not None and first.backend == "local" and leases.state() == "degraded"
            # within retry_after nothing asks Redis again: the next acquisitions are immediate
            with anyio.fail_after(0.2):
                for n in range(20):
                    assert await leases.acquire(f"probe:{n}", "owner-1", ttl=30) is not None
    finally:
        await leases.aclose()


def test_the_settings_choose_the_store_and_never_show_the_redis_password() -> None:
    assert isinstance(open_leases(Settings()), LocalLeases)
    settings = Settings(redis_url="redis://:s3cret-redis-pass@127.0.0.1:6379/0")  # type: ignore[arg-type]
    store = open_leases(settings)
    assert isinstance(store, CoordinatedLeases) and store.state() == "ok"
    assert settings.redis_url_display == "redis://:[REDACTED]@127.0.0.1:6379/0"
    assert store.shared.display_url == settings.redis_url_display
    assert "s3cret-redis-pass" not in repr(settings) and "s3cret-redis-pass" not in str(settings.model_dump())
    assert Settings(redis_url="").redis_url is None  # type: ignore[arg-type]


def test_the_redis_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHBAY_REDIS_URL", "redis://127.0.0.1:6379/3")
    assert isinstance(open_leases(Settings()), CoordinatedLeases)


async def test_a_redis_that_refuses_the_password_is_degraded_and_the_password_is_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = OwnRedis(free_port(), "--requirepass", "the-right-password-5678")
    server.start()
    password = "wrong-redis-password-1234"
    store = RedisLeases(f"redis://:{password}@127.0.0.1:{server.port}/0", prefix="t:", timeout=0.5)
    leases = CoordinatedLeases(store, retry_after=60)
    try:
        with caplog.at_level("WARNING", logger="patchbay.adapters.leases.coordinated"), anyio.fail_after(3):
            lease = await leases.acquire("probe:a", "owner-1", ttl=30)
        assert lease is not None and lease.backend == "local" and leases.state() == "degraded"
        assert caplog.records and "coordination degraded" in caplog.text
        assert password not in caplog.text and f"redis://:[REDACTED]@127.0.0.1:{server.port}/0" in caplog.text
    finally:
        await leases.aclose()
        server.stop()
