"""The tool cache keeps its catalog's tool count, so a connector list never parses a catalog.

The column is added in place (a constant default needs no table rebuild on SQLite) and existing
rows are back-filled from their ``tools_json`` (a JSON array) with the dialect's JSON array length.
An index covers what the list reads of each row (id, revision, fingerprint, count), so SQLite
answers it without reading the catalogs.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SUMMARY = ["connector_id", "config_revision", "fingerprint", "tool_count", "fetched_at", "expires_at"]


def upgrade() -> None:
    op.add_column("mcp_tool_cache", sa.Column("tool_count", sa.Integer(), nullable=False, server_default=sa.text("0")))
    postgresql = op.get_bind().dialect.name == "postgresql"
    length = "json_array_length(tools_json::json)" if postgresql else "json_array_length(tools_json)"
    op.execute(f"UPDATE mcp_tool_cache SET tool_count = {length}")
    op.create_index("ix_mcp_tool_cache_summary", "mcp_tool_cache", _SUMMARY)


def downgrade() -> None:
    op.drop_index("ix_mcp_tool_cache_summary", table_name="mcp_tool_cache")
    with op.batch_alter_table("mcp_tool_cache") as batch:
        batch.drop_column("tool_count")
