"""Pending approvals in the database: one row per call waiting for a person's answer, so any
instance can list it and answer it and the instance whose call waits reads the answer back.

A row holds the call's identity (session, the waiting instance, connector, tool, the digest of
its arguments, the policy fingerprint, risk) and a redacted preview of its arguments, never the
arguments themselves; ``decision`` is NULL until someone answers.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MILLIS = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # SQLite has json_valid(); PostgreSQL 15 has no IS JSON, so the jsonb cast refuses bad JSON.
    dialect = op.get_bind().dialect.name
    preview_valid = "json_valid(preview_json)" if dialect == "sqlite" else "(preview_json::jsonb IS NOT NULL)"
    op.create_table(
        "pending_approvals",
        sa.Column("approval_id", sa.Text(), primary_key=True),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("instance", sa.Text(), nullable=False),
        sa.Column("workspace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("connector", sa.Text(), nullable=False),
        sa.Column("tool", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("risk", sa.Text(), nullable=False),
        sa.Column("arguments_digest", sa.Text(), nullable=False),
        sa.Column("policy", sa.Text(), nullable=False),
        sa.Column("preview_json", sa.Text(), nullable=False),
        sa.Column("created_at", _MILLIS, nullable=False),
        sa.Column("expires_at", _MILLIS, nullable=False),
        sa.Column("decision", sa.Text()),
        sa.Column("decided_at", _MILLIS),
        sa.Column("actor", sa.Text()),
        sa.CheckConstraint(
            "decision IS NULL OR decision IN ('allow_once', 'allow_session', 'deny')",
            name="ck_pending_approvals_decision",
        ),
        sa.CheckConstraint(
            "(decision IS NULL AND decided_at IS NULL AND actor IS NULL) OR "
            "(decision IS NOT NULL AND decided_at IS NOT NULL AND actor = 'user')",
            name="ck_pending_approvals_decided",
        ),
        sa.CheckConstraint("expires_at > created_at", name="ck_pending_approvals_expiry"),
        sa.CheckConstraint(preview_valid, name="ck_pending_approvals_preview_json_valid"),
        sqlite_strict=True,
    )
    op.create_index("ix_pending_approvals_expires_at", "pending_approvals", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_pending_approvals_expires_at", table_name="pending_approvals")
    op.drop_table("pending_approvals")
