"""Session event logs in the database: one row per event (and one record per session), for
several instances on PostgreSQL.

Created on every backend (one schema); only a PostgreSQL store writes it (a SQLite store keeps
the JSONL files). ``(session_id, seq)`` is the primary key, so a seq is unique per session.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "session_events",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", _SEQ, nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("ts", sa.Text(), nullable=False),
        sa.Column("instance", sa.Text()),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("hash", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "seq", name="pk_session_events"),
        sa.CheckConstraint("seq >= 1", name="ck_session_events_seq"),
        sqlite_strict=True,
    )
    op.create_table(
        "session_records",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("workspace", sa.Text()),
        sa.Column("project_id", sa.Text()),
        sa.Column("started_at", sa.Text(), nullable=False),
        sqlite_strict=True,
    )


def downgrade() -> None:
    op.drop_table("session_records")
    op.drop_table("session_events")
