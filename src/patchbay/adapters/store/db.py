"""Engines, migrations and opening the canonical store.

SQLite (the default, ``sqlite:///<home>/patchbay.db``) gets, on every new DBAPI connection::

    PRAGMA busy_timeout=5000      -- wait up to 5 s for a lock instead of failing at once
    PRAGMA foreign_keys=ON        -- enforce the ON DELETE CASCADE of seed 003 §6 / §15
    PRAGMA journal_mode=WAL       -- readers never block the single writer
    PRAGMA synchronous=NORMAL     -- durable at checkpoints; safe with WAL

and SQLAlchemy, not the ``sqlite3`` module, emits ``BEGIN`` so that DDL, SELECTs and savepoints
are really transactional (SQLAlchemy's documented "sqlite_transactions" recipe). Connections
carrying the execution option :data:`WRITE_OPTION` begin with ``BEGIN IMMEDIATE``: a writer
takes the write lock up front (waiting on ``busy_timeout``) rather than failing with
``SQLITE_BUSY`` when a read inside the transaction later turns into a write.

PostgreSQL URLs (``postgresql+psycopg://...``) get a plain pooled engine with ``pool_pre_ping``.

Schema changes happen only through :func:`upgrade_to_head` (Alembic); nothing here calls
``metadata.create_all``.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import OperationalError

from patchbay.core.errors import CanonicalStateUnavailable

if TYPE_CHECKING:
    from patchbay.adapters.store.repository import Repository
    from patchbay.core.settings import Settings

__all__ = ["SCRIPT_LOCATION", "WRITE_OPTION", "create_engine_for", "open_store", "upgrade_to_head"]

#: Execution option marking a connection whose transactions write (``BEGIN IMMEDIATE`` on SQLite).
WRITE_OPTION = "patchbay_write"
#: Alembic ``script_location`` of Patchbay's migrations, as a package resource.
SCRIPT_LOCATION = "patchbay.adapters.store:migrations"
#: Any constant; serialises concurrent ``upgrade_to_head`` calls on PostgreSQL.
_PG_MIGRATION_LOCK = 0x7061_7463_6862_6179  # "patchbay"

_SQLITE_PRAGMAS = (
    "PRAGMA busy_timeout=5000",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
_SQLITE_BUSY_SECONDS = 5.0


def _set_wal(cursor: Any) -> None:
    # Switching a database file to WAL needs an exclusive lock, and SQLite answers "database is
    # locked" at once (no busy handler) while another connection is switching it too. That only
    # happens on a file's first opens, so wait for it here, bounded like busy_timeout.
    deadline = time.monotonic() + _SQLITE_BUSY_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Hand transaction control to SQLAlchemy (see _sqlite_on_begin); PRAGMAs run outside any transaction.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        _set_wal(cursor)
    finally:
        cursor.close()


def _sqlite_on_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN")


def create_engine_for(url: str) -> Engine:
    """Create the SQLAlchemy engine for a canonical-store URL.

    Args:
        url: a SQLAlchemy URL; ``sqlite:///<path>`` (the parent directory is created) or
            ``postgresql+psycopg://user@host:port/db``.

    Returns:
        An Engine; for SQLite every connection has ``foreign_keys=ON``, ``journal_mode=WAL``,
        ``busy_timeout=5000`` (ms) and ``synchronous=NORMAL`` (see the module docstring).

    No schema is created; call :func:`upgrade_to_head` (or :func:`open_store`).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed)
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def upgrade_to_head(engine: Engine) -> None:
    """Apply every pending Alembic migration, in one transaction; a no-op when already at head.

    Alembic is configured in code (no ``alembic.ini``): ``script_location`` is
    :data:`SCRIPT_LOCATION` and the open connection travels in ``config.attributes["connection"]``
    to ``migrations/env.py``. Concurrent callers are serialised (``BEGIN IMMEDIATE`` on SQLite,
    a transaction-scoped advisory lock on PostgreSQL), so the loser finds the schema at head.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database refused a migration; nothing was applied.
    """
    config = _alembic_config()
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def open_store(settings: Settings) -> Repository:
    """Open the canonical store named by ``settings.resolved_database_url``, migrated to head.

    Args:
        settings: Patchbay settings; ``PATCHBAY_DATABASE_URL`` or ``<PATCHBAY_HOME>/patchbay.db``.

    Returns:
        A :class:`~patchbay.adapters.store.repository.Repository` on a fresh engine; call its
        ``close()`` when done.

    Raises:
        CanonicalStateUnavailable: ``canonical_state_unavailable`` when the database cannot be
            opened or migrated (seed 003 §15: MCP writes then answer 503).
    """
    from patchbay.adapters.store.repository import Repository

    url = settings.resolved_database_url
    engine = create_engine_for(url)
    try:
        upgrade_to_head(engine)
    except OperationalError as exc:
        engine.dispose()
        shown = make_url(url).render_as_string(hide_password=True)
        raise CanonicalStateUnavailable(
            f"the canonical store at {shown} cannot be opened", details={"url": shown}
        ) from exc
    return Repository(engine)
