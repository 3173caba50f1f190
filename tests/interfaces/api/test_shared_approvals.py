"""Approvals shared by instances: two apps (two instances) on one store and one Redis prefix; a
browser-approved call to the real ``mcp-server-time`` waiting on A is listed by B and answered
through B's REST API, and A's call ends as B's answer says. Redis down: the answer still reaches
A, by A's bounded re-read of the store."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastapi import FastAPI

from patchbay.adapters.wakeups.redis_pubsub import RedisWakeups
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from patchbay.runtime.calls.approvals import ApprovalBroker
from tests.support.api import error_of
from tests.support.coordination import MACHINE_REDIS, OwnRedis, unique_prefix
from tests.support.postgres import postgres_schema
from tests.support.servers import free_port
from tests.support.stored import logged_events

pytestmark = pytest.mark.anyio

TOOL = "mcp.time.get_current_time"
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


def settings_of(**fields: Any) -> Settings:
    """Settings of an instance without built-ins (the Redis URL given as text)."""
    return Settings(builtins=False, **fields)


def broker(app: FastAPI) -> ApprovalBroker:
    found: ApprovalBroker = app.state.context.approval_broker()
    return found


async def subscribed(app: FastAPI) -> None:
    """Wait until the app's Redis subscription is up (so a notify from elsewhere reaches it)."""
    wakeups = app.state.context.wakeups
    assert isinstance(wakeups, RedisWakeups)
    with anyio.fail_after(20):
        await wakeups.subscribed.wait()


async def browser_session(client: httpx2.AsyncClient, workspace: Path) -> str:
    created = await client.post("/api/mcp/connectors", json={"name": "time", "target": TIME, "enabled": True})
    assert created.status_code == 201, created.text
    grant = await client.put("/api/mcp/connectors/time/tools/get_current_time", json={"decision": "ask"})
    assert grant.status_code == 200, grant.text
    opened = await client.post("/api/sessions", json={"cwd": str(workspace), "approvals": "browser"})
    assert opened.status_code == 201, opened.text
    return str(opened.json()["session_id"])


async def call(client: httpx2.AsyncClient, sid: str, timezone: str, out: list[httpx2.Response]) -> None:
    body = {"tool": TOOL, "arguments": {"timezone": timezone, "token": "sk-live-0123456789abcdef0123"}}
    out.append(await client.post(f"/api/sessions/{sid}/call", json=body, timeout=60))


async def waiting_on(app: FastAPI, changes: Any) -> str:
    """The id of the next approval added on ``app`` (its own call)."""
    with anyio.fail_after(30):
        while True:
            change = await changes.receive()
            if change.type == "added":
                return str(change.id)


async def listed_by(client: httpx2.AsyncClient) -> list[dict[str, Any]]:
    listed = await client.get("/api/approvals")
    assert listed.status_code == 200, listed.text
    approvals: list[dict[str, Any]] = listed.json()["approvals"]
    return approvals


