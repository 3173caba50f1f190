"""Repository behaviour (seed 003 §5, §6, §7.1, §15) on SQLite, and on PostgreSQL where marked ``any_repo``."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DataError, IntegrityError

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_global_tool_grants, mcp_project_tool_grants, mcp_tool_cache
from patchbay.adapters.store.tool_cache import CacheSummary
from patchbay.core.errors import (
    BuiltinConnectorError,
    ConfigError,
    ErrorCode,
    NotFoundError,
    RevisionConflictError,
)
from patchbay.core.models import (
    ConnectorSettings,
    HttpTarget,
    ResourceSummary,
    SocketTarget,
    StdioTarget,
    ToolCacheEntry,
    ToolGrant,
    ToolSummary,
)

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


_VALID_ROW = {
    "connector_id": "con_raw",
    "name": "raw",
    "display_name": "Raw",
    "source": "custom",
    "transport": "stdio",
    "command": "echo",
    "endpoint_url": None,
    "socket_path": None,
    "args_json": "[]",
    "approval_mode": "ask",
    "enabled": 0,
}


def _raw_insert(repo: Repository, **overrides: object) -> None:
    row = {**_VALID_ROW, **overrides}
    columns = ", ".join(row)
    with repo.engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO mcp_connectors ({columns}, created_at, updated_at) VALUES ({', '.join(':' + c for c in row)}, 0, 0)"
            ),
            row,
        )


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"endpoint_url": "https://x.example"}, id="stdio-with-endpoint_url"),
        pytest.param({"command": None}, id="stdio-without-command"),
        pytest.param({"transport": "socket"}, id="socket-without-socket_path"),
        pytest.param({"transport": "sse", "command": None}, id="sse-without-url"),
        pytest.param({"source": "marketplace"}, id="bad-source"),
        pytest.param({"transport": "ftp"}, id="bad-transport"),
        pytest.param({"approval_mode": "always"}, id="bad-approval_mode"),
        pytest.param({"enabled": 2}, id="enabled-not-0-or-1"),
        pytest.param({"enabled": "yes"}, id="strict-integer-column"),
    ],
)
def test_connector_check_constraints_are_enforced(sqlite_repo: Repository, overrides: dict[str, object]) -> None:
    with pytest.raises(IntegrityError):
        _raw_insert(sqlite_repo, **overrides)
    _raw_insert(sqlite_repo)  # the baseline row itself is fine
    assert [c.name for c in sqlite_repo.connectors.list_all()] == ["raw"]


@pytest.mark.parametrize("column", ["args_json", "runtime_config_json", "include_tools_json", "exclude_tools_json"])
def test_invalid_json_is_refused_by_the_database(any_repo: Repository, column: str) -> None:
    expected = IntegrityError if any_repo.engine.dialect.name == "sqlite" else (IntegrityError, DataError)
    with pytest.raises(expected):
        _raw_insert(any_repo, **{column: "[not json"})
    assert any_repo.connectors.list_all() == []


def test_grant_and_cache_constraints_are_enforced(sqlite_repo: Repository) -> None:
    connector = sqlite_repo.connectors.create("time", "Time", STDIO)
    statements = [
        "INSERT INTO mcp_global_tool_grants VALUES (:cid, 't', 'maybe', 0, 'tool')",
        "INSERT INTO mcp_global_tool_grants VALUES ('con_missing', 't', 'allow', 0, 'tool')",
        "INSERT INTO mcp_tool_cache (connector_id, config_revision, fingerprint, tools_json, fetched_at, expires_at)"
        " VALUES (:cid, 1, 'f', '{broken', 0, 0)",
        "INSERT INTO mcp_tool_cache (connector_id, config_revision, fingerprint, tools_json, server_info_json,"
        " fetched_at, expires_at) VALUES (:cid, 1, 'f', '[]', 'nope', 0, 0)",
    ]
    for statement in statements:
        with pytest.raises(IntegrityError), sqlite_repo.engine.begin() as conn:
            conn.execute(text(statement), {"cid": connector.connector_id})
    assert _count(sqlite_repo, mcp_global_tool_grants) == 0 and _count(sqlite_repo, mcp_tool_cache) == 0


def test_sqlite_connections_get_the_pragmas(sqlite_repo: Repository) -> None:
    sqlite_repo.engine.dispose()  # force a brand-new DBAPI connection
    with sqlite_repo.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL


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


def test_deleting_a_project_cascades_only_its_grants(any_repo: Repository, tmp_path: Path) -> None:
    connector = any_repo.connectors.create("time", "Time", STDIO)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    doomed, kept = any_repo.projects.ensure(tmp_path / "a"), any_repo.projects.ensure(tmp_path / "b")
    any_repo.grants.set_global(connector.connector_id, "t", "ask")
    any_repo.grants.set_for_project(doomed.project_id, connector.connector_id, "t", "allow")
    any_repo.grants.set_for_project(kept.project_id, connector.connector_id, "t", "deny")

    any_repo.projects.delete(doomed.project_id)

    assert _count(any_repo, mcp_project_tool_grants) == 1
    assert [g.decision for g in any_repo.grants.list_for_project(kept.project_id)] == ["deny"]
    assert [g.decision for g in any_repo.grants.list_global()] == ["ask"]
    assert any_repo.connectors.get(connector.connector_id).revision == 1
    with pytest.raises(NotFoundError):
        any_repo.projects.get(doomed.project_id)
    with pytest.raises(NotFoundError):
        any_repo.projects.delete(doomed.project_id)


def test_builtin_connectors_cannot_be_deleted(sqlite_repo: Repository) -> None:
    builtin = sqlite_repo.connectors.create(
        "arxiv", "arXiv", HttpTarget(url="https://arxiv.example/mcp"), source="builtin"
    )

    with pytest.raises(BuiltinConnectorError) as info:
        sqlite_repo.connectors.delete(builtin.connector_id)

    assert info.value.code == ErrorCode.BUILTIN_CONNECTOR
    assert sqlite_repo.connectors.get(builtin.connector_id) == builtin


def test_a_symlink_and_its_target_are_the_same_project(sqlite_repo: Repository, tmp_path: Path) -> None:
    real = tmp_path / "workspace"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)

    via_link = sqlite_repo.projects.ensure(link)
    via_real = sqlite_repo.projects.ensure(str(real))
    via_dotdot = sqlite_repo.projects.ensure(f"{real}/sub/..")

    assert via_link == via_real == via_dotdot == sqlite_repo.projects.get(via_real.project_id)
    assert via_real.path == os.path.realpath(real) and via_real.project_id.startswith("prj_")
    assert sqlite_repo.projects.ensure(tmp_path).project_id != via_real.project_id
    assert [p.path for p in sqlite_repo.projects.list_all()] == sorted([str(tmp_path.resolve()), str(real.resolve())])
    with pytest.raises(ConfigError):
        sqlite_repo.projects.ensure("")


def test_ensure_project_is_idempotent_under_concurrency(any_repo: Repository, tmp_path: Path) -> None:
    barrier = threading.Barrier(8)

    def ensure(_: int) -> str:
        barrier.wait()
        return any_repo.projects.ensure(tmp_path).project_id

    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(ensure, range(8)))

    assert len(ids) == 1
    assert [p.project_id for p in any_repo.projects.list_all()] == list(ids)


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


def test_bad_grants_are_refused_and_store_nothing(sqlite_repo: Repository, tmp_path: Path) -> None:
    connector = sqlite_repo.connectors.create("time", "Time", STDIO)
    project = sqlite_repo.projects.ensure(tmp_path)

    with pytest.raises(ConfigError) as info:
        sqlite_repo.grants.set_global(connector.connector_id, "t", "always")
    assert info.value.field == "decision" and info.value.code == ErrorCode.INVALID_CONFIG
    with pytest.raises(ConfigError) as info:
        sqlite_repo.grants.set_for_project(project.project_id, connector.connector_id, "", "allow")
    assert info.value.field == "tool_name"
    with pytest.raises(NotFoundError):
        sqlite_repo.grants.set_global("con_missing", "t", "allow")
    with pytest.raises(NotFoundError):
        sqlite_repo.grants.set_for_project("prj_missing", connector.connector_id, "t", "allow")
    with pytest.raises(NotFoundError):
        sqlite_repo.grants.set_for_project(project.project_id, "con_missing", "t", "allow")

    assert _count(sqlite_repo, mcp_global_tool_grants) == 0 and _count(sqlite_repo, mcp_project_tool_grants) == 0


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


def test_grants_a_key_space_cannot_hold_are_refused(sqlite_repo: Repository) -> None:
    cid = sqlite_repo.connectors.create("evil", "Evil", STDIO).connector_id
    for subject, decision, kind, field in (
        ("fixture://doc/1", "allow", "resource", "tool_name"),
        ("greet", "ask", "prompt", "decision"),
        ("x", "allow", "secret", "kind"),
    ):
        with pytest.raises(ConfigError) as info:
            sqlite_repo.grants.set_global(cid, subject, decision, kind=kind)  # type: ignore[arg-type]
        assert info.value.field == field
    assert _count(sqlite_repo, mcp_global_tool_grants) == 0


def test_tool_cache_round_trips_and_is_replaced_whole(sqlite_repo: Repository) -> None:
    connector = sqlite_repo.connectors.create("time", "Time", STDIO)
    first = ToolCacheEntry(
        connector_id=connector.connector_id,
        config_revision=1,
        fingerprint="sha256:aaa",
        tools=(
            ToolSummary(
                name="get_time",
                description="Now",
                input_schema={"type": "object", "properties": {"tz": {"type": "string"}}},
                annotations={"readOnlyHint": True},
            ),
        ),
        resources=(ResourceSummary(uri="file:///r", name="r", mime_type="text/plain"),),
        server_info={"name": "time", "version": "1.0"},
        fetched_at=1_700_000_000_000,
        expires_at=1_700_086_400_000,
    )
    assert sqlite_repo.tool_cache.replace(first) == first
    assert sqlite_repo.tool_cache.get(connector.connector_id) == first

    second = ToolCacheEntry(connector_id=connector.connector_id, config_revision=2, fingerprint="sha256:bbb")
    sqlite_repo.tool_cache.replace(second)
    assert sqlite_repo.tool_cache.get(connector.connector_id) == second
    assert _count(sqlite_repo, mcp_tool_cache) == 1
    with pytest.raises(NotFoundError):
        sqlite_repo.tool_cache.replace(second.model_copy(update={"connector_id": "con_missing"}))


def test_tool_cache_summaries_follow_every_replacement(any_repo: Repository) -> None:
    kept = any_repo.connectors.create("time", "Time", STDIO)
    other = any_repo.connectors.create("git", "Git", STDIO)
    assert any_repo.tool_cache.summaries() == {}
    tools = tuple(ToolSummary(name=f"t{i}") for i in range(3))
    any_repo.tool_cache.replace(
        ToolCacheEntry(connector_id=kept.connector_id, config_revision=1, fingerprint="f1", tools=tools)
    )
    any_repo.tool_cache.replace(ToolCacheEntry(connector_id=other.connector_id, config_revision=1, fingerprint="f2"))
    any_repo.tool_cache.replace(
        ToolCacheEntry(connector_id=kept.connector_id, config_revision=2, fingerprint="f3", tools=tools[:1])
    )

    assert any_repo.tool_cache.summaries() == {
        kept.connector_id: CacheSummary(config_revision=2, fingerprint="f3", tool_count=1),
        other.connector_id: CacheSummary(config_revision=1, fingerprint="f2", tool_count=0),
    }
    any_repo.connectors.delete(other.connector_id)
    assert set(any_repo.tool_cache.summaries()) == {kept.connector_id}


def test_bad_input_leaves_no_partial_state(sqlite_repo: Repository) -> None:
    with pytest.raises(ConfigError) as info:
        sqlite_repo.connectors.create("time", "Time", STDIO, runtime_config={"when": object()})
    assert info.value.field == "runtime_config"
    with pytest.raises(ConfigError) as info:
        sqlite_repo.connectors.create("time", "Time", STDIO, runtime_config={"cwd": "/etc"})
    assert info.value.field == "runtime_config"
    with pytest.raises(ConfigError) as info:
        sqlite_repo.connectors.create("Bad Name", "Bad", STDIO)
    assert info.value.field == "name"
    with pytest.raises(ConfigError) as info:
        sqlite_repo.connectors.create("time", "Time", {"transport": "stdio"})
    assert info.value.field == "target"
    assert sqlite_repo.connectors.list_all() == []

    created = sqlite_repo.connectors.create("time", "Time", STDIO)
    with pytest.raises(ConfigError):
        sqlite_repo.connectors.update(created.connector_id, 1, display_name="New", runtime_config={"x": float("nan")})
    with pytest.raises(ConfigError):
        sqlite_repo.connectors.update_settings(created.connector_id, 1, enabled=False, approval_mode="sometimes")
    with pytest.raises(ConfigError):
        sqlite_repo.connectors.update_settings(created.connector_id, 1, include_tools="get_*")
    assert sqlite_repo.connectors.get(created.connector_id) == created


def test_updates_without_changes_only_check_the_revision(sqlite_repo: Repository) -> None:
    created = sqlite_repo.connectors.create("time", "Time", STDIO)

    assert sqlite_repo.connectors.update(created.connector_id, 1) == created
    assert sqlite_repo.connectors.update_settings(created.connector_id, 1) == created
    with pytest.raises(RevisionConflictError):
        sqlite_repo.connectors.update(created.connector_id, 7)
    with pytest.raises(RevisionConflictError):
        sqlite_repo.connectors.update_settings(created.connector_id, 7)


def test_runtime_config_update_keeps_the_stdio_cwd(sqlite_repo: Repository) -> None:
    created = sqlite_repo.connectors.create("time", "Time", STDIO, runtime_config={"lifecycle": "lazy"})

    updated = sqlite_repo.connectors.update(created.connector_id, 1, runtime_config={"lifecycle": "keep_alive"})

    assert updated.target == STDIO and updated.runtime_config == {"lifecycle": "keep_alive"}
    with sqlite_repo.engine.connect() as conn:
        stored = conn.execute(text("SELECT runtime_config_json, args_json FROM mcp_connectors")).one()
    assert stored == ('{"lifecycle":"keep_alive","cwd":"tools"}', '["--local-timezone","UTC"]')


def test_the_store_package_exports_exactly_its_public_api() -> None:
    import patchbay.adapters.store as store

    assert sorted(store.__all__) == ["Repository", "create_engine_for", "open_store", "upgrade_to_head"]
    assert all(callable(getattr(store, name)) for name in store.__all__)
