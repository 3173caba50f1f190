"""The canonical store: SQLAlchemy Core over SQLite (default, WAL) or PostgreSQL, Alembic migrations.

Usage::

    from patchbay.adapters.store import open_store

    repo = open_store(settings)          # engine + migrations to head
    repo.connectors.create("time", "Time", StdioTarget(command="mcp-server-time"))

Only the control plane writes here (DESIGN.md "Layers").
"""

from patchbay.adapters.store.db import create_engine_for, open_store, upgrade_to_head
from patchbay.adapters.store.repository import Repository

__all__ = ["Repository", "create_engine_for", "open_store", "upgrade_to_head"]
