"""Engines of the canonical store (patchbay.adapters.store.db): the SQLite pragmas every new connection
gets."""

from __future__ import annotations

import pytest

from patchbay.adapters.store import Repository


@pytest.mark.sqlite_only(reason="SQLite pragmas")
def test_sqlite_connections_get_the_pragmas(sqlite_repo: Repository) -> None:
    sqlite_repo.engine.dispose()  # force a brand-new DBAPI connection
    with sqlite_repo.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
