"""The schema's own constraints (patchbay.adapters.store.tables, as migrated): CHECK and JSON
constraints refuse rows the store would never write, written past the store with raw SQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DataError, IntegrityError

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_global_tool_grants, mcp_tool_cache
from patchbay.core.models import StdioTarget

STDIO = StdioTarget(command="mcp-server-time", args=("--local-timezone", "UTC"), cwd="tools")


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


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
def test_connector_check_constraints_are_enforced(repo: Repository, overrides: dict[str, object]) -> None:
    with pytest.raises(_refused(repo)):
        _raw_insert(repo, **overrides)
    _raw_insert(repo)  # the baseline row itself is fine
    assert [c.name for c in repo.connectors.list_all()] == ["raw"]


def _refused(repo: Repository) -> type[Exception] | tuple[type[Exception], ...]:
    """What the database raises for a row its schema refuses: a constraint on SQLite's STRICT
    tables; on PostgreSQL a constraint, or a type error for a value the column's type cannot hold."""
    return IntegrityError if repo.engine.dialect.name == "sqlite" else (IntegrityError, DataError)


@pytest.mark.parametrize("column", ["args_json", "runtime_config_json", "include_tools_json", "exclude_tools_json"])
def test_invalid_json_is_refused_by_the_database(any_repo: Repository, column: str) -> None:
    expected = IntegrityError if any_repo.engine.dialect.name == "sqlite" else (IntegrityError, DataError)
    with pytest.raises(expected):
        _raw_insert(any_repo, **{column: "[not json"})
    assert any_repo.connectors.list_all() == []


def test_grant_and_cache_constraints_are_enforced(repo: Repository) -> None:
    connector = repo.connectors.create("time", "Time", STDIO)
    statements = [
        "INSERT INTO mcp_global_tool_grants VALUES (:cid, 't', 'maybe', 0, 'tool')",
        "INSERT INTO mcp_global_tool_grants VALUES ('con_missing', 't', 'allow', 0, 'tool')",
        "INSERT INTO mcp_tool_cache (connector_id, config_revision, fingerprint, tools_json, fetched_at, expires_at)"
        " VALUES (:cid, 1, 'f', '{broken', 0, 0)",
        "INSERT INTO mcp_tool_cache (connector_id, config_revision, fingerprint, tools_json, server_info_json,"
        " fetched_at, expires_at) VALUES (:cid, 1, 'f', '[]', 'nope', 0, 0)",
    ]
    for statement in statements:
        with pytest.raises(_refused(repo)), repo.engine.begin() as conn:
            conn.execute(text(statement), {"cid": connector.connector_id})
    assert _count(repo, mcp_global_tool_grants) == 0 and _count(repo, mcp_tool_cache) == 0
