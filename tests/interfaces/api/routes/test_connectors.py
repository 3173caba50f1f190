"""Connector routes (seed 003 §8.1): create, list, show, update, delete, global settings and
disconnect, with their error codes and statuses (§9 / DESIGN.md), the revision locks (§15), and
no secret in any response (§19 point 8)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import anyio
import pytest

from patchbay.core.models import ConnectorSettings, HttpTarget, ToolCacheEntry, ToolSummary
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import NO_RELOAD, Api, auth_headers, error_of
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}
REMOTE = {"transport": "streamable_http", "url": "https://mcp.example.com/mcp"}


async def test_create_list_show_update_and_delete_a_connector(api: Api) -> None:
    created = await api.create("time", TIME, description="clock", runtime_options={"request_timeout": 30})
    assert created["name"] == "time" and created["connector_id"].startswith("con_")
    assert created["settings"] == {
        "enabled": False,  # seed 003 §8.1: enabling at creation is optional
        "include_tools": [],
        "exclude_tools": [],
        "approval_mode": "ask",
        "revision": 1,
    }
    assert created["target"] == {"transport": "stdio", "command": "mcp-server-time", "args": [], "cwd": ""}
    assert created["runtime_options"]["request_timeout"] == 30
    assert (created["runtime_state"], created["config_state"], created["auth_state"]) == (
        "disabled",
        "valid",
        "not-required",
    )
    assert created["cache"]["state"] == "missing"

    listed = (await api.client.get("/api/mcp/connectors")).json()["connectors"]
    assert [c["name"] for c in listed] == ["time"] and "bindings" not in listed[0]
    by_id = (await api.client.get(f"/api/mcp/connectors/{created['connector_id']}")).json()
    by_name = (await api.client.get("/api/mcp/connectors/time")).json()
    assert by_id == by_name and by_name["description"] == "clock"

    patched = await api.client.patch(
        "/api/mcp/connectors/time",
        json={
            "revision": 1,
            "display_name": "Clock",
            "runtime_options": {"lifecycle": "eager", "request_timeout": None},
        },
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["display_name"] == "Clock" and body["runtime_options"]["lifecycle"] == "eager"
    assert body["runtime_options"]["request_timeout"] == Settings().request_timeout  # reset: the default again
    assert body["revision"] == 3  # two writes, chained on the revision each returned

    deleted = await api.client.delete("/api/mcp/connectors/time")
    assert deleted.json() == {
        "name": "time",
        "connector_id": created["connector_id"],
        "removed": True,
        "runtime_reload": NO_RELOAD,  # no session open
    }
    missing = await api.client.get("/api/mcp/connectors/time")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    assert (await api.client.delete("/api/mcp/connectors/time")).status_code == 404


async def test_remote_and_socket_connectors_are_created_from_their_own_target_shapes(api: Api, tmp_path: Path) -> None:
    remote = await api.create("remote", {"transport": "sse", "url": "https://mcp.example.com/sse"}, enabled=True)
    assert remote["target"] == {"transport": "sse", "url": "https://mcp.example.com/sse"}
    assert remote["runtime_state"] == "unknown" and remote["settings"]["enabled"] is True
    sock = await api.create("sock", {"transport": "socket", "path": str(tmp_path / "mcp.sock")})
    assert sock["target"] == {"transport": "socket", "path": str(tmp_path / "mcp.sock")}


async def test_validation_failures_are_422_naming_the_field(api: Api) -> None:
    cases = [
        ({"name": "Bad Name", "target": TIME}, "body.name"),
        ({"name": "x", "target": {"transport": "stdio", "command": "sh -c id"}}, "command"),
        ({"name": "x", "target": {"transport": "stdio", "command": "-rf"}}, "command"),
        ({"name": "x", "target": {"transport": "stdio", "command": "t", "cwd": "../out"}}, "cwd"),
        ({"name": "x", "target": {"transport": "streamable_http", "url": "https://u:p@h.example/mcp"}}, "url"),
        ({"name": "x", "target": {"transport": "socket", "path": "relative.sock"}}, "socket_path"),
        ({"name": "x", "target": TIME, "runtime_options": {"request_timeout": -1}}, "request_timeout"),
        ({"name": "x", "target": TIME, "runtime_options": {"allow_private": True}}, "allow_private"),
        ({"name": "x", "target": TIME, "enabled": 1}, "body.enabled"),  # strict: 1 is no boolean
        ({"name": "x", "target": TIME, "surprise": True}, "body.surprise"),
        ({"name": "x", "target": {"transport": "carrier-pigeon"}}, "body.target"),
    ]
    for body, field in cases:
        response = await api.client.post("/api/mcp/connectors", json=body)
        assert response.status_code == 422, (body, response.text)
        error = error_of(response)
        assert error["code"] == "validation_error", body
        assert error["details"]["field"].startswith(field), (body, error)
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}  # nothing stored


async def test_a_taken_name_is_refused_whatever_its_case(api: Api) -> None:
    await api.create("time", TIME)
    again = await api.client.post("/api/mcp/connectors", json={"name": "time", "target": REMOTE})
    assert again.status_code == 409 and error_of(again)["code"] == "revision_conflict"
    assert error_of(again)["details"] == {"field": "name", "cause": "name_taken"}
    assert "already exists" in error_of(again)["message"]


async def test_a_stale_revision_is_409_and_changes_nothing(api: Api) -> None:
    await api.create("time", TIME)
    await api.client.patch("/api/mcp/connectors/time", json={"revision": 1, "description": "one"})
    stale = await api.client.patch(
        "/api/mcp/connectors/time",
        json={"revision": 1, "description": "two", "runtime_options": {"lifecycle": "eager"}},
    )
    assert stale.status_code == 409
    assert error_of(stale) == {
        "code": "revision_conflict",
        "message": error_of(stale)["message"],
        "details": {"expected": 1, "actual": 2},
    }
    now = (await api.client.get("/api/mcp/connectors/time")).json()
    assert now["description"] == "one" and now["runtime_options"]["lifecycle"] == "lazy" and now["revision"] == 2

    settings = await api.client.put("/api/mcp/connectors/time/settings", json={"revision": 7, "enabled": True})
    assert settings.status_code == 409 and error_of(settings)["code"] == "revision_conflict"
    assert error_of(settings)["message"].startswith("connector 'time': its settings are at settings revision 1, not 7")
    assert (await api.client.get("/api/mcp/connectors/time")).json()["settings"]["enabled"] is False


async def test_two_clients_with_the_same_revision_one_wins_and_nothing_of_the_other_is_applied(api: Api) -> None:
    await api.create("time", TIME)
    answers: dict[str, int] = {}

    async def update(label: str, lifecycle: str) -> None:
        response = await api.client.patch(
            "/api/mcp/connectors/time",
            json={"revision": 1, "description": label, "runtime_options": {"lifecycle": lifecycle}},
        )
        answers[label] = response.status_code

    async with anyio.create_task_group() as group:  # real concurrent requests (worker threads)
        group.start_soon(update, "first", "eager")
        group.start_soon(update, "second", "keep_alive")
    assert sorted(answers.values()) == [200, 409], answers
    winner = next(label for label, status in answers.items() if status == 200)
    now = (await api.client.get("/api/mcp/connectors/time")).json()
    assert now["description"] == winner
    assert now["runtime_options"]["lifecycle"] == {"first": "eager", "second": "keep_alive"}[winner]

    settings: list[int] = []

    async def toggle(enabled: bool) -> None:
        response = await api.client.put("/api/mcp/connectors/time/settings", json={"revision": 1, "enabled": enabled})
        settings.append(response.status_code)

    async with anyio.create_task_group() as group:
        for index in range(6):
            group.start_soon(toggle, index % 2 == 0)
    assert sorted(settings) == [200] + [409] * 5
    assert (await api.client.get("/api/mcp/connectors/time")).json()["settings"]["revision"] == 2


async def test_global_settings_are_put_under_their_own_revision(api: Api) -> None:
    await api.create("time", TIME)
    response = await api.client.put(
        "/api/mcp/connectors/time/settings",
        json={
            "enabled": True,
            "include_tools": ["get_*", "get_*"],
            "exclude_tools": ["convert_time"],
            "approval_mode": "custom",
            "revision": 1,
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["settings"] == {
        "enabled": True,
        "include_tools": ["get_*"],
        "exclude_tools": ["convert_time"],
        "approval_mode": "custom",
        "revision": 2,
    }
    assert body["revision"] == 1  # the connector revision is independent (seed 003 §15)
    blank = await api.client.put("/api/mcp/connectors/time/settings", json={"revision": 2, "include_tools": [" "]})
    assert blank.status_code == 422 and error_of(blank)["details"]["field"] == "include_tools"
    mode = await api.client.put("/api/mcp/connectors/time/settings", json={"revision": 2, "approval_mode": "yolo"})
    assert mode.status_code == 422 and error_of(mode)["details"]["field"] == "body.approval_mode"
    nobody = await api.client.put("/api/mcp/connectors/nobody/settings", json={"revision": 1, "enabled": True})
    assert nobody.status_code == 404 and error_of(nobody)["code"] == "not_found"


async def test_a_builtin_connector_cannot_be_deleted(api: Api) -> None:
    builtin = api.service.repository.connectors.create(
        "paper-search", "Paper Search", HttpTarget(url="https://papers.example/mcp"), source="builtin"
    )
    response = await api.client.delete("/api/mcp/connectors/paper-search")
    assert response.status_code == 403
    assert error_of(response)["code"] == "builtin_connector"
    assert (await api.client.get(f"/api/mcp/connectors/{builtin.connector_id}")).json()["source"] == "builtin"


async def test_a_builtin_connectors_command_cannot_be_changed_but_its_details_can(api: Api) -> None:
    builtin = api.service.repository.connectors.create(
        "paper-search", "Paper Search", HttpTarget(url="https://papers.example/mcp"), source="builtin"
    )
    moved = await api.client.patch(
        "/api/mcp/connectors/paper-search",
        json={
            "revision": builtin.revision,
            "target": {"transport": "streamable_http", "url": "https://other.example/mcp"},
        },
    )
    assert moved.status_code == 403 and error_of(moved)["code"] == "builtin_connector"
    renamed = await api.client.patch(
        "/api/mcp/connectors/paper-search", json={"revision": builtin.revision, "display_name": "Papers"}
    )
    assert renamed.status_code == 200, renamed.text
    detail = (await api.client.get("/api/mcp/connectors/paper-search")).json()
    assert (detail["display_name"], detail["target"]["url"]) == ("Papers", "https://papers.example/mcp")


async def test_no_response_ever_carries_a_credential_value(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"pbapi-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("PB_API_CANARY", canary)
    texts: list[str] = []

    async def call(method: str, url: str, **kwargs: object) -> dict:
        response = await api.client.request(method, url, **kwargs)
        texts.append(response.text)
        return response.json()

    created = await call(
        "POST",
        "/api/mcp/connectors",
        json={
            "name": "remote",
            "target": REMOTE,
            "bindings": [
                {"delivery": "bearer", "value": canary},
                {"delivery": "header", "name": "X-Org", "variable": "PB_API_CANARY"},
            ],
        },
    )
    assert created["auth_state"] == "configured"
    assert {(b["delivery"], b["source"], b["variable"]) for b in created["bindings"]} == {
        ("bearer", "managed", None),
        ("header", "environment", "PB_API_CANARY"),
    }
    await call("GET", "/api/mcp/connectors")
    await call("GET", "/api/mcp/connectors/remote")
    await call("GET", "/api/mcp/catalog")
    await call(
        "PATCH",
        "/api/mcp/connectors/remote",
        json={"revision": 1, "bindings": [{"delivery": "bearer", "value": canary + "2"}]},
    )
    assert canary + "2" in (api.home / "credentials.json").read_text()  # the value went to the store only
    # refused requests that carry the value: a bad header value, a wrong type for it
    bad = await call(
        "POST",
        "/api/mcp/connectors",
        json={
            "name": "bad",
            "target": REMOTE,
            "bindings": [{"delivery": "header", "name": "X", "value": canary + "\n"}],
        },
    )
    assert bad["error"]["code"] == "validation_error"
    typed = await call(
        "POST",
        "/api/mcp/connectors",
        json={"name": "bad", "target": REMOTE, "bindings": [{"delivery": "bearer", "value": [canary]}]},
    )
    assert typed["error"]["code"] == "validation_error"
    both = await call(
        "POST",
        "/api/mcp/connectors",
        json={"name": "bad", "target": REMOTE, "bindings": [{"delivery": "bearer", "value": canary, "variable": "X"}]},
    )
    assert both["error"]["details"]["field"] == "bearer"
    disconnected = await call("POST", "/api/mcp/connectors/remote/disconnect", json={})
    assert len(disconnected["deleted_credentials"]) == 2  # both records it owned: the value and the reference
    for text in texts:
        assert canary not in text, text


async def test_disconnect_removes_bindings_and_the_credentials_the_connector_owned(api: Api) -> None:
    created = await api.create(
        "local",
        {"transport": "stdio", "command": sys.executable, "args": ["-c", "pass"]},
        bindings=[{"delivery": "env", "name": "PB_KEY", "value": "s3cr3t-value-for-disconnect"}],
    )
    ref = created["bindings"][0]["ref"]
    stale = await api.client.post("/api/mcp/connectors/local/disconnect", json={"revision": 9})
    assert stale.status_code == 409 and ref in (api.home / "credentials.json").read_text()
    response = await api.client.post("/api/mcp/connectors/local/disconnect")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["deleted_credentials"] == [ref] and [b["ref"] for b in body["unbound"]] == [ref]
    assert body["connector"]["bindings"] == [] and body["connector"]["auth_state"] == "not-required"
    assert body["oauth"] == {"revoked": [], "revocation": "nothing_to_revoke", "deleted": False}
    assert ref not in (api.home / "credentials.json").read_text()
    again = await api.client.post("/api/mcp/connectors/local/disconnect")
    assert again.status_code == 200 and again.json()["unbound"] == []  # idempotent
    assert (await api.client.post("/api/mcp/connectors/nobody/disconnect")).status_code == 404


async def test_an_unusable_store_is_503_on_every_route(tmp_path: Path, store_backend: str) -> None:
    import httpx2

    blocker = tmp_path / "home"
    blocker.write_text("a file where the data home should be")
    token = "t" * 43  # the data home cannot hold one (serve then uses a one-time token the same way)
    # SQLite: the data home cannot hold the database; PostgreSQL: nothing listens at the server's port.
    unusable = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/none" if store_backend == "postgres" else None
    app = create_app(Settings(home=blocker, database_url=unusable), workspace=tmp_path, token=token)
    transport = httpx2.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as client:
        for method, url, body in (
            ("GET", "/api/mcp/connectors", None),
            ("POST", "/api/mcp/connectors", {"name": "time", "target": TIME}),
            ("PUT", "/api/mcp/connectors/time/settings", {"revision": 1, "enabled": True}),
            ("GET", "/api/settings/mcp", None),
        ):
            response = await client.request(method, url, json=body)
            assert response.status_code == 503, (url, response.text)
            assert error_of(response)["code"] == "canonical_state_unavailable"


async def test_disconnect_revokes_an_oauth_grant_and_no_token_reaches_a_response(tmp_path: Path) -> None:
    import httpx2

    from tests.support.oauth import HeadlessBrowser, add_oauth_connector, control_plane, oauth_server

    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, "guarded", fixture.url)
        app = create_app(service=plane.service, workspace=plane.workspace)
        transport, headers = httpx2.ASGITransport(app=app), auth_headers(tmp_path / "home")
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as client:
            before = (await client.get("/api/mcp/connectors/guarded")).json()
            assert (before["auth_state"], before["config_state"]) == ("needs-auth", "valid")  # no grant yet
            result, _ = await plane.oauth.login(
                "guarded", authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20
            )
            assert result.state == "ready", result.message
            tokens = [t for t in (plane.bundle("guarded").tokens or {}).values() if isinstance(t, str) and len(t) > 8]
            assert tokens
            texts = []
            for url in ("/api/mcp/connectors", "/api/mcp/connectors/guarded", "/api/mcp/catalog"):
                response = await client.get(url)
                texts.append(response.text)
            assert (await client.get("/api/mcp/connectors/guarded")).json()["auth_state"] == "configured"
            disconnected = await client.post("/api/mcp/connectors/guarded/disconnect")
            texts.append(disconnected.text)
            assert disconnected.status_code == 200, disconnected.text
            body = disconnected.json()
            assert body["oauth"] == {
                "revoked": ["refresh_token", "access_token"],
                "revocation": "done",
                "deleted": True,
            }
            assert body["connector"]["auth_state"] == "needs-auth"
        assert fixture.counts("main")["revoked"] == 2 and plane.bundle("guarded") is None
        for text in texts:
            assert not any(token in text for token in tokens), text
        plane.service.repository.close()


async def _probed_with_grant(api: Api) -> dict:
    created = await api.create("time", TIME, enabled=True)
    assert (await api.client.post("/api/mcp/connectors/time/probe")).json()["state"] == "ready"
    put = await api.client.put("/api/mcp/connectors/time/tools/get_current_time", json={"decision": "allow"})
    assert put.status_code == 200, put.text
    shown = (await api.client.get("/api/mcp/connectors/time")).json()
    assert shown["cache"]["state"] == "fresh" and shown["revision"] == created["revision"]
    return shown


async def _global_grants(api: Api) -> dict[str, str]:
    tools = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    return {g["tool_name"]: g["decision"] for g in tools["unmatched_grants"]} | {
        t["name"]: t["global_grant"] for t in tools["tools"] if t["global_grant"]
    }


async def test_patch_changes_the_target_keeping_grants_and_settings_and_the_cache_goes_stale(api: Api) -> None:
    before = await _probed_with_grant(api)
    command = str(Path(sys.executable).parent / "mcp-server-time")
    target = {"transport": "stdio", "command": command, "args": ["--local-timezone", "UTC"], "cwd": ""}
    patched = await api.client.patch(
        "/api/mcp/connectors/time", json={"revision": before["revision"], "target": target}
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["target"] == target and body["revision"] == before["revision"] + 1
    assert body["connector_id"] == before["connector_id"] and body["settings"] == before["settings"]
    assert body["cache"]["state"] == "stale" and body["runtime_state"] == "unknown"
    assert await _global_grants(api) == {"get_current_time": "allow"}

    reprobe = (await api.client.post("/api/mcp/connectors/time/probe")).json()
    assert reprobe["state"] == "ready"
    assert (await api.client.get("/api/mcp/connectors/time")).json()["cache"]["state"] == "fresh"


async def test_patch_may_change_the_transport_kind_when_the_rest_still_fits(api: Api) -> None:
    created = await api.create("time", TIME, runtime_options={"limits": {"open_files": 64}})
    refused = await api.client.patch("/api/mcp/connectors/time", json={"revision": 1, "target": REMOTE})
    assert refused.status_code == 422 and error_of(refused)["details"] == {"field": "limits", "cause": "invalid_config"}
    moved = await api.client.patch(
        "/api/mcp/connectors/time",
        json={"revision": created["revision"], "target": REMOTE, "runtime_options": {"limits": None}},
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["transport"] == "streamable_http" and moved.json()["target"] == REMOTE
    assert moved.json()["runtime_options"]["limits"]["open_files"] is None

    await api.create("gh", REMOTE, bindings=[{"delivery": "bearer", "value": "tok-for-target-test"}])
    socket = {"transport": "socket", "path": "/run/user/mcp.sock"}
    headers = await api.client.patch("/api/mcp/connectors/gh", json={"revision": 1, "target": socket})
    assert headers.status_code == 422 and error_of(headers)["details"]["field"] == "bindings"
    assert (await api.client.get("/api/mcp/connectors/gh")).json()["target"] == REMOTE


async def test_patch_target_under_a_stale_revision_or_invalid_changes_nothing(api: Api) -> None:
    before = await _probed_with_grant(api)
    await api.client.patch("/api/mcp/connectors/time", json={"revision": before["revision"], "description": "x"})
    stale = await api.client.patch("/api/mcp/connectors/time", json={"revision": before["revision"], "target": REMOTE})
    assert stale.status_code == 409 and error_of(stale)["code"] == "revision_conflict"
    now = (await api.client.get("/api/mcp/connectors/time")).json()
    assert now["target"] == before["target"] and now["cache"]["state"] == "fresh"

    for target, field in [
        ({"transport": "stdio", "command": "-rf"}, "command"),
        ({"transport": "stdio", "command": "mcp-server-time", "cwd": "../out"}, "cwd"),
        ({"transport": "streamable_http", "url": "https://u:p@h.example/mcp"}, "url"),
        ({"transport": "socket", "path": "relative.sock"}, "socket_path"),
    ]:
        bad = await api.client.patch("/api/mcp/connectors/time", json={"revision": now["revision"], "target": target})
        assert bad.status_code == 422, (target, bad.text)
        assert error_of(bad)["details"] == {"field": field, "cause": "invalid_config"}, target
    after = (await api.client.get("/api/mcp/connectors/time")).json()
    assert (after["target"], after["revision"], after["cache"]["state"]) == (now["target"], now["revision"], "fresh")
    assert await _global_grants(api) == {"get_current_time": "allow"}


@pytest.mark.parametrize(("field", "text"), [("display_name", "safe\u202etxt.exe"), ("description", "a\u200bb\ufeff")])
async def test_bidi_and_zero_width_text_is_refused_on_create_and_update(api: Api, field: str, text: str) -> None:
    refused = await api.client.post("/api/mcp/connectors", json={"name": "time", "target": TIME, field: text})
    assert refused.status_code == 422 and error_of(refused)["details"] == {
        "field": field,
        "cause": "invalid_config",
    }
    await api.create("time", TIME, **{field: "plain"})
    patched = await api.client.patch("/api/mcp/connectors/time", json={"revision": 1, field: text})
    assert patched.status_code == 422 and error_of(patched)["details"]["field"] == field
    assert (await api.client.get("/api/mcp/connectors/time")).json()[field] == "plain"  # nothing changed


async def test_plain_settings_and_defaults_round_trip_through_the_bindings_shape(api: Api) -> None:
    created = await api.client.post(
        "/api/mcp/connectors",
        json={
            "name": "remote",
            "target": REMOTE,
            "bindings": [
                {"delivery": "header", "name": "X-Region", "plain": "eu-west-1"},
                {"delivery": "header", "name": "X-Org", "variable": "PB_API_ORG", "default": "acme-default"},
            ],
        },
    )
    assert created.status_code == 201, created.text
    views = {b["name"]: b for b in created.json()["bindings"]}
    assert (views["X-Region"]["source"], views["X-Region"]["plain"], views["X-Region"]["ref"]) == (
        "plain",
        "eu-west-1",
        None,
    )
    assert (views["X-Org"]["default"], views["X-Org"]["default_mode"]) == ("acme-default", "unset_or_empty")
    refused = await api.client.post(
        "/api/mcp/connectors",
        json={"name": "bad", "target": REMOTE, "bindings": [{"delivery": "bearer", "plain": "x"}]},
    )
    assert refused.status_code == 422 and error_of(refused)["details"]["field"] == "bearer"
    shaped = "ghp_" + "b" * 36
    leaked = await api.client.post(
        "/api/mcp/connectors",
        json={"name": "bad", "target": REMOTE, "bindings": [{"delivery": "header", "name": "X-A", "plain": shaped}]},
    )
    assert leaked.status_code == 422 and shaped not in leaked.text


async def test_each_list_entry_shows_what_the_connector_itself_shows(api: Api) -> None:
    await api.create("time", TIME, enabled=True)
    assert (await api.client.post("/api/mcp/connectors/time/probe")).status_code == 200  # fresh cache, ready
    stale = await api.create("stale", {"transport": "stdio", "command": "stale-mcp"})
    api.service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=stale["connector_id"],
            config_revision=stale["revision"],
            fingerprint=api.service.queries.fingerprint(api.service.get("stale")),
            tools=(ToolSummary(name="one"), ToolSummary(name="two"), ToolSummary(name="three")),
        )
    )
    fresh = (await api.client.get("/api/mcp/connectors/stale")).json()
    moved = await api.client.patch(
        "/api/mcp/connectors/stale", json={"revision": 1, "target": {"transport": "stdio", "command": "moved-mcp"}}
    )
    assert moved.status_code == 200, moved.text
    await api.create("remote", REMOTE, bindings=[{"delivery": "bearer", "variable": "PB_LIST_UNSET_VARIABLE"}])

    listed = {c["name"]: c for c in (await api.client.get("/api/mcp/connectors")).json()["connectors"]}

    for name, entry in listed.items():
        shown = (await api.client.get(f"/api/mcp/connectors/{name}")).json()
        assert entry == {key: shown[key] for key in entry}, name
    assert (fresh["tool_count"], fresh["cache"]["state"]) == (3, "fresh")
    assert (listed["stale"]["tool_count"], listed["time"]["tool_count"]) == (0, 2)
    assert listed["time"]["last_probe"]["state"] == "ready" and listed["remote"]["auth_state"] == "needs-auth"


async def test_list_and_detail_show_one_status_picked_by_the_badge_priority(api: Api) -> None:
    await api.create("time", TIME, enabled=True)
    assert (await api.client.post("/api/mcp/connectors/time/probe")).json()["state"] == "ready"
    await api.create("off", TIME)
    unset = [{"delivery": "bearer", "variable": "PB_STATUS_UNSET_VARIABLE"}]
    await api.create("locked", REMOTE, enabled=True, bindings=unset)
    await api.create("locked-off", REMOTE, bindings=unset)
    await api.create("new", {"transport": "stdio", "command": "never-probed-mcp"}, enabled=True)
    failing = await api.create("failing", {"transport": "stdio", "command": "pb-no-such-command-mcp"}, enabled=True)
    assert (await api.client.post("/api/mcp/connectors/failing/probe")).json()["code"] == "command_not_found"
    # straight into the store: the service refuses an invalid configuration
    api.service.repository.connectors.create_many(
        [
            {
                "name": "broken",
                "display_name": "Broken",
                "target": HttpTarget(url="https://mcp.example.com/mcp"),
                "runtime_config": {"lifecycle": "sometimes"},
                "settings": ConnectorSettings(enabled=False),
            }
        ]
    )

    listed = {c["name"]: c for c in (await api.client.get("/api/mcp/connectors")).json()["connectors"]}
    assert {name: entry["status"] for name, entry in listed.items()} == {
        "time": "ready",
        "off": "disabled",
        "locked": "needs-auth",
        "locked-off": "disabled",  # disabled > needs-auth
        "new": "unknown",
        "failing": "error",
        "broken": "invalid",  # invalid > disabled
    }
    assert (listed["broken"]["config_state"], listed["broken"]["runtime_state"]) == ("invalid", "disabled")
    for name, entry in listed.items():
        assert (await api.client.get(f"/api/mcp/connectors/{name}")).json()["status"] == entry["status"], name
    assert failing["status"] == "unknown"  # as created: enabled, never probed
    toggled = await api.client.put(
        "/api/mcp/connectors/time/settings", json={"revision": listed["time"]["settings"]["revision"], "enabled": False}
    )
    assert toggled.status_code == 200 and toggled.json()["status"] == "disabled"


async def test_terms_and_privacy_urls_are_stored_shown_changed_and_checked(api: Api) -> None:
    created = await api.create(
        "docs", REMOTE, terms_url="https://example.com/terms", privacy_url="https://example.com/privacy"
    )
    assert (created["terms_url"], created["privacy_url"]) == (
        "https://example.com/terms",
        "https://example.com/privacy",
    )
    listed = (await api.client.get("/api/mcp/connectors")).json()["connectors"]
    assert (listed[0]["terms_url"], listed[0]["privacy_url"]) == (created["terms_url"], created["privacy_url"])
    plain = await api.create("plain", TIME)
    assert (plain["terms_url"], plain["privacy_url"]) == ("", "")

    patched = await api.client.patch(
        "/api/mcp/connectors/docs",
        json={"revision": created["revision"], "terms_url": "", "privacy_url": "http://x.test/p"},
    )
    assert patched.status_code == 200, patched.text
    assert (patched.json()["terms_url"], patched.json()["privacy_url"]) == ("", "http://x.test/p")

    for body in ({"terms_url": "ftp://example.com/terms"}, {"privacy_url": "https://user:pw@example.com/p"}):
        refused = await api.client.post("/api/mcp/connectors", json={"name": "bad", "target": REMOTE, **body})
        assert refused.status_code == 422, refused.text
        error = error_of(refused)
        assert (error["code"], error["details"]["field"]) == ("validation_error", next(iter(body)))
    stale = await api.client.patch(
        "/api/mcp/connectors/docs", json={"revision": patched.json()["revision"], "terms_url": "javascript:alert(1)"}
    )
    assert stale.status_code == 422, stale.text
    assert error_of(stale)["details"]["field"] == "terms_url"
    assert (await api.client.get("/api/mcp/connectors/docs")).json()["privacy_url"] == "http://x.test/p"


# -- transport "auto" -----------------------------------------------------------------------------


async def test_create_with_transport_auto_stores_the_detected_transport(api: Api) -> None:
    from tests.support.servers import everything_http

    for kind, expected in (("streamableHttp", "streamable_http"), ("sse", "sse")):
        with everything_http(kind) as url:
            with anyio.fail_after(30):
                created = await api.create(
                    f"auto-{expected.replace('_', '-')}",
                    {"transport": "auto", "url": url},
                    runtime_options={"allow_private": True},
                )
        assert created["target"] == {"transport": expected, "url": url}
        assert created["transport"] == expected
        detection = created["transport_detection"]
        assert detection["requested"] == "auto" and detection["transport"] == expected
        assert detection["auth_required"] is False
        shown = (await api.client.get(f"/api/mcp/connectors/{created['name']}")).json()
        assert shown["target"]["transport"] == expected and "transport_detection" not in shown


async def test_create_with_transport_auto_and_nothing_listening_is_502_and_stores_nothing(api: Api) -> None:
    from tests.support.servers import free_port

    body = {
        "name": "gone",
        "target": {"transport": "auto", "url": f"http://127.0.0.1:{free_port()}/mcp"},
        "runtime_options": {"allow_private": True},
    }
    with anyio.fail_after(30):
        response = await api.client.post("/api/mcp/connectors", json=body)
    assert response.status_code == 502, response.text
    error = error_of(response)
    assert error["code"] == "server_closed" and error["details"]["field"] == "url"
    assert (await api.client.get("/api/mcp/connectors")).json()["connectors"] == []


async def test_transport_auto_is_refused_when_changing_a_target(api: Api) -> None:
    await api.create("docs", REMOTE)
    response = await api.client.patch(
        "/api/mcp/connectors/docs",
        json={"revision": 1, "target": {"transport": "auto", "url": "https://mcp.example.com/other"}},
    )
    assert response.status_code == 422 and error_of(response)["code"] == "validation_error"
