"""What a test's canonical store holds, as raw bytes, on either store (``--store``): for proving
that a secret never reached the database or a session's event log.

SQLite: the bytes of ``<home>/patchbay.db*`` and the session's JSONL file. PostgreSQL: every row
of every table as JSON text, and the session's ``session_events`` rows, read without redaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from patchbay.adapters.store import create_engine_for
from patchbay.core.settings import Settings
from patchbay.runtime.events.backend import session_logs
from patchbay.runtime.events.log import read_events, session_log_path

__all__ = ["logged_events", "session_ids", "session_log_text", "store_bytes"]


def _is_sqlite(settings: Settings) -> bool:
    return make_url(settings.resolved_database_url).get_backend_name() == "sqlite"


def store_bytes(settings: Settings) -> bytes:
    """Everything the store of ``settings`` holds: the SQLite files' bytes, or each PostgreSQL
    table's rows as JSON (``row_to_json``), one per line."""
    if _is_sqlite(settings):
        home = settings.home
        return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("patchbay.db"))
    engine = create_engine_for(settings.resolved_database_url)
    try:
        with engine.connect() as conn:
            tables = inspect(conn).get_table_names()
            assert tables, "the PostgreSQL store has no tables"
            lines = [
                row
                for table in tables
                for row in conn.execute(text(f'SELECT row_to_json(t)::text FROM "{table}" AS t')).scalars()
            ]
    finally:
        engine.dispose()
    return "\n".join(lines).encode("utf-8")


def session_log_text(settings: Settings, session_id: str) -> str:
    """The session's event log as stored: its JSONL file, or its ``session_events`` rows (every
    column, in seq order) as JSON lines."""
    if _is_sqlite(settings):
        return session_log_path(settings.sessions_dir, session_id).read_text(encoding="utf-8")
    engine = create_engine_for(settings.resolved_database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT row_to_json(e)::text FROM session_events AS e WHERE session_id = :sid ORDER BY seq"),
                {"sid": session_id},
            ).scalars()
            lines = list(rows)
    finally:
        engine.dispose()
    assert lines, f"no events of {session_id} in the store"
    return "\n".join(lines)


def session_ids(settings: Settings) -> list[str]:
    """The ids of the sessions that logged events in the store of ``settings`` (JSONL files, or
    ``session_events`` rows), sorted."""
    if _is_sqlite(settings):
        directory = settings.sessions_dir
        return sorted(p.stem for p in directory.glob("*.jsonl")) if directory.is_dir() else []
    engine = create_engine_for(settings.resolved_database_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text("SELECT DISTINCT session_id FROM session_events ORDER BY 1")).scalars())
    finally:
        engine.dispose()


def logged_events(settings: Settings, session_id: str) -> list[dict[str, Any]]:
    """Every event of one session in seq order: its JSONL file's lines (``read_events``), or its
    ``session_events`` rows as the store's reader gives them (the same event objects)."""
    if _is_sqlite(settings):
        return read_events(session_log_path(settings.sessions_dir, session_id))
    logs = session_logs(settings)
    events: list[dict[str, Any]] = []
    after = 0
    while True:
        page = logs.page(session_id, after_seq=after, limit=1000)
        events += page.events
        if not page.has_more:
            return events
        after = page.next_after_seq
