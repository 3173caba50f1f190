"""Alembic migrations of the canonical store: schema creation, idempotence, agreement with tables.py."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, inspect, text
from sqlalchemy.exc import IntegrityError

from patchbay.adapters.store import Repository, create_engine_for, open_store, upgrade_to_head
from patchbay.adapters.store.db import SCRIPT_LOCATION
from patchbay.adapters.store.tables import metadata
from patchbay.core.errors import CanonicalStateUnavailable, ErrorCode
from patchbay.core.models import StdioTarget
from patchbay.core.settings import Settings


def _head() -> str | None:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return ScriptDirectory.from_config(config).get_current_head()


HEAD = _head()
TABLES = {
    "mcp_connectors",
    "mcp_global_tool_grants",
    "projects",
    "mcp_project_tool_grants",
    "mcp_tool_cache",
    "mcp_probe_outcomes",
    "state_version",
    "session_events",
    "session_records",
    "pending_approvals",
}


def _assert_consistent(engine: Engine) -> None:
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalars().all() == ["ok"]
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []


def _version(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _sqlite_schema(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql("SELECT name, sql FROM sqlite_master ORDER BY name").all()]


def _metadata_for(dialect: str) -> MetaData:
    """``tables.metadata`` without the objects that exist only on the other dialect (``ddl_if``)."""

    def elsewhere(obj: object) -> bool:
        ddl_if = getattr(obj, "_ddl_if", None)
        return ddl_if is not None and ddl_if.dialect != dialect

    copy = MetaData()
    for original in metadata.sorted_tables:
        skip = {obj.name for obj in (*original.indexes, *original.constraints) if elsewhere(obj)}
        table = original.to_metadata(copy)
        for index in [ix for ix in table.indexes if ix.name in skip]:
            table.indexes.discard(index)
        for constraint in [c for c in table.constraints if c.name in skip]:
            table.constraints.discard(constraint)
    return copy


def _schema_diff(engine: Engine) -> list[object]:
    """What autogenerate would change to make the migrated database match ``tables.metadata``."""

    def include_object(obj, name, type_, reflected, compare_to):
        return name != "alembic_version"

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": include_object, "compare_type": True})
        return compare_metadata(context, _metadata_for(engine.dialect.name))


def test_upgrade_on_an_empty_database_creates_strict_tables(sqlite_url: str) -> None:
    engine = create_engine_for(sqlite_url)
    assert _version(engine) is None

    upgrade_to_head(engine)

    assert set(inspect(engine).get_table_names()) == TABLES | {"alembic_version"}
    assert _version(engine) == HEAD
    with engine.connect() as conn:
        strict = dict(conn.exec_driver_sql("SELECT name, strict FROM pragma_table_list WHERE schema = 'main'").all())
    assert all(strict[name] == 1 for name in TABLES)
    _assert_consistent(engine)
    engine.dispose()


def test_upgrading_twice_is_a_no_op(sqlite_url: str) -> None:
    engine = create_engine_for(sqlite_url)
    upgrade_to_head(engine)
    repo = Repository(engine)
    connector = repo.connectors.create("time", "Time", StdioTarget(command="mcp-server-time"))
    before = _sqlite_schema(engine)

    upgrade_to_head(engine)

    assert _sqlite_schema(engine) == before
    assert _version(engine) == HEAD
    assert repo.connectors.list_all() == [connector]
    engine.dispose()


def test_migrated_sqlite_schema_matches_the_table_metadata(sqlite_url: str) -> None:
    engine = create_engine_for(sqlite_url)
    upgrade_to_head(engine)
    assert _schema_diff(engine) == []
    engine.dispose()


def test_migrated_postgres_schema_matches_the_table_metadata(postgres_url: str) -> None:
    engine = create_engine_for(postgres_url)
    upgrade_to_head(engine)
    upgrade_to_head(engine)  # second run: no-op

    assert set(inspect(engine).get_table_names()) == TABLES | {"alembic_version"}
    assert _version(engine) == HEAD
    assert _schema_diff(engine) == []
    unique = {ix["name"]: ix for ix in inspect(engine).get_indexes("mcp_connectors")}
    assert unique["uq_mcp_connectors_name_lower"]["unique"]
    engine.dispose()


def test_downgrade_to_base_and_back(sqlite_url: str) -> None:
    engine = create_engine_for(sqlite_url)
    upgrade_to_head(engine)
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)

    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}

    upgrade_to_head(engine)
    assert set(inspect(engine).get_table_names()) == TABLES | {"alembic_version"}
    engine.dispose()


def test_concurrent_first_opens_all_succeed(sqlite_url: str) -> None:
    barrier = threading.Barrier(4)

    def open_and_upgrade(_: int) -> str | None:
        engine = create_engine_for(sqlite_url)
        try:
            barrier.wait()
            upgrade_to_head(engine)
            return _version(engine)
        finally:
            engine.dispose()

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_upgrade, range(4))) == [HEAD] * 4


@pytest.mark.sqlite_only(reason="the data home's SQLite file")
def test_open_store_migrates_the_settings_database(tmp_path: Path) -> None:
    repo = open_store(Settings(home=tmp_path / "home"))
    try:
        assert (tmp_path / "home" / "patchbay.db").is_file()
        assert _version(repo.engine) == HEAD
        assert repo.connectors.list_all() == []
    finally:
        repo.close()


def test_open_store_reports_an_unusable_database(tmp_path: Path) -> None:
    (tmp_path / "is-a-directory.db").mkdir()

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'is-a-directory.db'}"))

    assert info.value.code == ErrorCode.CANONICAL_STATE_UNAVAILABLE


def _upgrade_to(engine: Engine, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_grant_kinds_migration_moves_the_old_resource_key_into_its_own_key_space(
    dialect: str, request: pytest.FixtureRequest
) -> None:
    engine = create_engine_for(request.getfixturevalue("sqlite_url" if dialect == "sqlite" else "postgres_url"))
    _upgrade_to(engine, "0001")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO mcp_connectors (connector_id, name, display_name, source, transport, command, "
            "created_at, updated_at) VALUES ('c1', 'evil', 'Evil', 'custom', 'stdio', 'evil-mcp', 1, 1)"
        )
        conn.exec_driver_sql("INSERT INTO projects (project_id, path, created_at) VALUES ('prj_1', '/w', 1)")
        conn.exec_driver_sql(
            "INSERT INTO mcp_global_tool_grants (connector_id, tool_name, decision, updated_at) VALUES "
            "('c1', 'resources/read', 'allow', 1), ('c1', 'get', 'deny', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO mcp_project_tool_grants (project_id, connector_id, tool_name, decision, updated_at) "
            "VALUES ('prj_1', 'c1', 'resources/read', 'deny', 1)"
        )

    upgrade_to_head(engine)

    repo = Repository(engine)
    assert [(g.tool_name, g.decision) for g in repo.grants.list_global("c1")] == [("get", "deny")]
    assert [(g.kind, g.tool_name, g.decision) for g in repo.grants.list_global("c1", kind="resource")] == [
        ("resource", "*", "allow")
    ]
    assert [(g.tool_name, g.decision) for g in repo.grants.list_for_project("prj_1", "c1", kind="resource")] == [
        ("*", "deny")
    ]
    assert repo.grants.list_for_project("prj_1", "c1") == []
    # A tool may now be called resources/read without touching the resource grant.
    repo.grants.set_global("c1", "resources/read", "ask")
    assert [g.decision for g in repo.grants.list_global("c1", kind="resource")] == ["allow"]
    assert _schema_diff(engine) == []
    if dialect == "sqlite":
        _assert_consistent(engine)
    engine.dispose()


def test_grant_kind_checks_refuse_what_no_key_space_holds(sqlite_url: str) -> None:
    engine = create_engine_for(sqlite_url)
    upgrade_to_head(engine)
    repo = Repository(engine)
    connector = repo.connectors.create("evil", "Evil", StdioTarget(command="evil-mcp"))
    for statement in (
        "INSERT INTO mcp_global_tool_grants VALUES (:c, 'x', 'allow', 1, 'secret')",
        "INSERT INTO mcp_global_tool_grants VALUES (:c, 'one-uri', 'allow', 1, 'resource')",
        "INSERT INTO mcp_global_tool_grants VALUES (:c, 'p1', 'ask', 1, 'prompt')",
    ):
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text(statement), {"c": connector.connector_id})
    assert repo.grants.list_global(connector.connector_id, kind="prompt") == []
    engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_downgrade_from_grant_kinds_restores_the_old_resource_key(dialect: str, request: pytest.FixtureRequest) -> None:
    engine = create_engine_for(request.getfixturevalue("sqlite_url" if dialect == "sqlite" else "postgres_url"))
    upgrade_to_head(engine)
    repo = Repository(engine)
    connector = repo.connectors.create("evil", "Evil", StdioTarget(command="evil-mcp"))
    repo.grants.set_global(connector.connector_id, "*", "deny", kind="resource")
    repo.grants.set_global(connector.connector_id, "p1", "deny", kind="prompt")
    repo.grants.set_global(connector.connector_id, "get", "allow")

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0001")
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT tool_name, decision FROM mcp_global_tool_grants ORDER BY 1").all()
    assert [tuple(r) for r in rows] == [("get", "allow"), ("resources/read", "deny")]
    engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_tool_count_migration_counts_the_tools_already_cached(dialect: str, request: pytest.FixtureRequest) -> None:
    engine = create_engine_for(request.getfixturevalue("sqlite_url" if dialect == "sqlite" else "postgres_url"))
    _upgrade_to(engine, "0004")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO mcp_connectors (connector_id, name, display_name, source, transport, command, "
            "created_at, updated_at) VALUES ('c1', 'three', 'Three', 'custom', 'stdio', 'three-mcp', 1, 1), "
            "('c2', 'none', 'None', 'custom', 'stdio', 'none-mcp', 1, 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO mcp_tool_cache (connector_id, config_revision, fingerprint, tools_json, fetched_at, "
            'expires_at) VALUES (\'c1\', 1, \'f1\', \'[{"name":"a"},{"name":"b"},{"name":"c"}]\', 1, 2), '
            "('c2', 1, 'f2', '[]', 1, 2)"
        )

    upgrade_to_head(engine)

    summaries = Repository(engine).tool_cache.summaries()
    assert {cid: s.tool_count for cid, s in summaries.items()} == {"c1": 3, "c2": 0}
    assert _schema_diff(engine) == []
    engine.dispose()


def test_the_cheap_head_check_agrees_with_alembic() -> None:
    from alembic.script import ScriptDirectory

    from patchbay.adapters.store.db import script_heads

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    assert script_heads() == frozenset(ScriptDirectory.from_config(config).get_heads())


def test_a_store_at_head_opens_without_loading_alembic(tmp_path: Path) -> None:
    import subprocess
    import sys

    home = tmp_path / "home"
    open_store(Settings(home=home, database_url=None)).close()  # creates and migrates it
    probe = (
        "import sys; from patchbay.adapters.store import open_store; from patchbay.core.settings import Settings;"
        f"open_store(Settings(home={str(home)!r}, database_url=None)).close();"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_policy_urls_migration_keeps_existing_connectors_with_none(
    dialect: str, request: pytest.FixtureRequest
) -> None:
    engine = create_engine_for(request.getfixturevalue("sqlite_url" if dialect == "sqlite" else "postgres_url"))
    _upgrade_to(engine, "0005")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO mcp_connectors (connector_id, name, display_name, source, transport, command, "
            "created_at, updated_at) VALUES ('c1', 'old', 'Old', 'custom', 'stdio', 'old-mcp', 1, 1)"
        )

    upgrade_to_head(engine)

    repository = Repository(engine)
    old = repository.connectors.get("c1")
    assert (old.terms_url, old.privacy_url) == ("", "")
    changed = repository.connectors.update(
        "c1", old.revision, terms_url="https://example.com/terms", privacy_url="https://example.com/privacy"
    )
    assert (changed.terms_url, changed.privacy_url) == ("https://example.com/terms", "https://example.com/privacy")
    assert _schema_diff(engine) == []
    engine.dispose()
