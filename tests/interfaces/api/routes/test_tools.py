"""Probe and tool routes (seed 003 §8.1, §9, §5.3): a real probe of a real server, the cached
tools with their effective decisions globally and in a workspace's project (``cwd``), grants per
scope, and their error codes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.api import NO_RELOAD, Api, error_of
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}


async def _probed_time(api: Api) -> None:
    await api.create("time", TIME, enabled=True)
    response = await api.client.post("/api/mcp/connectors/time/probe")
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["state"] == "ready" and report["code"] is None
    assert sorted(report["tools"]) == ["convert_time", "get_current_time"] and report["tool_count"] == 2


async def test_a_probe_of_a_real_server_caches_its_catalog(api: Api) -> None:
    await _probed_time(api)
    shown = (await api.client.get("/api/mcp/connectors/time")).json()
    assert shown["cache"]["state"] == "fresh" and shown["runtime_state"] == "ready" and shown["tool_count"] == 2
    assert {t["name"] for t in shown["cache"]["tools"]} == {"get_current_time", "convert_time"}
    assert shown["cache"]["server_info"]["name"]


async def test_each_tool_says_why_it_has_its_risk(api: Api) -> None:
    await _probed_time(api)
    body = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    reasons = {t["name"]: (t["risk"], t["risk_reason"]) for t in body["tools"]}
    assert reasons["get_current_time"] == ("read", "annotated readOnlyHint")
    for risk, reason in reasons.values():
        assert reason == {"read": "annotated readOnlyHint", "destructive": "annotated destructiveHint"}.get(
            risk, "no annotation says otherwise"
        )


async def test_a_failing_server_is_a_200_with_its_stable_code(api: Api) -> None:
    await api.create("ghost", {"transport": "stdio", "command": "pb-no-such-command-for-api-tests"})
    response = await api.client.post("/api/mcp/connectors/ghost/probe")
    assert response.status_code == 200
    assert (response.json()["state"], response.json()["code"]) == ("error", "command_not_found")
    assert (await api.client.get("/api/mcp/connectors/ghost")).json()["cache"]["state"] == "missing"
    nobody = await api.client.post("/api/mcp/connectors/nobody/probe")
    assert nobody.status_code == 404 and error_of(nobody)["code"] == "not_found"


async def test_tools_show_global_decisions_and_with_cwd_the_projects(api: Api, tmp_path: Path) -> None:
    await _probed_time(api)
    other = tmp_path / "other"
    other.mkdir()

    async def decisions(cwd: Path | None = None) -> dict[str, tuple[str, str]]:
        params = {"cwd": str(cwd)} if cwd else None
        body = (await api.client.get("/api/mcp/connectors/time/tools", params=params)).json()
        if cwd is None or cwd == other:  # no cwd, or a workspace that is no project: global decisions
            assert body["project"] is None
        else:
            assert body["project"]["path"] == str(cwd)  # tmp_path has no symlinks
        return {t["name"]: (t["decision"], t["source"]) for t in body["tools"]}

    assert await decisions() == {"get_current_time": ("ask", "approval_mode"), "convert_time": ("ask", "approval_mode")}

    put = await api.client.put("/api/mcp/connectors/time/tools/get_current_time", json={"decision": "allow"})
    assert put.json() == {
        "connector": "time",
        "tool": "get_current_time",
        "decision": "allow",
        "scope": "global",
        "project_id": None,
        "matches_known_tool": True,
        "runtime_reload": NO_RELOAD,
    }
    project = await api.client.put(
        "/api/mcp/connectors/time/tools/get_current_time", params={"cwd": str(api.workspace)}, json={"decision": "deny"}
    )
    assert project.json()["scope"] == "project" and project.json()["project_id"].startswith("prj_")
    assert (await decisions())["get_current_time"] == ("allow", "global_grant")
    assert (await decisions(api.workspace))["get_current_time"] == ("deny", "project_grant")
    assert (await decisions(other))["get_current_time"] == ("allow", "global_grant")  # only that project
    assert [p.path for p in api.service.repository.projects.list_all()] == [str(api.workspace)]  # looking made none

    # a global deny is never lifted by a project allow (seed 003 §5.3, §20.2)
    await api.client.put("/api/mcp/connectors/time/tools/convert_time", json={"decision": "deny"})
    await api.client.put(
        "/api/mcp/connectors/time/tools/convert_time", params={"cwd": str(api.workspace)}, json={"decision": "allow"}
    )
    assert (await decisions(api.workspace))["convert_time"] == ("deny", "global_deny")

    # clearing the project grant restores inheritance; clearing again is idempotent
    cleared = await api.client.delete(
        "/api/mcp/connectors/time/tools/get_current_time", params={"cwd": str(api.workspace)}
    )
    assert cleared.json()["cleared"] is True and cleared.json()["scope"] == "project"
    assert (await decisions(api.workspace))["get_current_time"] == ("allow", "global_grant")
    again = await api.client.delete(
        "/api/mcp/connectors/time/tools/get_current_time", params={"cwd": str(api.workspace)}
    )
    assert again.status_code == 200 and again.json()["cleared"] is False


async def test_a_grant_for_an_unknown_tool_is_kept_and_matches_nothing(api: Api) -> None:
    await _probed_time(api)
    put = await api.client.put(
        "/api/mcp/connectors/time/tools/ns/odd tool", json={"decision": "allow", "unknown_ok": True}
    )
    assert put.status_code == 200 and put.json()["tool"] == "ns/odd tool"
    assert put.json()["matches_known_tool"] is False
    listed = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    assert listed["unmatched_grants"] == [
        {
            "connector_id": listed["unmatched_grants"][0]["connector_id"],
            "tool_name": "ns/odd tool",
            "decision": "allow",
            "project_id": None,
        }
    ]
    assert (await api.client.delete("/api/mcp/connectors/time/tools/ns/odd tool")).json()["cleared"] is True


async def test_a_grant_for_a_tool_the_probed_catalog_lacks_is_404_with_suggestions(api: Api) -> None:
    await _probed_time(api)
    for params in (None, {"cwd": str(api.workspace)}):
        refused = await api.client.put(
            "/api/mcp/connectors/time/tools/get_curent_time", params=params, json={"decision": "allow"}
        )
        assert refused.status_code == 404, refused.text
        error = error_of(refused)
        assert error["code"] == "not_found"
        assert error["details"]["tool"] == "get_curent_time" and error["details"]["field"] == "tool"
        assert error["details"]["suggestions"][0] == "get_current_time"
    listed = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    assert listed["unmatched_grants"] == [] and all(t["global_grant"] is None for t in listed["tools"])
    # the body of the resource and prompt grants has no such field
    extra = await api.client.put(
        "/api/mcp/connectors/time/resources/grant", json={"decision": "allow", "unknown_ok": True}
    )
    assert extra.status_code == 422


async def test_a_grant_without_a_probed_catalog_is_stored_unchecked(api: Api) -> None:
    await api.create("time", TIME)
    put = await api.client.put("/api/mcp/connectors/time/tools/get_curent_time", json={"decision": "deny"})
    assert put.status_code == 200, put.text
    assert put.json()["matches_known_tool"] is False
    listed = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    assert listed["cache"] == "missing"
    assert [g["tool_name"] for g in listed["unmatched_grants"]] == ["get_curent_time"]


async def test_grant_and_workspace_errors(api: Api, tmp_path: Path) -> None:
    await api.create("time", TIME)
    cases = [
        ("PUT", "/api/mcp/connectors/time/tools/t", {"decision": "maybe"}, None, 422, "body.decision"),
        ("PUT", "/api/mcp/connectors/time/tools/t", {}, None, 422, "body.decision"),
        ("PUT", "/api/mcp/connectors/time/tools/t", {"decision": "allow"}, {"cwd": "relative/dir"}, 422, "query.cwd"),
        ("GET", "/api/mcp/connectors/time/tools", None, {"cwd": str(tmp_path / "missing")}, 422, "project"),
        ("GET", "/api/mcp/connectors/time/tools", None, {"cwd": ""}, 422, "query.cwd"),
        ("PUT", "/api/mcp/connectors/time/tools/bad%07tool", {"decision": "allow"}, None, 422, "tool"),
        ("PUT", "/api/mcp/connectors/nobody/tools/t", {"decision": "allow"}, None, 404, None),
        ("GET", "/api/mcp/connectors/nobody/tools", None, None, 404, None),
        ("DELETE", "/api/mcp/connectors/nobody/tools/t", None, None, 404, None),
    ]
    for method, url, body, params, status, field in cases:
        response = await api.client.request(method, url, json=body, params=params)
        assert response.status_code == status, (url, params, response.text)
        error = error_of(response)
        assert error["code"] == ("validation_error" if status == 422 else "not_found")
        if field:
            assert error["details"]["field"] == field, error


async def test_looking_probing_and_clearing_never_make_a_workspace_a_project(api: Api, tmp_path: Path) -> None:
    """Every known project's workspace gets ``.patchbay/`` written on each committed change (seed
    003 §10.3), so a read (or a probe, or clearing nothing) with ``cwd`` must not create one."""
    await _probed_time(api)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    params = {"cwd": str(fresh)}

    listed = await api.client.get("/api/mcp/connectors/time/tools", params=params)
    assert listed.status_code == 200 and listed.json()["project"] is None
    assert {t["source"] for t in listed.json()["tools"]} == {"approval_mode"}  # the global decisions
    probed = await api.client.post("/api/mcp/connectors/time/probe", params=params)
    assert probed.status_code == 200 and probed.json()["state"] == "ready"
    cleared = await api.client.delete("/api/mcp/connectors/time/tools/convert_time", params=params)
    assert cleared.status_code == 200
    assert (cleared.json()["cleared"], cleared.json()["scope"], cleared.json()["project_id"]) == (
        False,
        "project",
        None,
    )
    # a later global mutation re-projects every known workspace: still none of them is "fresh"
    put = await api.client.put("/api/mcp/connectors/time/tools/convert_time", json={"decision": "deny"})
    assert put.status_code == 200

    assert api.service.repository.projects.list_all() == []
    assert list(fresh.iterdir()) == []  # no .patchbay written there
    assert not (api.workspace / ".patchbay").exists()  # the default workspace is no project either

    # a project grant is explicitly per project: it makes the workspace one, and projects it
    granted = await api.client.put(
        "/api/mcp/connectors/time/tools/get_current_time", params=params, json={"decision": "allow"}
    )
    assert granted.json()["project_id"].startswith("prj_")
    assert [p.path for p in api.service.repository.projects.list_all()] == [str(fresh)]
    assert (fresh / ".patchbay" / "mcp-runtime.json").exists()


async def test_a_failed_probe_shows_in_the_list_and_the_detail_until_the_config_changes(api: Api) -> None:
    created = await api.create(
        "ghost", {"transport": "stdio", "command": "pb-no-such-command-for-api-tests"}, enabled=True
    )
    assert created["last_probe"] is None and created["runtime_state"] == "unknown"
    probe = (await api.client.post("/api/mcp/connectors/ghost/probe")).json()

    listed = (await api.client.get("/api/mcp/connectors")).json()["connectors"]
    shown = (await api.client.get("/api/mcp/connectors/ghost")).json()
    for body in (listed[0], shown):
        assert body["runtime_state"] == "error"
        assert body["error"]["code"] == "command_not_found" and body["error"]["message"] == probe["message"]
        last = body["last_probe"]
        assert (last["state"], last["code"], last["tool_count"], last["current"]) == (
            "error",
            "command_not_found",
            0,
            True,
        )
        assert last["config_revision"] == created["revision"] and last["probed_at"] > 0

    patched = await api.client.patch(
        "/api/mcp/connectors/ghost", json={"revision": created["revision"], "description": "changed"}
    )
    assert patched.status_code == 200, patched.text
    changed = patched.json()
    assert changed["runtime_state"] == "unknown" and changed["error"] is None
    assert changed["last_probe"]["current"] is False


async def test_a_ready_probe_is_the_last_probe_too(api: Api) -> None:
    await _probed_time(api)
    shown = (await api.client.get("/api/mcp/connectors/time")).json()
    last = shown["last_probe"]
    assert (last["state"], last["code"], last["tool_count"], last["current"]) == ("ready", None, 2, True)


async def test_tools_carry_their_whole_input_schema_from_the_cache(api: Api) -> None:
    await _probed_time(api)
    cached = {
        t.name: t.input_schema
        for t in api.service.repository.tool_cache.get(api.service.get("time").connector_id).tools
    }
    body = (await api.client.get("/api/mcp/connectors/time/tools")).json()
    schemas = {t["name"]: t["input_schema"] for t in body["tools"]}
    assert schemas == cached
    assert schemas["get_current_time"]["required"] == ["timezone"]
    assert schemas["get_current_time"]["properties"]["timezone"]["type"] == "string"


async def test_resource_and_prompt_grants_have_their_own_routes_and_key_spaces(api: Api) -> None:
    await _probed_time(api)
    connector_id = api.service.get("time").connector_id
    put = await api.client.put("/api/mcp/connectors/time/resources/grant", json={"decision": "allow"})
    assert put.status_code == 200, put.text
    assert put.json() == {
        "connector": "time",
        "kind": "resource",
        "subject": "*",
        "decision": "allow",
        "scope": "global",
        "project_id": None,
        "runtime_reload": NO_RELOAD,
    }
    project = await api.client.put(
        "/api/mcp/connectors/time/resources/grant", params={"cwd": str(api.workspace)}, json={"decision": "deny"}
    )
    assert project.json()["scope"] == "project" and project.json()["project_id"].startswith("prj_")
    prompt = await api.client.put("/api/mcp/connectors/time/prompts/a%2Fb/grant", json={"decision": "deny"})
    assert (prompt.status_code, prompt.json()["kind"], prompt.json()["subject"]) == (200, "prompt", "a/b")
    asked = await api.client.put("/api/mcp/connectors/time/prompts/a/grant", json={"decision": "ask"})
    assert asked.status_code == 422 and error_of(asked)["details"]["field"] == "decision"

    repo = api.service.repository
    assert [(g.kind, g.tool_name, g.decision) for g in repo.grants.list_global(connector_id, kind="resource")] == [
        ("resource", "*", "allow")
    ]
    assert [(g.tool_name, g.decision) for g in repo.grants.list_global(connector_id, kind="prompt")] == [
        ("a/b", "deny")
    ]
    assert repo.grants.list_global(connector_id) == []  # no tool grant was written
    assert (await api.client.get("/api/mcp/connectors/time/tools")).json()["unmatched_grants"] == []

    # The old spelling of the resource grant is no tool grant any more: refused, with the way to go.
    old = await api.client.put("/api/mcp/connectors/time/tools/resources%2Fread", json={"decision": "allow"})
    assert old.status_code == 422 and "resources/grant" in error_of(old)["message"]

    cleared = await api.client.delete("/api/mcp/connectors/time/resources/grant")
    assert cleared.json()["cleared"] is True and cleared.json()["scope"] == "global"
    again = await api.client.delete("/api/mcp/connectors/time/prompts/a%2Fb/grant")
    assert again.json()["cleared"] is True
    assert repo.grants.list_global(connector_id, kind="resource") == []
    assert [
        g.decision for g in repo.grants.list_for_project(project.json()["project_id"], connector_id, kind="resource")
    ] == ["deny"]


async def test_tools_flag_names_outside_the_mcp_rule_and_show_resource_reads(api: Api) -> None:
    fixture = FIXTURES / "dynamic_server.py"
    args = [str(fixture), "--initial", "danger", "--initial", "d\u0430nger", "--initial", "danger\u200b"]
    await api.create("evil", {"transport": "stdio", "command": sys.executable, "args": args}, enabled=True)
    probed = await api.client.post("/api/mcp/connectors/evil/probe")
    assert probed.json()["state"] == "ready", probed.text
    assert [d["tool"] for d in probed.json()["diagnostics"]] == ["d\u0430nger", "danger\u200b"]

    await api.client.put("/api/mcp/connectors/evil/tools/danger", json={"decision": "deny"})
    await api.client.put("/api/mcp/connectors/evil/prompts/*/grant", json={"decision": "deny"})
    body = (await api.client.get("/api/mcp/connectors/evil/tools")).json()
    tools = {t["name"]: t for t in body["tools"]}
    assert (tools["danger"]["decision"], tools["danger"]["name_flag"]) == ("deny", None)
    assert tools["d\u0430nger"]["decision"] == "ask"  # the deny stays exact; the lookalike is flagged
    assert "U+0430 CYRILLIC SMALL LETTER A" in tools["d\u0430nger"]["name_flag"]
    assert "U+200B ZERO WIDTH SPACE" in tools["danger\u200b"]["name_flag"]
    assert tools["add_tool"]["name_flag"] is None
    assert body["resource_reads"] == {
        "decision": "ask",
        "source": "approval_mode",
        "global_grant": None,
        "project_grant": None,
    }
    assert [(g["tool_name"], g["decision"]) for g in body["prompt_grants"]] == [("*", "deny")]
