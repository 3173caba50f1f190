"""patchbay.interfaces.api.routes.approvals: calls of browser-approved sessions wait for a person's
answer (``/api/approvals``), against the real mcp-server-time with its tool on ``ask``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from patchbay.runtime.calls.approvals import ApprovalBroker
from tests.support.api import Api, auth_headers, error_of
from tests.support.stored import logged_events

pytestmark = pytest.mark.anyio

TOOL = "mcp.time.get_current_time"


async def _app(tmp_path: Path, **settings: Any) -> AsyncIterator[Api]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    app = create_app(Settings(home=home, **settings), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:8765", headers=auth_headers(home)
        ) as client:
            yield Api(client=client, app=app, home=home, workspace=workspace)
    app.state.context.close()


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async for value in _app(tmp_path):
        yield value


@pytest.fixture
async def hasty(tmp_path: Path) -> AsyncIterator[Api]:
    """An app whose approvals expire after a fifth of a second."""
    async for value in _app(tmp_path, approval_expiry=0.2):
        yield value


def broker(api: Api) -> ApprovalBroker:
    found: ApprovalBroker = api.app.state.context.approval_broker()
    return found


async def browser_session(api: Api, **connector: Any) -> str:
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True, **connector)
    answer = await api.client.put("/api/mcp/connectors/time/tools/get_current_time", json={"decision": "ask"})
    assert answer.status_code == 200, answer.text
    opened = await api.client.post("/api/sessions", json={"cwd": str(api.workspace), "approvals": "browser"})
    assert opened.status_code == 201, opened.text
    return str(opened.json()["session_id"])


async def call(api: Api, sid: str, arguments: dict[str, Any], out: list[httpx2.Response]) -> None:
    body = {"tool": TOOL, "arguments": arguments, "approve": "once"}  # "approve" is ignored here
    out.append(await api.client.post(f"/api/sessions/{sid}/call", json=body, timeout=30))


async def next_pending(api: Api, changes: Any) -> dict[str, Any]:
    """Wait for the broker's next added approval; return it as GET /api/approvals lists it."""
    with anyio.fail_after(20):
        while (await changes.receive()).type != "added":
            pass
    listed = await api.client.get("/api/approvals")
    assert listed.status_code == 200, listed.text
    approvals: list[dict[str, Any]] = listed.json()["approvals"]
    assert len(approvals) == 1, approvals
    return approvals[0]


def events(api: Api, sid: str) -> list[dict[str, Any]]:
    return logged_events(Settings(home=api.home), sid)


async def test_a_waiting_call_is_listed_and_allowed_once_then_a_call_with_other_arguments_waits_again(
    api: Api,
) -> None:
    sid = await browser_session(api, runtime_options={"request_timeout": 1})
    out: list[httpx2.Response] = []
    async with broker(api).subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(call, api, sid, {"timezone": "UTC"}, out)
        pending = await next_pending(api, changes)
        assert (pending["session_id"], pending["workspace"], pending["connector"], pending["tool"]) == (
            sid,
            str(api.workspace),
            "time",
            "get_current_time",
        )
        assert pending["arguments"] == {"timezone": "UTC"} and pending["risk"] in {"read", "network"}
        assert pending["expires"] - pending["created"] == 600
        # waiting does not count against the call's 1 s request timeout
        await anyio.sleep(1.5)
        stale = await api.client.post(
            f"/api/approvals/{pending['id']}", json={"answer": "allow_once", "digest": "0" * 64}
        )
        assert stale.status_code == 409 and error_of(stale)["code"] == "approval_stale"
        body = {"answer": "allow_once", "digest": pending["arguments_digest"], "policy": pending["policy"]}
        decided = await api.client.post(f"/api/approvals/{pending['id']}", json=body)
        assert decided.status_code == 200 and decided.json() == {"id": pending["id"], "answer": "allow_once"}
        again = await api.client.post(f"/api/approvals/{pending['id']}", json=body)  # used once
        assert again.status_code == 404 and error_of(again)["code"] == "not_found"
    assert out[0].status_code == 200, out[0].text
    assert json.loads(out[0].json()["content"][0]["text"])["timezone"] == "UTC"  # the server's result

    async with broker(api).subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(call, api, sid, {"timezone": "Europe/Paris"}, out)
        second = await next_pending(api, changes)  # the allow-once covered only the first call
        assert second["id"] != pending["id"] and second["arguments_digest"] != pending["arguments_digest"]
        await api.client.post(f"/api/approvals/{second['id']}", json={"answer": "allow_session"})
    assert out[1].status_code == 200, out[1].text
    with anyio.fail_after(20):  # allowed for the session: no approval any more
        await call(api, sid, {"timezone": "Asia/Tokyo"}, out)
    assert out[2].status_code == 200 and (await api.client.get("/api/approvals")).json() == {"approvals": []}
    resolved = [e for e in events(api, sid) if e["type"] == "permission.resolved"]
    assert [(e["payload"]["actor"], e["payload"]["sourcedFrom"]) for e in resolved] == [
        ("user", "user_allow_once"),
        ("user", "user_allow_session"),
        ("user", "session_allow"),
    ]


