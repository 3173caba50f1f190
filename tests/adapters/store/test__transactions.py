"""The store's change counter: every committed write that changes a row moves it, in the same
transaction, on SQLite and PostgreSQL; a write that changes nothing or rolls back does not."""

from __future__ import annotations

import pytest

from patchbay.adapters.store import Repository, create_engine_for
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import ProbeOutcome, StdioTarget, ToolCacheEntry

STDIO = StdioTarget(command="mcp-server-time")


def _moves(repo: Repository, change) -> bool:
    before = repo.state_version()
    change()
    return repo.state_version() != before


def test_every_kind_of_write_moves_the_counter(any_repo: Repository, tmp_path) -> None:
    repo = any_repo
    workspace = tmp_path / "ws"
    workspace.mkdir()
    connector = repo.connectors.create("time", "Time", STDIO)
    assert repo.state_version() > 0
    cid = connector.connector_id
    project = repo.projects.ensure(workspace)
    assert not _moves(repo, lambda: repo.projects.ensure(workspace))  # already there: nothing changed

    assert _moves(repo, lambda: repo.connectors.update(cid, 1, description="clock"))
    assert _moves(repo, lambda: repo.connectors.update_settings(cid, 1, approval_mode="allow_all"))
    assert _moves(repo, lambda: repo.grants.set_global(cid, "get_current_time", "deny"))
    assert _moves(repo, lambda: repo.grants.clear_global(cid, "get_current_time"))
    assert not _moves(repo, lambda: repo.grants.clear_global(cid, "get_current_time"))  # nothing to clear
    assert _moves(repo, lambda: repo.grants.set_for_project(project.project_id, cid, "convert_time", "allow"))
    assert _moves(repo, lambda: repo.grants.clear_for_project(project.project_id, cid, "convert_time"))
    entry = ToolCacheEntry(
        connector_id=cid, config_revision=2, fingerprint="f" * 64, tools=(), fetched_at=1, expires_at=2
    )
    assert _moves(repo, lambda: repo.tool_cache.replace(entry))
    outcome = ProbeOutcome(
        connector_id=cid,
        state="error",
        code="timeout",
        message="m",
        tool_count=0,
        duration_ms=1,
        probed_at=1,
        config_revision=2,
    )
    assert not _moves(repo, lambda: repo.probe_outcomes.record(outcome))  # no runtime reads it
    assert _moves(repo, lambda: repo.projects.delete(project.project_id))
    assert _moves(repo, lambda: repo.connectors.delete(cid))


def test_a_refused_write_leaves_the_counter_alone(any_repo: Repository) -> None:
    repo = any_repo
    repo.connectors.create("time", "Time", STDIO)
    before = repo.state_version()
    with pytest.raises(ConfigError):
        repo.connectors.create_many(
            [
                {"name": "a", "display_name": "A", "target": STDIO},
                {"name": "time", "display_name": "T", "target": STDIO},
            ]
        )
    with pytest.raises(NotFoundError):
        repo.grants.set_global("con_missing", "x", "deny")
    assert repo.state_version() == before


def test_another_engine_on_the_same_database_sees_the_change(any_repo: Repository) -> None:
    """A second process is modelled by a second engine (its own connections, its own pool)."""
    other = Repository(create_engine_for(str(any_repo.engine.url.render_as_string(hide_password=False))))
    try:
        seen = other.state_version()
        any_repo.connectors.create("time", "Time", STDIO)
        assert other.state_version() != seen
        seen = other.state_version()
        other.grants.set_global(other.connectors.get_by_name("time").connector_id, "t", "deny")
        assert any_repo.state_version() != seen
    finally:
        other.close()
