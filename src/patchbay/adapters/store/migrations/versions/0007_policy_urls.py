"""Connectors keep the service's terms-of-use and privacy-policy URLs (empty: none given).

Two text columns added in place with a constant default (no table rebuild on SQLite); existing
rows read as having none. The downgrade drops them in place too.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("terms_url", "privacy_url")


def upgrade() -> None:
    for column in _COLUMNS:
        op.add_column("mcp_connectors", sa.Column(column, sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    # a plain DROP COLUMN (SQLite 3.35+): a batch rebuild of mcp_connectors would cascade-delete
    # every row that references a connector (grants, caches, bindings)
    for column in reversed(_COLUMNS):
        op.drop_column("mcp_connectors", column)
