"""Grants (patchbay.adapters.store.grants): idempotent upserts that leave revisions alone, one key
space per kind, bad grants refused. On SQLite, and on PostgreSQL where a test takes ``any_repo``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_global_tool_grants, mcp_project_tool_grants
from patchbay.core.errors import ConfigError, ErrorCode, NotFoundError
from patchbay.core.models import StdioTarget, ToolGrant

STDIO = StdioTarget(command="mcp-server-time", args=("--local-timezone", "UTC"), cwd="tools")


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_grants_are_idempotent_upserts_that_leave_revisions_alone(any_repo: Repository, tmp_path: Path) -> None:
    connector = any_repo.connectors.create("time", "Time", STDIO)
    project = any_repo.projects.ensure(tmp_path)

    any_repo.grants.set_global(connector.connector_id, "not_in_cache", "ask")
    grant = any_repo.grants.set_global(connector.connector_id, "not_in_cache", "deny")
    any_repo.grants.set_for_project(project.project_id, connector.connector_id, "get_time", "allow")
    override = any_repo.grants.set_for_project(project.project_id, connector.connector_id, "get_time", "ask")

    assert any_repo.grants.list_global() == [grant] == any_repo.grants.list_global(connector.connector_id)
    assert grant.decision == "deny" and grant.project_id is None
    assert any_repo.grants.list_for_project(project.project_id, connector.connector_id) == [override]
    assert override.project_id == project.project_id and override.decision == "ask"
    assert any_repo.grants.list_global("con_other") == []
    after = any_repo.connectors.get(connector.connector_id)
    assert (after.revision, after.settings.revision, after.updated_at) == (1, 1, connector.updated_at)

    assert any_repo.grants.clear_global(connector.connector_id, "not_in_cache") is True
    assert any_repo.grants.clear_global(connector.connector_id, "not_in_cache") is False
    assert any_repo.grants.clear_for_project(project.project_id, connector.connector_id, "get_time") is True
    assert any_repo.grants.list_global() == [] and any_repo.grants.list_for_project(project.project_id) == []


def test_bad_grants_are_refused_and_store_nothing(repo: Repository, tmp_path: Path) -> None:
    connector = repo.connectors.create("time", "Time", STDIO)
    project = repo.projects.ensure(tmp_path)

    with pytest.raises(ConfigError) as info:
        repo.grants.set_global(connector.connector_id, "t", "always")
    assert info.value.field == "decision" and info.value.code == ErrorCode.INVALID_CONFIG
    with pytest.raises(ConfigError) as info:
        repo.grants.set_for_project(project.project_id, connector.connector_id, "", "allow")
    assert info.value.field == "tool_name"
    with pytest.raises(NotFoundError):
        repo.grants.set_global("con_missing", "t", "allow")
    with pytest.raises(NotFoundError):
        repo.grants.set_for_project("prj_missing", connector.connector_id, "t", "allow")
    with pytest.raises(NotFoundError):
        repo.grants.set_for_project(project.project_id, "con_missing", "t", "allow")

    assert _count(repo, mcp_global_tool_grants) == 0 and _count(repo, mcp_project_tool_grants) == 0


def test_tool_resource_and_prompt_grants_are_separate_key_spaces(any_repo: Repository, tmp_path: Path) -> None:
    connector = any_repo.connectors.create("evil", "Evil", STDIO)
    cid = connector.connector_id
    project = any_repo.projects.ensure(tmp_path)

    tool = any_repo.grants.set_global(cid, "*", "allow")
    reads = any_repo.grants.set_global(cid, "*", "deny", kind="resource")
    prompt = any_repo.grants.set_global(cid, "*", "deny", kind="prompt")
    local = any_repo.grants.set_for_project(project.project_id, cid, "*", "ask", kind="resource")

    assert [(g.kind, g.decision) for g in (tool, reads, prompt, local)] == [
        ("tool", "allow"),
        ("resource", "deny"),
        ("prompt", "deny"),
        ("resource", "ask"),
    ]
    assert any_repo.grants.list_global(cid) == [tool]
    assert any_repo.grants.list_global(cid, kind="resource") == [reads]
    assert any_repo.grants.list_global(cid, kind="prompt") == [prompt]
    assert any_repo.grants.list_for_project(project.project_id, cid, kind="resource") == [local]
    assert any_repo.grants.list_for_project(project.project_id, cid) == []

    assert any_repo.grants.clear_global(cid, "*", kind="prompt") is True
    assert any_repo.grants.list_global(cid) == [tool]  # clearing one key space leaves the others
    assert any_repo.grants.list_global(cid, kind="resource") == [reads]
    assert any_repo.grants.clear_for_project(project.project_id, cid, "*") is False
    assert any_repo.grants.clear_for_project(project.project_id, cid, "*", kind="resource") is True


def test_the_grants_in_a_projects_scope_are_the_global_ones_and_its_own_of_every_kind(
    any_repo: Repository, tmp_path: Path
) -> None:
    cid = any_repo.connectors.create("evil", "Evil", STDIO).connector_id
    here, there = any_repo.projects.ensure(tmp_path / "a"), any_repo.projects.ensure(tmp_path / "b")
    tool = any_repo.grants.set_global(cid, "t", "allow")
    prompt = any_repo.grants.set_global(cid, "*", "deny", kind="prompt")
    local = any_repo.grants.set_for_project(here.project_id, cid, "*", "ask", kind="resource")
    any_repo.grants.set_for_project(there.project_id, cid, "t", "deny")

    def key(grant: ToolGrant) -> tuple[str, str, str]:
        return (grant.project_id or "", grant.kind, grant.tool_name)

    assert sorted(any_repo.grants.in_scope(here.project_id), key=key) == sorted([tool, prompt, local], key=key)


def test_grants_a_key_space_cannot_hold_are_refused(repo: Repository) -> None:
    cid = repo.connectors.create("evil", "Evil", STDIO).connector_id
    for subject, decision, kind, field in (
        ("fixture://doc/1", "allow", "resource", "tool_name"),
        ("greet", "ask", "prompt", "decision"),
        ("x", "allow", "secret", "kind"),
    ):
        with pytest.raises(ConfigError) as info:
            repo.grants.set_global(cid, subject, decision, kind=kind)  # type: ignore[arg-type]
        assert info.value.field == field
    assert _count(repo, mcp_global_tool_grants) == 0
