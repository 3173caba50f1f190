"""Connectors and their global settings (patchbay.adapters.store.connectors): CRUD, the two optimistic
locks, name uniqueness, built-ins, cascading delete, no partial state. On SQLite, and on PostgreSQL
where a test takes ``any_repo``."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_tool_cache
from patchbay.core.errors import BuiltinConnectorError, ConfigError, ErrorCode, NotFoundError, RevisionConflictError
from patchbay.core.models import ConnectorSettings, HttpTarget, SocketTarget, StdioTarget, ToolCacheEntry

STDIO = StdioTarget(command="mcp-server-time", args=("--local-timezone", "UTC"), cwd="tools")


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_connector_crud_round_trips_every_transport(any_repo: Repository) -> None:
    time_ = any_repo.connectors.create(
        "time", "Time", STDIO, description="clock", runtime_config={"lifecycle": "lazy"}, credential_ref="cred_1"
    )
    remote = any_repo.connectors.create(
        "remote", "Remote", HttpTarget(transport="sse", url="https://mcp.example.com/sse"), source="imported"
    )
    sock = any_repo.connectors.create("sock", "Socket", {"transport": "socket", "path": "/run/mcp.sock"})

    assert time_.connector_id.startswith("con_") and len(time_.connector_id) == 36
    assert (time_.revision, time_.settings.revision, time_.created_at) == (1, 1, time_.updated_at)
    assert any_repo.connectors.get(time_.connector_id) == time_
    assert any_repo.connectors.get(time_.connector_id).target == STDIO  # cwd survives via runtime_config_json
    assert any_repo.connectors.get(time_.connector_id).runtime_config == {"lifecycle": "lazy"}
    assert any_repo.connectors.get_by_name("TIME") == time_
    assert any_repo.connectors.get(remote.connector_id).target == HttpTarget(
        transport="sse", url="https://mcp.example.com/sse"
    )
    assert any_repo.connectors.get(sock.connector_id).target == SocketTarget(path="/run/mcp.sock")
    assert [c.name for c in any_repo.connectors.list_all()] == ["remote", "sock", "time"]

    moved = any_repo.connectors.update(
        time_.connector_id,
        1,
        display_name="Clock",
        target=HttpTarget(url="https://clock.example.com/mcp"),
        credential_ref=None,
    )
    assert moved.revision == 2 and moved.display_name == "Clock" and moved.credential_ref is None
    assert moved.target == HttpTarget(url="https://clock.example.com/mcp")
    assert moved.runtime_config == {"lifecycle": "lazy"}  # kept; the old stdio cwd went with the old target
    assert any_repo.connectors.get(time_.connector_id) == moved

    any_repo.connectors.delete(time_.connector_id)
    with pytest.raises(NotFoundError) as info:
        any_repo.connectors.get(time_.connector_id)
    assert info.value.code == ErrorCode.NOT_FOUND
    with pytest.raises(NotFoundError):
        any_repo.connectors.get_by_name("time")
    with pytest.raises(NotFoundError):
        any_repo.connectors.delete(time_.connector_id)


def test_stale_revision_is_a_conflict_and_changes_nothing(any_repo: Repository) -> None:
    created = any_repo.connectors.create("time", "Time", STDIO)
    current = any_repo.connectors.update(created.connector_id, 1, description="first writer")

    with pytest.raises(RevisionConflictError) as info:
        any_repo.connectors.update(
            created.connector_id, 1, description="second writer", target=HttpTarget(url="https://x.example")
        )

    assert info.value.code == ErrorCode.REVISION_CONFLICT
    assert info.value.details == {"expected": 1, "actual": 2}
    assert info.value.message.startswith("connector 'time' is at revision 2, not 1 (its definition's revision;")
    assert any_repo.connectors.get(created.connector_id) == current
    with pytest.raises(NotFoundError):
        any_repo.connectors.update("con_missing", 1, description="x")


@pytest.mark.parametrize("revision", [2**31, 2**42, -(2**40)])
def test_a_revision_no_row_can_hold_is_a_conflict(any_repo: Repository, revision: int) -> None:
    created = any_repo.connectors.create("time", "Time", STDIO)

    with pytest.raises(RevisionConflictError) as settings:
        any_repo.connectors.update_settings(created.connector_id, revision, enabled=False)
    with pytest.raises(RevisionConflictError) as definition:
        any_repo.connectors.update(created.connector_id, revision, description="x")

    assert settings.value.details == definition.value.details == {"expected": revision, "actual": 1}
    assert any_repo.connectors.get(created.connector_id) == created


def test_settings_revision_is_independent_of_connector_revision(any_repo: Repository) -> None:
    created = any_repo.connectors.create("time", "Time", STDIO)

    updated = any_repo.connectors.update_settings(
        created.connector_id,
        1,
        enabled=False,
        include_tools=["get_*"],
        exclude_tools=["set_*"],
        approval_mode="allow_all",
    )
    assert (updated.revision, updated.settings.revision) == (1, 2)
    assert updated.settings == ConnectorSettings(
        enabled=False, include_tools=("get_*",), exclude_tools=("set_*",), approval_mode="allow_all", revision=2
    )
    renamed = any_repo.connectors.update(created.connector_id, 1, display_name="Clock")
    assert (renamed.revision, renamed.settings.revision) == (2, 2)

    with pytest.raises(RevisionConflictError) as info:
        any_repo.connectors.update_settings(created.connector_id, 1, enabled=True)
    assert info.value.details == {"expected": 1, "actual": 2}
    assert info.value.message.startswith("connector 'time': its settings are at settings revision 2, not 1")
    assert any_repo.connectors.get(created.connector_id).settings.enabled is False


def test_concurrent_updates_with_the_same_revision_have_one_winner(any_repo: Repository) -> None:
    created = any_repo.connectors.create("time", "Time", STDIO)
    barrier = threading.Barrier(4)

    def attempt(i: int) -> str:
        barrier.wait()
        try:
            any_repo.connectors.update(created.connector_id, 1, description=f"writer {i}")
        except RevisionConflictError:
            return "conflict"
        return "won"

    with ThreadPoolExecutor(4) as pool:
        outcomes = sorted(pool.map(attempt, range(4)))

    assert outcomes == ["conflict", "conflict", "conflict", "won"]
    assert any_repo.connectors.get(created.connector_id).revision == 2


def test_duplicate_name_is_refused_case_insensitively(any_repo: Repository) -> None:
    first = any_repo.connectors.create("github", "GitHub", HttpTarget(url="https://api.example/mcp"))

    with pytest.raises(ConfigError) as info:
        any_repo.connectors.create("github", "Again", STDIO)
    assert info.value.code == ErrorCode.INVALID_CONFIG and info.value.field == "name"

    # The service never writes upper case, so check the database constraint itself.
    with pytest.raises(IntegrityError), any_repo.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO mcp_connectors (connector_id, name, display_name, source, transport, endpoint_url,"
                " created_at, updated_at) VALUES ('con_x', 'GitHub', 'x', 'custom', 'sse', 'https://x', 0, 0)"
            )
        )
    assert [c.connector_id for c in any_repo.connectors.list_all()] == [first.connector_id]


def test_deleting_a_connector_cascades_grants_and_cache(any_repo: Repository, tmp_path: Path) -> None:
    doomed = any_repo.connectors.create("doomed", "Doomed", STDIO)
    kept = any_repo.connectors.create("kept", "Kept", STDIO)
    project = any_repo.projects.ensure(tmp_path)
    for connector in (doomed, kept):
        any_repo.grants.set_global(connector.connector_id, "read", "allow")
        any_repo.grants.set_for_project(project.project_id, connector.connector_id, "write", "deny")
        any_repo.tool_cache.replace(
            ToolCacheEntry(connector_id=connector.connector_id, config_revision=1, fingerprint="f")
        )

    any_repo.connectors.delete(doomed.connector_id)

    assert [g.connector_id for g in any_repo.grants.list_global()] == [kept.connector_id]
    assert [g.connector_id for g in any_repo.grants.list_for_project(project.project_id)] == [kept.connector_id]
    assert any_repo.tool_cache.get(doomed.connector_id) is None
    assert any_repo.tool_cache.get(kept.connector_id) is not None
    assert _count(any_repo, mcp_tool_cache) == 1


def test_builtin_connectors_cannot_be_deleted(repo: Repository) -> None:
    builtin = repo.connectors.create("arxiv", "arXiv", HttpTarget(url="https://arxiv.example/mcp"), source="builtin")

    with pytest.raises(BuiltinConnectorError) as info:
        repo.connectors.delete(builtin.connector_id)

    assert info.value.code == ErrorCode.BUILTIN_CONNECTOR
    assert repo.connectors.get(builtin.connector_id) == builtin


def test_bad_input_leaves_no_partial_state(repo: Repository) -> None:
    with pytest.raises(ConfigError) as info:
        repo.connectors.create("time", "Time", STDIO, runtime_config={"when": object()})
    assert info.value.field == "runtime_config"
    with pytest.raises(ConfigError) as info:
        repo.connectors.create("time", "Time", STDIO, runtime_config={"cwd": "/etc"})
    assert info.value.field == "runtime_config"
    with pytest.raises(ConfigError) as info:
        repo.connectors.create("Bad Name", "Bad", STDIO)
    assert info.value.field == "name"
    with pytest.raises(ConfigError) as info:
        repo.connectors.create("time", "Time", {"transport": "stdio"})
    assert info.value.field == "target"
    assert repo.connectors.list_all() == []

    created = repo.connectors.create("time", "Time", STDIO)
    with pytest.raises(ConfigError):
        repo.connectors.update(created.connector_id, 1, display_name="New", runtime_config={"x": float("nan")})
    with pytest.raises(ConfigError):
        repo.connectors.update_settings(created.connector_id, 1, enabled=False, approval_mode="sometimes")
    with pytest.raises(ConfigError):
        repo.connectors.update_settings(created.connector_id, 1, include_tools="get_*")
    assert repo.connectors.get(created.connector_id) == created


def test_updates_without_changes_only_check_the_revision(repo: Repository) -> None:
    created = repo.connectors.create("time", "Time", STDIO)

    assert repo.connectors.update(created.connector_id, 1) == created
    assert repo.connectors.update_settings(created.connector_id, 1) == created
    with pytest.raises(RevisionConflictError):
        repo.connectors.update(created.connector_id, 7)
    with pytest.raises(RevisionConflictError):
        repo.connectors.update_settings(created.connector_id, 7)


def test_runtime_config_update_keeps_the_stdio_cwd(repo: Repository) -> None:
    created = repo.connectors.create("time", "Time", STDIO, runtime_config={"lifecycle": "lazy"})

    updated = repo.connectors.update(created.connector_id, 1, runtime_config={"lifecycle": "keep_alive"})

    assert updated.target == STDIO and updated.runtime_config == {"lifecycle": "keep_alive"}
    with repo.engine.connect() as conn:
        stored = conn.execute(text("SELECT runtime_config_json, args_json FROM mcp_connectors")).one()
    assert stored == ('{"lifecycle":"keep_alive","cwd":"tools"}', '["--local-timezone","UTC"]')
