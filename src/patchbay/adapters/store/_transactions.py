"""The engine and transaction discipline every part of the store shares.

Every store object touches the database only through :meth:`Transactions.write` or
:meth:`Transactions.read`, which turn "the store cannot be used" failures (read-only, corrupt,
locked past ``busy_timeout``, unreachable) into a one-line ``CanonicalStateUnavailable``
(``canonical_state_unavailable``); ``IntegrityError`` and the store's own errors pass through
unchanged. A write method does any reading back inside its one write transaction, so once the
transaction has committed the method cannot fail on a later read.

The change counter (table ``state_version``): a write transaction in which any ``INSERT``,
``UPDATE`` or ``DELETE`` touched a row also increments the counter, in the same transaction, just
before it commits (so every writer, in any process, moves it; a write that changed nothing, such
as resolving a project that already exists, does not). Writes to tables no runtime reads (the
last probe outcomes) do not count either: a failed probe must not rebuild every hosted session.
:meth:`Transactions.state_version` reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event, select
from sqlalchemy.engine import Connection

from patchbay.adapters.store._errors import CANDIDATES, database_label, is_unavailable, unavailable
from patchbay.adapters.store.tables import state_version

__all__ = ["WRITE_OPTION", "Transactions", "now_ms", "upsert"]

#: Execution option marking a connection whose transactions write (``BEGIN IMMEDIATE`` on SQLite).
WRITE_OPTION = "patchbay_write"


def now_ms() -> int:
    """Unix time in milliseconds."""
    return time.time_ns() // 1_000_000


def upsert(conn: Connection, table: Any) -> Any:
    """The dialect's ``INSERT`` that supports ``ON CONFLICT`` (SQLite and PostgreSQL)."""
    # Imported here: the PostgreSQL dialect (with its asyncpg module) costs every CLI start ~50 ms.
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


_CHANGED = "patchbay_rows_changed"
_UNPROJECTED_TABLES = frozenset({"mcp_probe_outcomes", "pending_approvals"})
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


class Transactions:
    """One engine's write and read transactions, the change counter and the clock.

    Args:
        engine: from :func:`~patchbay.adapters.store.db.create_engine_for`, already migrated.
        clock: returns Unix milliseconds; tests pass a fake.
    """

    def __init__(self, engine: Engine, *, clock: Callable[[], int] | None = None):
        self.engine = engine
        self.clock: Callable[[], int] = clock or now_ms
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._label = database_label(engine.url)
        if not event.contains(engine, "after_cursor_execute", _note_change):
            event.listen(engine, "after_cursor_execute", _note_change)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` on SQLite), committed when the block ends
        without an exception; it moves the change counter when it changed a row.

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

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only connection (a deferred transaction on SQLite), released at the block's end.

        Raises:
            CanonicalStateUnavailable: the store cannot be read.
        """
        with self._translated(), self.engine.connect() as conn:
            yield conn

    def state_version(self) -> int:
        """The change counter: it grows by one with every committed write that changed a row
        (from any process); a reading larger than an earlier one means something changed since.
        One small ``SELECT``.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable`` when the store cannot be read.
        """
        with self.read() as conn:
            value = conn.execute(select(state_version.c.version).where(state_version.c.id == 1)).scalar()
        return 0 if value is None else int(value)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except CANDIDATES as exc:
            if not is_unavailable(exc):
                raise
            raise unavailable(self._label, exc) from None
