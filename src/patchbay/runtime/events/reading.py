"""Reading the session event logs (:mod:`patchbay.runtime.events.log`) back.

:class:`SessionLogs` is the one reader: :meth:`SessionLogs.page` returns a page of one session's
events after a ``seq``, :meth:`SessionLogs.summary` a summary of a recent session, open or closed.
Both stay cheap on long logs; payloads come back redacted again.

Design: docs/event-log.md
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from patchbay.core.errors import ErrorCode, NotFoundError, PatchbayError, ValidationError
from patchbay.core.redaction import redact_value
from patchbay.runtime.events import MAX_PAGE
from patchbay.runtime.events.log import CALL_EVENT, flush_open_log, session_log_path, session_meta_path

# MAX_PAGE is defined by the package (patchbay.runtime.events) and offered here beside its readers
__all__ = ["MAX_PAGE", "EventPage", "SessionLogs", "SessionSummary"]

_CHUNK = 65536
_HEAD = 512  # enough of a line for its seq, type and ts
_LINE_HEAD = re.compile(rb'\{"seq":(\d+),"type":"([a-z_.]+)","ts":"([^"]{1,40})"')
_CALL_LINE = re.compile(rb'(?:^|\n)\{"seq":\d+,"type":"' + re.escape(CALL_EVENT.encode()) + rb'"')
_LOG_NAME = re.compile(r"([A-Za-z0-9_-]{1,64})\.jsonl")


@dataclass(frozen=True)
class EventPage:
    """Events of one session after a seq, in seq order."""

    session_id: str
    events: list[dict[str, Any]]
    next_after_seq: int
    """The seq of the last event returned (``after_seq`` when none): ask for the next page with it."""
    has_more: bool
    """Whether the log holds events after this page (now; an open session may add more later)."""


@dataclass(frozen=True)
class SessionSummary:
    """One session as a listing shows it; times are ISO-8601 UTC strings as the events carry."""

    session_id: str
    workspace: str | None
    """The canonical workspace root; None for a log without a metadata record."""
    project_id: str | None
    started_at: str | None
    """When the session started (its metadata record, else its first event)."""
    last_event_at: str | None
    events: int
    """The seq of the last event (the number of events)."""
    calls: int
    """Tool calls the session made (allowed or not): its ``model.tool_call_requested`` events."""


class SessionLogs:
    """The session logs in one directory (``Settings.sessions_dir``).

    Usage::

        logs = SessionLogs(settings.sessions_dir)
        page = logs.page("ses_0123456789abcdef", after_seq=0, limit=100)
        recent = logs.recent(limit=20)
    """

    def __init__(self, sessions_dir: Path):
        self.sessions_dir = Path(sessions_dir)

    def _path(self, session_id: str) -> Path:
        """The log of a session that has one.

        Raises:
            NotFoundError: ``not_found`` for an id that is no session id or has no log.
        """
        try:
            path = session_log_path(self.sessions_dir, session_id)
        except ValidationError:
            raise NotFoundError(f"no session {session_id[:80]!r}", details={"session_id": session_id[:80]}) from None
        if not path.is_file():
            raise NotFoundError(f"no session {session_id!r}", details={"session_id": session_id})
        flush_open_log(path)  # a runtime of this process may still hold lines for its writer
        return path

    def page(self, session_id: str, *, after_seq: int = 0, limit: int = 100) -> EventPage:
        """Up to ``limit`` events with ``seq > after_seq``, redacted.

        Args:
            session_id: ``ses_…``.
            after_seq: 0 or more; 0 starts at the first event.
            limit: 1 to :data:`MAX_PAGE`.

        Raises:
            NotFoundError: ``not_found`` when the session has no log.
            ValidationError: ``validation_error`` for ``after_seq`` or ``limit`` out of range.
            PatchbayError: ``validation_error`` when a complete line of the log is not JSON;
                ``event_chain_broken`` when the seqs of the page do not follow each other from
                ``after_seq + 1`` (an event is missing).
        """
        if not 0 <= after_seq:
            raise ValidationError("after_seq must be 0 or more", details={"field": "after_seq"})
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}", details={"field": "limit"})
        path = self._path(session_id)
        events: list[dict[str, Any]] = []
        has_more = False
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(_first_after(handle, size, after_seq))
            for index, line in enumerate(iter(handle.readline, b"")):
                if not line.endswith(b"\n"):
                    break  # a line still being written (or torn by a crash): not an event yet
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    raise PatchbayError(
                        f"{path.name}: a line after seq {after_seq} is not valid JSON ({index + 1} lines on)",
                        code=ErrorCode.VALIDATION_ERROR,
                    ) from None
                if not isinstance(event, dict) or not isinstance(event.get("seq"), int) or event["seq"] <= after_seq:
                    continue
                if len(events) == limit:
                    has_more = True
                    break
                expected = events[-1]["seq"] + 1 if events else after_seq + 1
                if event["seq"] != expected:
                    raise PatchbayError(
                        f"{path.name}: the event after seq {expected - 1} has seq {event['seq']} (an event is missing)",
                        code=ErrorCode.EVENT_CHAIN_BROKEN,
                        details={"session_id": session_id, "seq": expected},
                    )
                # Only the payload: the envelope holds ids the writer made (and "sessionId" is
                # a secret-shaped key name).
                events.append(event | {"payload": redact_value(event.get("payload") or {})})
        next_after = events[-1]["seq"] if events else after_seq
        return EventPage(session_id=session_id, events=events, next_after_seq=next_after, has_more=has_more)

    def summary(self, session_id: str) -> SessionSummary:
        """One session's summary, reading the metadata record and the log's ends only (plus the
        bytes written since the record last counted the calls).

        Raises:
            NotFoundError: ``not_found`` when the session has no log.
        """
        path = self._path(session_id)
        meta = _read_meta(session_meta_path(path))
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            last_start = _last_line_start(handle, size)
            first = _head(handle, 0) if last_start is not None else None
            last = _head(handle, last_start) if last_start is not None else None
            counted = meta.get("counted")
            start, calls = 0, 0
            if isinstance(counted, dict):
                bytes_, base = counted.get("bytes"), counted.get("calls")
                if isinstance(bytes_, int) and isinstance(base, int) and 0 <= bytes_ <= size:
                    start, calls = bytes_, base
            calls += _count_calls(handle, start, size)
        workspace, project_id, started = meta.get("workspace"), meta.get("projectId"), meta.get("startedAt")
        return SessionSummary(
            session_id=session_id,
            workspace=workspace if isinstance(workspace, str) else None,
            project_id=project_id if isinstance(project_id, str) else None,
            started_at=started if isinstance(started, str) else (first[2] if first else None),
            last_event_at=last[2] if last else None,
            events=last[0] if last else 0,
            calls=calls,
        )

    def recent(self, *, limit: int = 20) -> list[SessionSummary]:
        """The ``limit`` sessions whose logs changed last, newest first (only those are read).

        Raises:
            ValidationError: ``validation_error`` unless ``limit`` is 1 to :data:`MAX_PAGE`.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}", details={"field": "limit"})
        try:
            entries = list(os.scandir(self.sessions_dir))
        except FileNotFoundError:
            return []
        logs: list[tuple[int, str]] = []
        for entry in entries:
            match = _LOG_NAME.fullmatch(entry.name)
            if match is None:
                continue
            try:
                if entry.is_file(follow_symlinks=False):
                    logs.append((entry.stat(follow_symlinks=False).st_mtime_ns, match.group(1)))
            except FileNotFoundError:
                continue
        logs.sort(reverse=True)
        out = []
        for _, session_id in logs[:limit]:
            try:
                out.append(self.summary(session_id))
            except NotFoundError:  # removed meanwhile
                continue
        return out


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes()[: 64 * 1024])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _line_start_from(handle: IO[bytes], position: int, size: int) -> int:
    """The first line start at or after ``position`` (``size`` when there is none)."""
    if position <= 0:
        return 0
    handle.seek(position - 1)
    while True:
        chunk = handle.read(_CHUNK)
        if not chunk:
            return size
        index = chunk.find(b"\n")
        if index >= 0:
            return handle.tell() - len(chunk) + index + 1
    return size  # pragma: no cover


