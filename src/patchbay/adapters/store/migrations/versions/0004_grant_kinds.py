"""Grant key spaces: a ``subject_kind`` (tool / resource / prompt) in both grant tables.

The kind joins the primary key, so a tool a server names ``resources/read`` can no longer match
the connector's resource-read grant. Existing ``resources/read`` rows were that resource-read
grant (the old pseudo-tool key) and move to kind ``resource`` with subject ``*``; every other
row is a tool grant. SQLite cannot change a primary key in place, so there each table is
rebuilt (created anew, rows copied, the old one dropped); nothing references the grant tables.

Revision ID: 0004
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.schema import SchemaItem

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MILLIS = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OLD_RESOURCE_KEY = "resources/read"


def _kind_checks(table: str) -> list[sa.CheckConstraint]:
    return [
        sa.CheckConstraint("subject_kind IN ('tool', 'resource', 'prompt')", name=f"ck_{table}_subject_kind"),
        sa.CheckConstraint("subject_kind <> 'resource' OR tool_name = '*'", name=f"ck_{table}_resource_subject"),
        sa.CheckConstraint("subject_kind <> 'prompt' OR decision <> 'ask'", name=f"ck_{table}_prompt_decision"),
    ]


def _name(check: sa.CheckConstraint) -> str:
    # Every check of _kind_checks is built with its name; the type also allows none.
    assert isinstance(check.name, str)
    return check.name


def _global_table(*, kinds: bool) -> list[SchemaItem]:
    key = ["connector_id", "subject_kind", "tool_name"] if kinds else ["connector_id", "tool_name"]
    return [
        sa.Column("connector_id", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("updated_at", _MILLIS, nullable=False),
        # Last, where PostgreSQL's ADD COLUMN puts it, so both dialects have one column order.
        *([sa.Column("subject_kind", sa.Text(), nullable=False, server_default="tool")] if kinds else []),
        sa.PrimaryKeyConstraint(*key, name="pk_mcp_global_tool_grants"),
        sa.CheckConstraint("decision IN ('allow', 'ask', 'deny')", name="ck_mcp_global_tool_grants_decision"),
        *(_kind_checks("mcp_global_tool_grants") if kinds else []),
        sa.ForeignKeyConstraint(
            ["connector_id"],
            ["mcp_connectors.connector_id"],
            ondelete="CASCADE",
            name="fk_mcp_global_tool_grants_connector",
        ),
    ]


def _project_table(*, kinds: bool) -> list[SchemaItem]:
    key = ["project_id", "connector_id", *(["subject_kind"] if kinds else []), "tool_name"]
    return [
        sa.Column("project_id", sa.Text(), nullable=False),
        sa.Column("connector_id", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("updated_at", _MILLIS, nullable=False),
        # Last, where PostgreSQL's ADD COLUMN puts it, so both dialects have one column order.
        *([sa.Column("subject_kind", sa.Text(), nullable=False, server_default="tool")] if kinds else []),
        sa.PrimaryKeyConstraint(*key, name="pk_mcp_project_tool_grants"),
        sa.CheckConstraint("decision IN ('allow', 'ask', 'deny')", name="ck_mcp_project_tool_grants_decision"),
        *(_kind_checks("mcp_project_tool_grants") if kinds else []),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.project_id"], ondelete="CASCADE", name="fk_mcp_project_tool_grants_project"
        ),
        sa.ForeignKeyConstraint(
            ["connector_id"],
            ["mcp_connectors.connector_id"],
            ondelete="CASCADE",
            name="fk_mcp_project_tool_grants_connector",
        ),
    ]


_TABLES = (
    ("mcp_global_tool_grants", _global_table, ["connector_id"]),
    ("mcp_project_tool_grants", _project_table, ["project_id", "connector_id"]),
)


def _rebuild_sqlite(table: str, build: Callable[..., list[SchemaItem]], scope: list[str], *, kinds: bool) -> None:
    columns = [*scope, "tool_name", "decision", "updated_at"]
    staging = f"{table}_rebuild"
    op.create_table(staging, *build(kinds=kinds), sqlite_strict=True)
    listed = ", ".join(columns)
    if kinds:
        kind = f"CASE WHEN tool_name = '{_OLD_RESOURCE_KEY}' THEN 'resource' ELSE 'tool' END"
        name = f"CASE WHEN tool_name = '{_OLD_RESOURCE_KEY}' THEN '*' ELSE tool_name END"
        selected = ", ".join(name if c == "tool_name" else c for c in columns)
        op.execute(f"INSERT INTO {staging} ({listed}, subject_kind) SELECT {selected}, {kind} FROM {table}")
    else:
        # Back to one key space: resource grants become the old pseudo-tool; prompt grants, which
        # had no place there, are dropped.
        name = f"CASE WHEN subject_kind = 'resource' THEN '{_OLD_RESOURCE_KEY}' ELSE tool_name END"
        selected = ", ".join(name if c == "tool_name" else c for c in columns)
        op.execute(
            f"INSERT INTO {staging} ({listed}) SELECT {selected} FROM {table} WHERE subject_kind <> 'prompt'"
            f" AND NOT (subject_kind = 'tool' AND tool_name = '{_OLD_RESOURCE_KEY}')"
        )
    op.drop_table(table)
    op.rename_table(staging, table)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, build, scope in _TABLES:
        if sqlite:
            _rebuild_sqlite(table, build, scope, kinds=True)
            continue
        op.add_column(table, sa.Column("subject_kind", sa.Text(), nullable=False, server_default="tool"))
        op.execute(
            f"UPDATE {table} SET subject_kind = 'resource', tool_name = '*' WHERE tool_name = '{_OLD_RESOURCE_KEY}'"
        )
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, [*scope, "subject_kind", "tool_name"])
        for check in _kind_checks(table):
            op.create_check_constraint(_name(check), table, str(check.sqltext))


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, build, scope in _TABLES:
        if sqlite:
            _rebuild_sqlite(table, build, scope, kinds=False)
            continue
        for check in _kind_checks(table):
            op.drop_constraint(_name(check), table, type_="check")
        op.execute(
            f"DELETE FROM {table} WHERE subject_kind = 'prompt'"
            f" OR (subject_kind = 'tool' AND tool_name = '{_OLD_RESOURCE_KEY}')"
        )
        op.execute(f"UPDATE {table} SET tool_name = '{_OLD_RESOURCE_KEY}' WHERE subject_kind = 'resource'")
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, [*scope, "tool_name"])
        op.drop_column(table, "subject_kind")
