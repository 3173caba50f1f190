"""Engines, migrations and opening the canonical store.

SQLite (the default, ``sqlite:///<home>/patchbay.db``) gets WAL, foreign keys, a 30 s busy timeout
and SQLAlchemy-emitted ``BEGIN``; connections carrying :data:`WRITE_OPTION` begin with ``BEGIN
IMMEDIATE``. PostgreSQL URLs (``postgresql+psycopg://...``) get a pooled engine with
``pool_pre_ping``. Schema changes happen only through :func:`upgrade_to_head` (Alembic). Failures to
create, open or migrate the store raise ``CanonicalStateUnavailable`` with a one-line message
(:mod:`patchbay.adapters.store._errors`).

Design: docs/store.md (the pragmas, transactions and file modes)
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import Connection, make_url

from patchbay.adapters.store._errors import CANDIDATES, database_label, is_unavailable, unavailable
from patchbay.adapters.store._transactions import WRITE_OPTION
from patchbay.adapters.store.repository import Repository

if TYPE_CHECKING:
    from alembic.config import Config

    from patchbay.core.settings import Settings

__all__ = ["SCRIPT_LOCATION", "WRITE_OPTION", "create_engine_for", "open_store", "script_heads", "upgrade_to_head"]

#: Alembic ``script_location`` of Patchbay's migrations, as a package resource.
SCRIPT_LOCATION = "patchbay.adapters.store:migrations"
#: Any constant; serialises concurrent ``upgrade_to_head`` calls on PostgreSQL.
_PG_MIGRATION_LOCK = 0x7061_7463_6862_6179  # "patchbay"

#: Milliseconds a SQLite connection waits for a lock (many CLI processes may write at once).
BUSY_TIMEOUT_MS = 30_000
_SQLITE_PRAGMAS = (
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
#: Mode of a data home Patchbay creates, and of a database file it creates.
HOME_MODE = 0o700
DATABASE_FILE_MODE = 0o600


def _set_wal(cursor: Any) -> None:
    # Switching a database file to WAL needs an exclusive lock, and SQLite answers "database is
    # locked" at once (no busy handler) while another connection is switching it too. That only
    # happens on a file's first opens, so wait for it here, bounded like busy_timeout.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
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
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_MS)}")
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        _set_wal(cursor)
    finally:
        cursor.close()


def _sqlite_on_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN")


def _make_private_dir(directory: Path) -> None:
    """Create ``directory`` (mode 0700; missing parents get the default mode) unless it exists."""
    if directory.is_dir():
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=HOME_MODE)
    except FileExistsError:
        if not directory.is_dir():  # a file is in the way; another process winning the race is fine
            raise


def _create_database_file(path: Path) -> None:
    """Create an empty database file with mode 0600 unless something is already at ``path``.

    SQLite would create it with 0644 (less the umask); an empty file is a valid empty database,
    and SQLite then creates ``-wal``/``-shm`` with this file's mode.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), DATABASE_FILE_MODE)
    except FileExistsError:
        return  # an existing file (or directory, or symlink) is SQLite's to open or refuse
    os.close(fd)


def _prepare_sqlite_file(database: str) -> None:
    path = Path(database).expanduser()
    try:
        _make_private_dir(path.parent)
        _create_database_file(path)
    except OSError as exc:
        raise unavailable(str(path), exc) from None


def create_engine_for(url: str) -> Engine:
    """Create the SQLAlchemy engine for a canonical-store URL.

    Args:
        url: a SQLAlchemy URL; ``sqlite:///<path>`` (the parent directory is created with mode
            0700 and the file with mode 0600 when missing) or ``postgresql+psycopg://user@host:port/db``.

    Returns:
        An Engine; for SQLite every connection has ``foreign_keys=ON``, ``journal_mode=WAL``,
        ``busy_timeout=30000`` (ms) and ``synchronous=NORMAL`` (see the module docstring).

    Raises:
        CanonicalStateUnavailable: the SQLite file's directory or the file cannot be created.

    No schema is created; call :func:`upgrade_to_head` (or :func:`open_store`).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        _prepare_sqlite_file(database)
    engine = create_engine(parsed)
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


_VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"
_REVISION = re.compile(r"^revision(?:\s*:[^=]*)?\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision(?:\s*:[^=]*)?\s*=\s*(.+)$", re.MULTILINE)
_QUOTED = re.compile(r"[\"']([^\"']+)[\"']")


def script_heads() -> frozenset[str]:
    """The head revisions of the migration scripts, read from their ``revision`` and
    ``down_revision`` lines without importing Alembic (its import costs more CPU than opening a
    store at head). Empty when a script cannot be read that way: then Alembic decides."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for script in sorted(_VERSIONS_DIR.glob("*.py")):
        source = script.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None:
            return frozenset()
        revisions.add(revision.group(1))
        downs.update(_QUOTED.findall(down.group(1)))
    return frozenset(revisions - downs)


def _at_head(conn: Connection) -> bool:
    """Whether the database's ``alembic_version`` rows are exactly the scripts' heads."""
    heads = script_heads()
    if not heads or not inspect(conn).has_table("alembic_version"):
        return False
    return set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == heads


def upgrade_to_head(engine: Engine) -> None:
    """Apply every pending Alembic migration, in one transaction; a no-op when already at head.

    Alembic is configured in code (no ``alembic.ini``): ``script_location`` is
    :data:`SCRIPT_LOCATION` and the open connection travels in ``config.attributes["connection"]``
    to ``migrations/env.py``. Concurrent callers are serialised (``BEGIN IMMEDIATE`` on SQLite,
    a transaction-scoped advisory lock on PostgreSQL), so the loser finds the schema at head.

    A database already at head (its ``alembic_version`` rows are the scripts' heads, see
    :func:`script_heads`) is left alone without loading Alembic at all.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database refused a migration; nothing was applied.
    """
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        if _at_head(conn):
            return
        from alembic import command

        config = _alembic_config()
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
        CanonicalStateUnavailable: ``canonical_state_unavailable`` when the data home or the
            database cannot be created, opened or migrated: read-only, corrupt, not a SQLite file,
            locked past ``busy_timeout``, server unreachable (MCP writes then answer 503). The
            message is one line naming the database and the cause.
    """
    url = settings.resolved_database_url
    engine = create_engine_for(url)
    try:
        upgrade_to_head(engine)
    except CANDIDATES as exc:
        engine.dispose()
        if not is_unavailable(exc):
            raise
        raise unavailable(database_label(url), exc) from None
    return Repository(engine)
