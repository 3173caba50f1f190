"""Probes coordinated through Redis leases: a real probe of mcp-server-time through the connector
service, waiting for the lease and the slots another instance holds, and running on when Redis is
unreachable."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
import redis

from patchbay.adapters.leases import CoordinatedLeases
from patchbay.adapters.leases.redis_store import RedisLeases
from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.instance import instance_id
from patchbay.core.models import ProbeResult
from patchbay.core.settings import Settings
from tests.support.coordination import MACHINE_REDIS, machine_keys, unique_prefix
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def prefix() -> Iterator[str]:
    with unique_prefix() as value:
        yield value


def make_service(tmp_path: Path, redis_url: str, prefix: str) -> ConnectorService:
    settings = Settings(home=tmp_path / "home", redis_url=redis_url, redis_prefix=prefix)  # type: ignore[arg-type]
    settings.home.mkdir()
    service = ConnectorService(open_store(settings), settings)
    service.add("time", service.stdio_target("mcp-server-time", [], cwd=None, workspace=tmp_path))
    return service


@pytest.fixture
async def service(tmp_path: Path, prefix: str) -> AsyncIterator[ConnectorService]:
    service = make_service(tmp_path, MACHINE_REDIS, prefix)
    try:
        yield service
    finally:
        await service.aclose()


@pytest.fixture
async def other_instance(prefix: str) -> AsyncIterator[RedisLeases]:
    """Another instance's lease store on the same Redis and prefix."""
    store = RedisLeases(MACHINE_REDIS, prefix=f"{prefix}lease:")
    try:
        yield store
    finally:
        await store.aclose()


def lease_owner(prefix: str, key: str) -> str | None:
    client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)
    try:
        value = client.get(f"{prefix}lease:{key}")
        return value if isinstance(value, str) else None
    finally:
        client.close()


async def test_a_probe_with_redis_leases_works_and_leaves_no_lease_behind(
    service: ConnectorService, tmp_path: Path, prefix: str
) -> None:
    result = await service.probe("time", workspace=tmp_path)
    assert (result.state, result.tool_count) == ("ready", 2)
    assert isinstance(service.prober.leases, CoordinatedLeases) and service.prober.leases.state() == "ok"
    assert machine_keys(prefix) == []


async def test_a_probe_waits_for_the_lease_of_a_killed_instance_then_takes_it_over(
    service: ConnectorService, other_instance: RedisLeases, tmp_path: Path, prefix: str
) -> None:
    key = f"probe:{service.get('time').connector_id}"
    assert await other_instance.acquire(key, "killed-instance/1", ttl=1.0) is not None  # never renewed
    results: list[ProbeResult] = []

    async def probe() -> None:
        results.append(await service.probe("time", workspace=tmp_path))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(probe)
            while (owner := lease_owner(prefix, key)) == "killed-instance/1":
                assert not results  # no probe while the other instance holds the lease
                await anyio.sleep(0.05)
            assert owner is None or owner.startswith(f"{instance_id()}/")  # taken over (or done already)
    (result,) = results
    assert result.state == "ready"
    assert machine_keys(prefix) == []


async def test_a_probe_waits_for_a_free_place_under_the_limit_shared_with_other_instances(
    service: ConnectorService, other_instance: RedisLeases, tmp_path: Path, prefix: str
) -> None:
    limit = service.settings.probe_concurrency
    for n in range(limit):  # another instance runs `limit` probes; they end (expire) in a second
        assert await other_instance.acquire_slot("probe:slots", f"busy-instance/{n}", ttl=1.0, limit=limit)
    results: list[ProbeResult] = []

    async def probe() -> None:
        results.append(await service.probe("time", workspace=tmp_path))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(probe)
            client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)
            try:
                while any(m.startswith("busy-instance/") for m in client.zrange(f"{prefix}lease:probe:slots", 0, -1)):
                    assert not results
                    await anyio.sleep(0.05)
            finally:
                client.close()
    assert [r.state for r in results] == ["ready"]


async def test_a_probe_runs_on_in_process_leases_when_redis_is_unreachable(tmp_path: Path, prefix: str) -> None:
    service = make_service(tmp_path, f"redis://127.0.0.1:{free_port()}/0", prefix)
    try:
        with anyio.fail_after(20):
            result = await service.probe("time", workspace=tmp_path)
        assert result.state == "ready"
        assert service.prober.leases.state() == "degraded"
    finally:
        await service.aclose()
