"""Shared plumbing of the store repository: the engine, transactions, the UNSET sentinel.

Every repository method touches the database only through :meth:`StoreBase._write` or
:meth:`StoreBase._read`, which turn "the store cannot be used" failures (read-only, corrupt,
locked past ``busy_timeout``, unreachable) into a one-line ``CanonicalStateUnavailable``
(``canonical_state_unavailable``); ``IntegrityError`` and the repository's own errors pass
through unchanged. A write method does any reading back inside its one write transaction, so
once the transaction has committed the method cannot fail on a later read.

The change counter (table ``state_version``): a write transaction in which any ``INSERT``,
``UPDATE`` or ``DELETE`` touched a row also increments the counter, in the same transaction, just
before it commits (so every writer, in any process, moves it; a write that changed nothing, such
as resolving a project that already exists, does not). Writes to tables no runtime reads (the
last probe outcomes) do not count either: a failed probe must not rebuild every hosted session.
:meth:`StoreBase.state_version` reads it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from patchbay.adapters.store._errors import CANDIDATES, database_label, is_unavailable, unavailable
from patchbay.adapters.store.db import WRITE_OPTION
from patchbay.adapters.store.tables import mcp_connectors, projects, state_version
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


_CHANGED = "patchbay_rows_changed"
_UNPROJECTED_TABLES = frozenset({"mcp_probe_outcomes"})
"""Tables whose rows no runtime sees: a change there is no change of committed runtime state."""


def _table_name(context: Any) -> str | None:
    """The table a compiled ``INSERT``/``UPDATE``/``DELETE`` writes, or None (raw SQL)."""
    compiled = getattr(context, "compiled", None)
    table = getattr(getattr(compiled, "statement", None), "table", None)
    name = getattr(table, "name", None)
    return name if isinstance(name, str) else None


def _note_change(
    conn: Connection, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: bool
) -> None:
    # rowcount is -1 when the driver cannot tell: count that as a change (a spare rebuild is
    # harmless, a missed one is not).
    if context is not None and (context.isinsert or context.isupdate or context.isdelete) and cursor.rowcount != 0:
        if _table_name(context) not in _UNPROJECTED_TABLES:
            conn.info[_CHANGED] = True


class StoreBase:
    """Holds the engine; writes go through :meth:`_write` (``BEGIN IMMEDIATE`` on SQLite), reads through :meth:`_read`."""

    def __init__(self, engine: Engine, *, clock: Callable[[], int] | None = None):
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._clock = clock or now_ms
        self._label = database_label(engine.url)
        if not event.contains(engine, "after_cursor_execute", _note_change):
            event.listen(engine, "after_cursor_execute", _note_change)

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
            conn.info[_CHANGED] = False
            yield conn
            if conn.info.pop(_CHANGED, False):
                stmt = upsert(conn, state_version).values(id=1, version=1)
                conn.execute(
                    stmt.on_conflict_do_update(index_elements=["id"], set_={"version": state_version.c.version + 1})
                )
                conn.info.pop(_CHANGED, None)

    def state_version(self) -> int:
        """The change counter: it grows by one with every committed write that changed a row
        (from any process); a reading larger than an earlier one means something changed since.
        One small ``SELECT``.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable`` when the store cannot be read.
        """
        with self._read() as conn:
            value = conn.execute(select(state_version.c.version).where(state_version.c.id == 1)).scalar()
        return 0 if value is None else int(value)

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
