"""``GET /api/sessions/{id}/events``: a session's event log over REST, paged by seq, for open and
closed sessions, redacted on the way out. Against tests/fixtures/lifecycle_server.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from patchbay.runtime.events.log import read_events, session_log_path
from tests.support.api import Api, error_of
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.anyio

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")


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
    logged = read_events(session_log_path(api.home / "sessions", sid))
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
    after = read_events(session_log_path(api.home / "sessions", sid))
    everything = await _events(api, sid, limit=1000)
    assert everything["events"] == after and everything["has_more"] is False
    tail = await _events(api, sid, after_seq=after[-1]["seq"])
    assert tail == {"session_id": sid, "events": [], "next_after_seq": after[-1]["seq"], "has_more": False}
    middle = await _events(api, sid, after_seq=3, limit=2)
    assert [e["seq"] for e in middle["events"]] == [4, 5]


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
