"""Shared plumbing of the store repository: the engine, transactions, the UNSET sentinel.

Every repository method touches the database only through :meth:`StoreBase._write` or
:meth:`StoreBase._read`, which turn "the store cannot be used" failures (read-only, corrupt,
locked past ``busy_timeout``, unreachable) into a one-line ``CanonicalStateUnavailable``
(``canonical_state_unavailable``); ``IntegrityError`` and the repository's own errors pass
through unchanged. A write method does any reading back inside its one write transaction, so
once the transaction has committed the method cannot fail on a later read.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from patchbay.adapters.store._errors import CANDIDATES, database_label, is_unavailable, unavailable
from patchbay.adapters.store.db import WRITE_OPTION
from patchbay.adapters.store.tables import mcp_connectors, projects
from patchbay.core.errors import NotFoundError

__all__ = ["UNSET", "StoreBase", "Unset", "now_ms", "upsert"]


class Unset(enum.Enum):
    UNSET = enum.auto()


#: "Leave this field as it is" for the keyword arguments of the ``update_*`` methods.
UNSET = Unset.UNSET


def now_ms() -> int:
    """Unix time in milliseconds."""
    return time.time_ns() // 1_000_000


def upsert(conn: Connection, table: Any) -> Any:
    """The dialect's ``INSERT`` that supports ``ON CONFLICT`` (SQLite and PostgreSQL)."""
    return (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(table)


class StoreBase:
    """Holds the engine; writes go through :meth:`_write` (``BEGIN IMMEDIATE`` on SQLite), reads through :meth:`_read`."""

    def __init__(self, engine: Engine, *, clock: Callable[[], int] | None = None):
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._clock = clock or now_ms
        self._label = database_label(engine.url)

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Dispose the engine's pooled connections."""
        self._engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction, committed when the block ends without an exception.

        Raises:
            CanonicalStateUnavailable: opening, writing or committing failed because the store
                is unusable; the transaction was rolled back (or never began).
        """
        with self._translated(), self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read-only connection (a deferred transaction on SQLite), released at the block's end."""
        with self._translated(), self._engine.connect() as conn:
            yield conn

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except CANDIDATES as exc:
            if not is_unavailable(exc):
                raise
            raise unavailable(self._label, exc) from None

    def _connector_row(self, conn: Connection, connector_id: str) -> Any:
        row = (
            conn.execute(select(mcp_connectors).where(mcp_connectors.c.connector_id == connector_id)).mappings().first()
        )
        if row is None:
            raise NotFoundError(f"no connector {connector_id!r}", details={"connector_id": connector_id})
        return row

    def _require_project(self, conn: Connection, project_id: str) -> None:
        if conn.execute(select(projects.c.project_id).where(projects.c.project_id == project_id)).first() is None:
            raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})