@contextlib.contextmanager
def shared_store(tmp_path: Path, backend: str) -> Iterator[dict[str, Any]]:
    """Settings fields for one store both instances use: a SQLite home, or a PostgreSQL schema."""
    if backend == "sqlite":
        yield {"home": tmp_path / "home"}
    else:
        with postgres_schema() as url:
            yield {"home": tmp_path / "home", "database_url": url}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_call_waiting_on_a_is_listed_and_allowed_through_b_and_proceeds_on_a(
    tmp_path: Path, backend: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # recheck 60 s: within the test only the Redis wake-up can bring B's answer to A
    with unique_prefix() as prefix, shared_store(tmp_path, backend) as store:
        settings = settings_of(**store, redis_url=MACHINE_REDIS, redis_prefix=prefix, approval_recheck=60)
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (b, client_b):
            await subscribed(a)
            await subscribed(b)
            sid = await browser_session(client_a, workspace)
            out: list[httpx2.Response] = []
            async with (
                broker(a).subscribe() as changes_a,
                broker(b).subscribe() as changes_b,
                anyio.create_task_group() as group,
            ):
                group.cancel_scope.deadline = anyio.current_time() + 45  # well before a 60 s re-read
                group.start_soon(call, client_a, sid, "UTC", out)
                approval_id = await waiting_on(a, changes_a)
                # B's page stream hears of A's approval (B's follower, woken through Redis)
                with anyio.fail_after(20):
                    seen = await changes_b.receive()
                assert (seen.type, seen.id) == ("added", approval_id)
                assert seen.approval is not None and seen.approval.arguments["token"] == "[REDACTED]"
                [pending] = await listed_by(client_b)
                assert (pending["id"], pending["session_id"], pending["tool"]) == (approval_id, sid, "get_current_time")
                assert pending["arguments"] == {"timezone": "UTC", "token": "[REDACTED]"}
                assert pending["expires"] - pending["created"] == 600
                stale = await client_b.post(
                    f"/api/approvals/{approval_id}", json={"answer": "allow_once", "digest": "0" * 64}
                )
                assert stale.status_code == 409 and error_of(stale)["code"] == "approval_stale"
                body = {"answer": "allow_session", "digest": pending["arguments_digest"], "policy": pending["policy"]}
                decided = await client_b.post(f"/api/approvals/{approval_id}", json=body)
                assert decided.status_code == 200 and decided.json() == {"id": approval_id, "answer": "allow_session"}
                with anyio.fail_after(20):
                    gone = await changes_b.receive()
                assert (gone.type, gone.id, gone.why) == ("removed", approval_id, "elsewhere")
            assert out, "A's call did not end within 45 s: B's answer did not wake it"
            assert out[0].status_code == 200, out[0].text
            # allowed for the session: A's next call of the tool asks nobody
            with anyio.fail_after(30):
                await call(client_a, sid, "Asia/Tokyo", out)
            assert out[1].status_code == 200, out[1].text
            assert await listed_by(client_a) == [] and await listed_by(client_b) == []
            resolved = [e for e in logged_events(settings, sid) if e["type"] == "permission.resolved"]
            assert [(e["payload"]["actor"], e["payload"]["sourcedFrom"]) for e in resolved] == [
                ("user", "user_allow_session"),
                ("user", "session_allow"),
            ]


async def test_a_denial_on_b_ends_the_call_on_a_and_a_replayed_answer_is_not_found(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with unique_prefix() as prefix:
        settings = settings_of(
            home=tmp_path / "home", redis_url=MACHINE_REDIS, redis_prefix=prefix, approval_recheck=60
        )
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (_, client_b):
            await subscribed(a)
            sid = await browser_session(client_a, workspace)
            out: list[httpx2.Response] = []
            async with broker(a).subscribe() as changes_a, anyio.create_task_group() as group:
                group.start_soon(call, client_a, sid, "UTC", out)
                approval_id = await waiting_on(a, changes_a)
                denied = await client_b.post(f"/api/approvals/{approval_id}", json={"answer": "deny"})
                assert denied.status_code == 200, denied.text
                for client in (client_b, client_a):  # the answer was used: replayed on either, not found
                    replay = await client.post(f"/api/approvals/{approval_id}", json={"answer": "allow_once"})
                    assert replay.status_code == 404 and error_of(replay)["code"] == "not_found"
            assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
            logged = logged_events(settings, sid)
            assert "mcp.call.started" not in [e["type"] for e in logged]
            resolved = next(e for e in logged if e["type"] == "permission.resolved")
            assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("user", "user_deny")


async def test_an_approval_nobody_answers_expires_on_both_and_a_late_answer_is_not_found(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with unique_prefix() as prefix:
        settings = settings_of(
            home=tmp_path / "home", redis_url=MACHINE_REDIS, redis_prefix=prefix, approval_expiry=1.0
        )
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (_, client_b):
            sid = await browser_session(client_a, workspace)
            out: list[httpx2.Response] = []
            async with broker(a).subscribe() as changes_a, anyio.create_task_group() as group:
                group.start_soon(call, client_a, sid, "UTC", out)
                approval_id = await waiting_on(a, changes_a)
                assert [p["id"] for p in await listed_by(client_b)] == [approval_id]
                with anyio.fail_after(20):
                    while (await changes_a.receive()).type != "removed":
                        pass
            assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
            late = await client_b.post(f"/api/approvals/{approval_id}", json={"answer": "allow_once"})
            assert late.status_code == 404 and error_of(late)["code"] == "not_found"
            assert await listed_by(client_b) == []
            resolved = next(e for e in logged_events(settings, sid) if e["type"] == "permission.resolved")
            assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("runtime", "approval_expired")


async def test_with_redis_down_an_answer_on_b_still_reaches_a_by_its_re_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    own = OwnRedis(free_port())
    own.start()
    try:
        settings = settings_of(home=tmp_path / "home", redis_url=own.url, redis_timeout=0.3, approval_recheck=0.5)
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (b, client_b):
            await subscribed(a)
            sid = await browser_session(client_a, workspace)
            out: list[httpx2.Response] = []
            async with broker(a).subscribe() as changes_a, anyio.create_task_group() as group:
                group.start_soon(call, client_a, sid, "UTC", out)
                approval_id = await waiting_on(a, changes_a)
                own.stop()
                decided = await client_b.post(f"/api/approvals/{approval_id}", json={"answer": "allow_once"})
                assert decided.status_code == 200, decided.text  # Redis is only the nudge
                assert b.state.context.wakeups.state() == "degraded"
            assert out[0].status_code == 200, out[0].text
    finally:
        own.stop()


async def test_a_grant_changed_on_b_while_a_waits_makes_an_allow_from_b_end_the_call_as_stale(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with unique_prefix() as prefix:
        settings = settings_of(
            home=tmp_path / "home", redis_url=MACHINE_REDIS, redis_prefix=prefix, approval_recheck=60
        )
        async with instance(settings, workspace) as (a, client_a), instance(settings, workspace) as (_, client_b):
            await subscribed(a)
            sid = await browser_session(client_a, workspace)
            out: list[httpx2.Response] = []
            async with broker(a).subscribe() as changes_a, anyio.create_task_group() as group:
                group.start_soon(call, client_a, sid, "UTC", out)
                approval_id = await waiting_on(a, changes_a)
                denied = await client_b.put(
                    "/api/mcp/connectors/time/tools/get_current_time", json={"decision": "deny"}
                )
                assert denied.status_code == 200, denied.text
                allowed = await client_b.post(f"/api/approvals/{approval_id}", json={"answer": "allow_once"})
                assert allowed.status_code == 200, allowed.text
            assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
            logged = logged_events(settings, sid)
            assert "mcp.call.started" not in [e["type"] for e in logged]
            resolved = next(e for e in logged if e["type"] == "permission.resolved")
            assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("runtime", "approval_stale")
