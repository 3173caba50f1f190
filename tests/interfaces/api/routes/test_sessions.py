"""patchbay.interfaces.api.routes.sessions, the sessions routes.

Sections, in this order:

- Hosted sessions and their reload: Sessions over REST: ``patchbay serve`` hosts workspace runtimes
  (the governed call path), and every mutation reloads them (seed 003 §10.5): idle sessions at once,
  busy ones when their calls end (``pending``), a failed rebuild answered as success with
  ``runtime_reload_failed`` and the session named. Against real stdio servers:
  tests/fixtures/lifecycle_server.py and mcp-server-time.
- A session's event log: ``GET /api/sessions/{id}/events``: a session's event log over REST, paged
  by seq, for open and closed sessions, redacted on the way out. Against
  tests/fixtures/lifecycle_server.py."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
import pytest

from patchbay.core.errors import PatchbayError
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from patchbay.runtime.events.log import session_log_path
from tests.support.api import NO_RELOAD, Api, auth_headers, error_of
from tests.support.paths import FIXTURES
from tests.support.processes import assert_group_gone
from tests.support.serve import serve_process
from tests.support.stored import logged_events
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


# --- Hosted sessions and their reload ---

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")


async def add_life(api: Api, *args: str, name: str = "life", **fields: Any) -> None:
    """Register the lifecycle fixture server, enabled, every tool allowed (approval_mode allow_all)."""
    target = {"transport": "stdio", "command": sys.executable, "args": [LIFECYCLE, *args]}
    await api.create(name, target, enabled=True, **fields)
    answer = await api.client.put(
        f"/api/mcp/connectors/{name}/settings", json={"revision": 1, "approval_mode": "allow_all"}
    )
    assert answer.status_code == 200, answer.text


async def open_session(api: Api, cwd: Path | None = None) -> str:
    answer = await api.client.post("/api/sessions", json={"cwd": str(cwd or api.workspace)})
    assert answer.status_code == 201, answer.text
    return answer.json()["session_id"]


async def tool_names(api: Api, session: str) -> set[str]:
    answer = await api.client.get(f"/api/sessions/{session}/tools")
    assert answer.status_code == 200, answer.text
    return {tool["name"] for tool in answer.json()["tools"]}


async def call(
    api: Api, session: str, tool: str, arguments: dict[str, Any] | None = None, **extra: Any
) -> httpx2.Response:
    body = {"tool": tool, "arguments": arguments or {}, **extra}
    return await api.client.post(f"/api/sessions/{session}/call", json=body, timeout=60)


async def pid_of(api: Api, session: str) -> int:
    answer = await call(api, session, "mcp.life.pid")
    assert answer.status_code == 200, answer.text
    return int(answer.json()["content"][0]["text"])


async def session_info(api: Api, session: str) -> dict[str, Any]:
    answer = await api.client.get(f"/api/sessions/{session}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# -- the governed call path over REST ---------------------------------------------------------


async def test_a_session_offers_only_the_projected_tools_and_calls_them_on_the_governed_path(api: Api) -> None:
    await add_life(api)
    await api.create("off", {"transport": "stdio", "command": "mcp-server-time"})  # registered, disabled
    # an ambient host file in the workspace adds nothing (the runtime reads only its snapshot)
    (api.workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"ambient": {"command": "mcp-server-time"}}}))

    opened = await api.client.post("/api/sessions", json={"cwd": str(api.workspace)})
    assert opened.status_code == 201, opened.text
    session = opened.json()
    assert session["session_id"].startswith("ses_") and session["project_id"].startswith("prj_")
    assert (session["workspace"], session["state"], session["builds"], session["in_flight"], session["error"]) == (
        str(api.workspace),
        "ready",
        1,
        0,
        None,
    )
    sid = session["session_id"]
    assert (await api.client.get("/api/sessions")).json() == {"sessions": [session]}

    tools = (await api.client.get(f"/api/sessions/{sid}/tools")).json()
    assert tools["session_id"] == sid
    by_name = {t["name"]: t for t in tools["tools"]}
    assert set(by_name) == {f"mcp.life.{t}" for t in ("echo", "pid", "sleep", "progress", "crash", "rpc_error")}
    echo = by_name["mcp.life.echo"]
    assert (echo["wire_name"], echo["connector"], echo["tool"], echo["decision"], echo["risk"]) == (
        "mcp__life__echo",
        "life",
        "echo",
        "allow",
        "network",
    )
    assert echo["input_schema"]["required"] == ["text"]

    answer = await call(api, sid, "mcp.life.echo", {"text": "hi"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result == {
        "session_id": sid,
        "tool_call_id": result["tool_call_id"],
        "name": "mcp.life.echo",
        "model_text": "[mcp:life:echo]\nhi",  # untrusted MCP output is labelled (seed 000 §10)
        "content": [{"type": "text", "text": "hi"}],
        "structured_content": None,
        "size_bytes": result["size_bytes"],
        "truncated": False,
        "artifact_id": None,
    }
    assert result["tool_call_id"].startswith("tc_")
    assert (await call(api, sid, "mcp__life__echo", {"text": "wire"})).json()["model_text"] == "[mcp:life:echo]\nwire"
    events = logged_events(Settings(home=api.home), sid)
    assert [e["type"] for e in events if e["payload"].get("toolCallId") == result["tool_call_id"]][
        -1
    ] == "tool.completed"

    closed = await api.client.delete(f"/api/sessions/{sid}")
    assert closed.status_code == 200 and closed.json() == {"session_id": sid, "closed": True}
    assert (await api.client.get("/api/sessions")).json() == {"sessions": []}


async def test_a_secret_in_a_tool_result_is_masked_in_the_call_answer(api: Api) -> None:
    await add_life(api)
    sid = await open_session(api)
    planted = "use api_key=abcd1234efgh5678 or ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    answer = await call(api, sid, "mcp.life.echo", {"text": planted})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert "abcd1234efgh5678" not in answer.text and "ghp_abcdef" not in answer.text
    assert result["content"] == [{"type": "text", "text": "use api_key=[REDACTED] or [REDACTED]"}]
    assert result["model_text"] == "[mcp:life:echo]\nuse api_key=[REDACTED] or [REDACTED]"
    assert answer.headers["content-type"] == "application/json"


async def test_tool_failures_answer_with_their_reason_and_status(api: Api) -> None:
    await add_life(api, runtime_options={"request_timeout": 1})
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
    await api.create("ghost", {"transport": "stdio", "command": "pb-no-such-command-for-api-tests"}, enabled=True)
    await api.client.put("/api/mcp/connectors/life/tools/echo", json={"decision": "ask"})
    sid = await open_session(api)

    def failure(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
        assert response.status_code == status, response.text
        error = error_of(response)
        assert error["code"] == code and error["details"]["reason"] == code, error
        return error

    # ask: headless, so refused unless the request approves this one call (patchbay call --yes)
    error = failure(await call(api, sid, "mcp.life.echo", {"text": "x"}), 403, "approval_unavailable")
    assert '"approve": "once"' in error["message"]
    approved = await call(api, sid, "mcp.life.echo", {"text": "x"}, approve="once")
    assert approved.status_code == 200 and approved.json()["content"] == [{"type": "text", "text": "x"}]
    failure(await call(api, sid, "mcp.life.echo", {"text": "x"}), 403, "approval_unavailable")  # once means once

    failure(await call(api, sid, "mcp.life.nope"), 422, "unknown_tool")  # the session exists: not a 404
    failure(await call(api, sid, "mcp.off.get_current_time"), 422, "unknown_tool")  # not projected
    error = failure(await call(api, sid, "mcp.life.rpc_error", {"code": -32000}), 502, "tool_error")
    assert "the server's generic failure" in error["message"]
    bad_zone = await call(api, sid, "mcp.time.get_current_time", {"timezone": "Not/AZone"}, approve="once")
    error = failure(bad_zone, 502, "tool_error")
    assert error["details"]["result"]["content"][0]["text"].startswith("Error executing tool get_current_time")
    assert error["details"]["result"]["model_text"].startswith("[mcp:time:get_current_time]\n")
    error = failure(await call(api, sid, "mcp.ghost.anything"), 502, "mcp_server_unavailable")
    assert error["details"]["code"] == "command_not_found"
    failure(await call(api, sid, "mcp.life.sleep", {"seconds": 30, "tag": "slow"}), 504, "timeout")

    invalid = await api.client.post(f"/api/sessions/{sid}/call", json={"arguments": {}})
    assert invalid.status_code == 422 and error_of(invalid)["details"]["field"] == "body.tool"
    not_object = await api.client.post(f"/api/sessions/{sid}/call", json={"tool": "mcp.life.pid", "arguments": [1]})
    assert not_object.status_code == 422 and error_of(not_object)["code"] == "validation_error"
    refused = await call(api, sid, "mcp.life.pid", approve="always")
    assert refused.status_code == 422 and error_of(refused)["details"]["field"] == "body.approve"

    for method, url in [
        ("GET", "/api/sessions/ses_nobody"),
        ("GET", "/api/sessions/ses_nobody/tools"),
        ("POST", "/api/sessions/ses_nobody/call"),
        ("DELETE", "/api/sessions/ses_nobody"),
    ]:
        body = {"tool": "mcp.life.pid"} if method == "POST" else None
        missing = await api.client.request(method, url, json=body)
        assert missing.status_code == 404 and error_of(missing)["code"] == "not_found", (method, url)
    nowhere = await api.client.post("/api/sessions", json={"cwd": str(api.workspace / "missing")})
    assert nowhere.status_code == 422 and error_of(nowhere)["details"]["field"] == "project"


async def test_closing_a_session_cancels_its_call(api: Api, tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    await add_life(api, "--record", str(log))
    sid = await open_session(api)
    outcome: dict[str, httpx2.Response] = {}

    async def doomed() -> None:
        outcome["doomed"] = await call(api, sid, "mcp.life.sleep", {"seconds": 60, "tag": "doomed"})

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(doomed)
            await wait_until(lambda: {"started": "doomed"} in records(log))
            assert (await api.client.delete(f"/api/sessions/{sid}")).status_code == 200
    assert outcome["doomed"].status_code == 409 and error_of(outcome["doomed"])["code"] == "cancelled"


async def test_session_routes_refuse_other_hosts_and_origins(api: Api) -> None:
    page = await api.client.post(
        "/api/sessions", json={"cwd": str(api.workspace)}, headers={"origin": "https://attacker.example"}
    )
    assert page.status_code == 403 and error_of(page)["code"] == "origin_refused"
    rebound = await api.client.get("/api/sessions", headers={"host": "attacker.example:8765"})
    assert rebound.status_code == 403 and error_of(rebound)["code"] == "origin_refused"
    assert (await api.client.get("/api/sessions")).json() == {"sessions": []}
    assert api.service.repository.projects.list_all() == []  # the refused page made no project


# -- reload after a mutation (seed 003 §10.5) --------------------------------------------------


async def test_a_global_deny_rebuilds_an_idle_session_at_once(api: Api) -> None:
    await add_life(api)
    sid = await open_session(api)
    assert "mcp.life.echo" in await tool_names(api, sid)
    first = await pid_of(api, sid)
    project_id = (await session_info(api, sid))["project_id"]

    denied = await api.client.put("/api/mcp/connectors/life/tools/echo", json={"decision": "deny"})
    assert denied.status_code == 200, denied.text
    assert denied.json()["runtime_reload"] == {
        "code": None,
        "sessions": [
            {
                "session_id": sid,
                "project_id": project_id,
                "workspace": str(api.workspace),
                "status": "reloaded",
                "error": None,
            }
        ],
    }
    info = await session_info(api, sid)
    assert (info["state"], info["builds"]) == ("ready", 2)
    await wait_until(lambda: gone(first))  # the old runtime's server stopped with it
    names = await tool_names(api, sid)
    assert "mcp.life.echo" not in names and "mcp.life.pid" in names
    refused = await call(api, sid, "mcp.life.echo", {"text": "hi"})
    assert refused.status_code == 422 and error_of(refused)["code"] == "unknown_tool"
    assert await pid_of(api, sid) != first

    # every mutating route reports its reload: settings, update, the old toggle, delete
    excluded = await api.client.put("/api/mcp/connectors/life/settings", json={"revision": 2, "exclude_tools": ["pid"]})
    assert [s["status"] for s in excluded.json()["runtime_reload"]["sessions"]] == ["reloaded"]
    assert "mcp.life.pid" not in await tool_names(api, sid)
    toggled = await api.client.put("/api/settings/mcp/life", json={"enabled": False})
    assert [s["status"] for s in toggled.json()["runtime_reload"]["sessions"]] == ["reloaded"]
    assert await tool_names(api, sid) == set()
    removed = await api.client.delete("/api/mcp/connectors/life")
    assert removed.json()["runtime_reload"]["sessions"][0]["session_id"] == sid


async def test_a_project_grant_reloads_only_that_projects_sessions(api: Api, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    await add_life(api)
    mine, theirs = await open_session(api), await open_session(api, other)
    answer = await api.client.put(
        "/api/mcp/connectors/life/tools/echo", params={"cwd": str(api.workspace)}, json={"decision": "deny"}
    )
    assert [(s["session_id"], s["status"]) for s in answer.json()["runtime_reload"]["sessions"]] == [(mine, "reloaded")]
    assert ((await session_info(api, mine))["builds"], (await session_info(api, theirs))["builds"]) == (2, 1)
    assert "mcp.life.echo" not in await tool_names(api, mine)
    assert "mcp.life.echo" in await tool_names(api, theirs)


async def test_a_change_during_a_call_leaves_the_call_alone_and_the_next_call_sees_it(api: Api, tmp_path: Path) -> None:
    log = tmp_path / "record.jsonl"
    await add_life(api, "--record", str(log))
    sid = await open_session(api)
    first = await pid_of(api, sid)
    outcome: dict[str, httpx2.Response] = {}

    async def slow() -> None:
        outcome["slow"] = await call(api, sid, "mcp.life.sleep", {"seconds": 4, "tag": "busy"})

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            await wait_until(lambda: {"started": "busy"} in records(log))
            denied = await api.client.put("/api/mcp/connectors/life/tools/echo", json={"decision": "deny"})
            assert denied.status_code == 200, denied.text
            assert [(s["session_id"], s["status"]) for s in denied.json()["runtime_reload"]["sessions"]] == [
                (sid, "pending")
            ]
            assert denied.json()["runtime_reload"]["code"] is None
            info = await session_info(api, sid)
            assert (info["state"], info["in_flight"], info["builds"]) == ("restart_pending", 1, 1)
            assert not gone(first)  # not interrupted: the old runtime still serves its call
    # The call completed on the old runtime ...
    assert outcome["slow"].status_code == 200 and outcome["slow"].json()["model_text"] == "[mcp:life:sleep]\nslept"
    assert {"cancelled": "busy"} not in records(log)
    # ... then the session was rebuilt, and the next call sees the committed change.
    refused = await call(api, sid, "mcp.life.echo", {"text": "again"})
    assert refused.status_code == 422 and error_of(refused)["code"] == "unknown_tool"
    assert (await session_info(api, sid))["builds"] == 2
    await wait_until(lambda: gone(first))


async def test_a_failed_rebuild_is_saved_success_with_runtime_reload_failed_naming_the_session(
    api: Api, tmp_path: Path
) -> None:
    await add_life(api)
    sid = await open_session(api)
    first = await pid_of(api, sid)
    # The workspace's .patchbay becomes a symlink: the projection refuses to write through it, so
    # the session's snapshot would be stale (as tests/runtime/sessions/test_host.py provokes it).
    elsewhere = tmp_path / "elsewhere"
    shutil.move(api.workspace / ".patchbay", elsewhere)
    os.symlink(elsewhere, api.workspace / ".patchbay")

    answer = await api.client.put("/api/mcp/connectors/life/settings", json={"revision": 2, "exclude_tools": ["echo"]})
    assert answer.status_code == 200, answer.text  # saved: seed 003 §10.5 step 6, partial success
    reload = answer.json()["runtime_reload"]
    assert reload["code"] == "runtime_reload_failed"
    assert [(s["session_id"], s["status"], s["workspace"]) for s in reload["sessions"]] == [
        (sid, "failed", str(api.workspace))
    ]
    assert reload["sessions"][0]["error"]["code"] == "invalid_config"
    assert answer.json()["settings"]["exclude_tools"] == ["echo"]
    shown = (await api.client.get("/api/mcp/connectors/life")).json()
    assert shown["settings"]["exclude_tools"] == ["echo"]  # nothing rolled back (seed 003 §15)

    info = await session_info(api, sid)
    assert info["state"] == "failed" and info["error"]["code"] == "invalid_config"
    await wait_until(lambda: gone(first))  # fail closed: the old runtime no longer serves
    stale = await call(api, sid, "mcp.life.echo", {"text": "stale?"})
    assert stale.status_code == 503
    assert (error_of(stale)["code"], error_of(stale)["details"]["code"]) == (
        "mcp_server_unavailable",
        "runtime_reload_failed",
    )

    # Repaired: the next committed change re-projects and the session serves again.
    os.unlink(api.workspace / ".patchbay")
    again = await api.client.put("/api/mcp/connectors/life/tools/pid", json={"decision": "allow"})
    assert again.json()["runtime_reload"]["code"] is None
    assert [s["status"] for s in again.json()["runtime_reload"]["sessions"]] == ["reloaded"]
    names = await tool_names(api, sid)
    assert "mcp.life.pid" in names and "mcp.life.echo" not in names


async def test_a_mutation_with_no_session_open_reloads_nothing(api: Api) -> None:
    await add_life(api)
    answer = await api.client.put("/api/mcp/connectors/life/tools/echo", json={"decision": "deny"})
    assert answer.json()["runtime_reload"] == NO_RELOAD


# -- the host's exit ---------------------------------------------------------------------------


async def test_leaving_the_lifespan_closes_every_session_and_leaves_no_process(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    app = create_app(Settings(home=tmp_path / "home"), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)
    with anyio.fail_after(60):
        async with app.router.lifespan_context(app):
            headers = auth_headers(tmp_path / "home")
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8765", headers=headers
            ) as client:
                api = Api(client=client, app=app, home=tmp_path / "home", workspace=workspace)
                # eager: started at once, with a grandchild in its process group
                await add_life(api, "--spawn-child", runtime_options={"lifecycle": "eager"})
                sessions = [await open_session(api), await open_session(api)]
                groups = [os.getpgid(await pid_of(api, s)) for s in sessions]
                servers = [c.pid for c in psutil.Process().children(recursive=True) if os.getpgid(c.pid) in groups]
                assert len(servers) == 4  # two servers, each with its grandchild
        for group in groups:
            assert_group_gone(group)
        assert all(gone(pid) for pid in servers)
        with pytest.raises(PatchbayError, match="no session host is running"):
            app.state.context.session_host()
    app.state.context.close()


def test_patchbay_serve_hosts_sessions_and_stops_their_servers_when_interrupted(tmp_path: Path) -> None:
    """The real process: ``patchbay serve`` runs the app's lifespan, so it hosts sessions; Ctrl-C
    closes them, and no server process (nor its grandchild) outlives it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve_process(tmp_path / "home", workspace) as served:
        target = {"transport": "stdio", "command": sys.executable, "args": [LIFECYCLE, "--spawn-child"]}
        body = {"name": "life", "target": target, "enabled": True, "runtime_options": {"lifecycle": "eager"}}
        assert served.session.post(f"{served.url}/api/mcp/connectors", json=body, timeout=30).status_code == 201
        settings = {"revision": 1, "approval_mode": "allow_all"}
        assert served.session.put(f"{served.url}/api/mcp/connectors/life/settings", json=settings, timeout=30).ok
        opened = served.session.post(f"{served.url}/api/sessions", json={"cwd": str(workspace)}, timeout=30)
        assert opened.status_code == 201, opened.text
        sid = opened.json()["session_id"]
        answer = served.session.post(f"{served.url}/api/sessions/{sid}/call", json={"tool": "mcp.life.pid"}, timeout=60)
        assert answer.status_code == 200, answer.text
        group = os.getpgid(int(answer.json()["content"][0]["text"]))
        assert group != os.getpgid(served.process.pid)  # the server runs in a process group of its own
    assert served.process.returncode == 0
    assert_group_gone(group)


