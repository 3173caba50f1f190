"""GET /api/health: the status for anyone (a load balancer's probe), the details for token holders
(the store, coordination and wake-ups: ok, or degraded while Redis does not answer)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from patchbay.core.instance import instance_id
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import Api
from tests.support.coordination import OwnRedis
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio


async def test_an_authenticated_caller_gets_instance_database_and_coordination(api: Api, store_backend: str) -> None:
    answer = await api.client.get("/api/health")
    assert answer.status_code == 200
    assert answer.json() == {
        "status": "ok",
        "instance": instance_id(),
        "database": {"backend": "postgresql" if store_backend == "postgres" else "sqlite", "ok": True},
        "coordination": {"backend": "in-process", "ok": True},
        "wakeups": {"backend": "local", "state": "ok"},
    }


async def test_without_the_token_only_the_status_is_answered(api: Api) -> None:
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as anonymous:
        answer = await anonymous.get("/api/health")
        assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
        # the exception is this one read: everything else still needs the token
        assert (await anonymous.post("/api/health")).status_code == 401
        assert (await anonymous.get("/api/health/x")).status_code == 401
        assert (await anonymous.get("/api/projects")).status_code == 401


async def test_a_store_that_cannot_be_opened_is_degraded(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the store's directory should be")
    settings = Settings(home=tmp_path / "home", database_url=f"sqlite:///{tmp_path / 'blocked' / 'x' / 'p.db'}")
    app = create_app(settings, workspace=tmp_path, require_token=False)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        body = (await client.get("/api/health")).json()
    assert body["status"] == "degraded" and body["database"] == {"backend": "sqlite", "ok": False}
    app.state.context.close()


async def test_a_redis_that_does_not_answer_is_degraded_coordination(tmp_path: Path) -> None:
    nothing_listens = free_port()
    settings = Settings(home=tmp_path / "home", redis_url=f"redis://127.0.0.1:{nothing_listens}/0")
    app = create_app(settings, workspace=tmp_path, require_token=False)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        answer = await client.get("/api/health")
    assert answer.status_code == 200  # degraded is an answer, never an error
    body = answer.json()
    assert body["status"] == "degraded"
    assert body["coordination"] == {"backend": "redis", "ok": False} and body["database"]["ok"] is True
    assert body["wakeups"] == {"backend": "redis", "state": "degraded"}
    await app.state.context.connector_service().prober.aclose()
    await app.state.context.wakeups.aclose()
    app.state.context.close()


async def test_wake_ups_through_a_redis_that_answers_are_ok_and_one_that_stops_answering_degraded(
    tmp_path: Path,
) -> None:
    own = OwnRedis(free_port())
    own.start()
    try:
        settings = Settings(home=tmp_path / "home", builtins=False, redis_url=own.url)
        app = create_app(settings, workspace=tmp_path, require_token=False)
        transport = httpx2.ASGITransport(app=app)
        try:
            async with (
                app.router.lifespan_context(app),  # runs the wake-up subscription
                httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client,
            ):
                body = (await client.get("/api/health")).json()
                assert body["status"] == "ok"
                assert body["coordination"] == {"backend": "redis", "ok": True}
                assert body["wakeups"] == {"backend": "redis", "state": "ok"}
                own.stop()
                answer = await client.get("/api/health")
                assert answer.status_code == 200
                body = answer.json()
                assert body["status"] == "degraded"
                assert body["wakeups"] == {"backend": "redis", "state": "degraded"}
        finally:
            await app.state.context.connector_service().prober.aclose()
            app.state.context.close()
    finally:
        own.stop()
