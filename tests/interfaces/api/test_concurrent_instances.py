"""Two API instances (two apps, two data homes, one engine each) on one PostgreSQL store: 20
concurrent PATCHes of one connector with the same base revision, split across them, give exactly
one 200 and 19 ``revision_conflict``; concurrent project grant PUTs of one key leave one row."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from sqlalchemy import func, select

from patchbay.adapters.store import create_engine_for
from patchbay.adapters.store.tables import mcp_project_tool_grants
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import auth_headers, error_of
from tests.support.postgres import postgres_schema

pytestmark = pytest.mark.anyio

REQUESTS = 20
TIME = {"transport": "stdio", "command": "mcp-server-time"}


@asynccontextmanager
async def instance(home: Path, workspace: Path, url: str) -> AsyncIterator[httpx2.AsyncClient]:
    """One app on data home ``home`` and the store at ``url``, its lifespan running."""
    app = create_app(Settings(home=home, database_url=url), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)
    try:
        async with app.router.lifespan_context(app):
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8765", headers=auth_headers(home)
            ) as client:
                yield client
    finally:
        app.state.context.close()


@pytest.fixture
def store() -> Iterator[str]:
    """The URL of a new PostgreSQL schema both instances share."""
    with postgres_schema() as url:
        yield url


@pytest.fixture
async def clients(tmp_path: Path, store: str) -> AsyncIterator[list[httpx2.AsyncClient]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(instance(tmp_path / h, workspace, store)) for h in ("a", "b")]


async def _all_at_once(
    send: list[Callable[[], Awaitable[httpx2.Response]]], limit: float = 60
) -> list[httpx2.Response]:
    responses: list[httpx2.Response | None] = [None] * len(send)

    async def run(i: int) -> None:
        responses[i] = await send[i]()

    with anyio.fail_after(limit):
        async with anyio.create_task_group() as tg:
            for i in range(len(send)):
                tg.start_soon(run, i)
    return [r for r in responses if r is not None]


async def test_twenty_patches_across_two_instances_with_one_revision_have_one_winner(
    clients: list[httpx2.AsyncClient],
) -> None:
    a, b = clients
    created = await a.post("/api/mcp/connectors", json={"name": "time", "target": TIME})
    assert created.status_code == 201, created.text
    assert (await b.get("/api/mcp/connectors/time")).json()["revision"] == created.json()["revision"] == 1

    def patch(i: int) -> Callable[[], Awaitable[httpx2.Response]]:
        client = clients[i % 2]
        return lambda: client.patch("/api/mcp/connectors/time", json={"revision": 1, "description": f"writer {i}"})

    responses = await _all_at_once([patch(i) for i in range(REQUESTS)])

    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * (REQUESTS - 1), [r.text for r in responses]
    assert {error_of(r)["code"] for r in responses if r.status_code == 409} == {"revision_conflict"}
    [won] = [i for i, r in enumerate(responses) if r.status_code == 200]
    for client in clients:
        shown = (await client.get("/api/mcp/connectors/time")).json()
        assert (shown["revision"], shown["description"]) == (2, f"writer {won}")


async def test_concurrent_project_grant_puts_of_one_key_are_idempotent(
    clients: list[httpx2.AsyncClient], store: str, tmp_path: Path
) -> None:
    a, _ = clients
    created = await a.post("/api/mcp/connectors", json={"name": "time", "target": TIME})
    assert created.status_code == 201, created.text
    workspace = str((tmp_path / "ws").resolve())

    def put(i: int) -> Callable[[], Awaitable[httpx2.Response]]:
        client = clients[i % 2]
        return lambda: client.put(
            "/api/mcp/connectors/time/tools/get_current_time", params={"cwd": workspace}, json={"decision": "allow"}
        )

    responses = await _all_at_once([put(i) for i in range(REQUESTS)])

    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    bodies = [r.json() for r in responses]
    assert {(g["scope"], g["decision"]) for g in bodies} == {("project", "allow")}
    assert len({g["project_id"] for g in bodies}) == 1
    engine = create_engine_for(store)
    try:
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(mcp_project_tool_grants)).scalar_one() == 1
    finally:
        engine.dispose()
