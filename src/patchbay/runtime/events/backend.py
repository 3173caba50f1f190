"""Where session event logs live, chosen from the store URL.

A SQLite store (the single-instance default) keeps one JSONL file per session in
``Settings.sessions_dir`` (:mod:`~patchbay.runtime.events.log`); a PostgreSQL store, which several
instances may share, keeps them in its ``session_events`` table
(:mod:`~patchbay.runtime.events.database`), so any instance can show any session's events.
Writers and readers get the right one from :func:`open_event_log` and :func:`session_logs`.

Design: docs/event-log.md ("In the database")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from patchbay.runtime.events.log import EventLog

if TYPE_CHECKING:
    from patchbay.core.settings import Settings
    from patchbay.runtime.events.reading import EventPage, SessionSummary

__all__ = ["EventReader", "events_in_database", "open_event_log", "session_logs"]


class EventReader(Protocol):
    """What reads session logs back, from files or from the table (see ``SessionLogs``)."""

    def page(self, session_id: str, *, after_seq: int = 0, limit: int = 100) -> EventPage: ...

    def summary(self, session_id: str) -> SessionSummary: ...

    def recent(self, *, limit: int = 20) -> list[SessionSummary]: ...


def events_in_database(settings: Settings) -> bool:
    """Whether session events go to the store's table: a PostgreSQL store URL."""
    return settings.resolved_database_url.startswith(("postgresql", "postgres:"))


def open_event_log(
    settings: Settings,
    path: Path,
    session_id: str,
    *,
    metadata: dict[str, Any] | None = None,
    keep: tuple[str, ...] = (),
) -> EventLog:
    """The event log of ``session_id``: the JSONL file ``path``, or with a PostgreSQL store a
    :class:`~patchbay.runtime.events.database.DatabaseEventLog` (``metadata`` then goes to the
    session's record in the store).

    Raises:
        PatchbayError: ``validation_error`` as :class:`EventLog` raises it.
        CanonicalStateUnavailable: the store's engine cannot be made.
        sqlalchemy.exc.SQLAlchemyError: the table cannot be read.
    """
    if not events_in_database(settings):
        return EventLog(path, session_id, metadata=metadata, keep=keep)
    from patchbay.runtime.events.database import DatabaseEventLog, event_engine

    return DatabaseEventLog(event_engine(settings.resolved_database_url), session_id, metadata=metadata, keep=keep)


def session_logs(settings: Settings) -> EventReader:
    """The reader of the session logs of ``settings``' store (files, or the table)."""
    if not events_in_database(settings):
        from patchbay.runtime.events.reading import SessionLogs

        return SessionLogs(settings.sessions_dir)
    from patchbay.runtime.events.database import DatabaseSessionLogs, event_engine

    return DatabaseSessionLogs(event_engine(settings.resolved_database_url))