async def test_a_denied_call_never_reaches_the_server(api: Api) -> None:
    sid = await browser_session(api)
    out: list[httpx2.Response] = []
    async with broker(api).subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(call, api, sid, {"timezone": "UTC"}, out)
        pending = await next_pending(api, changes)
        decided = await api.client.post(f"/api/approvals/{pending['id']}", json={"answer": "deny"})
        assert decided.status_code == 200, decided.text
    assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
    logged = events(api, sid)
    types = [e["type"] for e in logged]
    assert "mcp.call.started" not in types and "mcp.call.completed" not in types
    resolved = next(e for e in logged if e["type"] == "permission.resolved")
    assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("user", "user_deny")


async def test_a_policy_change_while_the_call_waits_ends_its_approval_and_the_call_is_denied(api: Api) -> None:
    sid = await browser_session(api)
    out: list[httpx2.Response] = []
    async with broker(api).subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(call, api, sid, {"timezone": "UTC"}, out)
        pending = await next_pending(api, changes)
        # the person changes the tool's grant (here to Deny) while the call waits for them
        changed = await api.client.put("/api/mcp/connectors/time/tools/get_current_time", json={"decision": "deny"})
        assert changed.status_code == 200, changed.text
        with anyio.fail_after(20):
            while (await changes.receive()).type != "removed":
                pass
        late = await api.client.post(f"/api/approvals/{pending['id']}", json={"answer": "allow_once"})
        assert late.status_code == 404  # the old approval cannot let the call through any more
    assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
    logged = events(api, sid)
    assert "mcp.call.started" not in [e["type"] for e in logged]
    resolved = next(e for e in logged if e["type"] == "permission.resolved")
    assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("runtime", "approval_stale")


async def test_an_unanswered_approval_expires_and_the_call_is_denied(hasty: Api) -> None:
    sid = await browser_session(hasty)
    out: list[httpx2.Response] = []
    with anyio.fail_after(20):
        await call(hasty, sid, {"timezone": "UTC"}, out)
    assert out[0].status_code == 403 and error_of(out[0])["code"] == "permission_denied"
    assert (await hasty.client.get("/api/approvals")).json() == {"approvals": []}
    logged = events(hasty, sid)
    assert "mcp.call.started" not in [e["type"] for e in logged]
    resolved = next(e for e in logged if e["type"] == "permission.resolved")
    assert (resolved["payload"]["actor"], resolved["payload"]["sourcedFrom"]) == ("runtime", "approval_expired")


async def test_an_answer_must_be_one_of_the_three_and_an_unknown_id_is_not_found(api: Api) -> None:
    bad = await api.client.post("/api/approvals/apr_nope", json={"answer": "yes"})
    assert bad.status_code == 422 and error_of(bad)["code"] == "validation_error"
    missing = await api.client.post("/api/approvals/apr_nope", json={"answer": "deny"})
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
