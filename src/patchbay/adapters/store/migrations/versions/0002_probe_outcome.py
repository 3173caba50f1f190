"""The last probe's outcome per connector (ready or error, code, redacted message, tool count,
duration, time), removed with its connector.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MILLIS = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "mcp_probe_outcomes",
        sa.Column("connector_id", sa.Text(), primary_key=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("code", sa.Text()),
        sa.Column("message", sa.Text()),
        sa.Column("tool_count", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("probed_at", _MILLIS, nullable=False),
        sa.Column("config_revision", sa.Integer(), nullable=False),
        sa.CheckConstraint("state IN ('ready', 'error')", name="ck_mcp_probe_outcomes_state"),
        sa.ForeignKeyConstraint(
            ["connector_id"],
            ["mcp_connectors.connector_id"],
            ondelete="CASCADE",
            name="fk_mcp_probe_outcomes_connector",
        ),
        sqlite_strict=True,
    )


def downgrade() -> None:
    op.drop_table("mcp_probe_outcomes")
