"""Session event logs in the shared store's ``session_events`` table (PostgreSQL).

:class:`DatabaseEventLog` is an :class:`~patchbay.runtime.events.log.EventLog` whose lines go to
the table instead of a file: the same appends, the same redaction, the same background writer on
the event loop; what that writer (or a direct append) writes is handed to a worker thread, which
inserts each batch in one transaction (:class:`~patchbay.adapters.store.session_events.SessionEventStore`
assigns the stored seqs and the hash chain there). The event loop never waits for the database,
except :meth:`DatabaseEventLog.close` and :meth:`DatabaseEventLog.sync` (bounded), which wait until
every appended event is committed. Each row carries this process's ``instance``.

:class:`DatabaseSessionLogs` reads them back with the calls of
:class:`~patchbay.runtime.events.reading.SessionLogs`.

Design: docs/event-log.md ("In the database")
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from patchbay.adapters.store import create_engine_for
from patchbay.adapters.store.session_events import EventRow, SessionEventStore, StoredSession
from patchbay.core.errors import NotFoundError, ValidationError
from patchbay.core.instance import instance_id
from patchbay.core.redaction import redact_value
from patchbay.runtime.events import MAX_PAGE
from patchbay.runtime.events.log import EventLog, encode_json
from patchbay.runtime.events.reading import EventPage, SessionSummary

__all__ = ["SYNC_TIMEOUT", "DatabaseEventLog", "DatabaseSessionLogs", "event_engine"]

log = logging.getLogger("patchbay.events")

SYNC_TIMEOUT = 10.0
"""Seconds :meth:`DatabaseEventLog.sync` (and ``close``) wait for the worker to commit."""
_RETRIES = 3
_CALL_ID = re.compile(r'"toolCallId":"tc_(\d+)"')
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()
# Every open database log of this process by session id, so an in-process reader syncs it first.
_OPEN: weakref.WeakValueDictionary[str, DatabaseEventLog] = weakref.WeakValueDictionary()


def event_engine(url: str) -> Engine:
    """The process's engine for the event table of the store at ``url`` (made once per URL).

    Raises:
        CanonicalStateUnavailable: the engine cannot be created.
    """
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_engine_for(url)
        return engine


class DatabaseEventLog(EventLog):
    """The event log of one session in the ``session_events`` table.

    Usage::

        with DatabaseEventLog(engine, sid) as log:
            log.append("tool.started", {"tool": "mcp.time.get_current_time", "toolCallId": "tc_1"})

    Args:
        engine: the shared store's engine (migrated to head).
        session_id: as for :class:`EventLog`; ``path`` is ``<session_id>`` (no file is written).
        known_secrets, metadata, keep: as for :class:`EventLog` (``metadata``'s ``workspace`` and
            ``projectId``, redacted, go to the session's record; a continued session keeps its own).

    The seqs :meth:`append` returns are this writer's count, continued from the table's last seq
    at open; the table assigns the stored ones when it inserts, so two writers of one session
    (two instances) still give unique, gap-free seqs, interleaved.

    Raises:
        ValidationError: ``validation_error`` for a bad session id.
        sqlalchemy.exc.SQLAlchemyError: the table cannot be read at open.
    """

    def __init__(
        self,
        engine: Engine,
        session_id: str,
        *,
        known_secrets: tuple[str, ...] = (),
        metadata: dict[str, Any] | None = None,
        keep: tuple[str, ...] = (),
    ):
        if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
            raise ValidationError(f"{session_id!r} is not a session ID", details={"field": "session_id"})
        self.path = Path(session_id)
        self._init_state(session_id, known_secrets, keep)
        self._store = SessionEventStore(engine)
        self._instance = instance_id()
        record = self._redact({k: v for k, v in (metadata or {}).items() if k in ("workspace", "projectId")})
        self._store.start(
            session_id,
            workspace=_text_or_none(record.get("workspace")),
            project_id=_text_or_none(record.get("projectId")),
            started_at=self._timestamp(int(time.time() * 1000)),
        )
        self._seq = self._store.last_seq(session_id)
        self._calls = 0
        self._meta = None
        self._tool_calls = self._last_call_number() if self._seq else 0
        self._queue: list[EventRow] = []
        self._inflight = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._fd = -1  # open (there is no file: -1 only says so)
        self._thread = threading.Thread(target=self._work, name=f"patchbay-events-{session_id}", daemon=True)
        self._thread.start()
        _OPEN[session_id] = self

    def _last_call_number(self) -> int:
        events, _ = self._store.page(self.session_id, after_seq=0, limit=self._seq)
        numbers = (int(m.group(1)) for e in events for m in _CALL_ID.finditer(encode_json(e.get("payload"))))
        return max(numbers, default=0)

    def _write_pending(self) -> None:
        """Hand every pending event to the worker thread (the lock is held, the log open)."""
        rows = []
        for _seq, type, ms, payload_json in self._pending:
            ts = self._ts if ms == self._ts_ms else self._timestamp(ms)
            rows.append(EventRow(type, ts, payload_json))
        self._pending.clear()
        with self._cond:
            self._queue.extend(rows)
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
                self._inflight = len(batch)
            for attempt in range(_RETRIES):
                try:
                    self._store.append(self.session_id, batch, instance=self._instance)
                    break
                except SQLAlchemyError as exc:
                    if attempt == _RETRIES - 1:
                        log.error(
                            "session %s: %d events could not be written to the database (%s)",
                            self.session_id,
                            len(batch),
                            type(exc).__name__,
                        )
                    else:
                        time.sleep(0.2 * (attempt + 1))
            with self._cond:
                self._inflight = 0
                self._cond.notify_all()

    def sync(self, timeout: float = SYNC_TIMEOUT) -> bool:
        """Write what is pending and wait (at most ``timeout`` seconds) until the worker has
        committed it; whether it has. Blocks the calling thread: not for the event loop's hot path."""
        self.flush()
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        """Write pending events, wait for the worker to commit them (bounded by
        :data:`SYNC_TIMEOUT`) and end it; idempotent."""
        self.stop_writer()
        with self._lock:
            if self._fd is None:
                return
            self._fd = None
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(SYNC_TIMEOUT)
        if _OPEN.get(self.session_id) is self:
            del _OPEN[self.session_id]


def sync_open_log(session_id: str) -> None:
    """Have the open :class:`DatabaseEventLog` of ``session_id`` in this process (if any) commit
    what it holds: what an in-process reader calls first."""
    log_ = _OPEN.get(session_id)
    if log_ is not None and not log_.closed:
        log_.sync()


class DatabaseSessionLogs:
    """The session logs in the shared store's table, read as :class:`SessionLogs` reads files.

    Usage::

        logs = DatabaseSessionLogs(event_engine(settings.resolved_database_url))
        page = logs.page("ses_0123456789abcdef", after_seq=0, limit=100)
    """

    def __init__(self, engine: Engine):
        self._store = SessionEventStore(engine)

    def page(self, session_id: str, *, after_seq: int = 0, limit: int = 100) -> EventPage:
        """As :meth:`SessionLogs.page`; the page's hash chain is verified.

        Raises:
            NotFoundError: ``not_found`` when the session has no event.
            ValidationError: ``validation_error`` for ``after_seq`` or ``limit`` out of range.
            PatchbayError: ``event_chain_broken`` when the stored events do not verify.
        """
        if not 0 <= after_seq:
            raise ValidationError("after_seq must be 0 or more", details={"field": "after_seq"})
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}", details={"field": "limit"})
        if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
            raise NotFoundError(f"no session {session_id[:80]!r}", details={"session_id": session_id[:80]})
        sync_open_log(session_id)
        events, has_more = self._store.page(session_id, after_seq=after_seq, limit=limit)
        events = [e | {"payload": redact_value(e.get("payload") or {})} for e in events]
        next_after = events[-1]["seq"] if events else after_seq
        return EventPage(session_id=session_id, events=events, next_after_seq=next_after, has_more=has_more)

    def summary(self, session_id: str) -> SessionSummary:
        """As :meth:`SessionLogs.summary`.

        Raises:
            NotFoundError: ``not_found`` when the session has no event.
        """
        if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
            raise NotFoundError(f"no session {session_id[:80]!r}", details={"session_id": session_id[:80]})
        sync_open_log(session_id)
        return _summary(self._store.summary(session_id))

    def recent(self, *, limit: int = 20) -> list[SessionSummary]:
        """As :meth:`SessionLogs.recent`: the sessions with the latest last event, newest first.

        Raises:
            ValidationError: ``validation_error`` unless ``limit`` is 1 to :data:`MAX_PAGE`.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}", details={"field": "limit"})
        return [_summary(s) for s in self._store.recent(limit=limit)]


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _summary(stored: StoredSession) -> SessionSummary:
    return SessionSummary(
        session_id=stored.session_id,
        workspace=stored.workspace,
        project_id=stored.project_id,
        started_at=stored.started_at,
        last_event_at=stored.last_event_at,
        events=stored.events,
        calls=stored.calls,
    )
