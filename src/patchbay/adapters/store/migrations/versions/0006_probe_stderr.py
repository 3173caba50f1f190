"""The last probe keeps the redacted end of a local command's stderr and the protocol version
it negotiated, so a connector's detail can show why its command failed after the probe answered.

Both columns are added in place (a constant default needs no table rebuild on SQLite); outcomes
recorded before have an empty tail and no protocol version.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "mcp_probe_outcomes", sa.Column("stderr_tail", sa.Text(), nullable=False, server_default=sa.text("''"))
    )
    op.add_column("mcp_probe_outcomes", sa.Column("protocol_version", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("mcp_probe_outcomes") as batch:
        batch.drop_column("protocol_version")
        batch.drop_column("stderr_tail")