# --- A session's event log ---


async def _session_with_calls(api: Api) -> str:
    target = {"transport": "stdio", "command": sys.executable, "args": [LIFECYCLE]}
    await api.create("life", target, enabled=True)
    settings = await api.client.put(
        "/api/mcp/connectors/life/settings", json={"revision": 1, "approval_mode": "allow_all"}
    )
    assert settings.status_code == 200, settings.text
    opened = await api.client.post("/api/sessions", json={"cwd": str(api.workspace)})
    assert opened.status_code == 201, opened.text
    sid = opened.json()["session_id"]
    for text in ("one", "two"):
        answer = await api.client.post(
            f"/api/sessions/{sid}/call", json={"tool": "mcp.life.echo", "arguments": {"text": text}}, timeout=60
        )
        assert answer.status_code == 200, answer.text
    return sid


async def _events(api: Api, sid: str, **params: Any) -> dict[str, Any]:
    answer = await api.client.get(f"/api/sessions/{sid}/events", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_events_come_in_pages_by_seq_while_the_session_is_open_and_after_it_closed(api: Api) -> None:
    sid = await _session_with_calls(api)
    logged = logged_events(Settings(home=api.home), sid)
    assert len(logged) > 3

    first = await _events(api, sid, limit=2)
    assert first["session_id"] == sid and [e["seq"] for e in first["events"]] == [1, 2]
    assert first["next_after_seq"] == 2 and first["has_more"] is True
    rest = await _events(api, sid, after_seq=first["next_after_seq"], limit=1000)
    assert rest["events"] == logged[2:] and rest["has_more"] is False
    assert rest["next_after_seq"] == logged[-1]["seq"]
    assert (await _events(api, sid))["events"] == logged[:100]  # defaults: after_seq 0, limit 100
    assert {e["payload"].get("tool") for e in logged if e["type"] == "tool.completed"} == {"mcp.life.echo"}

    closed = await api.client.delete(f"/api/sessions/{sid}")
    assert closed.status_code == 200
    after = logged_events(Settings(home=api.home), sid)
    everything = await _events(api, sid, limit=1000)
    assert everything["events"] == after and everything["has_more"] is False
    tail = await _events(api, sid, after_seq=after[-1]["seq"])
    assert tail == {"session_id": sid, "events": [], "next_after_seq": after[-1]["seq"], "has_more": False}
    middle = await _events(api, sid, after_seq=3, limit=2)
    assert [e["seq"] for e in middle["events"]] == [4, 5]


@pytest.mark.sqlite_only(reason="writes a JSONL session log by hand")
async def test_an_unknown_session_is_404_and_bad_paging_is_422(api: Api) -> None:
    for sid in ("ses_0000000000000000", "not.a.session", "x" * 100):
        answer = await api.client.get(f"/api/sessions/{sid}/events")
        assert answer.status_code == 404, (sid, answer.text)
        assert error_of(answer)["code"] == "not_found"
    (api.home / "sessions").mkdir(parents=True, exist_ok=True)
    session_log_path(api.home / "sessions", "ses_1").write_text("")
    for params in ({"limit": 0}, {"limit": 1001}, {"after_seq": -1}, {"limit": "many"}):
        answer = await api.client.get("/api/sessions/ses_1/events", params=params)
        assert answer.status_code == 422, (params, answer.text)
        assert error_of(answer)["code"] == "validation_error"
    assert await _events(api, "ses_1") == {"session_id": "ses_1", "events": [], "next_after_seq": 0, "has_more": False}


@pytest.mark.sqlite_only(reason="writes a JSONL session log by hand")
async def test_events_are_redacted_again_on_the_way_out(api: Api, tmp_path: Path) -> None:
    # A log written by something other than the runtime's redacting writer (an older version, a
    # copy): the route still never shows the secret.
    sessions = api.home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    line = {
        "seq": 1,
        "type": "user.message",
        "ts": "2026-12-01T10:00:00.000Z",
        "sessionId": "ses_old",
        "payload": {"text": f"use Authorization: Bearer {token}", "api_key": "plain-value-123"},
    }
    session_log_path(sessions, "ses_old").write_text(json.dumps(line) + "\n")
    body = json.dumps(await _events(api, "ses_old"))
    assert token not in body and "plain-value-123" not in body
    assert (await _events(api, "ses_old"))["events"][0]["seq"] == 1