def _head(handle: IO[bytes], start: int) -> tuple[int, str, str] | None:
    """``(seq, type, ts)`` of the line starting at ``start``, from its first bytes."""
    handle.seek(start)
    match = _LINE_HEAD.match(handle.read(_HEAD))
    if match is None:
        return None
    return int(match.group(1)), match.group(2).decode(), match.group(3).decode()


def _first_after(handle: IO[bytes], size: int, after_seq: int) -> int:
    """The offset of the first line whose seq is above ``after_seq`` (or where to scan from).

    Bisects line starts: every line before ``low`` has a seq at most ``after_seq``, every line
    from ``high`` on a greater one. A line whose head cannot be read stops the bisection; the
    caller's scan from ``low`` then skips by parsing.
    """
    if after_seq <= 0:
        return 0
    low, high = 0, size
    while low < high:
        middle = _line_start_from(handle, (low + high) // 2, size)
        if middle >= high:
            middle = low
        head = _head(handle, middle)
        if head is None:
            break
        if head[0] > after_seq:
            high = middle
        else:
            low = _line_start_from(handle, middle + 1, size)
    return low


def _last_line_start(handle: IO[bytes], size: int) -> int | None:
    """Where the last complete line starts (a torn tail is no line); None when there is none."""
    position = size
    found: list[int] = []
    while position > 0 and len(found) < 2:
        step = min(_CHUNK, position)
        position -= step
        handle.seek(position)
        chunk = handle.read(step)
        index = len(chunk)
        while len(found) < 2:
            index = chunk.rfind(b"\n", 0, index)
            if index < 0:
                break
            found.append(position + index)
    if not found:
        return None
    return found[1] + 1 if len(found) == 2 else 0


def _count_calls(handle: IO[bytes], start: int, size: int) -> int:
    """Tool-call events in the complete lines between ``start`` (a line start) and ``size``."""
    handle.seek(start)
    remaining, count, carry = size - start, 0, b"\n"
    while remaining > 0:
        chunk = handle.read(min(_CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        data = carry + chunk
        cut = data.rfind(b"\n")  # carry starts with a newline: cut >= 0
        count += len(_CALL_LINE.findall(data, 0, cut + 1))
        # Of a line that goes on, its head is enough to tell whether it is a call event.
        carry = data[cut:] if cut > 0 else data[:_HEAD]
    return count
