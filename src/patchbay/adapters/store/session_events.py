"""Session event logs in the ``session_events`` table (a shared PostgreSQL store).

One row per event: ``session_id``, ``seq``, ``type``, ``ts``, ``instance`` (the writing
process, :mod:`patchbay.core.instance`), ``payload`` (the redacted payload as compact JSON
text, exactly as a JSONL line holds it) and ``hash``; beside them ``session_records`` keeps
what describes a session (``workspace``, ``project_id``, ``started_at``: the JSONL log's
metadata record, :meth:`SessionEventStore.start`). :meth:`SessionEventStore.append` assigns
the seqs inside its own transaction, after taking a per-session lock (a transaction-scoped
advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so any number of writers in any
number of processes give one session unique, gap-free seqs from 1.

The hash chain: ``hash = sha256(previous hash + "\\n" + line)`` in hex, where ``line`` is the
event rendered as its JSONL line (:func:`event_line`) and the first event's previous hash is
:data:`CHAIN_START`. A reader (:meth:`SessionEventStore.page`) checks that the seqs follow each
other and every hash matches; a row altered, removed or inserted out of band breaks it
(``event_chain_broken``).

Design: docs/event-log.md ("In the database")
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, case, func, insert, select, text

from patchbay.adapters.store._transactions import WRITE_OPTION
from patchbay.adapters.store.tables import session_events, session_records
from patchbay.core.errors import ErrorCode, NotFoundError, PatchbayError

__all__ = ["CHAIN_START", "EventRow", "SessionEventStore", "StoredSession", "chain_hash", "event_line"]

_MAX_SEQ = 2**63 - 1
"""The largest ``seq`` the table can hold (PostgreSQL BIGINT)."""
CHAIN_START = "0" * 64
"""The previous hash of a session's first event."""


def event_line(seq: int, type: str, ts: str, session_id: str, instance: str | None, payload_json: str) -> str:
    """An event as its JSONL line (no newline): ``{"seq","type","ts","sessionId"[,"instance"],"payload"}``.

    Args:
        payload_json: the redacted payload as compact JSON object text.
    """
    inst = f',"instance":{json.dumps(instance)}' if instance is not None else ""
    return (
        f'{{"seq":{seq},"type":"{type}","ts":"{ts}","sessionId":{json.dumps(session_id)}{inst},'
        f'"payload":{payload_json}}}'
    )


def chain_hash(previous: str, line: str) -> str:
    """``sha256(previous + "\\n" + line)`` as 64 hex digits."""
    return hashlib.sha256(f"{previous}\n{line}".encode()).hexdigest()


@dataclass(frozen=True)
class EventRow:
    """One event to append: its type, ISO-8601 UTC time and payload JSON text (already redacted)."""

    type: str
    ts: str
    payload_json: str


@dataclass(frozen=True)
class StoredSession:
    """A session as the table knows it (times are ISO-8601 UTC strings)."""

    session_id: str
    workspace: str | None
    project_id: str | None
    started_at: str | None
    """When the session started (its record, else its first event)."""
    last_event_at: str | None
    events: int
    calls: int


_CALL_EVENT = "model.tool_call_requested"


