"""Initial canonical schema: connectors, global and project tool grants, projects, tool cache.

Follows the specified schema column for column (its 0002-0004 SQL files folded into one revision,
since Patchbay has no earlier schema to migrate from). Written out explicitly so the revision stays
frozen when ``tables.py`` changes later; ``tests/adapters/store/test_migrations.py`` checks that the
two agree.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MILLIS = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_TRANSPORT_EXCLUSIVITY = (
    "(transport = 'stdio' AND command IS NOT NULL AND endpoint_url IS NULL AND socket_path IS NULL) OR "
    "(transport IN ('streamable_http', 'sse') AND endpoint_url IS NOT NULL AND command IS NULL "
    "AND socket_path IS NULL) OR "
    "(transport = 'socket' AND socket_path IS NOT NULL AND endpoint_url IS NULL AND command IS NULL)"
)


def _json_check(dialect: str, table: str, column: str, *, nullable: bool = False) -> sa.CheckConstraint:
    # SQLite has json_valid(); PostgreSQL 15 has no IS JSON, so the jsonb cast refuses bad JSON.
    sql = f"json_valid({column})" if dialect == "sqlite" else f"({column}::jsonb IS NOT NULL)"
    if nullable:
        sql = f"{column} IS NULL OR {sql}"
    return sa.CheckConstraint(sql, name=f"ck_{table}_{column}_valid")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect not in ("sqlite", "postgresql"):
        raise RuntimeError(f"Patchbay's store supports SQLite and PostgreSQL, not {dialect}")
    sqlite = dialect == "sqlite"
    name_type = sa.Text(collation="NOCASE") if sqlite else sa.Text()
    name_unique = [sa.UniqueConstraint("name", name="uq_mcp_connectors_name")] if sqlite else []

    op.create_table(
        "mcp_connectors",
        sa.Column("connector_id", sa.Text(), primary_key=True),
        sa.Column("name", name_type, nullable=False),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False, server_default=""),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("transport", sa.Text(), nullable=False),
        sa.Column("endpoint_url", sa.Text()),
        sa.Column("command", sa.Text()),
        sa.Column("args_json", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("socket_path", sa.Text()),
        sa.Column("runtime_config_json", sa.Text(), nullable=False, server_default="{}"),
        sa.Column("credential_ref", sa.Text()),
        sa.Column("enabled", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("include_tools_json", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("exclude_tools_json", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("approval_mode", sa.Text(), nullable=False, server_default="ask"),
        sa.Column("settings_revision", sa.Integer(), nullable=False, server_default=sa.text("1")),
        sa.Column("revision", sa.Integer(), nullable=False, server_default=sa.text("1")),
        sa.Column("created_at", _MILLIS, nullable=False),
        sa.Column("updated_at", _MILLIS, nullable=False),
        sa.CheckConstraint("source IN ('builtin', 'custom', 'imported')", name="ck_mcp_connectors_source"),
        sa.CheckConstraint(
            "transport IN ('stdio', 'streamable_http', 'sse', 'socket')", name="ck_mcp_connectors_transport"
        ),
        sa.CheckConstraint("enabled IN (0, 1)", name="ck_mcp_connectors_enabled"),
        sa.CheckConstraint("approval_mode IN ('ask', 'custom', 'allow_all')", name="ck_mcp_connectors_approval_mode"),
        sa.CheckConstraint(_TRANSPORT_EXCLUSIVITY, name="ck_mcp_connectors_transport_target"),
        _json_check(dialect, "mcp_connectors", "args_json"),
        _json_check(dialect, "mcp_connectors", "runtime_config_json"),
        _json_check(dialect, "mcp_connectors", "include_tools_json"),
        _json_check(dialect, "mcp_connectors", "exclude_tools_json"),
        *name_unique,
        sqlite_strict=True,
    )
    if not sqlite:
        op.create_index("uq_mcp_connectors_name_lower", "mcp_connectors", [sa.text("lower(name)")], unique=True)

    op.create_table(
        "mcp_global_tool_grants",
        sa.Column("connector_id", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("updated_at", _MILLIS, nullable=False),
        sa.PrimaryKeyConstraint("connector_id", "tool_name", name="pk_mcp_global_tool_grants"),
        sa.CheckConstraint("decision IN ('allow', 'ask', 'deny')", name="ck_mcp_global_tool_grants_decision"),
        sa.ForeignKeyConstraint(
            ["connector_id"],
            ["mcp_connectors.connector_id"],
            ondelete="CASCADE",
            name="fk_mcp_global_tool_grants_connector",
        ),
        sqlite_strict=True,
    )

    op.create_table(
        "projects",
        sa.Column("project_id", sa.Text(), primary_key=True),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("created_at", _MILLIS, nullable=False),
        sa.UniqueConstraint("path", name="uq_projects_path"),
        sqlite_strict=True,
    )

    op.create_table(
        "mcp_project_tool_grants",
        sa.Column("project_id", sa.Text(), nullable=False),
        sa.Column("connector_id", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("updated_at", _MILLIS, nullable=False),
        sa.PrimaryKeyConstraint("project_id", "connector_id", "tool_name", name="pk_mcp_project_tool_grants"),
        sa.CheckConstraint("decision IN ('allow', 'ask', 'deny')", name="ck_mcp_project_tool_grants_decision"),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.project_id"], ondelete="CASCADE", name="fk_mcp_project_tool_grants_project"
        ),
        sa.ForeignKeyConstraint(
            ["connector_id"],
            ["mcp_connectors.connector_id"],
            ondelete="CASCADE",
            name="fk_mcp_project_tool_grants_connector",
        ),
        sqlite_strict=True,
    )

    op.create_table(
        "mcp_tool_cache",
        sa.Column("connector_id", sa.Text(), primary_key=True),
        sa.Column("config_revision", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("tools_json", sa.Text(), nullable=False),
        sa.Column("resources_json", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("server_info_json", sa.Text()),
        sa.Column("fetched_at", _MILLIS, nullable=False),
        sa.Column("expires_at", _MILLIS, nullable=False),
        _json_check(dialect, "mcp_tool_cache", "tools_json"),
        _json_check(dialect, "mcp_tool_cache", "resources_json"),
        _json_check(dialect, "mcp_tool_cache", "server_info_json", nullable=True),
        sa.ForeignKeyConstraint(
            ["connector_id"], ["mcp_connectors.connector_id"], ondelete="CASCADE", name="fk_mcp_tool_cache_connector"
        ),
        sqlite_strict=True,
    )


def downgrade() -> None:
    op.drop_table("mcp_tool_cache")
    op.drop_table("mcp_project_tool_grants")
    op.drop_table("projects")
    op.drop_table("mcp_global_tool_grants")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_index("uq_mcp_connectors_name_lower", table_name="mcp_connectors")
    op.drop_table("mcp_connectors")
