"""Live status shared through Redis: two apps (two instances) on one SQLite store and one Redis
prefix; a session on A that connects a real peer (``mcp-server-time``) shows as connected in B's
connector view, and B's ``/api/health`` turns degraded when its Redis is gone."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI

from patchbay.adapters.redis_status import RedisStatusRegistry
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.coordination import MACHINE_REDIS, OwnRedis, machine_keys, unique_prefix
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}


@contextlib.asynccontextmanager
async def instance(settings: Settings, workspace: Path) -> AsyncIterator[tuple[FastAPI, httpx2.AsyncClient]]:
    app = create_app(settings, workspace=workspace, require_token=False)
    transport = httpx2.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client,
        ):
            yield app, client
    finally:
        app.state.context.close()


def registry(app: FastAPI) -> RedisStatusRegistry:
    status = app.state.context.status
    assert isinstance(status, RedisStatusRegistry)
    return status


async def test_a_connection_on_one_instance_is_live_on_the_other(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with unique_prefix() as prefix:
        settings = Settings(home=tmp_path / "home", redis_url=MACHINE_REDIS, redis_prefix=prefix, builtins=False)  # type: ignore[arg-type]
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (b, client_b):
            created = await client_a.post("/api/mcp/connectors", json={"name": "time", "target": TIME, "enabled": True})
            assert created.status_code == 201, created.text
            connector_id = created.json()["connector_id"]
            opened = await client_a.post("/api/sessions", json={"cwd": str(workspace)})
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]
            called = await client_a.post(
                f"/api/sessions/{sid}/call",
                json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}, "approve": "once"},
                timeout=60,
            )
            assert called.status_code == 200, called.text

            assert await registry(a).sync() == "ok"  # what the lifespan's sync does every second
            assert await registry(b).sync() == "ok"
            seen = (await client_b.get(f"/api/mcp/connectors/{connector_id}")).json()
            assert seen["runtime"]["state"] == "connected" and seen["runtime"]["sessions"] == 1
            assert seen["runtime"]["tool_count"] >= 1
            assert any(k.startswith(f"{prefix}live:source:") for k in machine_keys(prefix))
            health = (await client_b.get("/api/health")).json()
            assert health["status"] == "ok" and health["coordination"] == {"backend": "redis", "ok": True}

            assert (await client_a.delete(f"/api/sessions/{sid}")).status_code == 200
            await registry(a).sync()
            await registry(b).sync()
            gone = (await client_b.get(f"/api/mcp/connectors/{connector_id}")).json()
            assert gone["runtime"] is None
        assert [k for k in machine_keys(prefix) if k.startswith(f"{prefix}live:")] == []


async def test_a_status_registry_that_loses_redis_makes_health_degraded(tmp_path: Path) -> None:
    own = OwnRedis(free_port())
    own.start()
    try:
        settings = Settings(home=tmp_path / "home", redis_url=own.url, redis_timeout=0.3, builtins=False)  # type: ignore[arg-type]
        async with instance(settings, tmp_path) as (app, client):
            assert (await client.get("/api/health")).json()["status"] == "ok"
            own.stop()
            assert await registry(app).sync() == "degraded"
            body = (await client.get("/api/health")).json()
            assert body["status"] == "degraded" and body["coordination"] == {"backend": "redis", "ok": False}
            own.start()
            assert await registry(app).sync() == "ok"
            assert (await client.get("/api/health")).json()["status"] == "ok"
            await app.state.context.connector_service().prober.aclose()
    finally:
        own.stop()