class SessionEventStore:
    """The ``session_events`` table of one engine.

    Usage::

        events = SessionEventStore(engine)
        seqs = events.append("ses_0123456789abcdef", [EventRow("tool.started", ts, "{}")], instance=me)
        rows, has_more = events.page("ses_0123456789abcdef", after_seq=0, limit=100)
    """

    def __init__(self, engine: Engine):
        self.engine = engine

    def append(self, session_id: str, rows: Sequence[EventRow], *, instance: str | None) -> list[int]:
        """Append ``rows`` in order, in one transaction; returns the seqs they got.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database refused (nothing was appended).
        """
        if not rows:
            return []
        with self.engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:s, 7))"), {"s": session_id})
            last = conn.execute(
                select(session_events.c.seq, session_events.c.hash)
                .where(session_events.c.session_id == session_id)
                .order_by(session_events.c.seq.desc())
                .limit(1)
            ).first()
            seq, previous = (int(last[0]), str(last[1])) if last is not None else (0, CHAIN_START)
            values: list[dict[str, Any]] = []
            for row in rows:
                seq += 1
                previous = chain_hash(
                    previous, event_line(seq, row.type, row.ts, session_id, instance, row.payload_json)
                )
                values.append(
                    {
                        "session_id": session_id,
                        "seq": seq,
                        "type": row.type,
                        "ts": row.ts,
                        "instance": instance,
                        "payload": row.payload_json,
                        "hash": previous,
                    }
                )
            conn.execute(insert(session_events), values)
        return [v["seq"] for v in values]

    def start(self, session_id: str, *, workspace: str | None, project_id: str | None, started_at: str) -> None:
        """Record what describes the session, unless it has a record already (a continued session
        keeps its first one). The values are stored as given: redact them first.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database refused.
        """
        with self.engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:s, 7))"), {"s": session_id})
            known = conn.execute(
                select(session_records.c.session_id).where(session_records.c.session_id == session_id)
            ).first()
            if known is None:
                conn.execute(
                    insert(session_records).values(
                        session_id=session_id, workspace=workspace, project_id=project_id, started_at=started_at
                    )
                )

    def last_seq(self, session_id: str) -> int:
        """The seq of the session's last event (0 when it has none)."""
        with self.engine.connect() as conn:
            value = conn.execute(
                select(func.max(session_events.c.seq)).where(session_events.c.session_id == session_id)
            ).scalar()
        return int(value or 0)

    def page(self, session_id: str, *, after_seq: int, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` events with ``seq > after_seq`` as the JSONL lines hold them, verified,
        and whether more follow.

        Raises:
            NotFoundError: ``not_found`` when the session has no event.
            PatchbayError: ``event_chain_broken`` when a seq is missing or a hash does not match
                (the events up to ``after_seq`` are trusted as far as the one before the page).
        """
        # A seq past the column's range (BIGINT) is past every event: compare with the largest one.
        start = min(max(after_seq, 1), _MAX_SEQ)
        with self.engine.connect() as conn:
            result = conn.execute(
                select(session_events)
                .where(session_events.c.session_id == session_id, session_events.c.seq >= start)
                .order_by(session_events.c.seq)
                .limit(limit + 2)
            ).all()
            if (
                not result
                and not conn.execute(
                    select(session_events.c.seq).where(session_events.c.session_id == session_id).limit(1)
                ).first()
            ):
                raise NotFoundError(f"no session {session_id!r}", details={"session_id": session_id})
        rows = list(result)
        previous, expected = CHAIN_START, 1
        if after_seq > 0:
            if not rows or int(rows[0].seq) != after_seq:
                if rows and int(rows[0].seq) > after_seq:
                    _broken(session_id, after_seq)
                return [], False  # after_seq at or past the end
            previous, expected = str(rows[0].hash), after_seq + 1
            rows = rows[1:]
        has_more = len(rows) > limit
        events: list[dict[str, Any]] = []
        for row in rows[:limit]:
            if int(row.seq) != expected:
                _broken(session_id, expected)
            line = event_line(int(row.seq), row.type, row.ts, session_id, row.instance, row.payload)
            previous = chain_hash(previous, line)
            if previous != row.hash:
                _broken(session_id, expected)
            events.append(json.loads(line))
            expected += 1
        return events, has_more

    def summary(self, session_id: str) -> StoredSession:
        """One session's summary.

        Raises:
            NotFoundError: ``not_found`` when the session has no event.
        """
        found = self._summaries(session_id=session_id, limit=1)
        if not found:
            raise NotFoundError(f"no session {session_id!r}", details={"session_id": session_id})
        return found[0]

    def recent(self, *, limit: int) -> list[StoredSession]:
        """The ``limit`` sessions with the latest last event, newest first."""
        return self._summaries(session_id=None, limit=limit)

    def _summaries(self, *, session_id: str | None, limit: int) -> list[StoredSession]:
        c, r = session_events.c, session_records.c
        calls = func.sum(case((c.type == _CALL_EVENT, 1), else_=0))
        events = select(
            c.session_id.label("session_id"),
            func.min(c.ts).label("first_ts"),
            func.max(c.ts).label("last_ts"),
            func.max(c.seq).label("last_seq"),
            calls.label("calls"),
        ).group_by(c.session_id)
        if session_id is not None:
            events = events.where(c.session_id == session_id)
        grouped = events.subquery()
        query = (
            select(grouped, r.workspace, r.project_id, r.started_at)
            .select_from(grouped.outerjoin(session_records, r.session_id == grouped.c.session_id))
            .order_by(grouped.c.last_ts.desc(), grouped.c.session_id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [
                StoredSession(
                    session_id=row.session_id,
                    workspace=row.workspace,
                    project_id=row.project_id,
                    started_at=row.started_at or row.first_ts,
                    last_event_at=row.last_ts,
                    events=int(row.last_seq),
                    calls=int(row.calls or 0),
                )
                for row in conn.execute(query)
            ]


def _broken(session_id: str, seq: int) -> None:
    raise PatchbayError(
        f"the event log of session {session_id!r} does not verify at seq {seq} (an event is missing or was altered)",
        code=ErrorCode.EVENT_CHAIN_BROKEN,
        details={"session_id": session_id, "seq": seq},
    )
