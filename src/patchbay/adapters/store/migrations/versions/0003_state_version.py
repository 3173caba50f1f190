"""The state change counter: one row moved by every committed change of canonical state.

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MILLIS = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    table = op.create_table(
        "state_version",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", _MILLIS, nullable=False),
        sa.CheckConstraint("id = 1", name="ck_state_version_one_row"),
        sqlite_strict=True,
    )
    op.bulk_insert(table, [{"id": 1, "version": 0}])


def downgrade() -> None:
    op.drop_table("state_version")
